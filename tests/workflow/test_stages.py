"""The stages of a synthetic figure are rules: `instance` (the data) → `svm` (its max-margin
solutions) → `compute` (the GD trajectories) → `check`/`plot`, each writing files, so a GD
setting reruns the trajectories only and a data setting reruns the data, the SVMs and what is
made from them.

In a private copy of the workflow the stages of one small group really run (maxmargin Fig 5,
whose C values are data settings and whose steps and step size are GD settings); dry runs with a
setting changed in the copy's config.yaml (its reference run's settings) show what is out of
date.  That the check and plot jobs follow the data is the
rule graph's edges."""

import re

import pytest
from conftest import ROOT, copy_workflow, set_reference, snakemake_cmd

from attnbias.layout import results_folder


def planned(res) -> list[str]:
    """The rule names of the jobs a dry run schedules, sorted."""
    return sorted(re.findall(r"^(?:local)?rule (\w+):", res.stdout + res.stderr, re.M))


def rule_edges(dot: str) -> set[tuple[str, str]]:
    """The (from, to) rule-name edges of `snakemake --rulegraph` output."""
    names = dict(re.findall(r'^\s*(\d+)\[label = "(\w+)"', dot, re.M))
    return {(names[a], names[b]) for a, b in re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M)}


def test_the_rulegraph_chains_instance_svm_compute_check_plot():
    res = snakemake_cmd("--rulegraph", "--nolock", "maxmargin_fig1c", "maxmargin_fig5", check=True)
    edges = rule_edges(res.stdout)
    expected = {
        ("instance", "svm"),
        ("instance", "compute"),
        ("svm", "compute"),
        ("compute", "check"),
        ("compute", "plot"),
        ("check", "plot"),
    }
    assert expected <= edges, sorted(edges)


def test_every_nucnorm_group_runs_in_three_stages():
    """p1-p3 too, although their instance selection solves SVMs and runs GD (a premise)."""
    groups = [f"p{k}" for k in range(1, 6)]
    res = snakemake_cmd(
        "-n", "--forceall", "--nolock", "--cores", "1",
        *(f"results/data/nucnorm/{g}.csv" for g in groups), check=True,
    )  # fmt: skip
    assert planned(res) == sorted(["instance", "svm", "compute"] * len(groups))
    for g in groups:
        assert f"results/stages/nucnorm/{g}.svm.npz" in res.stdout


TARGET = "results/data/maxmargin/fig5.csv"  # the plot-ready data of maxmargin Fig 5
SMALL = "maxmargin:\n  fig5:\n    steps: 20\n"
SMALL_CFG = {"maxmargin": {"fig5": {"steps": 20}}}


def dry_with(d, tmp_path, override: str) -> list[str]:
    """The jobs a dry run plans once config.yaml says SMALL + ``override`` (restored after)."""
    path = tmp_path / "override.yaml"
    path.write_text(SMALL + override)
    try:
        set_reference(d, path)
        res = snakemake_cmd("-n", "--cores", "1", TARGET, cwd=d, check=True)
    finally:
        set_reference(d, SMALL_CFG)
    return planned(res)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A copy of the workflow in which maxmargin Fig 5's stages really ran (at 20 steps: Snakemake
    records the params of jobs that ran, which is what a changed setting is compared with)."""
    tmp = tmp_path_factory.mktemp("stages")
    d = set_reference(copy_workflow(tmp / "wf"), SMALL_CFG)  # config.yaml at 20 steps
    snakemake_cmd("--cores", "2", TARGET, cwd=d, check=True)
    assert (d / "results/stages/maxmargin/fig5.instance.npz").is_file()
    assert (d / "results/stages/maxmargin/fig5.svm.npz").is_file()
    assert dry_with(d, tmp, "") == []
    return d


def test_a_gd_setting_reruns_the_trajectories_only(finished, tmp_path):
    assert dry_with(finished, tmp_path, "    lr: 0.5\n") == ["compute"]


def test_a_data_setting_reruns_the_data_the_svm_and_the_trajectories(finished, tmp_path):
    jobs = dry_with(finished, tmp_path, "    C_values: [1.0, 3.0]\n")
    assert jobs == ["compute", "instance", "svm"], jobs


def stage_jobs(*args, root="results") -> list[tuple[str, str]]:
    """(rule, output) of the `instance` and `svm` jobs of a forced dry run of fastrates Figs 2, 9
    and 10 in the results folder ``root`` (each job's output path is printed under it)."""
    targets = [f"{root}/data/fastrates/fig{g}.csv" for g in (2, 9, 10)]
    res = snakemake_cmd("-n", "-F", "--nolock", *targets, *args, check=True)
    out = res.stdout + res.stderr
    return sorted(
        re.findall(r"^(?:local)?rule (instance|svm):\n(?:.*\n)*?\s+output: (\S+)", out, re.M)
    )


def test_figures_drawn_from_the_same_data_share_one_instance_and_one_svm_solution():
    """Figs 9 and 10 draw the Fig 2 data at the same settings: one instance, one W_mm solve."""
    assert stage_jobs() == [
        ("instance", "results/stages/fastrates/fig2.instance.npz"),
        ("svm", "results/stages/fastrates/fig2.svm.npz"),
    ]


def test_a_figure_whose_data_settings_differ_gets_its_own_instance(tmp_path):
    path = tmp_path / "fig9.yaml"
    path.write_text("fastrates:\n  fig9:\n    seeds: [0, 1]\n")
    jobs = stage_jobs("--configfile", path, root=results_folder(ROOT, configfiles=[path]))
    assert sorted(o.rsplit("/", 1)[-1] for _, o in jobs) == [
        "fig2.instance.npz",
        "fig2.svm.npz",
        "fig9.instance.npz",
        "fig9.svm.npz",
    ]
