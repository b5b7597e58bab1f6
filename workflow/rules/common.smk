# The run this process makes (attnbias.run: settings, reference comparison, control and seed,
# results folder, figure table, robustness tables: one definition, shared with the tests and
# tools), and the switches only Snakemake knows: the kind of process, cluster resources, hooks.
import re
import sys
from pathlib import Path

from snakemake_interface_executor_plugins.settings import ExecMode

from attnbias import hints
from attnbias.closure import ClosureCache
from attnbias.config_rules import where_given
from attnbias.layout import set_aside_stale, stale_products, write_overrides
from attnbias.run import RunError, build_run
from attnbias.workflow import PAPERS, drop_default_rate_limit

MAIN_PROCESS = workflow.exec_mode == ExecMode.DEFAULT  # not a cluster job's own parse
DRY_RUN = workflow.output_settings.dryrun

# The import closures of the jobs' code (their `code` inputs), kept between Snakemake processes
# for one state of the sources; saved by a real run of the user's process (Snakefile).
CLOSURES = ClosureCache(
    workflow.basedir, Path(".snakemake") / "attnbias" / "closures.json"
)
try:
    RUN = build_run(
        config,
        workflow.basedir,
        closures=CLOSURES,
        where=lambda problem: where_given(problem, workflow),
    )
except RunError as e:
    raise WorkflowError(str(e)) from None
RESULTS, TABLE = RUN.results, RUN.table


onstart:  # an override's folder records its differences (overrides.yaml); real runs only
    write_overrides(RUN.scale, RUN.override, RUN.overrides)
    # a local run is bounded by --cores: Snakemake's default submission limit only costs CPU
    drop_default_rate_limit(workflow)


# A cluster profile's YOUR_* placeholders (profiles/slurm) left unfilled: a dry run warns, any
# other run stops here, with one line naming the profile's file.
_PLACEHOLDERS = hints.resource_placeholders(workflow.resource_settings)
if _PLACEHOLDERS and MAIN_PROCESS:
    _profile = hints.profile_file(sys.argv, root=workflow.basedir)
    print(hints.placeholder_message(_PLACEHOLDERS, _profile, DRY_RUN), file=sys.stderr)
    if not DRY_RUN:
        sys.exit(1)
# A run with cluster resources (a SLURM profile): its jobs run on the nodes, not here.
_SETTINGS = workflow.resource_settings
CLUSTER = any(
    k.startswith("slurm")
    for k in [
        *dict(_SETTINGS.default_resources or {}),
        *(k for r in _SETTINGS.overwrite_resources.values() for k in r),
    ]
)
_GPU_NOTED = []


def gpu_note(wildcards):
    """No files: an input of `train`/`extend` that, the first time a job of a sweep needing a GPU
    is planned on a machine without CUDA outside a cluster run, says so (dry runs included).
    """
    sweep = RUN.entry("train", wildcards)
    local = not CLUSTER and (DRY_RUN or workflow.local_exec)
    wanted = sweep.gpu and config["accelerator"] != "cpu"
    if wanted and local and MAIN_PROCESS and not _GPU_NOTED and not hints.local_cuda():
        _GPU_NOTED.append(True)
        hours = max(s.resources["runtime"] for s in TABLE.sweeps.values() if s.gpu) / 60
        print(hints.no_cuda_note(hours), file=sys.stderr)
    return []


def precomputed_files(wildcards):
    """The committed files of a `precomputed` group, or an error naming what is missing (raised
    only when a requested target needs them)."""
    folder = Path(workflow.basedir, "workflow", "precomputed", wildcards.entry)
    group = folder.name
    missing = [
        n for n in (f"{group}.csv", f"{group}.json") if not (folder / n).exists()
    ]
    if missing:
        raise WorkflowError(hints.precomputed_missing(wildcards.entry, missing, folder))
    return [str(folder / f"{group}.{ext}") for ext in ("csv", "json")]


def seed_run_threads(wildcards):
    """A seed run's threads: every core given to this run here; on a cluster one, as it only
    submits jobs, so the seeds start at once."""
    return 1 if workflow.non_local_exec else workflow.resource_settings.cores or 1


# The targets the command names (none: the default target, `all`).
REQUESTED = getattr(hints.command_line(sys.argv), "targets", None) or ["all"]
# Asked for what this run cannot make: `compare` of the reference run itself, a file of another
# run's folder (said with the settings that made it).  In a few lines, before Snakemake's error.
if MAIN_PROCESS:
    _answers = [hints.folder_settings(t, RESULTS) for t in REQUESTED]
    if "compare" in REQUESTED and RUN.is_reference():
        _answers.append(hints.COMPARE_NEEDS_A_CHANGE)
    for _answer in filter(None, _answers):
        print(_answer, file=sys.stderr)
    if any(_answers):
        sys.exit(1)


def summary_inputs(wildcards):
    """The claim files the claims summary reads: every figure's; in a custom, seed or control
    folder those the change touches and those built there (Run.summary_figures; evaluated only
    when the summary is planned, as it builds the reference run)."""
    return [TABLE.claim_file(p, f) for p, f in RUN.summary_figures(REQUESTED)]


def unknown_target_input(wildcards):
    """The input of `unknown_target` (hints.smk): an error naming the targets meant."""
    names = [r.name for r in workflow.rules if not r.has_wildcards()]
    raise WorkflowError(hints.unknown_target(wildcards.target, names))


def finish_targets():
    """Called at the end of the Snakefile, once all rules exist; it labels the named targets for
    `snakemake --list-target-rules` (attnbias.hints.target_labels), and, in a dry run with cluster
    resources, says which jobs would be submitted (Snakemake's dry run prints every job as a
    plain rule)."""
    for name, text in hints.target_labels(RUN).items():
        if name in workflow._rules:
            workflow.get_rule(name).docstring = text
    if CLUSTER and DRY_RUN and MAIN_PROCESS:
        local = getattr(workflow, "_localrules", set())
        submitted = [r.name for r in workflow.rules if not (r.norun or r.name in local)]
        print(hints.cluster_dry_run_note(submitted), file=sys.stderr)


# --- interrupted runs ------------------------------------------------------------------------------
# A job's outputs are deleted when it starts and when it is killed, and Snakemake treats a missing
# intermediate file like a temp() file: with the figures and claims made from it in place, nothing
# would rerun and the old figure would look current with its data gone.  A real run of the user's
# process sets such products aside under results/stale/ (nothing is deleted), so it rebuilds the
# data and everything made from it.  A dry run moves nothing: it says what a run would set aside,
# and lists their jobs (forced).  A cluster job's parse never looks: other jobs may be rewriting
# their data (tests/workflow/test_job_parse.py).
if MAIN_PROCESS and not DRY_RUN:
    for _moved in set_aside_stale(RUN.stale_edges()):
        print(hints.set_aside_note(_moved), file=sys.stderr)
STALE = stale_products(RUN.stale_edges()) if MAIN_PROCESS and DRY_RUN else []
for _product in STALE:
    print(hints.set_aside_note(_product, dry_run=True), file=sys.stderr)


def stale_forced(wildcards):
    """No files: an input of `check` and `plot` that, in a dry run with stale products, forces
    them while Snakemake builds its graph (the first call), so the dry run lists the jobs a real
    run does once it has set them aside; only the requested targets' are in the graph.
    """
    if STALE:
        workflow.dag.forcefiles.update(STALE)
        STALE.clear()
    return []
