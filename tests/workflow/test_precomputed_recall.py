"""lowrank Fig 2 at the paper's scale on a laptop: with ``--config scale=paper
gpu_results=precomputed`` the target ``lowrank_fig2`` copies the committed plot-ready table
(workflow/precomputed/lowrank/fig2/, made on a GPU by ``python -m attnbias.gpu_check.recall``),
then draws the figure and checks its claims, training nothing.  Until that table is committed, a
small stand-in made the same way (the production entry point, a tiny preset) takes its place in
the copy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from conftest import copy_workflow, snakemake_cmd

from attnbias.layout import results_folder

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "workflow" / "precomputed" / "lowrank" / "fig2"
PRECOMPUTED = {"scale": "paper", "gpu_results": "precomputed"}

# the stand-in's preset: the paper's grid of λ, one seed, a few updates of a tiny model
STAND_IN = dict(
    solved_acc=0.99, n_pairs=4, n_keys=8, n_values=8, d_model=16, n_heads=2, n_layers=2,
    batch=32, steps=40, lr=1e-3, betas=[0.9, 0.999], eps=1e-8, lambdas=[0, 0.1, 0.3, 1, 2, 3],
    seeds=[0], log_every=10, eval_samples=128, spectra_at=[0],
)  # fmt: skip


def _stand_in(folder: Path, monkeypatch) -> None:
    from attnbias.gpu_check import recall as prod

    torch.set_num_threads(1)
    monkeypatch.setattr(prod, "paper_block", lambda steps=None: dict(STAND_IN))
    out = folder.parent / "production"
    assert prod.main(["--out", str(out), "--device", "cpu"]) == 0
    folder.mkdir(parents=True, exist_ok=True)
    for ext in ("csv", "json"):
        (folder / f"fig2.{ext}").write_bytes((out / f"fig2.{ext}").read_bytes())


def test_paper_fig2_is_drawn_and_checked_from_the_precomputed_table(tmp_path, monkeypatch):
    d = copy_workflow(tmp_path / "wf")
    folder = d / "workflow" / "precomputed" / "lowrank" / "fig2"
    committed = (COMMITTED / "fig2.csv").exists()
    if not committed:
        _stand_in(folder, monkeypatch)
    res = snakemake_cmd("--cores", "1", "lowrank_fig2", "--config", "scale=paper",
                        "gpu_results=precomputed", cwd=d, timeout=900)  # fmt: skip
    assert res.returncode == 0, f"{res.stdout[-3000:]}\n{res.stderr[-6000:]}"
    log = res.stdout + res.stderr
    assert re.search(r"^(local)?rule precomputed:", log, re.M)
    assert not re.search(r"^(local)?rule (train|gather):", log, re.M)  # nothing trained
    out = d / results_folder(d, config=PRECOMPUTED)
    assert out != d / "results"  # the paper preset's own folder
    data = out / "data" / "lowrank"
    for ext in ("csv", "json"):
        assert (data / f"fig2.{ext}").read_bytes() == (folder / f"fig2.{ext}").read_bytes()
    meta = json.loads((data / "fig2.json").read_text())
    assert meta["provenance"]["preset"] == "paper" and meta["production"]["settings"]
    claims = json.loads((out / "claims" / "lowrank" / "fig2.json").read_text())
    assert claims["preset"] == "paper"
    ids = {c["id"] for c in claims["claims"]}
    assert {"solved_moderate_lambda", "pv_effrank_halved", "kq_imbalance_rate"} <= ids
    assert (out / "figures" / "lowrank" / "fig2.pdf").stat().st_size > 10_000
    if committed:  # the committed table is the paper preset's whole figure, trained on a GPU
        prod = meta["production"]
        assert not prod["missing"] and len(meta["runs"]) == len(prod["points"]) == 18
        assert all(r["device"] == "cuda" for r in meta["runs"])
        trained = [prod] if prod["trained_here"] else prod["parts"]  # in one call, or in parts
        assert sum(len(t["trained_here"]) for t in trained) == 18
        assert all(t["cuda"] and t["commit"] and t["status"] == "finished" for t in trained)
