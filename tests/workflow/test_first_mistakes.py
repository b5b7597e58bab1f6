"""A newcomer's first mistakes get a message to act on, in a few lines, not Snakemake's raw output.

Each case runs the mistake in a private copy of the workflow and checks the message: its content
and its length.  Where Snakemake reads the input before the workflow starts (``--configfile``,
``--config``), the workflow cannot change Snakemake's message; the test pins that boundary and
checks that the config checker, which docs/configuration.md points to, reports the mistake with
its file and line or says how to write it."""

import re
import shutil
import subprocess

import pytest
from conftest import BIN, ROOT, copy_workflow, snakemake_cmd

from attnbias.hints import local_cuda


@pytest.fixture(scope="module")
def wf(tmp_path_factory):
    """A private copy of the workflow, with a copy of the SLURM profile (the README's first
    cluster step) and a user's config file."""
    d = copy_workflow(tmp_path_factory.mktemp("mistakes") / "wf")
    shutil.copytree(d / "profiles" / "slurm", d / "profiles" / "mycluster")
    (d / "my.yaml").write_text("maxmargin:\n  fig1: {steps: 500}\n")
    return d


def dry(wf, *args):
    return snakemake_cmd("-n", "--nolock", *args, cwd=wf, timeout=300)


def error_block(res, start: str) -> list[str]:
    """The output's lines from the first line containing ``start`` to the end."""
    out = (res.stdout + res.stderr).splitlines()
    i = next(k for k, line in enumerate(out) if start in line)
    return out[i:]


# --- targets ---------------------------------------------------------------------------------


def test_a_prefix_of_figure_ids_names_them(wf):
    res = dry(wf, "maxmargin_fig1")
    assert res.returncode != 0
    # the answer comes first, on stderr before Snakemake's banner (attnbias.hints.say_first) ...
    first = res.stderr.splitlines()[:3]
    assert any("maxmargin_fig1 is not a target" in line for line in first), first
    # ... and Snakemake's own error block on stdout stays short and says it again
    block = error_block(type(res)(res.args, res.returncode, res.stdout, ""),
                        "InputFunctionException")  # fmt: skip
    assert len(block) <= 10, block  # was a bare MissingRuleException with no hint
    text = "\n".join(block)
    assert "maxmargin_fig1 is not a target; the targets starting with it:" in text
    assert "maxmargin_fig1a, maxmargin_fig1b, maxmargin_fig1c" in text
    assert "--list-target-rules" in text and "docs/figures.md" in text


def test_a_figure_id_without_its_paper_is_recognised(wf):
    res = dry(wf, "fig1c")
    assert res.returncode != 0
    assert "fig1c is not a target; did you mean maxmargin_fig1c?" in res.stdout + res.stderr


def test_the_target_list_describes_each_figure(wf):
    res = snakemake_cmd("--list-target-rules", "--nolock", cwd=wf, check=True)
    lines = dict(line.split(" ", 1) for line in res.stdout.splitlines() if " (" in line)
    assert lines["maxmargin_fig1c"] == "(Fig. 1(c), several inputs)"
    assert lines["lowrank_fig2"].startswith("(Fig. 2, associative recall")
    assert lines["all"].startswith("(every figure and the claims summary")


# --- settings ------------------------------------------------------------------------------------


def test_yaml_without_spaces_says_so(wf):
    res = dry(wf, "maxmargin_fig1c", "--config", "maxmargin={fig1:{steps:500}}")
    assert res.returncode != 0
    block = error_block(res, "WorkflowError")
    assert len(block) <= 8, block
    text = "\n".join(block)
    assert "unknown key(s) steps:500" in text
    assert "YAML needs a space after each colon: {steps: 500}, not {steps:500}" in text
    assert "(given by --config maxmargin=...)" in text
    assert "--configfile" not in text  # the hint only where it helps


def test_a_value_from_a_file_names_the_file_and_line(wf):
    (wf / "bad.yaml").write_text("# mine\nmaxmargin:\n  fig1: {stepz: 500}\n")
    res = dry(wf, "maxmargin_fig1c", "--configfile", "bad.yaml")
    assert res.returncode != 0
    block = error_block(res, "WorkflowError")
    assert len(block) <= 8, block
    text = "\n".join(block)
    assert "config error at maxmargin.fig1: unknown key(s) stepz" in text
    assert re.search(r"\(set in \S*bad\.yaml:3\)", text), text
    assert "--configfile" not in text


def test_a_top_level_value_gets_no_hint(wf):
    res = dry(wf, "maxmargin_fig1c", "--config", "scale=papr")
    block = error_block(res, "WorkflowError")
    text = "\n".join(block)
    assert "config error at scale: 'papr' is not one of ['quick', 'paper']" in text
    assert "--configfile" not in text and "(given by" not in text
    assert len(block) <= 7, block


def test_the_documented_error_example_is_what_the_workflow_prints(wf):
    """docs/configuration.md shows the error of `--config maxmargin='{fig1: {stepz: 500}}'`."""
    page = (ROOT / "docs" / "configuration.md").read_text()
    shown = re.search(r"```text\n(config error at maxmargin\.fig1.*?)```", page, re.S)[1]
    res = dry(wf, "maxmargin_fig1c", "--config", "maxmargin={fig1: {stepz: 500}}")
    assert shown.strip() in res.stdout + res.stderr


def test_a_user_config_file_runs_in_its_own_folder(wf):
    """The README's `snakemake --cores 2 maxmargin_fig1c --configfile my.yaml` (steps: 500)."""
    res = dry(wf, "--cores", "2", "maxmargin_fig1c", "--configfile", "my.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "results/custom/maxmargin.fig1.steps-500/figures/maxmargin/fig1c.pdf" in res.stdout


def test_a_broken_preset_file_is_reported_with_its_line(tmp_path):
    d = copy_workflow(tmp_path / "wf")
    text = (d / "config.yaml").read_text().splitlines()
    n = next(i for i, line in enumerate(text) if line.startswith("  fig1:"))
    text[n] += " {"
    (d / "config.yaml").write_text("\n".join(text) + "\n")
    res = dry(d, "maxmargin_fig1c")
    assert res.returncode != 0
    block = error_block(res, "WorkflowError")
    assert len(block) <= 4, block  # Snakemake's own: no file, no line
    assert re.search(rf"config\.yaml:{n + 1}:\d+: not valid YAML", "\n".join(block)), block


def test_what_snakemake_reads_first_is_checked_by_the_checker(wf):
    """A dotted --config key and a missing --configfile stop Snakemake before the workflow (its
    own messages, which docs/configuration.md quotes); the checker says how to write the key and
    names the file."""
    res = dry(wf, "maxmargin_fig1c", "--config", "maxmargin.fig1.steps=500")
    assert res.returncode != 0
    assert "Config entry must start with a valid identifier" in res.stdout + res.stderr
    res = dry(wf, "maxmargin_fig1c", "--configfile", "nope.yaml")
    assert res.returncode != 0 and "FileNotFoundError" in res.stdout + res.stderr

    def checker(*args):
        cmd = [str(BIN / "python"), "-m", "attnbias.config_rules", *args]
        return subprocess.run(cmd, cwd=wf, capture_output=True, text=True, timeout=120)

    out = checker("--config", "maxmargin.fig1.steps=500")
    assert out.returncode == 1 and len(out.stdout.splitlines()) == 1, out.stdout
    assert "write  --config maxmargin='{fig1: {steps: 500}}'" in out.stdout
    out = checker("nope.yaml")
    assert out.stdout.strip() == "nope.yaml: cannot read it: No such file or directory"
    (wf / "broken.yaml").write_text("maxmargin:\n  fig1: {steps: 500\n")
    out = checker("broken.yaml")
    assert out.stdout.startswith("broken.yaml:3:1: not valid YAML"), out.stdout
    out = checker("--config", "maxmargin={fig1: {steps: 500}}")
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout


# --- the cluster profile --------------------------------------------------------------------------


def test_unfilled_placeholders_stop_a_real_run_in_one_line(wf):
    res = snakemake_cmd(
        "--workflow-profile", "profiles/mycluster", "maxmargin_fig1c", "--nolock", cwd=wf,
        timeout=300,
    )  # fmt: skip
    assert res.returncode == 1
    out = (res.stdout + res.stderr).splitlines()
    assert "Building DAG" not in res.stdout + res.stderr  # stopped before planning anything
    mine = [line for line in out if "placeholder" in line]
    assert mine == [
        "profiles/mycluster/config.yaml: unfilled placeholders YOUR_ACCOUNT, YOUR_CPU_PARTITION, "
        "YOUR_GPU_PARTITION: replace them with your account and partitions (docs/cluster.md), "
        "then rerun"
    ], out
    assert len(out) <= 2, out  # Snakemake's "Using workflow specific profile ..." and this


def test_a_cluster_dry_run_warns_and_says_what_would_be_submitted(wf):
    res = dry(wf, "--workflow-profile", "profiles/mycluster", "maxmargin_fig1c")
    assert res.returncode == 0, res.stderr[-3000:]
    err = res.stderr
    assert "profiles/mycluster/config.yaml: unfilled placeholders YOUR_ACCOUNT" in err
    assert "a real run stops here" in err
    note = [line for line in err.splitlines() if line.startswith("Cluster dry run:")]
    submitted = "rules compute, extend, instance, svm, train would be submitted"
    assert len(note) == 1 and submitted in note[0]
    # filled in, the warning is gone; without a cluster profile there is no note
    filled = wf.parent / "filled"
    shutil.copytree(wf / "profiles" / "mycluster", filled)
    text = (filled / "config.yaml").read_text()
    (filled / "config.yaml").write_text(re.sub(r"YOUR_\w+", "abc", text))
    res = dry(wf, "--workflow-profile", str(filled), "maxmargin_fig1c")
    assert res.returncode == 0 and "placeholder" not in res.stderr
    assert "Cluster dry run:" in res.stderr
    assert "Cluster dry run:" not in dry(wf, "maxmargin_fig1c").stderr


# --- the paper preset on a machine without CUDA ---------------------------------------------------


@pytest.mark.skipif(local_cuda(), reason="this machine has a CUDA GPU")
def test_gpu_jobs_on_a_machine_without_cuda_are_announced(wf):
    cmd = [str(BIN / "snakemake"), "-n", "--nolock", "maxmargin_fig6", "--config", "scale=paper"]
    res = subprocess.run(
        cmd, cwd=wf, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300
    )  # one stream, in the order printed
    assert res.returncode == 0, res.stdout[-3000:]
    out = res.stdout
    notes = [line for line in out.splitlines() if line.startswith("Note: no CUDA GPU")]
    assert len(notes) == 1, notes
    assert "would run on its CPU" in notes[0] and "docs/cluster.md" in notes[0]
    assert out.index("Note: no CUDA GPU") < out.index("Job stats:")  # before anything starts
    for args in (("--config", "scale=paper", "accelerator=cpu"), ()):  # chosen, or quick
        res = dry(wf, "maxmargin_fig6", *args)
        assert res.returncode == 0 and "no CUDA GPU" not in res.stdout + res.stderr
