"""The figure table built by import (attnbias.table), as the Snakefile builds it: its entries, each
run's settings (point, control, seed shift), the batches, the runs the negative control shares,
and the errors that name their key.  That the Snakefile's own table equals this one is checked in
tests/workflow/test_table_parse.py."""

from pathlib import Path

import pytest

from attnbias.run import RunError, load_run
from attnbias.table.registry import (
    Compute,
    Figure,
    Sweep,
    Table,
    TableError,
    point_label,
)
from attnbias.workflow import SEED_STRIDE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick() -> Table:
    return load_run(ROOT).table


def test_every_kind_of_entry_is_typed(quick):
    assert len(quick.figures) >= 41
    assert all(isinstance(f, Figure) for f in quick.figures.values())
    assert all(isinstance(c, Compute) for c in quick.computes.values())
    assert all(isinstance(s, Sweep) for s in quick.sweeps.values())
    # a staged group: its trajectories read its own stage files; Figs 8-10 read Fig 2's
    fig1 = quick.computes[("maxmargin", "fig1")]
    assert fig1.func == "maxmargin.synthetic.trajectories_fig1"
    assert fig1.inputs == {
        "instance": "results/stages/maxmargin/fig1.instance.npz",
        "svm": "results/stages/maxmargin/fig1.svm.npz",
    }
    assert quick.stage_owner[("fastrates", "fig9")] == "fig2"
    assert quick.figures[("maxmargin", "fig1c")].data == quick.data_files("maxmargin", "fig1")
    # every job's code input is computed from its imports and holds its function's module
    assert "src/attnbias/experiments/maxmargin/synthetic.py" in fig1.code
    assert "scripts/train.py" in quick.sweeps[("lowrank", "fig2")].code
    # a table written beside its figure: the file defining its writer is part of its code
    assert "src/attnbias/table/lowrank.py" in quick.table_files[("lowrank", "table1")].code


def test_a_run_gets_its_block_without_the_sweep_keys_and_its_point(quick):
    sweep = quick.sweeps[("lowrank", "fig2")]
    point = sweep.points[0]
    params = quick.run_params("lowrank", "fig2", point, quick.results)
    settings = params["settings"]
    assert {k: settings[k] for k in point} == point  # the point, typed as given
    assert "lambdas" not in settings["settings"] and "seeds" not in settings["settings"]
    assert settings["settings"]["steps"] == quick.config["lowrank"]["fig2"]["steps"]
    assert "control" not in settings  # the default run's params carry no control key
    label = point_label(point)
    assert params["label"] == label == "lam0_seed0"
    assert params["checkpoint"] == f"results/scratch/lowrank_fig2_train/quick/{label}/checkpoint.pt"


def test_quick_batches_group_the_points_the_paper_preset_runs_one_by_one(quick):
    fr = quick.sweeps[("fastrates", "fig1")]
    assert sorted(fr.batches) == ["optadamw", "optsgd", "optsngd", "optsps"]
    assert sum(len(p) for p in fr.batches.values()) == len(fr.points)
    paper = load_run(ROOT, scale="paper").table
    s = paper.sweeps[("fastrates", "fig1")]
    assert len(s.batches) == len(s.points) and s.gpu
    assert s.resources["gpu_mem_mb"] == 9000  # the paper preset's resources
    assert paper.results == "results/paper"


def test_the_control_reaches_deep_learning_runs_only_and_shares_unchanged_runs():
    table = load_run(ROOT, config={"control": "null"}).table
    assert table.results == "results/control-null" and table.uncontrolled == "results"
    shown = set(table.shown_figures())
    assert ("fastrates", "fig1") in shown and ("maxmargin", "fig1c") not in shown
    sweep = table.sweeps[("lowrank", "fig2")]
    point = {"lam": 1.0, "seed": 0}
    assert point in sweep.points
    params = table.run_params("lowrank", "fig2", point, table.results)
    assert params["settings"]["control"] == "null"
    # every λ trains as λ = 0 under the control: the default run's λ = 0 run, relabelled
    assert params["shared"] == {
        "folder": "results/data/lowrank/fig2/lam0",
        "label": "lam0_seed0",
        "relabel": "lowrank.recall.as_control_run",
    }
    # the uncontrolled folder's own run: no control key, nothing shared
    own = table.run_params("lowrank", "fig2", point, table.uncontrolled)
    assert "control" not in own["settings"] and "shared" not in own
    assert table.computes[("lowrank", "fig4")].settings["control"] == "null"


def test_a_seed_shift_moves_every_run_seed_into_its_own_folder(quick):
    shifted = load_run(ROOT, config={"seed": 2}).table
    assert shifted.results == "results/seed-2"
    seeds = sorted({p["seed"] for p in shifted.sweeps[("maxmargin", "vit")].points})
    base = sorted({p["seed"] for p in quick.sweeps[("maxmargin", "vit")].points})
    assert seeds == [s + 2 * SEED_STRIDE for s in base]


def test_a_missing_local_source_names_its_key(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(RunError, match=r"lowrank\.vit\.source = .*is not a directory"):
        load_run(ROOT, config={"lowrank": {"vit": {"source": str(missing)}}})


def test_a_batch_must_name_point_keys(quick):
    with pytest.raises(TableError, match="batch"):
        quick.register_sweep(
            "lowrank", "bad", points=[{"lam": 0.0}], func="lowrank.recall.train_recall_job",
            settings={}, gathers={}, batch="seed",
        )  # fmt: skip
    assert ("lowrank", "bad") not in quick.sweeps
