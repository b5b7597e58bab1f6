# The robustness table: every claim measured across seeds (`snakemake robustness`,
# `robustness_<paper>`).  Seed 0 is this run (its claim files, built here as usual); each seed N of
# `robustness.seeds` is a run of this workflow with `--config seed=N` (every random seed shifted
# by N) into its own results folder, one `robustness_seed` job per (paper, seed), so a cluster
# runs the seeds in parallel and a killed run resumes where it stopped.  Only the figures the seed
# shift redraws are rerun; the others (deterministic constructions, precomputed results) are
# measured once and listed as such.  Summary: results/robustness/summary.{md,csv}; one picture
# per paper (claims × seeds) in the report.  This file: which figures each seed reruns (functions
# and tables); the rules are in robustness.smk.
from attnbias.workflow import shift_seeds

ROBUST = config["robustness"]
ROBUST_DIR = f"{RESULTS}/robustness"
# the seed-fragile claims examined, and how (attnbias.claims.robustness.OUTCOMES)
from attnbias.claims.robustness import check_examined

with open(Path(workflow.basedir) / "workflow" / "report" / "examined.yaml") as _f:
    EXAMINED = yaml.safe_load(_f) or {}
try:
    check_examined(EXAMINED)
except ValueError as _e:
    raise WorkflowError(f"workflow/report/examined.yaml: {_e}") from None


def _data_group(path):
    """(paper, group) of a plot-ready file results/.../data/<paper>/<group>.csv, else None."""
    parts = str(path).split("/")
    if len(parts) >= 3 and parts[-3] == "data" and parts[-1].endswith(".csv"):
        return parts[-2], parts[-1][: -len(".csv")]
    return None


def redrawn_group(paper, group):
    """Whether `--config seed=N` redraws a plot-ready group: a training sweep always does; a
    computation when its settings hold a seed, or when it reads a group that is redrawn; committed
    precomputed results never."""
    if (paper, group) in PRECOMPUTED_GROUPS:
        return False
    entry = COMPUTES.get((paper, group))
    if entry is None:
        return True  # gathered from training runs, which are seeded
    if shift_seeds(entry.settings, 1) != entry.settings:
        return True
    read = [
        _data_group(p)
        for v in entry.inputs.values()
        for p in (v if isinstance(v, list) else [v])
    ]
    return any(redrawn_group(*g) for g in read if g is not None)


# "<paper>/<fig>" -> whether the seed redraws its data, for the figures the run shows
# (robustness.figures restricts them; empty: all)
ROBUST_FIGURES = {
    f"{p}/{f}": any(
        redrawn_group(*_data_group(d)) for d in FIGURES[(p, f)].data if _data_group(d)
    )
    for p, f in shown_figures()
    if not ROBUST["figures"] or f"{p}/{f}" in ROBUST["figures"]
}
_unknown = sorted(set(ROBUST["figures"]) - {f"{p}/{f}" for p, f in FIGURES})
if _unknown:
    raise WorkflowError(
        f"robustness.figures: unknown figure(s) {_unknown}; "
        f"allowed: '<paper>/<fig>' of {sorted(f'{p}/{f}' for p, f in FIGURES)[:6]} …"
    )


def robust_figures(paper, redrawn_only=False):
    return [
        k.split("/")[1]
        for k, r in ROBUST_FIGURES.items()
        if k.split("/")[0] == paper and (r or not redrawn_only)
    ]


ROBUST_PAPERS = [p for p in PAPERS if robust_figures(p)]


def robust_seed_table(paper, seed):
    return f"{ROBUST_DIR}/{paper}/seed-{seed}.csv"


def robust_tables(papers):
    return [
        robust_seed_table(p, s)
        for p in papers
        for s in [0]
        + (list(ROBUST["seeds"]) if robust_figures(p, redrawn_only=True) else [])
    ]


# the code of the runs a seed job starts: any change reruns the seed run, which then reruns
# exactly the jobs the change affects
ROBUST_CODE = sorted(
    str(p.relative_to(workflow.basedir))
    for pattern in ("src/attnbias/**/*.py", "scripts/*.py", "workflow/rules/*.smk")
    for p in Path(workflow.basedir).glob(pattern)
) + ["Snakefile"]


def write_given_config(path, settings, log):
    """The settings every seed run of `snakemake robustness` gets (all but the seed shift)."""
    Path(path).write_text(
        "# the settings of the runs of `snakemake robustness` (all but the seed shift)\n"
        + yaml.safe_dump(dict(settings), sort_keys=False)
    )
    Path(log).write_text(f"wrote {path}\n")


def seed_run_threads():
    """A seed run's threads: every core given to this run here; on a cluster (known when the job
    runs, not at parse time) one, as it only submits jobs, so the seeds start at once.
    """
    if workflow.non_local_exec:
        return 1
    return workflow.resource_settings.cores or 1
