"""Every command shown in README.md, CONTRIBUTING.md and the documentation pages (docs/**/*.md) is
run, dry-run, or named to the test that runs it, so a documented command cannot silently do
something else.

The commands are read from the documents themselves (code lines of fenced blocks, except ``text``
blocks, which show output, and inline code spans that start with a command), and ``DOCUMENTED``
says how each one is checked:

- ``Dry(state, ...)``: the command, with ``-n`` added, in a private copy of the workflow, either
  without results (``"fresh"``) or after a real build of ``maxmargin_fig1c`` (``"built"``); it
  names what the scheduled jobs must make: the figures (``figures``), plot-ready data groups
  (``data``), whether training runs are scheduled (``trains``) and the papers they may belong to
  (``papers``).
- ``Run(expect)``: the command is run as written (it only reads); its output contains ``expect``.
- ``ByTest(test, fragment)``: a named test runs it; the test file must contain ``fragment``.
- ``Shell(why)``: an ordinary shell step of a recipe (``cp``, an editor, ``source``), not ours.

A command added to a document without an entry here, or an entry whose command has left the
documents, fails ``test_every_documented_command_is_checked``."""

import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import BIN, ROOT, copy_workflow, registered_figures, snakemake_cmd, workflow_copy

DOCS = ("README.md", "CONTRIBUTING.md", *sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
))  # fmt: skip
# how a command line starts (anything else in a code block is data: YAML, Python)
_COMMAND = re.compile(
    r"^(?:[A-Z_]+=\S+\s+)*(?:\.venv/bin/)?"
    r"(?:snakemake|python3?|pytest|cp|source|\$EDITOR)\s"
)


def normalise(cmd: str) -> str:
    """One documented command as the table spells it: no `.venv/bin/`, no trailing comment, no
    line continuations, single spaces."""
    cmd = re.sub(r"\s+#.*$", "", cmd.replace("\\\n", " ")).strip()
    return " ".join(re.sub(r"(^|\s)\.venv/bin/(?=snakemake|python|pytest)", r"\1", cmd).split())


def documented_commands() -> dict[str, str]:
    """``{normalised command: "<document>:<line>"}`` for every command in the documents."""
    found = {}
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        fenced = re.finditer(r"^```([^\n]*)\n(.*?)^```", text, re.M | re.S)
        for block in fenced:
            if block[1].strip() == "text":  # output shown, not commands
                continue
            body = block[2].replace("\\\n", " ")
            line0 = text[: block.start(2)].count("\n") + 1
            for i, line in enumerate(body.splitlines()):
                # a command in a YAML comment: `# local.yaml: snakemake ...`
                line = re.sub(r"^#\s*[\w.-]+\.ya?ml:\s*", "", line.strip())
                for part in re.split(r"\s+&&\s+", line.strip()):
                    if _COMMAND.match(part + " "):
                        found.setdefault(normalise(part), f"{doc}:{line0 + i}")
        prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
        for span in re.finditer(r"`([^`]+)`", prose):
            cmd = " ".join(span[1].split())
            if _COMMAND.match(cmd + " ") and " " in cmd:
                line = text[: text.find(span[0])].count("\n") + 1
                found.setdefault(normalise(cmd), f"{doc}:{line}")
    return found


@dataclass(frozen=True)
class Dry:
    state: str  # "fresh" (no results) or "built" (after `snakemake maxmargin_fig1c`)
    figures: frozenset = frozenset()  # "<paper>/<fig>" that must be plotted (all of them if "*")
    data: frozenset = frozenset()  # "<paper>/<group>" plot-ready data that must be made
    papers: frozenset = frozenset()  # the papers whose jobs may be scheduled (empty: any)
    trains: bool | None = None  # training runs scheduled (None: not checked)
    only: bool = False  # the figures/data above are all that is scheduled
    never: frozenset = frozenset()  # figures that must not be plotted
    gpu: bool = False  # the training jobs ask for a GPU
    profile: bool = False  # the command names profiles/mycluster (a copy of profiles/slurm)


@dataclass(frozen=True)
class Run:
    expect: str
    args: tuple = field(default=())


@dataclass(frozen=True)
class ByTest:
    test: str
    fragment: str


@dataclass(frozen=True)
class Shell:
    why: str


def _set(*items):
    return frozenset(items)


_FIG1C = dict(figures=_set("maxmargin/fig1c"), data=_set("maxmargin/fig1"), only=True)
_ALL = dict(figures=_set("*"), trains=True)
# the figures whose paper-preset runs need a GPU (README: "gpu_figures")
_GPU_FIGURES = _set("maxmargin/fig6", "fastrates/fig1", "lowrank/fig2", "lowrank/fig3")
DOCUMENTED = {
    # --- the two fresh-machine commands (README): CI's .ci/run is the test command (and
    # tests/unit/test_environment.py checks that the README shows it verbatim)
    "python3 -m venv .venv": ByTest(".ci/run", "python3 -m venv .venv &&"),
    "snakemake --cores 2 all": Dry("fresh", **_ALL, papers=_set()),
    "python -m pytest": ByTest(".ci/run", ".venv/bin/python -m pytest"),
    # --- regenerating one figure ----------------------------------------------------------------
    "snakemake --cores 2 maxmargin_fig1c": Dry("fresh", **_FIG1C),
    "snakemake --cores 2 results/figures/maxmargin/fig1c.pdf": Dry("fresh", **_FIG1C),
    "snakemake --cores 1 -f results/figures/maxmargin/fig1c.pdf": Dry(
        "built", figures=_set("maxmargin/fig1c"), only=True
    ),
    "snakemake --cores 2 maxmargin_fig1c -R results/data/maxmargin/fig1.csv": Dry(
        "built", **_FIG1C
    ),
    "snakemake --cores 2 -F maxmargin_fig1c": Dry("built", **_FIG1C),
    "snakemake --cores 2 maxmargin": Dry("fresh", papers=_set("maxmargin"), figures=_set("*")),
    "snakemake --cores 1 lowrank": Dry("fresh", papers=_set("lowrank"), figures=_set("*")),
    # --- presets, controls, claims ---------------------------------------------------------------
    "snakemake --cores 8 all --config scale=paper": Dry("fresh", **_ALL, gpu=True),
    "snakemake --cores 2 all --config control=null": Dry(
        "fresh", figures=_set("maxmargin/fig6", "fastrates/fig1", "lowrank/fig2"), trains=True,
        never=_set("maxmargin/fig1c", "nucnorm/p1"),  # the control's folder: controlled only
    ),
    "snakemake --cores 2 all --config claims_strict=true": Dry("fresh", **_ALL),
    # fastrates' deep-learning figures at the held-out draw (docs/papers/fastrates.md)
    "snakemake --cores 2 fastrates_fig1 fastrates_fig4 fastrates_fig7 --config seed=1": Dry(
        "fresh", figures=_set("fastrates/fig1", "fastrates/fig4", "fastrates/fig7"),
        papers=_set("fastrates"), trains=True,
    ),
    # one deep-learning figure alone (the Fig 7 measurements of docs/papers/fastrates.md)
    "snakemake --cores 2 fastrates_fig7": Dry(
        "fresh", figures=_set("fastrates/fig7"), data=_set("fastrates/fig7"),
        papers=_set("fastrates"), trains=True,
    ),
    "snakemake -n": Dry("fresh", figures=_set("*"), trains=True),
    # --- compare (docs/running.md "Comparing a run with the reference")
    "snakemake --cores 2 compare --config maxmargin='{fig1: {steps: 500}}'": ByTest(
        "tests/workflow/test_compare.py", '"compare", "--config", STEPS'
    ),
    "snakemake compare": ByTest("tests/workflow/test_compare.py", '"compare", "--config"'),
    "snakemake --cores 2 compare --configfile my.yaml": ByTest(
        "tests/workflow/test_compare.py", '"compare", "--configfile", "my.yaml"'
    ),
    "snakemake --cores 2 compare --config seed=2 compare='{figures: [lowrank/fig1]}'": ByTest(
        "tests/workflow/test_compare.py", '"compare", "--config", "seed=1", compare'
    ),
    "python -m attnbias.config_rules my.yaml": ByTest("tests/unit/test_config_rules.py", "main(["),
    "python -m attnbias.config_rules --config maxmargin.fig1.steps=500": ByTest(
        "tests/workflow/test_first_mistakes.py", "maxmargin.fig1.steps=500"
    ),
    # --- changing a setting ---------------------------------------------------------------------
    "snakemake --cores 2 maxmargin_fig1c --config maxmargin='{fig1: {steps: 500}}'": Dry(
        "fresh", **_FIG1C
    ),
    "snakemake --cores 2 maxmargin_fig1c --configfile my.yaml": ByTest(
        "tests/workflow/test_first_mistakes.py", '"--configfile", "my.yaml"'
    ),
    # --- the figure list ------------------------------------------------------------------------
    "snakemake --list-target-rules": Run("maxmargin_fig1c (Fig. 1(c)", ("--nolock",)),
    "python -m attnbias.figures": ByTest("tests/workflow/test_figure_list.py", "attnbias.figures"),
    "python -m attnbias.figures --update docs/figures.md": ByTest(
        "tests/workflow/test_figure_list.py", '"--check"'
    ),
    "snakemake maxmargin_fig1c --rulegraph": Run('label = "svm"', ("--nolock",)),
    "snakemake --list-target-rules --config scale=paper | grep _download_": Run(
        "lowrank_download_pile"
    ),
    "snakemake --report results/report.html": ByTest(
        "tests/integration/test_end_to_end.py", "--report"
    ),
    "snakemake --unlock": Run(""),
    "snakemake robustness": ByTest("tests/workflow/test_robustness_run.py", '"robustness"'),
    "snakemake --cores 2 robustness": ByTest(
        "tests/workflow/test_robustness_run.py", '"robustness"'
    ),
    "snakemake --cores 2 robustness --config robustness='{seeds: [1, 2, 3, 4, 5, 6, 7, 8], "
    "figures: [lowrank/fig3]}'": ByTest(
        "tests/unit/test_seeds_to_resolve.py", "6, 7, 8], figures: [lowrank/fig3]}'"
    ),
    "snakemake --report results/report.html robustness": ByTest(
        "tests/workflow/test_robustness_run.py", '"--report"'
    ),
    "snakemake --workflow-profile profiles/mycluster robustness": ByTest(
        "tests/unit/test_robustness.py", "--workflow-profile"
    ),
    "snakemake --lint": ByTest(".ci/run", "snakemake --lint"),
    # --- GPU check, benchmarks, tests ----------------------------------------------------------
    "python -m attnbias.gpu_check --out gpu-check/": ByTest(
        "tests/unit/test_gpu_check.py", '"-m", "attnbias.gpu_check", "--cpu", "--out"'
    ),
    "python -m attnbias.gpu_check.recall --out fig2-seed0/ --seeds 0 --max-seconds 560": ByTest(
        "tests/unit/test_recall_paper_run.py", '"--max-seconds", 0'
    ),
    "python -m attnbias.gpu_check.recall --out fig2/ --gather-only --runs-from fig2-seed0/runs "
    "fig2-seed1/runs fig2-seed2/runs": ByTest(
        "tests/unit/test_recall_paper_run.py", '"--gather-only", "--runs-from"'
    ),
    "pytest -m gpu": ByTest("tests/unit/test_cuda_paths.py", "pytest.mark.gpu"),
    'pytest -m "not slurm"': ByTest("tests/slurm/test_slurm_cluster.py", "pytest.mark.slurm"),
    "pytest tests/unit": ByTest("tests/unit/test_environment.py", "def test_"),
    "pytest -n 0": ByTest("tests/workflow/test_hermetic.py", '"-n", "0"'),
    "python benchmarks/job_costs.py --results results --update": ByTest(
        "tests/unit/test_estimates.py", '"--results", str(results), "--root", str(root), "--update"'
    ),
    "python -m attnbias.claims.headline results/claims/summary.csv --update README.md": ByTest(
        "tests/unit/test_headline.py", '"--update", str(readme)'
    ),
    "python benchmarks/bench_tests.py": ByTest("tests/unit/test_bench_tests.py", "bench.report("),
    "python benchmarks/resource_table.py --update docs/cluster.md": ByTest(
        "tests/unit/test_resource_table.py", "def test_update_docs_cluster_md"
    ),
    "python benchmarks/resource_table.py --target gpu_figures --scale paper --profile "
    "profiles/slurm": ByTest(
        "tests/unit/test_resource_table.py",
        '"--target", "gpu_figures", "--scale", "paper", "--profile", "profiles/slurm"',
    ),
    "python benchmarks/bench_maxmargin.py": Run("Figs 1-5, 8", ("--groups", "fig1")),
    "python benchmarks/bench_workflow.py": Run("usage", ("--help",)),
    'python -c "from attnbias.closure import code_closure as c; '
    "print(c('experiments.maxmargin.synthetic.trajectories_fig1'))\"": Run("svm/attention_svm.py"),
    # --- the SLURM recipe ----------------------------------------------------------------------
    "cp -r profiles/slurm profiles/mycluster": Shell("copies the shipped profile"),
    "$EDITOR profiles/mycluster/config.yaml": Shell("the user's account and partitions"),
    "source .venv/bin/activate": Shell("puts the venv's snakemake on PATH"),
    "snakemake --workflow-profile profiles/mycluster -n gpu_figures --config scale=paper": Dry(
        "fresh", figures=_GPU_FIGURES, trains=True, gpu=True, profile=True
    ),
    "snakemake --workflow-profile profiles/mycluster maxmargin_fig6 --config scale=paper": Dry(
        "fresh", figures=_set("maxmargin/fig6"), gpu=True, profile=True
    ),
    "snakemake --workflow-profile profiles/mycluster maxmargin_fig1c": Dry(
        "fresh", **_FIG1C, profile=True
    ),
    "snakemake --workflow-profile profiles/mycluster all --config scale=paper": Dry(
        "fresh", **_ALL, gpu=True, profile=True
    ),
    "snakemake --workflow-profile profiles/mycluster all --config scale=paper --configfile "
    "local.yaml": ByTest("tests/workflow/test_offline_download.py", "local.yaml"),
    # --- rehearsing the paper preset -----------------------------------------------------------
    "python tests/rehearsal/fake_hub.py results/rehearsal/hub": ByTest(
        "tests/integration/test_rehearsal.py", "fake_hub"
    ),
    "HF_HUB_OFFLINE=1 snakemake --cores 2 gpu_figures fastrates_fig6 lowrank_fig4 lowrank_figB "
    "--configfile tests/config/rehearsal.yaml --config scale=paper": ByTest(
        "tests/integration/test_rehearsal.py", "rehearsal.yaml"
    ),
}


def test_every_documented_command_is_checked():
    """Both ways: each command in the documents has an entry, and each entry is still documented."""
    found = documented_commands()
    unchecked = {c: where for c, where in found.items() if c not in DOCUMENTED}
    assert not unchecked, f"documented commands with no check in DOCUMENTED: {unchecked}"
    stale = set(DOCUMENTED) - set(found)
    assert not stale, f"DOCUMENTED entries no document shows any more: {sorted(stale)}"


# --- dry runs ------------------------------------------------------------------------------------
_JOB = re.compile(r"^(?:local)?rule (\S+):\n((?:    .*\n)+)", re.M)


def scheduled(stdout: str) -> list[tuple[str, list[str], dict]]:
    """(rule, outputs, resources) of every job a dry run prints."""
    jobs = []
    for m in _JOB.finditer(stdout):
        fields = dict(re.findall(r"^    (\w+): (.*)$", m[2], re.M))
        outputs = [o.strip() for o in fields.get("output", "").split(",") if o.strip()]
        resources = dict(re.findall(r"(\w+)=([^,]+)", fields.get("resources", "")))
        jobs.append((m[1], outputs, resources))
    return jobs


def made(jobs, kind: str) -> set[str]:
    """``<paper>/<name>`` of the figures (``figures``) or plot-ready data (``data``) the jobs make,
    or the training batches (``runs``: the folders data/<paper>/<sweep>/<batch> of `train` jobs)."""
    if kind == "runs":
        pattern, jobs = r"(?:^|/)data/(\w+)/(\w+/[^/]+)$", [j for j in jobs if j[0] == "train"]
    else:
        pattern = {
            "figures": r"(?:^|/)figures/(\w+)/(\w+)\.pdf$",
            "data": r"(?:^|/)data/(\w+)/(\w+)\.csv$",
        }[kind]
    return {f"{m[1]}/{m[2]}" for _, outs, _ in jobs for o in outs if (m := re.search(pattern, o))}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A private copy of the workflow after a real build of `maxmargin_fig1c` (seconds)."""
    wf = copy_workflow(tmp_path_factory.mktemp("documented") / "wf")
    snakemake_cmd("--cores", "2", "maxmargin_fig1c", cwd=wf, check=True)
    return wf


def _mycluster(wf: Path) -> None:
    """The README's first SLURM step (`cp -r profiles/slurm profiles/mycluster`)."""
    dest = wf / "profiles" / "mycluster"
    if not dest.exists():
        subprocess.run(["cp", "-r", "profiles/slurm", "profiles/mycluster"], cwd=wf, check=True)


DRY = {c: e for c, e in DOCUMENTED.items() if isinstance(e, Dry)}


@pytest.mark.parametrize("command", sorted(DRY))
def test_documented_command_schedules_what_the_text_says(command, built):
    """The command (with ``-n``) schedules the figures and data its document promises, and no job
    of another paper; training only where it says; GPU requests under the paper preset."""
    exp = DRY[command]
    wf = built if exp.state == "built" else workflow_copy()
    if exp.profile:
        _mycluster(wf)
    args = shlex.split(command)[1:]
    res = snakemake_cmd(*args, *(["-n"] if "-n" not in args else []), "--nolock", cwd=wf)
    assert res.returncode == 0, f"{command}:\n{res.stderr[-3000:]}"
    jobs = scheduled(res.stdout)
    figures, data, runs = made(jobs, "figures"), made(jobs, "data"), made(jobs, "runs")
    if "*" in exp.figures:
        every = {f"{p}/{f}" for p, f in _registered_figures(exp.papers)}
        assert every <= figures, f"{command}: not plotted: {sorted(every - figures)[:10]}"
    else:
        assert exp.figures <= figures, f"{command}: plots {sorted(figures)}"
    assert exp.data <= data, f"{command}: makes the data {sorted(data)}"
    assert not exp.never & figures, f"{command}: plots {sorted(exp.never & figures)}"
    if exp.only:
        assert figures == set(exp.figures), f"{command}: also plots {figures - exp.figures}"
        assert data <= exp.data, f"{command}: also recomputes {data - exp.data}"
        assert not runs, f"{command}: also trains {sorted(runs)[:5]}"
    if exp.papers:
        others = {x.split("/")[0] for x in figures | data | runs} - exp.papers
        assert not others, f"{command}: schedules jobs of {others}"
    if exp.trains is not None:
        assert bool(runs) == exp.trains, f"{command}: training runs {sorted(runs)[:5]}"
    if exp.gpu:
        gpu_jobs = [r for rule, outs, r in jobs if r.get("gpu") == "1"]
        assert gpu_jobs, f"{command}: no job asks for a GPU"
    if exp.profile:
        partitions = {r.get("slurm_partition") for _, _, r in jobs} - {None}
        assert partitions, f"{command}: the profile's partitions are not applied"


def _registered_figures(papers) -> set[tuple[str, str]]:
    """The figures of the run's table (conftest.registered_figures), of ``papers`` (empty: all)."""
    return {(p, f) for p, f in registered_figures() if not papers or p in papers}


# --- commands run as written -------------------------------------------------------------------
RUN = {c: e for c, e in DOCUMENTED.items() if isinstance(e, Run)}


@pytest.mark.parametrize("command", sorted(RUN))
def test_documented_command_runs(command):
    """Read-only commands run as written (in the private copy), their output as described."""
    exp = RUN[command]
    if command.startswith("python "):
        argv = [str(BIN / "python"), *shlex.split(command)[1:], *exp.args]
        res = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    else:
        pipeline = command.split(" | ")
        res = snakemake_cmd(*shlex.split(pipeline[0])[1:], *exp.args)
        if len(pipeline) > 1:  # `| grep WORD`
            word = shlex.split(pipeline[1])[1]
            res.stdout = "\n".join(x for x in res.stdout.splitlines() if word in x)
    assert res.returncode == 0, f"{command}:\n{res.stderr[-3000:]}"
    assert exp.expect.lower() in (res.stdout + res.stderr).lower(), res.stdout[-2000:]


# --- commands another test runs ------------------------------------------------------------------
BY_TEST = {c: e for c, e in DOCUMENTED.items() if isinstance(e, ByTest)}


@pytest.mark.parametrize("command", sorted(BY_TEST))
def test_documented_command_is_run_by_a_named_test(command):
    """The test named for a command exists and contains the command's distinctive part."""
    exp = BY_TEST[command]
    path = ROOT / exp.test
    assert path.exists(), f"{command}: {exp.test} does not exist"
    assert exp.fragment in path.read_text(), f"{command}: {exp.test} lacks {exp.fragment!r}"
