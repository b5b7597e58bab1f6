"""A one-off override never touches the reference run, and a run never mixes settings.

A run whose paper settings differ, after ``--configfile``/``--config``, from its preset's
reference run (config.yaml, plus workflow/presets/paper.yaml for the paper preset) writes into its
own folder, ``results/[paper/]custom/<differences>/``, which records them in ``overrides.yaml``
(attnbias.layout).  The reference run's files stay byte for byte as they were; a setting restated
at its reference value is no override (and reruns nothing); editing config.yaml itself moves the
reference, so the default run reruns what changed, in place.

The unit tests below check the comparison and the names; the slow ones run maxmargin Fig 1(c)
(a synthetic figure of seconds) in a copy of the workflow: the issue's own case, 500 steps.
"""

import json
import re

import pytest
import yaml
from conftest import ROOT, clone_run, set_reference, snakemake_cmd

from attnbias.layout import (
    MAX_NAME_LEN,
    OVERRIDES_FILE,
    SCIENTIFIC,
    compare_with_reference,
    describe_overrides,
    differences,
    like_reference,
    override_name,
    reference_config,
    results_folder,
    results_root,
    write_overrides,
)

STEPS_500 = {"maxmargin": {"fig1": {"steps": 500}}}
FOLDER_500 = "results/custom/maxmargin.fig1.steps-500"


# --- the comparison ---------------------------------------------------------------------------


def test_differences_name_each_changed_leaf_with_both_values_in_config_order():
    ref = {"maxmargin": {"fig1": {"steps": 1000, "lr": 0.1}, "fig2": {"mu": 0.1}}, "seed": 0}
    cfg = {"maxmargin": {"fig2": {"mu": 0.2}, "fig1": {"lr": 0.1, "steps": 500}}, "seed": 3}
    assert differences(cfg, ref) == [
        ("maxmargin.fig1.steps", 1000, 500),
        ("maxmargin.fig2.mu", 0.1, 0.2),
    ]  # the seed is not compared: it has its own folder


def test_equal_values_are_no_difference_whatever_their_spelling():
    ref = {"fastrates": {"fig2": {"lr": 1.0, "seeds": [0, 1], "polyak_cap": None, "x": False}}}
    same = {"fastrates": {"fig2": {"lr": 1, "seeds": [0.0, 1], "polyak_cap": None, "x": False}}}
    assert differences(same, ref) == []
    other = {"fastrates": {"fig2": {"lr": 1.0, "seeds": [0, 1], "polyak_cap": None, "x": 0}}}
    assert differences(other, ref) == [("fastrates.fig2.x", False, 0)]  # a bool is not a number
    listed = {"fastrates": {"fig2": {"lr": [1.0], "seeds": [0], "polyak_cap": None, "x": False}}}
    paths = [p for p, *_ in differences(listed, ref)]
    assert paths == ["fastrates.fig2.lr", "fastrates.fig2.seeds"]


def test_a_restated_setting_takes_the_reference_spelling():
    ref = {"lr": 1.0, "inits": [1.0, 0.5], "steps": 1000}
    got = like_reference({"lr": 1, "inits": [1, 0.5], "steps": 500}, ref)
    assert got == {"lr": 1.0, "inits": [1.0, 0.5], "steps": 500}
    assert repr(got["lr"]) == "1.0" and repr(got["inits"]) == "[1.0, 0.5]"


def test_the_scientific_settings_are_the_paper_sections():
    from attnbias.workflow import PAPERS

    assert SCIENTIFIC == PAPERS


def test_the_reference_is_config_yaml_and_for_the_paper_preset_its_overlay():
    quick, paper = reference_config(ROOT, "quick"), reference_config(ROOT, "paper")
    on_disk = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert quick["maxmargin"]["fig1"] == on_disk["maxmargin"]["fig1"]
    assert paper["maxmargin"]["vit"]["dataset"] == "cifar10"  # workflow/presets/paper.yaml
    assert differences(quick, reference_config(ROOT, "quick")) == []
    cfg = reference_config(ROOT, "quick")
    cfg["maxmargin"]["fig1"]["steps"] = 500
    cfg["maxmargin"]["fig1"]["lr"] = 1 / 10  # restated
    assert compare_with_reference(cfg, ROOT) == (
        [("maxmargin.fig1.steps", 1000, 500)],
        "maxmargin.fig1.steps-500",
    )


# --- the folder names --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scale, control, seed, override, folder",
    [
        ("quick", "none", 0, "", "results"),
        ("quick", "none", 0, "a.b-1", "results/custom/a.b-1"),
        ("paper", "none", 0, "a.b-1", "results/paper/custom/a.b-1"),
        ("quick", "null", 2, "a.b-1", "results/custom/a.b-1/control-null/seed-2"),
        ("paper", "null", 2, "", "results/paper/control-null/seed-2"),
    ],
)
def test_an_override_folder_composes_with_preset_control_and_seed(
    scale, control, seed, override, folder
):
    assert results_root(scale, control, seed, override) == folder


def test_readable_names_and_their_digest_fallback(tmp_path):
    one = [("maxmargin.fig1.steps", 1000, 500)]
    assert override_name([]) == ""
    assert override_name(one, root=tmp_path) == "maxmargin.fig1.steps-500"
    three = [("lowrank.fig2.seeds", [0], [0, 1]), ("lowrank.fig2.lr", 0.001, 0.003),
             ("lowrank.fig2.betas", [0.9, 0.999], [0.9, 0.95])]  # fmt: skip
    assert override_name(three, root=tmp_path) == (
        "lowrank.fig2.seeds-0,1+lowrank.fig2.lr-0.003+lowrank.fig2.betas-0.9,0.95"
    )
    four = three + [("lowrank.fig2.steps", 1800, 100)]
    assert re.fullmatch(r"4-settings-[0-9a-f]{12}", override_name(four, root=tmp_path))
    long = [("nucnorm.p5.d_values", [2], list(range(2, 40)))]
    assert len("nucnorm.p5.d_values-" + ",".join(map(str, range(2, 40)))) > MAX_NAME_LEN
    assert override_name(long, root=tmp_path).startswith("1-settings-")
    path = [("lowrank.lm.source", None, "/data/my pile")]  # no slashes or spaces in a name
    assert override_name(path, root=tmp_path).startswith("1-settings-")
    # the name depends on the values used only, and the same differences give the same name
    moved = [("maxmargin.fig1.steps", 2000, 500.0)]
    assert override_name(moved, root=tmp_path) == override_name(one, root=tmp_path)
    assert override_name(four, root=tmp_path) == override_name(list(four), root=tmp_path)


def test_a_readable_name_already_holding_other_settings_falls_back_to_the_digest(tmp_path):
    """fastrates.fig6.lr takes a number or a list: 0.3 and [0.3] read alike."""
    number = [("fastrates.fig6.lr", [0.1, 0.3, 1.0, 3.0], 0.3)]
    listed = [("fastrates.fig6.lr", [0.1, 0.3, 1.0, 3.0], [0.3])]
    name = override_name(number, root=tmp_path)
    assert name == override_name(listed, root=tmp_path) == "fastrates.fig6.lr-0.3"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        assert write_overrides("quick", name, number)
        assert not write_overrides("quick", name, number)  # already says so: left alone
    assert override_name(number, root=tmp_path) == name
    assert re.fullmatch(r"1-settings-[0-9a-f]{12}", override_name(listed, root=tmp_path))


def test_overrides_yaml_records_each_difference(tmp_path):
    diffs = [("maxmargin.fig1.steps", 1000, 500), ("maxmargin.fig1.inits", [1.0], [0.5, 0.0])]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        assert not write_overrides("paper", "", [])  # the reference run records nothing
        assert write_overrides("paper", "x", diffs)
    text = (tmp_path / "results/paper/custom/x" / OVERRIDES_FILE).read_text()
    assert "config.yaml + workflow/presets/paper.yaml" in text
    assert yaml.safe_load(text) == {
        "overrides": {
            "maxmargin.fig1.steps": {"default": 1000, "used": 500},
            "maxmargin.fig1.inits": {"default": [1.0], "used": [0.5, 0.0]},
        }
    }


def test_the_summary_is_told_each_difference():
    """The claims summary's ``shows`` param gets these lines (common.smk SHOWS_OVERRIDES)."""
    diffs = [("maxmargin.fig1.steps", 1000, 500), ("lowrank.lm.source", None, "/data/pile")]
    assert describe_overrides(diffs) == [
        "maxmargin.fig1.steps = 500 (reference: 1000)",
        'lowrank.lm.source = "/data/pile" (reference: null)',
    ]


def test_results_folder_of_command_line_settings(tmp_path):
    assert results_folder(ROOT) == "results"
    assert results_folder(ROOT, config={"maxmargin": {"fig1": {"steps": 1000}}}) == "results"
    assert results_folder(ROOT, config=STEPS_500) == FOLDER_500
    assert results_folder(ROOT, config={**STEPS_500, "seed": 2}) == f"{FOLDER_500}/seed-2"
    paper = results_folder(ROOT, config={**STEPS_500, "scale": "paper", "control": None})
    assert paper == "results/paper/custom/maxmargin.fig1.steps-500/control-null"
    # the paper overlay's own values are the paper preset's reference, not an override
    vit = {"maxmargin": {"vit": {"dataset": "cifar10"}}, "scale": "paper"}
    assert results_folder(ROOT, config=vit) == "results/paper"
    cfg = tmp_path / "my.yaml"
    cfg.write_text("maxmargin:\n  fig1: {steps: 500}\naccelerator: cpu\nclaims_strict: true\n")
    assert results_folder(ROOT, configfiles=[cfg]) == FOLDER_500  # switches are no settings


# --- real runs of one figure -------------------------------------------------------------------

TARGET = "maxmargin_fig1c"


def files(root):
    """{path: (bytes, mtime_ns)} of every file of the default run (results/, the other runs'
    sub-folders left out)."""
    base = root / "results"
    return {
        str(p.relative_to(base)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in base.rglob("*")
        if p.is_file() and p.relative_to(base).parts[0] not in ("custom", "paper", "stale")
    }


def planned(res) -> list[str]:
    text = res.stdout + res.stderr
    return [] if "Nothing to be done" in text else re.findall(r"^(?:local)?rule (\w+):", text, re.M)


@pytest.fixture(scope="module")
def overridden(finished_fig1c, tmp_path_factory):
    """A clone of the session's finished default ``maxmargin_fig1c`` in which the issue's override
    then ran: ``--configfile my.yaml`` with ``maxmargin: {fig1: {steps: 500}}``."""
    d = clone_run(finished_fig1c, tmp_path_factory.mktemp("override") / "checkout")
    before = files(d)
    my = d.parent / "my.yaml"
    my.write_text("maxmargin:\n  fig1: {steps: 500}\n")
    res = snakemake_cmd("--cores", "2", TARGET, "--configfile", my, cwd=d, timeout=900)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    return d, before, my, res


@pytest.mark.slow
def test_an_override_runs_in_its_own_folder_and_leaves_the_default_run_byte_identical(overridden):
    d, before, _, res = overridden
    assert before and files(d) == before  # same files, same bytes, same dates
    out = d / FOLDER_500
    meta = json.loads((out / "data/maxmargin/fig1.json").read_text())
    assert meta["settings"]["steps"] == 500
    default = json.loads((d / "results/data/maxmargin/fig1.json").read_text())
    assert default["settings"]["steps"] == 1000
    for product in ("claims/maxmargin/fig1c.json", "figures/maxmargin/fig1c.pdf"):
        assert (out / product).is_file(), product
    # only the figure asked for: no figure of the default run is shown as this run's
    assert not (out / "figures/maxmargin/fig1a.pdf").exists()
    recorded = yaml.safe_load((out / OVERRIDES_FILE).read_text())
    assert recorded == {"overrides": {"maxmargin.fig1.steps": {"default": 1000, "used": 500}}}


@pytest.mark.slow
def test_both_runs_are_up_to_date_afterwards(overridden):
    d, _, my, _ = overridden
    for args in ([], ["--configfile", my], ["--config", "maxmargin={fig1: {steps: 500}}"]):
        res = snakemake_cmd("-n", "--cores", "1", TARGET, *args, cwd=d, check=True)
        assert planned(res) == [], (args, res.stdout[-2000:])


@pytest.mark.slow
def test_a_setting_restated_at_its_reference_value_is_no_override(overridden):
    """Equal values in any spelling (1000; inits as integers) run in results/ and rerun
    nothing there: their params are the reference's, exactly."""
    d, _, _, _ = overridden
    same = "maxmargin={fig1: {steps: 1000, inits: [1, 0.5, 0, -0.5, -1, -1.5]}}"
    res = snakemake_cmd("-n", "--cores", "1", TARGET, "--config", same, cwd=d, check=True)
    assert planned(res) == [], res.stdout[-2000:]
    forced = snakemake_cmd("-n", "-F", "--cores", "1", TARGET, "--config", same, cwd=d, check=True)
    assert "results/data/maxmargin/fig1.csv" in forced.stdout
    assert "results/custom" not in forced.stdout


@pytest.mark.slow
def test_editing_config_yaml_reruns_the_default_run_in_place(overridden, tmp_path):
    d = clone_run(overridden[0], tmp_path / "edited")
    set_reference(d, STEPS_500)  # config.yaml now says 500 steps
    res = snakemake_cmd("-n", "--cores", "1", TARGET, cwd=d, check=True)
    jobs = sorted(j for j in planned(res) if j != TARGET)
    assert jobs == ["check", "compute", "plot"], jobs
    assert "Params have changed" in res.stdout + res.stderr
    assert "results/data/maxmargin/fig1.csv" in res.stdout and "results/custom" not in res.stdout
    # the same settings given on the command line are now the reference's: no override
    assert results_folder(d, config=STEPS_500) == "results"


@pytest.mark.slow
def test_the_seed_runs_of_an_override_stay_in_its_folder(overridden):
    """`snakemake robustness` runs every seed with the settings this run was given (its
    robustness/config.yaml): those runs compute the same differences, so they land in the
    override's folder, where this run's robustness rules look for them."""
    d, _, my, _ = overridden
    given = f"{FOLDER_500}/robustness/config.yaml"
    snakemake_cmd("--cores", "1", given, "--configfile", my, cwd=d, check=True)
    seed_run = results_folder(d, configfiles=[d / given], config={"seed": 3})
    assert seed_run == f"{FOLDER_500}/seed-3"
