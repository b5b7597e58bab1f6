# Registries of the deep-learning computations: training sweeps (`register_sweep`) and precomputed
# GPU results; hub downloads and local sources (`register_download`) in downloads.smk.  figures.smk and training.smk
# generates their rules.
import functools
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


# Training sweeps: (paper, name) -> entry.  training.smk runs each sweep's points as jobs of the
# one rule `train`, one job per batch of points (results/data/<paper>/<name>/<batch>/, the batch's
# run files; a batch is one point, or with `batch=` a group of points run in turn by one process),
# and each gathered group as a job of `gather` writing results/data/<paper>/<group>.{csv,json} from
# its runs -- or, with gpu_results=precomputed on a GPU preset, of `precomputed` copying the
# committed files instead.
SWEEPS = {}


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
    gpu_figures=True,
    batch=None,
    control_shares=None,
):
    """Register a training sweep: ``func`` (under attnbias.experiments) runs once per point.

    ``points``: list of dicts, all with the same keys in the same order, e.g.
    ``[{"lam": 0.3, "seed": 0}, ...]``; a run's file stem is :func:`point_label` (floats as %g).
    ``settings``: dict shared by every run, to which the point's values are added (typed as in
    ``points``); or a function of the point returning a run's whole settings.
    ``gathers``: ``{group: dict(points=[...] or None for all, func=..., settings={...},
    figures=[...])}``, or with ``runs=[...]`` the run files' stems it reads (a run writing several
    tables writes ``<point>_<table>``); the gather function receives the runs' CSVs as ``parts``
    (rule `gather`, scripts/gather.py).
    The jobs' ``code=`` inputs are the import closures of ``func`` and of each gather's ``func``
    (:func:`experiment_code`).  ``inputs``: named inputs (e.g. download markers) passed to ``func`` by name.
    ``resources``: {"quick": {...}, "paper": {...}} for the preset in use (threads, mem_mb,
    runtime in minutes, gpu_mem_mb); mem_mb and runtime grow with the attempt.
    ``gpu``: whether the jobs need a GPU (default: the paper preset).
    ``gpu_figures``: whether the figures belong to the ``gpu_figures`` target (else
    ``cpu_figures``).
    ``batch``: a point key (e.g. ``"lr"``), or a tuple of keys, whose values one `train` job
    runs in turn: one job (batch) per combination of the other keys, sharing one process's start-up (imports, data,
    tokenizer, model class), for short runs where that start-up is a large share of the job
    (quick preset).  None: one job per point, which a cluster runs in parallel.  The rule, run
    files, resume checkpoints and gathers are the same either way.
    ``control_shares``: a module under attnbias.experiments defining ``control_trains(run)`` (the
    uncontrolled settings a run's settings under the negative control train, bit for bit) and
    ``as_control_run(tables, run)`` (that run's tables as the controlled run writes them).
    Under the control, a run that trains as one of the sweep's own uncontrolled runs is not
    trained again: its `train` job reads that run from the uncontrolled folder (trained there
    first if missing) and relabels it (:func:`shared_run`).
    """
    keys = list(points[0])
    gpu = SCALE == "paper" if gpu is None else gpu
    res = dict(threads=1, mem_mb=2000, runtime=20)
    res.update((resources or {}).get(SCALE, {}))
    # batches: label -> points, one `train` job each (its folder's name)
    batches = {}
    within = (batch,) if isinstance(batch, str) else tuple(batch or ())
    for p in points:
        if batch is None:
            label = point_label(p)
        else:
            assert all(k in keys for k in within), "batch names point keys"
            rest = {k: v for k, v in p.items() if k not in within}
            label = point_label(rest) or "all"
        batches.setdefault(label, []).append(p)
    batch_of = {point_label(p): b for b, ps in batches.items() for p in ps}
    SWEEPS[(paper, name)] = dict(
        points=[dict(p) for p in points],
        func=func,
        settings=settings,
        code=experiment_code(func, "scripts/train.py"),
        inputs=dict(inputs or {}),
        resources=res,
        gpu=gpu,
        gathers={},
        batches=batches,
        batch_of=batch_of,
        control_shares=control_shares,
    )
    for group, g in gathers.items():
        chosen = points if g.get("points") is None else g["points"]
        # the run files gathered, in order (file stems), and the batch folders holding them
        runs = g.get("runs") or [point_label(p) for p in chosen]
        folders = [batch_of[point_label(p)] for p in chosen]
        SWEEPS[(paper, name)]["gathers"][group] = dict(
            batches=[
                f"{RESULTS}/data/{paper}/{name}/{b}" for b in dict.fromkeys(folders)
            ],
            runs=runs,
            func=g["func"],
            settings=g.get("settings", {}),
            code=experiment_code(g["func"], "scripts/gather.py"),
        )
        for fig in g["figures"]:
            register_figure(paper, fig, data_files(paper, group), gpu=gpu_figures)


def point_settings(sweep, point, controlled=True):
    """One run's whole settings: the sweep's shared settings plus the typed point (and the
    control switch when it is on, unless ``controlled`` is False: the run in the uncontrolled
    folder)."""
    settings = (
        sweep["settings"](point)
        if callable(sweep["settings"])
        else dict(sweep["settings"], **point)
    )
    return with_control(settings) if controlled else settings


@functools.cache
def _uncontrolled_runs(paper, name):
    """The sweep's uncontrolled runs: (settings, point) pairs."""
    sweep = SWEEPS[(paper, name)]
    return [(point_settings(sweep, p, controlled=False), p) for p in sweep["points"]]


def shared_run(paper, name, point):
    """Under the negative control, where the run ``point`` names trains as one of the sweep's own
    uncontrolled runs (its ``control_shares`` module's ``control_trains``): that run's folder
    (in the uncontrolled results folder), file stem, and the function that relabels it; else None.
    """
    sweep = SWEEPS[(paper, name)]
    if CONTROL == "none" or not sweep["control_shares"]:
        return None
    from attnbias.workflow import resolve

    shares = sweep["control_shares"]
    trains = resolve("attnbias.experiments", f"{shares}.control_trains")
    trained = trains(point_settings(sweep, point))
    source = next((p for s, p in _uncontrolled_runs(paper, name) if s == trained), None)
    if source is None:
        return None
    return {
        "folder": f"{UNCONTROLLED}/data/{paper}/{name}/{sweep['batch_of'][point_label(source)]}",
        "label": point_label(source),
        "relabel": f"{shares}.as_control_run",
    }


def run_params(paper, name, point, root):
    """What scripts/train.py needs of one run: its settings, the stem of its files in the batch's
    folder, and its undeclared resume state under results/scratch/ (Snakemake deletes declared
    outputs before a job starts; a killed run resumes from there, and a finished run of a killed
    batch keeps its tables in ``finished``).  ``root``: the results folder of the job (RESULTS,
    or under the control also UNCONTROLLED, where its shared runs are trained); under the
    control, a shared run's ``shared`` (:func:`shared_run`)."""
    sweep = SWEEPS[(paper, name)]
    controlled = root == RESULTS
    label = point_label(point)
    folder = f"{root}/scratch/{paper}_{name}_train/{SCALE}/{label}"
    params = {  # (a dict literal: `checkpoint` opening a line is a Snakemake keyword)
        "settings": point_settings(sweep, point, controlled),
        "label": label,
        "checkpoint": f"{folder}/checkpoint.pt",
        "metrics_log": f"{folder}/metrics.jsonl",
        "finished": f"{folder}/finished",
    }
    shared = shared_run(paper, name, point) if controlled else None
    if shared:  # (only then: the default run's params stay as they were)
        params["shared"] = shared
    return params


def shared_batches(wildcards):
    """The uncontrolled batch folders holding the shared runs of a `train` job (:func:`shared_run`;
    none outside the control)."""
    if wildcards.root != RESULTS:
        return []
    runs = [shared_run(wildcards.paper, wildcards.sweep, p) for p in _batch(wildcards)]
    return sorted({r["folder"] for r in runs if r})


def _batch(wildcards):
    """The points of the `train` job ``wildcards`` name (paper, sweep, batch)."""
    return SWEEPS[(wildcards.paper, wildcards.sweep)]["batches"][wildcards.batch]


def train_resource(key, default=0, per_attempt=False, per_run=False):
    """A `train` job's resource from its sweep's ``resources``: × the attempt (mem_mb, runtime:
    retries get more) and × the number of runs in the batch (runtime)."""

    def value(wildcards, attempt):
        v = SWEEPS[(wildcards.paper, wildcards.sweep)]["resources"].get(key, default)
        return (
            v
            * (attempt if per_attempt else 1)
            * (len(_batch(wildcards)) if per_run else 1)
        )

    return value
