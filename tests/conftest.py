"""Shared test fixtures: offline Hugging Face settings, paths, and hermeticity.

Tests never read or write the user's checkout state (``results/``, ``.snakemake/``, scratch
checkpoints, the Hugging Face cache): every Snakemake call runs in a copy of the workflow sources
(:func:`workflow_copy` for dry runs, :func:`copy_workflow` for real runs), and ``HF_HOME`` points
into a temporary directory.  :func:`_checkout_untouched` asserts at the end of the session that
the checkout's ``results/`` and ``.snakemake/`` are exactly as they were before it.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

# Never touch the network from tests: the hub is unreachable in CI.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# OpenMP threads that wait sleep instead of spinning (read when torch loads its OpenMP library,
# inherited by every job the suite runs).  The suite runs two workers on two cores, so a torch
# process of two threads (a worker's own tests, a paper-preset job of the rehearsal) mostly waits
# for a core; spinning waiters then burn it.  A two-thread training loop beside two busy
# single-thread jobs: 32-41 s wall and 35-44 CPU-s spinning, 14-22 s and 13-18 CPU-s passive
# (2026-12-02, docs/performance.md, "The test suite").
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(autouse=True, scope="session")
def _hf_home(tmp_path_factory):
    os.environ["HF_HOME"] = str(tmp_path_factory.mktemp("hf_home"))


# The checkout's own run state: no test may read it or change it.
STATE_DIRS = ("results", ".snakemake")


def tree_state(root: Path) -> dict:
    """{relative path: (size, mtime_ns)} of every file and directory under ``root``'s run state."""
    state = {}
    for name in STATE_DIRS:
        base = root / name
        if not base.exists():
            continue
        for p in [base, *base.rglob("*")]:
            st = p.lstat()
            state[str(p.relative_to(root))] = (st.st_size if p.is_file() else -1, st.st_mtime_ns)
    return state


@pytest.fixture(autouse=True, scope="session")
def _checkout_untouched():
    """Fail the session if any test wrote into (or deleted from) the checkout's run state."""
    before = tree_state(ROOT)
    yield
    after = tree_state(ROOT)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"tests changed the checkout's run state: {changed[:20]}"


_WORKFLOW_COPY: list[Path] = []


def workflow_copy() -> Path:
    """One private copy of the workflow sources per test process, for dry runs: what a dry run
    schedules must not depend on the user's results/, and must not write .snakemake/ there."""
    if not _WORKFLOW_COPY:
        tmp = Path(tempfile.mkdtemp(prefix="attnbias-wf-"))
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        _WORKFLOW_COPY.append(copy_workflow(tmp / "attnbias"))
    return _WORKFLOW_COPY[0]


def snakemake_cmd(*args, cwd=None, timeout=600, check=False):
    """Run the venv's snakemake CLI (the Python API was removed in Snakemake 8).

    Without ``cwd`` it runs in :func:`workflow_copy`, never in the checkout itself.
    """
    cwd = workflow_copy() if cwd is None else cwd
    cmd = [str(BIN / "snakemake"), *map(str, args)]
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and res.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} failed ({res.returncode}):\n"
            f"{res.stdout[-4000:]}\n{res.stderr[-8000:]}"
        )
    return res


def job_outputs(log: str, rule: str) -> list[str]:
    """The first output of every job of ``rule`` in a Snakemake log (a dry run or a run)."""
    out = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", log):
        if re.match(rf"(?:local)?rule {rule}:", block.strip()):
            m = re.search(r"^\s+output: ([^,\n]+)", block, re.M)
            if m:
                out.append(m[1].strip())
    return out


def registered_figures():
    """(paper, figure) pairs of the workflow's own figure table (the run it builds:
    attnbias.run.load_run), in its order; each is a target `<paper>_<fig>`."""
    from attnbias.run import load_run

    return list(load_run(ROOT).table.figures)


def ci_configfiles(root=ROOT):
    """tests/config/ci.yaml followed by every per-paper ci_<paper>.yaml."""
    cfg = root / "tests" / "config"
    return [cfg / "ci.yaml", *sorted(cfg.glob("ci_*.yaml"))]


# The files that define a copy's reference run (attnbias.layout.reference_files): a run whose
# paper settings differ from theirs writes into its own folder, results/custom/<differences>/.
REFERENCE_FILES = ("config.yaml", "workflow/presets/paper.yaml")


def set_reference(checkout: Path, *layers) -> Path:
    """Make ``layers`` (config files, or mappings) part of the reference run of the workflow copy
    ``checkout``, as if config.yaml said them: its config.yaml becomes the checkout's original one
    with the layers merged in key by key, and so does workflow/presets/paper.yaml (Snakemake puts
    command-line values on top of the paper overlay too).  A run there with these settings, given
    or not as ``--configfile``, is then the copy's default run, in ``results/``; a test changes a
    setting of it the way a user edits config.yaml.  Each call starts from the originals (the
    sources' own files), so no layers restores them.  Returns ``checkout``."""
    import yaml

    from attnbias.workflow import deep_update

    extra = [x if isinstance(x, dict) else yaml.safe_load(Path(x).read_text()) for x in layers]
    for rel in REFERENCE_FILES:
        if not extra:
            shutil.copy2(ROOT / rel, checkout / rel)
            continue
        cfg = yaml.safe_load((ROOT / rel).read_text())
        for e in extra:
            cfg = deep_update(cfg, e or {})
        (checkout / rel).write_text(yaml.safe_dump(cfg, sort_keys=False))
    return checkout


def ci_copy(dest: Path) -> Path:
    """A copy of the workflow (:func:`copy_workflow`) whose reference run is the CI configuration
    (:func:`ci_configfiles`, see :func:`set_reference`): its runs with or without
    ``--configfile tests/config/ci*.yaml`` write into ``results/``."""
    return set_reference(copy_workflow(dest), *ci_configfiles())


COPY_IGNORE = (
    ".venv",
    "venv",
    *STATE_DIRS,
    ".git",
    "__pycache__",
    "*.egg-info",
    ".pytest_cache",
    ".ruff_cache",
    "report.html",
    "report.zip",
)


def copy_workflow(dest: Path, closures: bool = True) -> Path:
    """Copy the workflow sources (no results, venv or Snakemake state) into ``dest``.

    ``closures``: also give the copy the workflow's closure cache for these sources (its one
    piece of Snakemake state, :func:`closure_cache`), as a checkout has it after its first run.
    Without it every Snakemake start in the copy recomputes the import closures (a dry run never
    saves them); a copy whose sources a test then edits recomputes them anyway (the cache is for
    one digest of the sources).  ``False`` for a test of the cache itself."""
    ignore = shutil.ignore_patterns(*COPY_IGNORE)
    shutil.copytree(ROOT, dest, ignore=ignore, dirs_exist_ok=True)
    if closures:
        cache = dest / CLOSURE_CACHE
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(closure_cache())
    return dest


# The workflow's closure cache (workflow/rules/common.smk), relative to a checkout.
CLOSURE_CACHE = Path(".snakemake") / "attnbias" / "closures.json"
_CLOSURES: list[str] = []


def closure_cache() -> str:
    """The text of the closure cache (attnbias.closure.ClosureCache) of the sources under ROOT:
    every import closure the workflow's runs of either preset ask for (those of the check and
    plot jobs included), computed once per test process as the workflow computes them, without
    writing into ROOT.  The closures themselves are tested in tests/unit/test_closure.py, their
    saving by a real run in tests/workflow/test_job_parse.py (an uncached copy)."""
    if not _CLOSURES:
        from attnbias.closure import ClosureCache
        from attnbias.run import build_run
        from attnbias.workflow import load_config

        with tempfile.TemporaryDirectory() as tmp:
            cache = ClosureCache(ROOT, Path(tmp) / "closures.json")
            for scale in ("quick", "paper"):
                run = build_run(load_config(ROOT, scale=scale, validate=False), ROOT,
                                closures=cache)  # fmt: skip
                _ = run.figure_code  # the check and plot jobs' closures (the Snakefile's too)
            cache.save()
            _CLOSURES.append((Path(tmp) / "closures.json").read_text())
    return _CLOSURES[0]


# --- Set-ups shared by the whole session (each is done once per test run) ----------------------


def clone_run(src: Path, dest: Path) -> Path:
    """A copy of a finished checkout ``src`` (sources, ``results/``, ``.snakemake/``) at ``dest``,
    file dates kept, so that it is exactly as up to date as ``src``."""
    shutil.copytree(src, dest, symlinks=True)  # copy2: modification times kept
    return dest


@pytest.fixture(scope="session")
def finished_fig1c(tmp_path_factory):
    """A private copy of the workflow in which ``maxmargin_fig1c`` (compute, claim, plot) really
    ran, quick preset, default config.  Read-only: a test that changes it works on
    :func:`clone_run` of it."""
    checkout = copy_workflow(tmp_path_factory.mktemp("finished_fig1c") / "checkout")
    snakemake_cmd("--cores", "2", "maxmargin_fig1c", cwd=checkout, check=True, timeout=900)
    return checkout


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    """The end-to-end run: ``cpu_figures checks`` at the CI configuration (tests/config/ci*.yaml;
    the quick preset's deep-learning sizes; the copy's reference run, :func:`ci_copy`) with
    claims_strict=true, in a private copy."""
    d = ci_copy(tmp_path_factory.mktemp("wf") / "attnbias")
    res = snakemake_cmd(
        "--cores", "2", "cpu_figures", "checks", "--config", "claims_strict=true", cwd=d,
        timeout=3000,
    )  # fmt: skip
    assert res.returncode == 0, f"{res.stdout[-3000:]}\n{res.stderr[-6000:]}"
    return d


def session_uses(request, fixture: str) -> bool:
    """Whether any test collected in this session asks for ``fixture`` (a shared set-up that is
    then worth reusing rather than redoing a part of it)."""
    return any(fixture in getattr(item, "fixturenames", ()) for item in request.session.items)


# --- Running in parallel (pytest-xdist: `-n auto --dist loadscope` in pyproject.toml) -----------
#
# Each test file runs whole on one worker, so a module's set-up is made once; files that share a
# session set-up run on one worker together, so it is made once too (:func:`xdist_group_of`, used
# by the scheduler below).  The costliest groups are handed out first (longest first keeps the
# workers busy to the end); the rest follow in collection order.  `pytest -n 0` runs everything
# in one process.

# Files that share a session-scoped set-up (or a machine-wide resource) run together.
SHARED_GROUPS = {
    # the end-to-end run (`quick_run`): the resume test reads its uninterrupted table
    "tests/integration/test_end_to_end.py": "quick_run",
    "tests/integration/test_resume.py": "quick_run",
    # the local SLURM cluster is one per machine (tests/slurm/local_slurm.sh)
    "tests/slurm/test_slurm_cluster.py": "slurm",
    "tests/slurm/test_profiles.py": "slurm",
}

# The groups that take minutes (the durations CI prints), longest first.
LONGEST_FIRST = (
    "quick_run",
    "tests/workflow/test_schema_minimums.py",
    "slurm",
    "tests/integration/test_rehearsal.py",
    "tests/workflow/test_robustness_run.py",
    "tests/workflow/test_hermetic.py",
)

# Workers beyond this many only add memory: the longest group (the end-to-end run, 2 cores) is
# the critical path.
MAX_WORKERS = 4


def xdist_group_of(nodeid: str) -> str:
    """The group of a test (its node id, ``tests/<dir>/<file>.py::<name>``): the shared set-up's
    it needs, else its file's."""
    path = nodeid.split("::", 1)[0]
    return SHARED_GROUPS.get(path, path)


def pytest_collection_modifyitems(config, items):
    rank = {g: i for i, g in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(xdist_group_of(item.nodeid), len(rank)))  # stable


def pytest_xdist_auto_num_workers(config):
    """One worker per core this process may run on (its CPU affinity), at most MAX_WORKERS."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, MAX_WORKERS))


def pytest_xdist_make_scheduler(config, log):
    """xdist's scope scheduling (whole scopes to one worker, in collection order with
    ``--no-loadscope-reorder``) with :func:`xdist_group_of` as the scope.  (xdist's own
    ``loadgroup`` marks do not reach its scheduler under pytest 9: it renames ``_nodeid``, which
    pytest 9's node ids no longer read.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group_of(nodeid)

    return ByGroup(config, log)
