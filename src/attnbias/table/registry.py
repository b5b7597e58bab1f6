"""The figure table's entry kinds and :class:`Table`, which builds them from the configuration.

One dataclass per kind of entry: :class:`Figure` (a figure and the plot-ready files it reads),
:class:`Compute` (a computation writing one plot-ready group), :class:`Sweep` with its
:class:`Gather` entries (training runs and the groups gathered from them), :class:`Download` (a hub
download), :class:`TableFiles` (a table also written as CSV + Markdown) and :class:`Stages` (the
instance and SVM stages of a synthetic group).  The papers' entries are registered by
``attnbias.table.<paper>.register`` (:func:`attnbias.table.build_table`).  The workflow's rules,
each written once in ``workflow/rules/``, make one job per entry; a rule reads its job's entry by
the wildcards (``table.computes[(paper, group)]``).

A :class:`Table` knows the run it describes: its configuration (validated, seed-shifted), results
folder, negative control and preset.  Every path it gives starts with that results folder, so the
default run, an override, the control and each seed shift never share a file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from attnbias.workflow import load_schema, resolve, sweep_keys


class TableError(ValueError):
    """A setting the figure table cannot be built from (the workflow stops, naming the key)."""


@dataclass(frozen=True)
class PerAttempt:
    """A job resource (mem_mb, runtime) that grows with Snakemake's attempt: ``base × attempt``.
    Called as a rule's resource function ``(wildcards, attempt)``."""

    base: float

    def __call__(self, wildcards, attempt: int) -> float:
        return self.base * attempt


@dataclass
class Figure:
    """A figure: its `check` and `plot` jobs read ``data`` (plot-ready CSV + JSON files); ``gpu``:
    it belongs to the ``gpu_figures`` target (else ``cpu_figures``)."""

    data: list[str]
    gpu: bool = False


@dataclass
class Compute:
    """One job of the rule `compute`: ``attnbias.experiments.<func>(**settings, **inputs)`` writing
    ``<results>/data/<paper>/<group>.{csv,json}``, the plot-ready data of ``figures``.  ``code``:
    the files whose edits rerun it (the import closure of ``func``)."""

    figures: list[str]
    func: str
    settings: dict
    inputs: dict
    code: list[str]
    threads: int = 1
    mem_mb: int | PerAttempt = 2000
    runtime: str | int | PerAttempt = "30m"
    gpu: bool = False


@dataclass
class Stage:
    """One stage job (rule `instance` or `svm`) of a synthetic group: ``func`` with ``settings``."""

    func: str
    settings: dict
    code: list[str] = field(default_factory=list)


@dataclass
class Stages:
    """The stages of a synthetic group that owns stage files: its data and, if any, its SVM."""

    instance: Stage
    svm: Stage | None


@dataclass
class Gather:
    """One job of the rule `gather`: ``func`` reads the run files ``runs`` (stems) found in the
    batch folders ``batches`` and writes one plot-ready group."""

    batches: list[str]
    runs: list[str]
    func: str
    settings: dict
    code: list[str]
    sweep: str = ""


@dataclass
class Sweep:
    """A training sweep: ``func`` runs once per point (one `train` job per batch of points).

    ``settings``: shared by every run, the point added; or a function of the point returning a
    run's whole settings (:meth:`Table.point_settings`).  ``batches``: folder label -> its points;
    ``batch_of``: a point's label -> its batch.  ``control_shares``: the module under
    ``attnbias.experiments`` telling which runs the negative control leaves unchanged
    (:meth:`Table.shared_run`)."""

    points: list[dict]
    func: str
    settings: dict | Callable[[dict], dict]
    code: list[str]
    inputs: dict
    resources: dict
    gpu: bool
    gathers: dict[str, Gather]
    batches: dict[str, list[dict]]
    batch_of: dict[str, str]
    control_shares: str | None = None


@dataclass
class Download:
    """One job of the rule `download`: ``attnbias.<func>(**settings)`` fetching the hub artefacts
    ``hub`` (``[kind, name, *the settings naming it]``), writing a marker; ``prepares``: it also
    writes files beside the marker."""

    func: str
    settings: dict
    hub: list[list[str]]
    prepares: bool = False
    threads: int = 1
    mem_mb: int = 8000
    runtime: int = 240


@dataclass
class TableFiles:
    """A table also written as CSV + Markdown next to its figure, from the plot-ready ``group``:
    ``write(data_csv, csv_path, md_path)``."""

    group: str
    code: list[str]
    write: Callable[[str, str, str], None]


def grid_points(*axes) -> list[dict]:
    """Every combination of the named axes ``(key, values)`` as sweep points, the first axis
    varying slowest: ``grid_points(("lam", [0, 1]), ("seed", [0]))``."""
    points: list[dict] = [{}]
    for key, values in axes:
        points = [dict(p, **{key: v}) for p in points for v in values]
    return points


def as_floats(values) -> list[float]:
    """A number or a list of numbers as a list of floats (sweep values are written with %g)."""
    return [float(v) for v in (values if isinstance(values, list) else [values])]


def point_label(point: dict) -> str:
    """``{"lam": 0.3, "seed": 0}`` -> ``"lam0.3_seed0"`` (floats as %g): the run's file stem."""
    return "_".join(
        f"{k}{v:g}" if isinstance(v, float) else f"{k}{v}" for k, v in point.items()
    )


class Table:
    """The figure table of one run: every entry, built from its configuration.

    Parameters
    ----------
    config : dict
        The validated configuration (defaults filled, seeds shifted, local sources resolved).
    basedir : str or Path
        The repository (its schemas, sources).
    results : str
        The results folder of the run (``results`` for the default run).
    uncontrolled : str
        The same run's folder without the negative control (its shared runs live there).
    closures : attnbias.closure.ClosureCache
        The import closures that make each job's ``code`` input.
    """

    def __init__(self, config: dict, *, basedir, results: str, uncontrolled: str, closures):
        self.config = config
        self.basedir = Path(basedir)
        self.results, self.uncontrolled = results, uncontrolled
        self.closures = closures
        self.scale = config["scale"]
        self.control = config["control"]
        self.figures: dict[tuple[str, str], Figure] = {}
        self.computes: dict[tuple[str, str], Compute] = {}
        self.sweeps: dict[tuple[str, str], Sweep] = {}
        self.downloads: dict[tuple[str, str], Download] = {}
        self.table_files: dict[tuple[str, str], TableFiles] = {}
        self.stages: dict[tuple[str, str], Stages] = {}
        self.stage_owner: dict[tuple[str, str], str] = {}
        self._uncontrolled_runs: dict[tuple[str, str], list] = {}

    # --- the code a job runs (its `code` input: edits rerun it) ----------------------------------
    def module_code(self, *modules: str) -> list[str]:
        """The package modules that ``modules`` (dotted, under attnbias: ``"io"``) run, sorted."""
        return sorted({f for m in modules for f in self.closures.code(m)})

    def script_code(self, script: str, *modules: str) -> list[str]:
        """The script itself and the package modules its own ``attnbias`` imports and ``modules``
        run, sorted."""
        return sorted({script, *self.closures.script(script), *self.module_code(*modules)})

    def experiment_code(self, func: str, script: str = "scripts/compute.py") -> list[str]:
        """A computation's ``code``: its entry ``script``, the import closure of
        ``attnbias.experiments.<func>`` and that of ``attnbias.io``, which writes its tables.
        ``attnbias.workflow`` (logging, threads, resume bookkeeping) is left out: it does not
        change what a job computes."""
        return sorted(
            {script, *self.closures.code(f"experiments.{func}"), *self.module_code("io")}
        )

    # --- paths ------------------------------------------------------------------------------------
    def data_files(self, paper: str, group: str) -> list[str]:
        """The plot-ready data of a group: a tidy CSV and its JSON sidecar."""
        return [f"{self.results}/data/{paper}/{group}.{ext}" for ext in ("csv", "json")]

    def figure_outputs(self, paper: str, fig: str) -> list[str]:
        return [f"{self.results}/figures/{paper}/{fig}.{ext}" for ext in ("pdf", "png")]

    def claim_file(self, paper: str, fig: str) -> str:
        return f"{self.results}/claims/{paper}/{fig}.json"

    def stage_file(self, paper: str, group: str, stage: str) -> str:
        """The .npz a stage writes (attnbias.io.save_arrays): ``stage`` "instance" or "svm"."""
        return f"{self.results}/stages/{paper}/{group}.{stage}.npz"

    # --- settings ---------------------------------------------------------------------------------
    def run_settings(self, paper: str, block: str) -> dict:
        """A training run's shared settings: ``config[paper][block]`` without the keys that span
        the sweep (``x-sweep: true`` in the schema), whose value a run gets as its point instead;
        so adding a seed or a grid value reruns no finished run."""
        schema = load_schema(self.basedir / "workflow" / "schemas" / f"{paper}.schema.yaml")
        drop = sweep_keys(schema, block)
        return {k: v for k, v in self.config[paper][block].items() if k not in drop}

    def with_control(self, settings: dict) -> dict:
        """The settings of a deep-learning job with ``control="null"`` added under the negative
        control.  Only then: default runs keep their params, so turning the feature on reruns
        nothing."""
        return settings if self.control == "none" else dict(settings, control=self.control)

    def use_precomputed(self, gpu: bool) -> bool:
        """Whether a GPU computation's plot-ready files are copied from workflow/precomputed/
        (gpu_results=precomputed) instead of trained."""
        return gpu and self.config["gpu_results"] == "precomputed"

    def point_settings(self, sweep: Sweep, point: dict, controlled: bool = True) -> dict:
        """One run's whole settings, the one place they are built: the sweep's shared settings
        (from its config block, seeds shifted) plus the typed point, and the control switch when
        it is on (unless ``controlled`` is False: the run in the uncontrolled folder)."""
        settings = (
            sweep.settings(point) if callable(sweep.settings) else dict(sweep.settings, **point)
        )
        return self.with_control(settings) if controlled else settings

    # --- registering entries ------------------------------------------------------------------
    def register_figure(self, paper: str, fig: str, data: list[str], gpu: bool = False):
        """A figure whose plot and claim jobs read the plot-ready files ``data``."""
        self.figures[(paper, fig)] = Figure(data=list(data), gpu=gpu)

    def register_compute(
        self, paper, group, figures, func, settings=None, inputs=None, threads=1,
        mem_mb=2000, runtime="30m", gpu=False,
    ):  # fmt: skip
        """A computation (:class:`Compute`); ``settings`` default ``config[paper][group]``;
        ``inputs``: named inputs (download markers, other tables) passed to ``func`` by name."""
        self.computes[(paper, group)] = Compute(
            figures=list(figures),
            func=func,
            settings=self.config[paper][group] if settings is None else settings,
            inputs=dict(inputs or {}),
            code=self.experiment_code(func),
            threads=threads,
            mem_mb=mem_mb,
            runtime=runtime,
            gpu=gpu,
        )
        for fig in figures:
            self.register_figure(paper, fig, self.data_files(paper, group), gpu=gpu)

    def register_table_files(self, paper, table, group, modules, write):
        """``<results>/figures/<paper>/<table>.{csv,md}`` from the plot-ready data of ``group``
        (:class:`TableFiles`); ``modules`` (dotted, under attnbias) are what ``write`` runs.  Its
        code input is theirs and the file defining ``write`` (an edit of either reruns it)."""
        here = "src/" + write.__module__.replace(".", "/") + ".py"  # (a module of attnbias)
        self.table_files[(paper, table)] = TableFiles(
            group=group, code=sorted({*self.module_code(*modules), str(here)}), write=write
        )

    def register_sweep(
        self, paper, name, points, func, settings, gathers, inputs=None, resources=None,
        gpu=None, gpu_figures=True, batch=None, control_shares=None,
    ):  # fmt: skip
        """A training sweep (:class:`Sweep`): ``func`` (under attnbias.experiments) runs once per
        point.

        ``points``: dicts with the same keys in the same order; a run's file stem is
        :func:`point_label`.  ``gathers``: ``{group: dict(points=[...] or None for all, func=...,
        settings={...}, figures=[...])}``, or with ``runs=[...]`` the run files' stems it reads.
        ``resources``: ``{"quick": {...}, "paper": {...}}`` for the preset in use (threads, mem_mb,
        runtime in minutes, gpu_mem_mb, cpus_per_gpu).  ``gpu``: the jobs need a GPU (default:
        the paper preset).  ``batch``: a point key, or a tuple of keys, whose values one `train`
        job runs in turn (one job per combination of the other keys, sharing one process's
        start-up); None: one job per point.  ``control_shares``: see :class:`Sweep`.
        """
        keys = list(points[0])
        gpu = self.scale == "paper" if gpu is None else gpu
        res = dict(threads=1, mem_mb=2000, runtime=20)
        res.update((resources or {}).get(self.scale, {}))
        within = (batch,) if isinstance(batch, str) else tuple(batch or ())
        if not set(within) <= set(keys):
            raise TableError(f"{paper}/{name}: batch {within} names no point key of {keys}")
        batches: dict[str, list[dict]] = {}
        for p in points:
            rest = {k: v for k, v in p.items() if k not in within}
            label = point_label(p) if batch is None else (point_label(rest) or "all")
            batches.setdefault(label, []).append(p)
        batch_of = {point_label(p): b for b, ps in batches.items() for p in ps}
        sweep = Sweep(
            points=[dict(p) for p in points],
            func=func,
            settings=settings,
            code=self.experiment_code(func, "scripts/train.py"),
            inputs=dict(inputs or {}),
            resources=res,
            gpu=gpu,
            gathers={},
            batches=batches,
            batch_of=batch_of,
            control_shares=control_shares,
        )
        self.sweeps[(paper, name)] = sweep
        for group, g in gathers.items():
            chosen = points if g.get("points") is None else g["points"]
            folders = [batch_of[point_label(p)] for p in chosen]
            sweep.gathers[group] = Gather(
                batches=[
                    f"{self.results}/data/{paper}/{name}/{b}" for b in dict.fromkeys(folders)
                ],
                runs=g.get("runs") or [point_label(p) for p in chosen],
                func=g["func"],
                settings=g.get("settings", {}),
                code=self.experiment_code(g["func"], "scripts/gather.py"),
                sweep=name,
            )
            for fig in g["figures"]:
                self.register_figure(paper, fig, self.data_files(paper, group), gpu=gpu_figures)

    # --- runs under the negative control ------------------------------------------------------
    def shared_run(self, paper: str, name: str, point: dict) -> dict | None:
        """Under the negative control, where the run ``point`` names trains as one of the sweep's
        own uncontrolled runs (its ``control_shares`` module's ``control_trains``): that run's
        folder (in the uncontrolled results folder), file stem, and the function relabelling it;
        else None."""
        sweep = self.sweeps[(paper, name)]
        if self.control == "none" or not sweep.control_shares:
            return None
        shares = sweep.control_shares
        trains = resolve("attnbias.experiments", f"{shares}.control_trains")
        trained = trains(self.point_settings(sweep, point))
        if (paper, name) not in self._uncontrolled_runs:
            self._uncontrolled_runs[(paper, name)] = [
                (self.point_settings(sweep, p, controlled=False), p) for p in sweep.points
            ]
        source = next(
            (p for s, p in self._uncontrolled_runs[(paper, name)] if s == trained), None
        )
        if source is None:
            return None
        batch = sweep.batch_of[point_label(source)]
        return {
            "folder": f"{self.uncontrolled}/data/{paper}/{name}/{batch}",
            "label": point_label(source),
            "relabel": f"{shares}.as_control_run",
        }

    def run_params(self, paper: str, name: str, point: dict, root: str) -> dict:
        """What scripts/train.py needs of one run: its settings, the stem of its files in the
        batch's folder, and its undeclared resume state under ``<root>/scratch/`` (a killed run
        resumes from there, and a finished run of a killed batch keeps its tables in
        ``finished``).  ``root``: the job's results folder (the run's, or under the control the
        uncontrolled one, where its shared runs are trained)."""
        sweep = self.sweeps[(paper, name)]
        controlled = root == self.results
        label = point_label(point)
        folder = f"{root}/scratch/{paper}_{name}_train/{self.scale}/{label}"
        params = {
            "settings": self.point_settings(sweep, point, controlled),
            "label": label,
            "checkpoint": f"{folder}/checkpoint.pt",
            "metrics_log": f"{folder}/metrics.jsonl",
            "finished": f"{folder}/finished",
        }
        shared = self.shared_run(paper, name, point) if controlled else None
        if shared:  # (only then: the default run's params stay as they were)
            params["shared"] = shared
        return params

    # --- tables derived from the entries: which rule makes each plot-ready file ------------------
    def trained_sweeps(self) -> dict[tuple[str, str], Sweep]:
        """The sweeps that train here (not copied from workflow/precomputed/)."""
        return {k: s for k, s in self.sweeps.items() if not self.use_precomputed(s.gpu)}

    def gathers(self) -> dict[tuple[str, str], Gather]:
        """(paper, group) -> the gather writing it, for the sweeps trained here."""
        return {
            (paper, group): g
            for (paper, _), s in self.trained_sweeps().items()
            for group, g in s.gathers.items()
        }

    def precomputed_groups(self) -> dict[tuple[str, str], str]:
        """(paper, group) -> the sweep whose committed results are copied instead."""
        return {
            (paper, group): name
            for (paper, name), s in self.sweeps.items()
            if self.use_precomputed(s.gpu)
            for group in s.gathers
        }

    def controlled_data(self) -> set[str]:
        """The plot-ready files the negative control reaches: every training sweep's, and those of
        computations given the control in their settings (:meth:`with_control`)."""
        swept = {
            f
            for (paper, _), s in self.sweeps.items()
            for group in s.gathers
            for f in self.data_files(paper, group)
        }
        return swept | {
            f
            for (paper, group), c in self.computes.items()
            if isinstance(c.settings, dict) and "control" in c.settings
            for f in self.data_files(paper, group)
        }

    def shown_figures(self) -> list[tuple[str, str]]:
        """The figures a run builds: every figure, or under the negative control those it
        reaches."""
        reached = self.controlled_data() if self.control != "none" else set()
        return [
            k
            for k, entry in self.figures.items()
            if self.control == "none" or set(entry.data) & reached
        ]

