"""Dry runs of the DAG and config validation (snakemake CLI through subprocess).

Every call runs in the session's private copy of the workflow (``conftest.workflow_copy``), so what
is scheduled never depends on the results of the user's own runs in the checkout."""

import re

import pytest
import yaml
from conftest import ci_configfiles, job_outputs, registered_figures, snakemake_cmd


def ran(res, rule: str) -> bool:
    """Whether a dry run schedules a job of ``rule``."""
    return re.search(rf"^(local)?rule {rule}:", res.stdout, re.M) is not None


def test_rules_are_written_once_and_named_alike_in_both_presets():
    """The rule names do not depend on the preset: `train` runs every training batch of both
    (a quick-preset group of runs, or one paper-preset run), maxmargin's ViT included, and
    `download` every hub download; the paper preset adds only their alias targets
    (`<paper>_download_<name>`)."""
    # one rule a line, its name first (a target's description follows in parentheses)
    quick = snakemake_cmd("--list-rules", "--nolock", check=True).stdout
    paper = snakemake_cmd("--list-rules", "--nolock", "--config", "scale=paper", check=True).stdout
    quick, paper = ({x.split()[0] for x in out.splitlines() if x.strip()} for out in (quick, paper))
    written_once = {"instance", "svm", "compute", "train", "extend", "gather", "precomputed"}
    written_once |= {"check", "plot"}
    written_once |= {"table_files", "download"}
    assert written_once <= quick & paper
    downloads = {r for r in paper - quick if re.fullmatch(r"[a-z]+_download_[\w-]+", r)}
    assert quick ^ paper == downloads and downloads
    assert not {r for r in quick | paper if "train" in r} - {"train"}
    assert "maxmargin_fig1c" in quick & paper and "maxmargin" in quick & paper


@pytest.fixture(scope="module")
def dry_runs_of_all():
    """Forced dry runs of `all` in the quick and in the paper preset (shared by the tests below)."""
    cmd = ("-n", "--cores", "1", "--nolock", "--forceall", "all")
    return {
        "quick": snakemake_cmd(*cmd),
        "paper": snakemake_cmd(*cmd, "--config", "scale=paper"),
    }


def test_the_dag_of_all_has_the_same_rules_in_both_presets(dry_runs_of_all):
    """The jobs of `all` are of the same rules in both presets, hub downloads aside (a quick
    batch of runs and a paper-preset run are both jobs of `train`)."""
    rules = {}
    for preset, res in dry_runs_of_all.items():
        assert res.returncode == 0, res.stderr[-3000:]
        found = set(re.findall(r"^(?:local)?rule (\w+):", res.stdout, re.M))
        rules[preset] = found - {"download"}  # the quick preset downloads nothing
    assert rules["quick"] == rules["paper"]
    assert {"train", "extend", "gather", "compute", "plot", "check"} <= rules["quick"]


FIGS = registered_figures()


def test_registry_has_every_maxmargin_figure():
    ids = {f for p, f in FIGS if p == "maxmargin"}
    expected = (
        "fig1a fig1b fig1c fig2 fig3a fig3b fig3c fig4a fig4b fig5 fig8 fig9a fig9b fig10".split()
    )
    assert set(expected) <= ids


def test_dry_run_all_default_config(dry_runs_of_all):
    res = dry_runs_of_all["quick"]
    assert res.returncode == 0, res.stderr[-3000:]
    assert ran(res, "compute") and "results/data/maxmargin/fig1.csv" in res.stdout


@pytest.fixture(scope="module")
def dry_run_of_every_figure_file():
    """One forced dry run naming every registered figure's PDF as a target (one run, not one per
    figure: each costs Snakemake's start and parse, about two seconds, and the DAG of a target is
    the same whether it is asked for alone or beside others)."""
    targets = [f"results/figures/{p}/{f}.pdf" for p, f in FIGS]
    return snakemake_cmd("-n", "--cores", "1", "--nolock", "--forceall", *targets)


@pytest.mark.parametrize("paper,fig", FIGS, ids=[f"{p}/{f}" for p, f in FIGS])
def test_dry_run_each_figure_file(dry_run_of_every_figure_file, paper, fig):
    res = dry_run_of_every_figure_file
    assert res.returncode == 0, res.stderr[-3000:]
    # the figure is drawn by a `plot` job and its claims judged by a `check` job (first outputs)
    assert f"results/figures/{paper}/{fig}.pdf" in job_outputs(res.stdout, "plot")
    assert f"results/claims/{paper}/{fig}.json" in job_outputs(res.stdout, "check")


def test_paper_targets_dry_run():
    for paper in ("maxmargin", "fastrates", "nucnorm", "lowrank"):
        res = snakemake_cmd("-n", "--cores", "1", "--nolock", paper, "--forceall")
        assert res.returncode == 0, (paper, res.stderr[-3000:])


def test_paper_scale_builds_offline(dry_runs_of_all):
    res = dry_runs_of_all["paper"]
    assert res.returncode == 0, res.stderr[-3000:]


def test_precomputed_quick_trains_on_cpu():
    """Quick-preset GPU figures are CPU runs: precomputed changes nothing there."""
    res = snakemake_cmd(
        "-n",
        "--cores",
        "1",
        "--nolock",
        "gpu_figures",
        "--forceall",
        "--config",
        "gpu_results=precomputed",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    # maxmargin Figs 6-7: the ViT run (a `train` job) and its gathers
    assert "results/data/maxmargin/vit/seed0" in res.stdout and ran(res, "gather")


def test_precomputed_paper_without_committed_results_is_a_clear_error():
    res = snakemake_cmd(
        "-n",
        "--cores",
        "1",
        "--nolock",
        "gpu_figures",
        "--config",
        "scale=paper",
        "gpu_results=precomputed",
    )
    assert res.returncode != 0
    assert "no precomputed results are committed" in res.stdout + res.stderr


def test_precomputed_paper_copies_committed_results(tmp_path):
    from conftest import copy_workflow

    d = copy_workflow(tmp_path / "wf")
    for fig in ("fig6", "fig7"):
        pc = d / "workflow" / "precomputed" / "maxmargin" / fig
        pc.mkdir(parents=True)
        for ext in ("csv", "json"):
            (pc / f"{fig}.{ext}").write_text("")
    res = snakemake_cmd(
        "-n",
        "--cores",
        "1",
        "results/paper/data/maxmargin/fig7.csv",  # the paper preset's own results folder
        "--config",
        "scale=paper",
        "gpu_results=precomputed",
        cwd=d,
    )
    assert res.returncode == 0, res.stdout[-3000:]
    assert ran(res, "precomputed")
    assert "precomputed/maxmargin/fig7/fig7.csv" in res.stdout
    assert not ran(res, "train") and not ran(res, "gather")


def test_ci_config_is_schema_valid():
    args = ["--configfile", *ci_configfiles()]
    res = snakemake_cmd("-n", "--cores", "1", "--nolock", "all", "--forceall", *args)
    assert res.returncode == 0, res.stderr[-3000:]


@pytest.mark.parametrize("control", ["control=null", "control=none"])
def test_negative_control_switch_is_accepted(control):
    """`--config control=null` arrives as YAML null and selects the control; `none` is the
    default.  (What the control does is tested end to end in test_end_to_end.py.)"""
    res = snakemake_cmd("-n", "--cores", "1", "--nolock", "all", "--config", control)
    assert res.returncode == 0, res.stderr[-3000:]
    trains = set(re.findall(r"^rule train:\n(?:.*\n)*?\s+output: (\S+)", res.stdout, re.M))
    if control == "control=none":
        assert trains and not any("control-null" in t for t in trains)
        return
    # the runs the control does not change are the default run's (trained in results/ first):
    # fastrates' SGD and AdamW batches (SNGD's grid is SGD's), every lowrank sweep's λ = 0 batch
    assert {t for t in trains if not t.startswith("results/control-null/")} == {
        *(f"results/data/fastrates/{f}/opt{o}" for f in ("fig1", "fig4", "fig7")
          for o in ("sgd", "adamw")),
        "results/data/lowrank/fig2/lam0", "results/data/lowrank/lm/sa0_mlp0.1",
        "results/data/lowrank/vit/attn0",
    }  # fmt: skip
    assert "results/control-null/data/maxmargin/vit/seed0" in trains


def _run_with_config(tmp_path, cfg: dict):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return snakemake_cmd("-n", "--cores", "1", "--nolock", "all", "--configfile", path)


@pytest.mark.parametrize(
    "cfg,expected",
    [
        ({"scael": "quick"}, "config error at (top level): unknown key(s) scael"),
        ({"scale": "huge"}, "config error at scale: 'huge' is not one of"),
        ({"claims_strict": "maybe"}, "claims_strict = 'maybe'"),
        ({"control": "placebo"}, "config error at control: 'placebo'"),
        ({"maxmargin": {"fig1": {"stepz": 10}}}, "at maxmargin.fig1: unknown key(s) stepz"),
        ({"maxmargin": {"fig1": {"steps": 0}}}, "at maxmargin.fig1.steps: 0 is less than"),
        ({"fastrates": {"fig2": {"n": -3}}}, "at fastrates.fig2.n: -3 is less than"),
        ({"maxmargin": {"fig9": {"trials": "many"}}}, "maxmargin.fig9.trials"),
        ({"maxmargin": {"fig77": {}}}, "at maxmargin: unknown key(s) fig77"),
    ],
)
def test_invalid_config_is_rejected_in_a_few_lines_naming_the_key(tmp_path, cfg, expected):
    res = _run_with_config(tmp_path, cfg)
    assert res.returncode != 0
    out = res.stdout + res.stderr
    error = out[out.index("WorkflowError") :].strip().splitlines()
    assert len(error) <= 10, error  # was a dump of the whole schema (566 lines for a typo)
    assert expected in "\n".join(error), error


def test_boolean_switch_from_command_line():
    res = snakemake_cmd(
        "-n", "--cores", "1", "--nolock", "all", "--forceall", "--config", "claims_strict=true"
    )
    assert res.returncode == 0, res.stdout[-2000:]
    assert "claims_gate" in res.stdout


def _paper_dry_run(tmp_path, cfg: dict):
    path = tmp_path / "paper.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return snakemake_cmd(
        "-n", "--cores", "1", "--nolock", "lowrank", "--forceall",
        "--config", "scale=paper", "--configfile", path,
    )  # fmt: skip


def test_lm_layers_beyond_the_model_are_rejected_naming_the_keys(tmp_path):
    # the paper's figC layers [7, 9] need >= 9 layers: with 8 the parse fails, naming the key
    res = _paper_dry_run(tmp_path, {"lowrank": {"lm": {"n_layer": 8}}})
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "lowrank.figC.layers has [9]" in out and "lowrank.lm.n_layer = 8" in out
    assert "lowrank.fig3.layers" not in out  # layer 5 exists
    res = _paper_dry_run(tmp_path, {"lowrank": {"lm": {"n_layer": 4}}})
    out = res.stdout + res.stderr
    assert "lowrank.fig3.layers has [5]" in out and "lowrank.figC.layers has [7, 9]" in out
    res = _paper_dry_run(tmp_path, {"lowrank": {"lm": {"n_layer": 9}}})  # layers count from 1
    assert res.returncode == 0, res.stderr[-3000:]


def test_one_seed_table1_is_valid(tmp_path):
    res = _paper_dry_run(tmp_path, {"lowrank": {"table1": {"seeds": [0]}}})
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    # an override of the paper preset: its own folder, named after the difference
    logs = "results/paper/custom/lowrank.table1.seeds-0/logs"
    assert ran(res, "gather") and f"{logs}/gather/lowrank/table1.log" in res.stdout


def test_nested_config_override_is_typed_by_the_schema():
    """`--config maxmargin='{fig4: {steps: 500}}'`: Snakemake passes the nested 500 as a string;
    the workflow types it as the schema declares (integer), so the override just works."""
    res = snakemake_cmd(
        "-n", "--cores", "1", "--nolock", "maxmargin_fig4a", "--forceall",
        "--config", "maxmargin={fig4: {steps: 500, lr_gd: 0.5}}",
        "fastrates={fig1: {full_final_test: true, layers: null}}",
        "lowrank={fig2: {lr: 1e-3, seeds: [0, 1]}}",
    )  # fmt: skip
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    # five settings differ (lowrank.fig2.lr = 1e-3 is the default's 0.001): a digest folder
    assert re.search(r"results/custom/5-settings-[0-9a-f]{12}/data/maxmargin/fig4\.csv", res.stdout)


def test_nested_config_override_of_the_wrong_type_fails_at_once_saying_how():
    res = snakemake_cmd(
        "-n", "--cores", "1", "--nolock", "all", "--config", "maxmargin={fig4: {steps: many}}"
    )
    assert res.returncode != 0
    out = res.stdout + res.stderr
    error = out[out.index("WorkflowError") :].strip().splitlines()
    assert len(error) <= 10, error
    assert "maxmargin.fig4.steps" in error[1] and "integer" in error[1]
    assert "--configfile" in out and "--config maxmargin='{fig4: {steps: <integer>}}'" in out
