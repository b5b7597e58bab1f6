"""A grid whose seed-mean choice sits at an edge is widened once by one factor-3 step on that side
(the rule `extend`; docs/papers/fastrates.md#learning-rate-grids-and-selection): the judge, the
table's `extend` entries, the job's record and the gather reading the widened grid."""

from __future__ import annotations

import numpy as np
import pytest
from test_fastrates_dl_claims import _four, _linear, _run, _seeded

from attnbias.claims import fastrates as fastrates_claims
from attnbias.experiments.fastrates import edge_side, gather_dl, select_runs
from attnbias.io import save_data
from attnbias.metrics.chance import LEARNED_MARGIN, majority_share
from attnbias.run import load_run
from attnbias.runs import extension_runs, run_file, write_extension
from attnbias.table.registry import point_label


def _grid(vals_by_seed, lrs=(0.01, 0.03, 0.1), opt="sgd"):
    """One optimiser's runs: validation loss ``vals_by_seed[seed][i]`` at ``lrs[i]``."""
    return [
        run
        for seed, vals in vals_by_seed.items()
        for run in _seeded(
            [_run(opt, lr, _linear(1, 0.9), 0.5, v) for lr, v in zip(lrs, vals, strict=True)],
            seed,
        )
    ]


def test_edge_side_reads_the_seed_mean_choice():
    # inside: the middle value has the lowest seed mean (0.8 against 0.9 and 0.93)
    assert edge_side(_grid({0: (0.9, 0.8, 1.0), 1: (0.9, 0.8, 0.86)})) is None
    # seed 0 alone prefers the middle value; the seed mean (0.75 < 0.8) the top: widen up
    assert edge_side(_grid({0: (0.9, 0.7, 0.8), 1: (0.9, 0.9, 0.7)})) == "up"
    assert edge_side(_grid({0: (0.6, 0.7, 0.8), 1: (0.7, 0.8, 0.9)})) == "down"
    # a diverged top value (NaN on one seed) is never chosen, so it never asks for more
    assert edge_side(_grid({0: (0.9, 0.8, np.nan), 1: (0.9, 0.8, 0.1)})) is None
    # a grid of two values has no inside: never widened
    assert edge_side(_grid({0: (0.9, 0.8)}, lrs=(0.01, 0.03))) is None
    with pytest.raises(ValueError, match="one optimiser"):
        edge_side(_grid({0: (0.9, 0.8, 1.0)}) + _grid({0: (0.9, 0.8, 1.0)}, opt="sps"))


def _with_acc(runs, accs_by_seed, counts=(36, 36, 35, 37, 36, 37, 36, 36, 35, 36)):
    """``runs`` (from :func:`_grid`, seed-major) with validation accuracies and class counts
    (digits' ten balanced classes: majority share 37/360 = 0.103)."""
    accs = [a for seed in sorted(accs_by_seed) for a in accs_by_seed[seed]]
    return [
        (df, dict(meta, val_acc_at_select=a, data_info={"class_counts": list(counts)}))
        for (df, meta), a in zip(runs, accs, strict=True)
    ]


def test_a_value_at_which_one_seed_did_not_learn_is_never_chosen():
    # the top value has the lowest seed-mean loss (0.8), but seed 1's run stayed at chance
    # (accuracy 0.11 < 0.103 + 0.02): the middle value (mean 0.85) is chosen, inside the grid
    losses = {0: (0.9, 0.9, 0.5), 1: (0.9, 0.8, 1.1)}
    accs = {0: (0.4, 0.4, 0.6), 1: (0.4, 0.45, 0.11)}
    sel = select_runs(_with_acc(_grid(losses), accs))["sgd"]
    assert sel["chosen"] == 0.03 and not sel["at_edge"]
    assert sel["learned"] == [True, True, False]
    assert sel["val_acc_by_seed"]["1"] == [0.4, 0.45, 0.11]
    assert edge_side(_with_acc(_grid(losses), accs)) is None
    # on the loss alone (no accuracies recorded) the top value wins and the grid is widened up
    assert select_runs(_grid(losses))["sgd"]["chosen"] == 0.1
    assert edge_side(_grid(losses)) == "up"
    # 0.125 on every seed is learned (>= 0.123): the top value is chosen again
    ok = {0: (0.4, 0.4, 0.6), 1: (0.4, 0.45, 0.125)}
    assert select_runs(_with_acc(_grid(losses), ok))["sgd"]["chosen"] == 0.1
    # no value learned on every seed: the seed-mean loss decides (and `trained` then fails)
    none = {0: (0.05, 0.4, 0.6), 1: (0.4, 0.05, 0.11)}
    sel = select_runs(_with_acc(_grid(losses), none))["sgd"]
    assert sel["learned"] == [False, False, False] and sel["chosen"] == 0.1


def test_the_selection_and_the_trained_check_share_one_margin():
    assert LEARNED_MARGIN == 0.02
    assert majority_share({"class_counts": [15955, 14431, 6811]}) == pytest.approx(0.4289, abs=1e-4)
    assert majority_share({}) is None and majority_share(None) is None


def test_the_table_gives_every_tuned_grid_an_extend_job():
    table = load_run(".", "quick").table
    ext = table.extensions()
    assert sorted({k[:2] for k in ext}) == [("fastrates", f) for f in ("fig1", "fig4", "fig7")]
    e = ext[("fastrates", "fig1", "optsgd_extension")]
    cfg = table.config["fastrates"]["fig1"]
    lo, hi = min(cfg["optimizers"]["sgd"]["grid"]), max(cfg["optimizers"]["sgd"]["grid"])
    seeds = cfg["seeds"]
    assert e.group == {"opt": "sgd"} and e.key == "lr" and e.factor == 3.0
    assert e.judge == "fastrates.edge_side" and len(e.runs) == 3 * len(seeds)
    # each side: the edge's runs on every seed, one factor-3 step beyond it (6 significant digits)
    def at(x):
        return float(f"{x:.6g}")

    assert e.candidates["down"] == [{"opt": "sgd", "lr": at(lo / 3), "seed": s} for s in seeds]
    assert e.candidates["up"] == [{"opt": "sgd", "lr": at(hi * 3), "seed": s} for s in seeds]
    assert e.folder == "results/data/fastrates/fig1/optsgd_extension"
    assert e.batches == ["results/data/fastrates/fig1/optsgd"]
    assert {"scripts/extend.py", "src/attnbias/experiments/fastrates/gather.py"} <= set(e.code)
    # the loop that trains, relabels or reads the runs is part of every training job's code
    assert "src/attnbias/runs.py" in e.code
    assert "src/attnbias/runs.py" in table.sweeps[("fastrates", "fig1")].code
    # the figure's gather reads every grid's extension folder
    assert table.gathers()[("fastrates", "fig1")].extensions == [
        f"results/data/fastrates/fig1/opt{o}_extension" for o in cfg["optimizers"]
    ]
    # a candidate is an ordinary run: its own file stem and resume folder
    run = table.run_params("fastrates", "fig1", e.candidates["up"][0], "results")
    assert run["label"] == point_label(e.candidates["up"][0]) == f"optsgd_lr{hi * 3:g}_seed0"
    assert run["settings"]["lr"] == at(hi * 3) and run["settings"]["opt"] == "sgd"
    # paper preset: one job per run, so the grid's runs lie in nine folders
    paper = load_run(".", "paper").table.extensions()[("fastrates", "fig1", "optsgd_extension")]
    assert len(paper.batches) == len(paper.runs) == 9


def test_the_record_names_the_runs_the_gather_reads(tmp_path):
    folder = tmp_path / "optsgd_extension"
    write_extension(folder, {"group": {"opt": "sgd"}, "key": "lr", "side": "up", "value": 0.3,
                             "runs": ["optsgd_lr0.3_seed0"]})  # fmt: skip
    run_file(folder, "optsgd_lr0.3_seed0").write_text("x\n1\n")
    empty = tmp_path / "optsps_extension"
    write_extension(empty, {"group": {"opt": "sps"}, "key": "lr", "side": None, "value": None,
                            "runs": []})  # fmt: skip
    parts, records = extension_runs([folder, empty])
    assert parts == [str(folder / "optsgd_lr0.3_seed0.csv")]
    assert [r["side"] for r in records] == ["up", None]


def test_the_gather_judges_the_widened_grid(tmp_path):
    # SNGD chose the top of {0.03, 0.1} + its extension 0.3 (widened up): now interior or edge
    def gathered(val_at_03, name):
        runs = _four() + [
            _run("sngd", 0.03, _linear(1.1, 0.7), 0.6, 0.95),
            _run("sngd", 0.3, _linear(1.1, 0.7), 0.6, val_at_03),
        ]
        parts = []
        for df, meta in runs:
            p = tmp_path / name / f"{meta['optimizer']}_lr{meta['grid_value']:g}.csv"
            save_data(df, meta, p, preset="quick")
            parts.append(str(p))
        record = {"group": {"opt": "sngd"}, "key": "lr", "side": "up", "value": 0.3, "runs": []}
        return gather_dl("fig1", parts, "quick", extensions=[record])

    df, meta = gathered(0.9, "inside")
    sel = meta["selection"]["sngd"]
    assert sel["grid"] == [0.03, 0.1, 0.3] and sel["chosen"] == 0.1 and not sel["at_edge"]
    assert "validation accuracy at least 2 points above the majority" in meta["selection_rule"]
    assert sel["extension"] == {"side": "up", "value": 0.3}
    (claim,) = [c for c in fastrates_claims.fig1((df, meta)) if c.id == "lr_interior"]
    assert claim.passed and "sngd: 0.1 of [0.03, 0.1, 0.3], widened up once" in claim.statement
    # the widened value wins: still at an edge after the one step the protocol allows
    df, meta = gathered(0.5, "edge")
    (claim,) = [c for c in fastrates_claims.fig1((df, meta)) if c.id == "lr_interior"]
    assert not claim.passed and claim.value == ["sngd"]


def test_the_control_shares_the_uncontrolled_extension_runs():
    """Under the negative control SNGD's slot runs SGD on SGD's grid, so its widened value is the
    uncontrolled SGD grid's widened value: read from that `extend` job's folder, relabelled."""
    table = load_run(".", "quick", config={"control": "null"}).table
    e = table.extensions()[("fastrates", "fig1", "optsngd_extension")]
    up = e.candidates["up"][0]
    run = table.run_params("fastrates", "fig1", up, table.results)
    assert run["shared"] == {
        "folder": f"{table.uncontrolled}/data/fastrates/fig1/optsgd_extension",
        "label": point_label(dict(up, opt="sgd")),
        "relabel": "fastrates.runs.as_control_run",
    }
    # the uncontrolled run itself shares nothing
    assert "shared" not in table.run_params("fastrates", "fig1", up, table.uncontrolled)


def test_a_shared_run_missing_upstream_is_trained(tmp_path, monkeypatch):
    import logging

    import pandas as pd

    import attnbias.runs as runs_mod

    calls = []

    def toy(**kw):
        calls.append(kw["lr"])
        return {"csv": (pd.DataFrame({"step": [0], "loss": [kw["lr"]]}),
                        {"columns": {"step": "s", "loss": "l"}})}  # fmt: skip

    monkeypatch.setattr(runs_mod, "resolve", lambda prefix, name: toy)
    run = {
        "settings": {"lr": 0.3}, "label": "optsngd_lr0.3_seed0",
        "checkpoint": str(tmp_path / "s" / "ckpt.pt"), "metrics_log": str(tmp_path / "s" / "m"),
        "finished": str(tmp_path / "s" / "finished"),
        "shared": {"folder": str(tmp_path / "none"), "label": "optsgd_lr0.3_seed0",
                   "relabel": "fastrates.runs.as_control_run"},
    }  # fmt: skip
    runs_mod.train_runs("toy", [run], tmp_path / "out", {}, "quick", "cpu",
                        logging.getLogger("t"))  # fmt: skip
    assert calls == [0.3] and (tmp_path / "out" / "optsngd_lr0.3_seed0.csv").exists()
