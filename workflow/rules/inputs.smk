# The functions of the wildcards that the rules read (inputs, params, threads, resources,
# wildcard constraints): each finds its job's entry in the figure table (common.smk) by the
# wildcards.  Functions only (`snakemake --lint` wants them apart from the rules).

# a rule's function reading one value of its job's table entry: entry_value(_compute, "func")
from attnbias.workflow import entry_value


def key_constraint(keys):
    """The wildcard constraint of a rule's `entry`: exactly the keys of its table, each written as
    a path ("maxmargin/fig1"; a training batch "lowrank/fig2/lam0"), longest first.  A path then
    says which entry made it, and the rules writing the same kind of path (`compute`, `gather`,
    `precomputed`: results/data/<paper>/<group>.csv) each match only their own.  No key: a
    constraint that matches nothing."""
    names = sorted({"/".join(map(str, k)) for k in keys}, key=len, reverse=True)
    return "|".join(re.escape(n) for n in names) or r"[^\s\S]"


def entry_key(wildcards):
    """The table key a job's `entry` wildcard spells: "maxmargin/fig1" -> ("maxmargin", "fig1")."""
    return tuple(wildcards.entry.split("/"))


def entry_part(index):
    """A params function: one part of the job's table key (0: the paper, 1: the name)."""
    return lambda wildcards: entry_key(wildcards)[index]


def attempt_value(value):
    """A resource value or a function of the attempt (PerAttempt, attnbias.table) at this attempt."""
    return lambda wildcards, attempt: (
        value(wildcards, attempt) if callable(value) else value
    )


def _compute(wildcards):
    return COMPUTES[entry_key(wildcards)]


def _sweep(wildcards):
    """The sweep of a `train` job (its entry: <paper>/<sweep>/<batch>)."""
    return SWEEPS[entry_key(wildcards)[:2]]


def _gather(wildcards):
    return GATHERS[entry_key(wildcards)]


def _extension(wildcards):
    """The grid an `extend` job widens (its entry: <paper>/<sweep>/<label>)."""
    return EXTENSIONS[entry_key(wildcards)]


def figure_data(wildcards):
    """The plot-ready files of a figure (its entry in the figure table)."""
    return FIGURES[entry_key(wildcards)].data


def _instance(wildcards):
    return _stage(wildcards, "instance")


def _svm(wildcards):
    return _stage(wildcards, "svm")


def _stage(wildcards, stage):
    entry = getattr(STAGES[entry_key(wildcards)], stage)
    if entry is None:
        raise WorkflowError(f"{wildcards.entry} has no {stage} stage")
    return entry


PRECOMPUTED = Path(workflow.basedir) / "workflow" / "precomputed"


def precomputed_files(wildcards):
    """The input function of `precomputed`: the committed files of its group, or a clear error
    naming what is missing (raised only when a requested target needs them)."""
    paper, group = entry_key(wildcards)
    folder = PRECOMPUTED / paper / group
    names = [f"{group}.csv", f"{group}.json"]
    missing = [n for n in names if not (folder / n).exists()]
    if missing:
        raise WorkflowError(
            f"gpu_results=precomputed, but no precomputed results are committed for "
            f"{paper}/{group} (missing {', '.join(missing)} in {folder}/). Run with "
            "gpu_results=compute on a GPU, or use the quick preset (scale=quick)."
        )
    return [str(folder / n) for n in names]


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
    """The points of the `train` job ``wildcards`` name (<paper>/<sweep>/<batch>)."""
    return _sweep(wildcards).batches[entry_key(wildcards)[2]]


def train_inputs(wildcards):
    """A `train` job's named inputs: its sweep's (download markers), its code (+ gpu_note: no
    file; a note when this machine has no CUDA, targets.smk) and the uncontrolled folders of the
    runs it shares."""
    return dict(
        job_inputs(_sweep(wildcards).inputs),
        code=_sweep(wildcards).code + gpu_note(wildcards),
        shared=shared_batches(wildcards),
    )


def batch_runs(wildcards):
    """A `train` job's runs, as scripts/train.py takes them (Table.run_params)."""
    paper, sweep, _ = entry_key(wildcards)
    return [
        TABLE.run_params(paper, sweep, p, wildcards.root) for p in _batch(wildcards)
    ]


def train_threads(wildcards):
    """Threads of a `train` or `extend` job: its sweep's."""
    return _sweep(wildcards).resources["threads"]


def train_gpu(wildcards):
    """GPUs of a `train` or `extend` job: one where its sweep needs a GPU."""
    return 1 if _sweep(wildcards).gpu else 0


def shared_batches(wildcards):
    """The uncontrolled batch folders holding the shared runs of a `train` job
    (Table.shared_run; none outside the control)."""
    if wildcards.root != RESULTS:
        return []
    paper, sweep, _ = entry_key(wildcards)
    runs = [TABLE.shared_run(paper, sweep, p) for p in _batch(wildcards)]
    return sorted({r["folder"] for r in runs if r})


def job_runs(wildcards):
    """The most runs a `train` job (its batch) or an `extend` job (one side's candidates) trains."""
    key = entry_key(wildcards)
    if key in EXTENSIONS:
        return max(len(c) for c in EXTENSIONS[key].candidates.values())
    return len(_batch(wildcards))


def train_resource(key, default=0, per_attempt=False, per_run=False):
    """A `train` or `extend` job's resource from its sweep's ``resources``: × the attempt (mem_mb,
    runtime: retries get more) and × the number of runs it trains (runtime)."""

    def value(wildcards, attempt):
        v = _sweep(wildcards).resources.get(key, default)
        return (
            v
            * (attempt if per_attempt else 1)
            * (job_runs(wildcards) if per_run else 1)
        )

    return value


def at_root(paths, root):
    """Paths of the figure table (under RESULTS) in the job's results folder ``root`` (under the
    negative control, the uncontrolled folder builds the runs it shares)."""
    return [root + p[len(RESULTS) :] for p in paths]


def extension_runs(wildcards):
    """An `extend` job's candidate runs on each side ("down", "up"), as scripts/train.py takes
    them (Table.run_params)."""
    paper, sweep, _ = entry_key(wildcards)
    return {
        side: [TABLE.run_params(paper, sweep, p, wildcards.root) for p in points]
        for side, points in _extension(wildcards).candidates.items()
    }


def extend_inputs(wildcards):
    """An `extend` job's named inputs: as `train`'s, with the folders of its grid's runs."""
    return dict(
        job_inputs(_sweep(wildcards).inputs),
        code=_extension(wildcards).code + gpu_note(wildcards),
        batches=at_root(_extension(wildcards).batches, wildcards.root),
        shared=shared_extensions(wildcards),
    )


def shared_extensions(wildcards):
    """The uncontrolled `extend` folders holding the runs an `extend` job under the negative
    control shares (Table.shared_run; none outside the control)."""
    if wildcards.root != RESULTS:
        return []
    runs = [r for side in extension_runs(wildcards).values() for r in side]
    return sorted({r["shared"]["folder"] for r in runs if r.get("shared")})


def _download(wildcards):
    """The table entry of a job of the rule `download`."""
    return DOWNLOADS[entry_key(wildcards)]
