""":class:`Table`, which builds the figure table's entries from the configuration.

The entry kinds (:mod:`attnbias.table.entries`): :class:`Figure` (a figure and the plot-ready files
it reads), :class:`Compute` (a computation writing one plot-ready group), :class:`Sweep` with its
:class:`Gather` and :class:`Extension` entries (training runs, the groups gathered from them, and a
grid widened where its choice sits at an edge), :class:`Download` (a hub download),
:class:`TableFiles` (a table also written as CSV + Markdown) and :class:`Stages` (the instance and
SVM stages of a synthetic group).  The papers' entries are registered by
``attnbias.table.<paper>.register`` (:func:`attnbias.table.build_table`).  The workflow's rules,
each written once in ``workflow/rules/``, make one job per entry; a rule reads its job's entry by
the wildcards (``table.computes[(paper, group)]``).

A :class:`Table` knows the run it describes: its configuration (validated, seed-shifted), results
folder, negative control and preset.  Every path it gives starts with that results folder, so the
default run, an override, the control and each seed shift never share a file.
"""

from __future__ import annotations

from pathlib import Path

from attnbias.table.entries import (  # noqa: F401 (the entry kinds, read from here too)
    Compute,
    Download,
    Extension,
    Figure,
    Gather,
    Stage,
    Stages,
    Sweep,
    TableError,
    TableFiles,
    as_floats,
    grid_points,
    point_label,
)
from attnbias.workflow import load_schema, resolve, sweep_keys


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
        ``attnbias.workflow`` (logging, threads) is left out: it does not change what a job
        computes.  The training jobs' scripts (train, extend, gather) also run
        ``src/attnbias/runs.py``, the loop deciding which runs are trained, relabelled or read: it
        is part of their code (the file itself; its own imports are io and workflow)."""
        runs = ["src/attnbias/runs.py"] if script != "scripts/compute.py" else []
        return sorted(
            {script, *runs, *self.closures.code(f"experiments.{func}"), *self.module_code("io")}
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
        mem_mb=2000, runtime=30, gpu=False,
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
        gpu=None, gpu_figures=True, batch=None, control_shares=None, extend=None,
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
        ``extend``: ``dict(by=..., key=..., factor=..., judge=...)``: every grid of ``key`` values
        (the points sharing their ``by`` values, e.g. one optimiser's learning rates on every
        seed) with at least three values gets an `extend` job (:class:`Extension`), whose runs
        every gather reading that grid also reads.
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
        if extend:
            sweep.extensions = self._extensions(paper, name, sweep, **extend)
        for group, g in gathers.items():
            chosen = points if g.get("points") is None else g["points"]
            folders = [batch_of[point_label(p)] for p in chosen]
            labels = {point_label(p) for p in chosen}
            sweep.gathers[group] = Gather(
                batches=[f"{self.results}/data/{paper}/{name}/{b}" for b in dict.fromkeys(folders)],
                runs=g.get("runs") or [point_label(p) for p in chosen],
                func=g["func"],
                settings=g.get("settings", {}),
                code=self.experiment_code(g["func"], "scripts/gather.py"),
                sweep=name,
                extensions=[e.folder for e in sweep.extensions.values() if labels & set(e.runs)],
            )
            for fig in g["figures"]:
                self.register_figure(paper, fig, self.data_files(paper, group), gpu=gpu_figures)

    def _extensions(self, paper, name, sweep, by, key, factor, judge) -> dict[str, Extension]:
        """The :class:`Extension` of each grid of ``key`` values with at least three values (a
        grid: the points sharing their values of the keys ``by``)."""
        by = (by,) if isinstance(by, str) else tuple(by)
        grids: dict[str, list[dict]] = {}
        for p in sweep.points:
            grids.setdefault(point_label({k: p[k] for k in by}), []).append(p)
        out = {}
        for group, ps in grids.items():
            values = sorted({p[key] for p in ps})
            if len(values) < 3:
                continue
            label = f"{group}_extension"

            def beyond(edge, side, ps=ps):  # the edge's points, one step beyond it
                new = float(f"{edge / factor if side == 'down' else edge * factor:.6g}")
                return [dict(p, **{key: new}) for p in ps if p[key] == edge]

            out[label] = Extension(
                group={k: ps[0][k] for k in by},
                key=key,
                factor=float(factor),
                judge=judge,
                runs=[point_label(p) for p in ps],
                batches=[
                    f"{self.results}/data/{paper}/{name}/{b}"
                    for b in dict.fromkeys(sweep.batch_of[point_label(p)] for p in ps)
                ],
                candidates={"down": beyond(values[0], "down"), "up": beyond(values[-1], "up")},
                folder=f"{self.results}/data/{paper}/{name}/{label}",
                code=sorted(
                    {
                        *self.experiment_code(sweep.func, "scripts/extend.py"),
                        *self.experiment_code(judge, "scripts/extend.py"),
                    }
                ),
            )
        return out

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
            # every uncontrolled run and its folder: the sweep's points, then the candidates of
            # its grids widened at an edge (in their `extend` jobs' folders)
            runs = [(p, sweep.batch_of[point_label(p)]) for p in sweep.points]
            runs += [
                (c, label)
                for label, e in sweep.extensions.items()
                for side in e.candidates.values()
                for c in side
            ]
            self._uncontrolled_runs[(paper, name)] = [
                (self.point_settings(sweep, p, controlled=False), p, folder) for p, folder in runs
            ]
        source, folder = next(
            ((p, f) for s, p, f in self._uncontrolled_runs[(paper, name)] if s == trained),
            (None, None),
        )
        if source is None:
            return None
        return {
            "folder": f"{self.uncontrolled}/data/{paper}/{name}/{folder}",
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

    def extensions(self) -> dict[tuple[str, str, str], Extension]:
        """(paper, sweep, label) -> the `extend` job of a grid, for the sweeps trained here."""
        return {
            (paper, name, label): e
            for (paper, name), s in self.trained_sweeps().items()
            for label, e in s.extensions.items()
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
