# The functions of the wildcards that the rules read (inputs, params, threads, resources,
# wildcard constraints): each finds its job's entry in the figure table (common.smk) by the
# wildcards.  Functions only (`snakemake --lint` wants them apart from the rules).

# a rule's function reading one value of its job's table entry: entry_value(_compute, "func")
from attnbias.workflow import entry_value


def one_of(choices):
    """A wildcard constraint allowing, after each prefix, only its values: ``{"maxmargin/":
    ["fig1", "fig2"], ...}``.  Each branch is a fixed-width lookbehind on the text just before the
    wildcard (e.g. the paper folder), so that `compute`, `gather` and `precomputed`, which write
    the same kind of path, never claim each other's files.  No choice: matches nothing.
    """
    branches = [
        f"(?<={re.escape(prefix)})(?:{'|'.join(re.escape(v) for v in sorted(values, key=len, reverse=True))})"
        for prefix, values in sorted(choices.items())
        if values
    ]
    return "|".join(branches) or "(?!)"


def by_paper(keys, prefix="{paper}/"):
    """``{(paper, x), ...}`` as :func:`one_of` choices keyed by ``prefix`` (formatted)."""
    out = {}
    for paper, x, *rest in keys:
        out.setdefault(prefix.format(paper=paper, rest=rest), []).append(x)
    return out


def attempt_value(value):
    """A resource value or a function of the attempt (PerAttempt, attnbias.table) at this attempt."""
    return lambda wildcards, attempt: (
        value(wildcards, attempt) if callable(value) else value
    )


def _compute(wildcards):
    return COMPUTES[(wildcards.paper, wildcards.group)]


def _sweep(wildcards):
    return SWEEPS[(wildcards.paper, wildcards.sweep)]


def _gather(wildcards):
    return GATHERS[(wildcards.paper, wildcards.group)]


def figure_data(wildcards):
    """The plot-ready files of a figure (its entry in the figure table)."""
    return FIGURES[(wildcards.paper, wildcards.fig)].data


def _instance(wildcards):
    return _stage(wildcards, "instance")


def _svm(wildcards):
    return _stage(wildcards, "svm")


def _stage(wildcards, stage):
    entry = getattr(STAGES[(wildcards.paper, wildcards.group)], stage)
    if entry is None:
        raise WorkflowError(f"{wildcards.paper} {wildcards.group} has no {stage} stage")
    return entry


PRECOMPUTED = Path(workflow.basedir) / "workflow" / "precomputed"


def precomputed_files(paper, group, names):
    """Input function of a precomputed-copy rule: the committed files, or a clear error naming what
    is missing (raised only when a requested target needs them)."""

    def inputs(wildcards):
        folder = PRECOMPUTED / paper / group
        missing = [n for n in names if not (folder / n).exists()]
        if missing:
            raise WorkflowError(
                f"gpu_results=precomputed, but no precomputed results are committed for "
                f"{paper}/{group} (missing {', '.join(missing)} in {folder}/). Run with "
                "gpu_results=compute on a GPU, or use the quick preset (scale=quick)."
            )
        return [str(folder / n) for n in names]

    return inputs


def job_inputs(inputs):
    """A table entry's named inputs, the download markers (results/downloads/) as ancient(): a
    re-download never reruns what read it."""

    def mark(f):
        return ancient(f) if str(f).startswith("results/downloads/") else f

    return {
        k: [mark(f) for f in v] if isinstance(v, list) else mark(v)
        for k, v in inputs.items()
    }


def _batch(wildcards):
    """The points of the `train` job ``wildcards`` name (paper, sweep, batch)."""
    return _sweep(wildcards).batches[wildcards.batch]


def shared_batches(wildcards):
    """The uncontrolled batch folders holding the shared runs of a `train` job
    (Table.shared_run; none outside the control)."""
    if wildcards.root != RESULTS:
        return []
    runs = [
        TABLE.shared_run(wildcards.paper, wildcards.sweep, p) for p in _batch(wildcards)
    ]
    return sorted({r["folder"] for r in runs if r})


def train_resource(key, default=0, per_attempt=False, per_run=False):
    """A `train` job's resource from its sweep's ``resources``: × the attempt (mem_mb, runtime:
    retries get more) and × the number of runs in the batch (runtime)."""

    def value(wildcards, attempt):
        v = _sweep(wildcards).resources.get(key, default)
        return (
            v
            * (attempt if per_attempt else 1)
            * (len(_batch(wildcards)) if per_run else 1)
        )

    return value


def _download(wildcards):
    """The table entry of a job of the rule `download`."""
    return DOWNLOADS[(wildcards.paper, wildcards.name)]
