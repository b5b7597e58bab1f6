"""`--config seed=N` reruns figures on other random draws: every seed of every figure shifts by
N × SEED_STRIDE (a million: no draw is shared with the default run's), nothing else changes, and
the claims are computed on the new draws."""

import json

import pytest
from conftest import ci_configfiles, ci_copy, snakemake_cmd

# Cheap figures whose settings hold seeds of each kind: a list of data seeds (fastrates fig2), a
# single seed (lowrank fig1), a data seed and an init seed (nucnorm p4).
GROUPS = {("fastrates", "fig2"): "fig2", ("lowrank", "fig1"): "fig1", ("nucnorm", "p4"): "p4"}


@pytest.mark.slow
def test_seed_switch_shifts_every_seed_and_only_seeds(tmp_path):
    d = ci_copy(tmp_path / "wf")  # the CI settings are its reference run: results/seed-7/
    targets = [f"results/seed-7/claims/{paper}/{fig}.json" for (paper, fig) in GROUPS]
    res = snakemake_cmd(
        "--cores", "2", *targets, "--configfile", *ci_configfiles(d), "--config", "seed=7",
        cwd=d, timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-4000:]
    for (paper, _), fig in GROUPS.items():
        claims = json.loads((d / f"results/seed-7/claims/{paper}/{fig}.json").read_text())
        claims = claims["claims"]
        assert claims and all("passed" in c for c in claims)
    fr = json.loads((d / "results/seed-7/data/fastrates/fig2.json").read_text())["settings"]
    assert fr["seeds"] == [7_000_000, 7_000_001]  # CI seeds [0, 1] shifted by 7 × 10⁶
    lr = json.loads((d / "results/seed-7/data/lowrank/fig1.json").read_text())["settings"]
    assert lr["seed"] == 7_000_000 and lr["lr"] == 0.05  # the seed moved, the step size did not
    nn = json.loads((d / "results/seed-7/data/nucnorm/p4.json").read_text())["settings"]
    assert (nn["seed"], nn["init_seed"]) == (7_000_000, 7_000_000) and nn["steps"] == 2000
