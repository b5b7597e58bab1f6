"""``python -m attnbias.gpu_check.recall``, the GPU production of lowrank Fig 2, run on the CPU
with a tiny stand-in of the paper preset: its runs are train_recall's, its table is gather_fig2's,
its recorded code is the import closure of the entry point, a budget pauses it with a checkpoint
that the same command resumes, a figure made in parts gathers to the same bytes, and --pack's
pieces join to the table."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import torch

from attnbias.closure import code_closure
from attnbias.experiments.lowrank.recall import gather_fig2, train_recall
from attnbias.gpu_check import recall as prod
from attnbias.io import load_data

ROOT = Path(__file__).resolve().parents[2]

TINY = dict(
    solved_acc=0.99, n_pairs=4, n_keys=8, n_values=8, d_model=16, n_heads=2, n_layers=2,
    batch=32, steps=20, lr=1e-2, betas=[0.9, 0.999], eps=1e-8, lambdas=[0, 1.0], seeds=[0, 1],
    log_every=10, eval_samples=128, spectra_at=[0],
)  # fmt: skip


@pytest.fixture(autouse=True)
def tiny_preset(monkeypatch):
    torch.set_num_threads(1)
    monkeypatch.setattr(prod, "paper_block", lambda steps=None: dict(TINY))


def _run(*args):
    return prod.main([*map(str, args), "--device", "cpu", "--commit", "abc123"])


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    with pytest.MonkeyPatch.context() as mp:
        torch.set_num_threads(1)
        mp.setattr(prod, "paper_block", lambda steps=None: dict(TINY))
        assert _run("--out", out) == 0
    return out


def test_the_table_is_the_workflows_gather_of_train_recall_runs(whole):
    runs = sorted((whole / "runs").glob("*.csv"))
    assert [p.stem for p in runs] == ["lam0_seed0", "lam0_seed1", "lam1_seed0", "lam1_seed1"]
    df, meta = load_data(whole / "fig2.csv")
    order = [whole / "runs" / f"{s}.csv" for s in
             ("lam0_seed0", "lam0_seed1", "lam1_seed0", "lam1_seed1")]  # fmt: skip
    want, want_meta = gather_fig2([str(p) for p in order], lr=0.01, steps=20, solved_acc=0.99,
                                  preset="paper")  # fmt: skip
    pd.testing.assert_frame_equal(df, want, check_exact=False, rtol=1e-12)
    assert {k: meta[k] for k in want_meta} == json.loads(json.dumps(want_meta))
    assert meta["provenance"]["preset"] == "paper"
    prov = meta["production"]
    assert prov["commit"] == "abc123" and prov["torch"] == torch.__version__
    assert prov["settings"]["n_pairs"] == 4 and prov["settings"]["lambdas"] is None
    assert prov["points"] == [[0.0, 0], [0.0, 1], [1.0, 0], [1.0, 1]] and prov["batch_runs"] == 4
    # the code is the entry point's import closure, as the workflow computes its jobs' code
    assert list(prov["code_sha256"]) == code_closure("gpu_check.recall")
    assert {"src/attnbias/gpu_check/recall.py", "src/attnbias/experiments/lowrank/recall.py",
            "src/attnbias/models/recall.py", "src/attnbias/io.py"} <= set(prov["code_sha256"])
    assert prov["command"].startswith("python -m attnbias.gpu_check.recall --out ")
    assert prov["seconds_per_update"] > 0 and prov["status"] == "finished"
    # a run of the batch is the one run of its point
    single, smeta = train_recall(
        {k: v for k, v in TINY.items() if k not in ("lambdas", "seeds", "solved_acc")}, 1.0, 0
    )
    run, rmeta = load_data(whole / "runs" / "lam1_seed0.csv")
    pd.testing.assert_frame_equal(run, single, check_exact=False, rtol=1e-5, atol=1e-6,
                                  check_dtype=False)  # fmt: skip
    assert rmeta["settings"] == json.loads(json.dumps(smeta["settings"]))


def test_a_paused_production_resumes_to_the_same_table(whole, tmp_path):
    out = tmp_path / "out"
    assert _run("--out", out, "--max-seconds", 0, "--reserve-seconds", 0) == 3  # budget spent
    prov = json.loads((out / "production.json").read_text())
    assert prov["status"] == "paused at step 10" and not (out / "fig2.csv").exists()
    assert list((out / "checkpoint").glob("*.pt"))
    assert _run("--out", out) == 0
    prov = json.loads((out / "production.json").read_text())
    assert prov["resumed_from_row"] == 1 and prov["status"] == "finished"
    assert (out / "fig2.csv").read_bytes() == (whole / "fig2.csv").read_bytes()
    assert not list((out / "checkpoint").glob("*.pt"))  # dropped once the runs' files are safe


def test_a_figure_made_in_parts_is_gathered_to_the_same_table(whole, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _run("--out", a, "--seeds", 0) == 0
    assert sorted(p.stem for p in (a / "runs").glob("*.csv")) == ["lam0_seed0", "lam1_seed0"]
    assert not (a / "fig2.csv").exists()
    assert json.loads((a / "production.json").read_text())["missing"] == [[0.0, 1], [1.0, 1]]
    assert _run("--out", b, "--seeds", 1, "--runs-from", a / "runs", "--pack") == 0
    assert (b / "fig2.csv").read_bytes() == (whole / "fig2.csv").read_bytes()
    pieces = sorted(b.glob("fig2.tar.gz.*"))
    assert pieces and all(p.stat().st_size <= 15 * 2**20 for p in pieces)
    with tarfile.open(fileobj=io.BytesIO(b"".join(p.read_bytes() for p in pieces))) as tar:
        assert sorted(tar.getnames()) == ["fig2.csv", "fig2.json"]
        assert tar.extractfile("fig2.csv").read() == (whole / "fig2.csv").read_bytes()
    # gathering alone (no training) from the parts' folders gives the same table again
    c = tmp_path / "c"
    assert _run("--out", c, "--gather-only", "--runs-from", a / "runs", b / "runs") == 0
    assert (c / "fig2.csv").read_bytes() == (whole / "fig2.csv").read_bytes()
    prov = json.loads((c / "fig2.json").read_text())["production"]
    assert prov["trained_here"] == [] and prov["status"] == "gathered"
    assert [part["trained_here"] for part in prov["parts"]] == [[[0.0, 0], [1.0, 0]],
                                                                [[0.0, 1], [1.0, 1]]]  # fmt: skip
    assert all(part["status"] == "finished" for part in prov["parts"])
    with pytest.raises(SystemExit):
        _run("--out", c, "--seeds", 7)  # not a seed of the preset


def test_the_command_line_entry_point(tmp_path):
    """``python -m attnbias.gpu_check.recall`` is the documented command (its options)."""
    res = subprocess.run([sys.executable, "-m", "attnbias.gpu_check.recall", "--help"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("usage: python -m attnbias.gpu_check.recall")
    for option in ("--out", "--seeds", "--max-seconds", "--runs-from", "--gather-only", "--pack"):
        assert option in res.stdout
