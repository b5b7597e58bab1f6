# What `all` and the paper aggregates (`maxmargin`, ...) build: every figure of the table, or under
# the negative control only those it reaches (Table.shown_figures).  Functions only; the
# alias rules that use them are in figures.smk.


def shown_figures():
    """The figures a run builds (``all``, the paper aggregates, the claims summary): every figure,
    or under the negative control only those it reaches (attnbias.table: Table.shown_figures).
    """
    return TABLE.shown_figures()


def paper_targets(paper):
    out = []
    for p, fig in shown_figures():
        if p == paper:
            out += figure_outputs(p, fig) + [claim_file(p, fig)]
    return out


def all_targets():
    out = []
    for paper in PAPERS:
        out += paper_targets(paper)
    out += [f"{RESULTS}/claims/summary.md", f"{RESULTS}/claims/summary.csv"]
    if config["claims_strict"]:
        out.append(f"{RESULTS}/claims/strict.ok")
    return out


# --- first mistakes, said in a line ----------------------------------------------------------------
from snakemake_interface_executor_plugins.settings import ExecMode

from attnbias import hints

MAIN_PROCESS = workflow.exec_mode == ExecMode.DEFAULT  # not a cluster job's own parse
DRY_RUN = workflow.output_settings.dryrun
# A cluster profile's YOUR_* placeholders (profiles/slurm) left unfilled: a dry run warns, any
# other run stops here, with one line naming the profile's file.
_PLACEHOLDERS = hints.resource_placeholders(workflow.resource_settings)
if _PLACEHOLDERS and MAIN_PROCESS:
    print(
        hints.placeholder_message(
            _PLACEHOLDERS,
            hints.profile_file(sys.argv, root=workflow.basedir),
            DRY_RUN,
        ),
        file=sys.stderr,
    )
    if not DRY_RUN:
        sys.exit(1)
# A run with cluster resources (a SLURM profile): its jobs run on the nodes, not here.
CLUSTER = any(
    k.startswith("slurm")
    for k in [
        *dict(workflow.resource_settings.default_resources or {}),
        *(
            k
            for r in workflow.resource_settings.overwrite_resources.values()
            for k in r
        ),
    ]
)
_GPU_NOTED = []


def gpu_note(wildcards):
    """No files: an input function of `train` that, the first time a job of a sweep needing a GPU
    is planned on a machine without CUDA outside a cluster run, says so (dry runs included, before
    anything starts)."""
    sweep = _sweep(wildcards)
    local = not CLUSTER and (DRY_RUN or workflow.local_exec)
    wanted = sweep.gpu and config["accelerator"] != "cpu"
    if wanted and local and MAIN_PROCESS and not _GPU_NOTED and not hints.local_cuda():
        _GPU_NOTED.append(True)
        hours = max(s.resources["runtime"] for s in SWEEPS.values() if s.gpu) / 60
        print(
            "Note: no CUDA GPU on this machine, so the paper preset's training jobs (rule "
            f"train, gpu=1, time limits up to {hours:g} h a run on a GPU) would run on its "
            "CPU.  Use a GPU machine or a cluster profile (docs/cluster.md), or "
            "gpu_results=precomputed, or the quick preset.",
            file=sys.stderr,
        )
    return []


def unknown_target_input(wildcards):
    """The input function of `unknown_target` (hints.smk), an error naming the targets
    meant (attnbias.hints.unknown_target)."""
    names = [r.name for r in workflow.rules if not r.has_wildcards()]
    raise WorkflowError(hints.unknown_target(wildcards.target, names))


# --- what each target builds: one line, for `snakemake --list-target-rules` -----------------------
AGGREGATES = {
    "all": "every figure and the claims summary (the default target)",
    "cpu_figures": "the figures that need no GPU in the paper preset",
    "gpu_figures": "the figures whose paper-preset runs train on a GPU",
    "checks": "the claims summary (and, with claims_strict=true, the gate)",
    "claims_summary": "results/claims/summary.md and summary.csv from the claim files",
    "claims_gate": "fails when a paper claim or sanity check failed (claims_strict=true)",
    "robustness": "every claim over the seeds of robustness.seeds",
    "robustness_config": "the settings every seed run gets (used by the robustness targets)",
    **{
        p: f"every figure of the paper {title.split(' – ', 1)[1]}"
        for p, title in PAPERS.items()
    },
    **{f"robustness_{p}": f"every claim of {p} over the seeds" for p in PAPERS},
}


def finish_targets():
    """Called at the end of the Snakefile, once every rule exists.  It labels the named targets
    for `snakemake --list-target-rules`, writes the figure table where `python -m attnbias.figures`
    asks for it (ATTNBIAS_FIGURE_TABLE) and, in a dry run with cluster resources, says which jobs
    would be submitted (Snakemake's dry run prints every job as a plain rule)."""
    import json
    import os

    from attnbias.figures import TABLE_VAR, caption_line
    from attnbias.table.costs import figure_rows

    for paper, fig in FIGURES:
        workflow.get_rule(f"{paper}_{fig}").docstring = caption_line(
            workflow.basedir, paper, fig
        )
    for name, text in AGGREGATES.items():
        if name in workflow._rules:
            workflow.get_rule(name).docstring = text
    if os.environ.get(TABLE_VAR):
        Path(os.environ[TABLE_VAR]).write_text(
            json.dumps(figure_rows(TABLE, caption_line), indent=1)
        )
    if CLUSTER and DRY_RUN and MAIN_PROCESS:
        local = getattr(workflow, "_localrules", set())
        submitted = [r.name for r in workflow.rules if not (r.norun or r.name in local)]
        print(
            "Cluster dry run: jobs of the rules "
            f"{', '.join(sorted(submitted))} would be submitted; all others are local rules and "
            "run on this host (the dry run lists every job as `rule`, with the default "
            "resources).",
            file=sys.stderr,
        )
