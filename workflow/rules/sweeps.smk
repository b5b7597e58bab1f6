# Registries of the deep-learning computations: training sweeps (`register_sweep`) and precomputed
# GPU results; hub downloads and local sources (`register_download`) in downloads.smk.  figures.smk and training.smk
# generates their rules.
from pathlib import Path


include: "downloads.smk"


PRECOMPUTED = Path(workflow.basedir) / "workflow" / "precomputed"


def use_precomputed(gpu):
    """True when a GPU computation's plot-ready files are copied from workflow/precomputed/
    instead of trained: gpu_results=precomputed, for computations that need a GPU (paper preset).
    In the quick preset the GPU figures train on the CPU in minutes, so they are computed.
    """
    return gpu and config["gpu_results"] == "precomputed"


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


# Training sweeps: (paper, name) -> entry; training.smk generates, per sweep, one training rule
# `<paper>_<name>_train` (one job per point, its resume checkpoint under results/scratch/), or with
# `batch=` one rule `<paper>_<name>_train_<group>` per group of points run in turn by one job, and, per
# gathered group, a rule `<paper>_gather_<group>` writing results/data/<paper>/<group>.{csv,json}
# from the runs of that group -- or, with gpu_results=precomputed on a GPU preset, one rule
# `<paper>_precomputed_<group>` copying the committed files instead of both.
SWEEPS = {}

# wildcard spelling and pattern of each point value type
_WILDCARD_RE = {float: r"[0-9.e+-]+", int: r"\d+"}


def grid_points(*axes):
    """Every combination of the named axes ``(key, values)`` as sweep points, the first axis
    varying slowest: ``grid_points(("lam", [0, 1]), ("seed", [0]))``."""
    points = [{}]
    for key, values in axes:
        points = [dict(p, **{key: v}) for p in points for v in values]
    return points


def as_floats(values):
    """A number or a list of numbers as a list of floats (sweep values are written with %g)."""
    return [float(v) for v in (values if isinstance(values, list) else [values])]


def point_label(point):
    """``{"lam": 0.3, "seed": 0}`` -> ``"lam0.3_seed0"`` (floats as %g): the run's file stem."""
    return "_".join(
        f"{k}{v:g}" if isinstance(v, float) else f"{k}{v}" for k, v in point.items()
    )


def register_sweep(
    paper,
    name,
    points,
    func,
    settings,
    gathers,
    inputs=None,
    resources=None,
    gpu=None,
    tables=None,
    gpu_figures=True,
    batch=None,
):
    """Register a training sweep: ``func`` (under attnbias.experiments) runs once per point.

    ``points``: list of dicts, all with the same keys in the same order (the wildcards), e.g.
    ``[{"lam": 0.3, "seed": 0}, ...]``; float values are written with %g.
    ``settings``: dict shared by every run, to which the point's values are added (typed as in
    ``points``); or a function of the point returning a run's whole settings.
    ``gathers``: ``{group: dict(points=[...] or None for all, func=..., settings={...},
    figures=[...])}``; the gather function receives the runs' CSVs as ``parts``.
    The jobs' ``code=`` inputs are the import closures of ``func`` and of each gather's ``func``
    (:func:`experiment_code`).  ``inputs``: named inputs (e.g. download markers) passed to ``func`` by name.
    ``resources``: {"quick": {...}, "paper": {...}} for the preset in use (threads, mem_mb,
    runtime in minutes, gpu_mem_mb); mem_mb and runtime grow with the attempt.
    ``gpu``: whether the jobs need a GPU (default: the paper preset).
    ``tables``: for a single run with no gather (one point, ``gathers={}``): the names of the
    plot-ready tables it returns, written straight to results/data/<paper>/<table>.{csv,json};
    ``{table: [figures]}``.
    ``gpu_figures``: whether the figures belong to the ``gpu_figures`` target (else
    ``cpu_figures``).
    ``batch``: a point key (e.g. ``"lr"``) whose values one job runs in turn: one job per
    combination of the other keys, sharing one process's start-up (imports, data, tokenizer,
    model class), for short runs where that start-up is a large share of the job (quick preset).
    None: one job per point, which a cluster runs in parallel.  The run files, resume checkpoints
    and gathers are the same either way.
    """
    keys = list(points[0])
    types = {k: type(points[0][k]) for k in keys}
    pattern = "_".join(f"{k}{{{k}}}" for k in keys)
    if tables:
        assert (
            len(points) == 1 and not gathers
        ), "a sweep with tables is one run, no gather"
        outputs = {}
        for t in tables:
            outputs[t], outputs[f"{t}_meta"] = data_files(paper, t)
    else:
        outputs = dict(
            csv=f"{RESULTS}/data/{paper}/{name}/{pattern}.csv",
            meta=f"{RESULTS}/data/{paper}/{name}/{pattern}.json",
        )
    gpu = SCALE == "paper" if gpu is None else gpu
    res = dict(threads=1, mem_mb=2000, runtime=20)
    res.update((resources or {}).get(SCALE, {}))
    groups = {}
    if batch is not None:
        assert (
            not tables and batch in keys
        ), "batch names a point key of a gathered sweep"
        for p in points:
            rest = {k: v for k, v in p.items() if k != batch}
            # the group's label names its rule: letters, digits and _ only (0.3 -> 0p3)
            label = (point_label(rest) or "all").replace(".", "p").replace("-", "m")
            groups.setdefault(label, []).append(p)
    constraints = {
        k: _WILDCARD_RE.get(t) or "|".join(sorted({str(p[k]) for p in points}))
        for k, t in types.items()
    }
    SWEEPS[(paper, name)] = dict(
        points=[dict(p) for p in points],
        keys=keys,
        types=types,
        pattern=pattern,
        func=func,
        settings=settings,
        code=experiment_code(func, "scripts/train.py"),
        inputs=dict(inputs or {}),
        resources=res,
        gpu=gpu,
        constraints=constraints,
        gathers={},
        outputs=outputs,
        # a run's file stem: the wildcard pattern, or the fixed label of a one-run sweep
        stem=point_label(points[0]) if tables else pattern,
        single=dict(points[0]) if tables else None,
        tables=list(tables or []),
        batch=batch,
        groups=groups,
    )
    for t, figs in (tables or {}).items():
        for fig in figs:
            register_figure(paper, fig, data_files(paper, t), gpu=gpu_figures)
    for group, g in gathers.items():
        chosen = points if g.get("points") is None else g["points"]
        SWEEPS[(paper, name)]["gathers"][group] = dict(
            parts=[
                f"{RESULTS}/data/{paper}/{name}/{point_label(p)}.csv" for p in chosen
            ],
            func=g["func"],
            settings=g.get("settings", {}),
            code=experiment_code(g["func"]),
        )
        for fig in g["figures"]:
            register_figure(paper, fig, data_files(paper, group), gpu=gpu_figures)


def point_settings(sweep, point):
    """One run's whole settings: the sweep's shared settings plus the typed point (and the
    control switch when it is on)."""
    if callable(sweep["settings"]):
        return with_control(sweep["settings"](point))
    return with_control(dict(sweep["settings"], **point))


def run_params(paper, name, point, suffix=""):
    """What scripts/train.py needs of one run: its settings, its undeclared resume state under
    results/scratch/ (Snakemake deletes declared outputs before a job starts; a killed run resumes
    from there), and the suffix of its output names (``csv0``, ``meta0``, ... in a batched job).
    """
    sweep = SWEEPS[(paper, name)]
    folder = f"{RESULTS}/scratch/{paper}_{name}_train/{SCALE}/{point_label(point)}"
    return {  # (a dict literal: `checkpoint` opening a line is a Snakemake keyword)
        "settings": point_settings(sweep, point),
        "checkpoint": f"{folder}/checkpoint.pt",
        "metrics_log": f"{folder}/metrics.jsonl",
        "finished": f"{folder}/finished",
        "suffix": suffix,
    }


def sweep_runs(paper, name):
    """The ``runs`` params function of a one-job-per-point training rule: a list of the one run
    its wildcards name (a function of the wildcards only, since Snakemake's params trigger ignores
    those derived from input/output/threads/resources)."""
    sweep = SWEEPS[(paper, name)]

    def runs(wildcards):
        if sweep["tables"]:  # one run: its point is fixed, no wildcards
            point = sweep["single"]
        else:
            point = {k: sweep["types"][k](wildcards[k]) for k in sweep["keys"]}
        return [run_params(paper, name, point)]

    return runs


def batch_outputs(paper, name, points):
    """Named outputs of a batched training job: ``csv<i>``/``meta<i>``, the run files of its
    points (the same files a one-job-per-point rule writes, so gathers do not change).
    """
    out = {}
    for i, p in enumerate(points):
        stem = f"{RESULTS}/data/{paper}/{name}/{point_label(p)}"
        out[f"csv{i}"], out[f"meta{i}"] = f"{stem}.csv", f"{stem}.json"
    return out
