"""The figure table's entry kinds: one dataclass per kind of entry (:class:`Figure`,
:class:`Compute`, :class:`Sweep` with its :class:`Gather` and :class:`Extension` entries,
:class:`Download`, :class:`TableFiles`, :class:`Stages`), and the helpers naming a sweep's points.
:class:`attnbias.table.registry.Table` builds them from the configuration."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


class TableError(ValueError):
    """A setting the figure table cannot be built from (the workflow stops, naming the key)."""


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
    mem_mb: int = 2000  # MB at the first attempt (a retry gets attempt × it: attnbias.run)
    runtime: int = 30  # minutes at the first attempt
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
    # the folders of the `extend` jobs of the grids it reads (:class:`Extension`)
    extensions: list[str] = field(default_factory=list)


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
    # group label -> its grid's Extension (Table.register_sweep's ``extend``)
    extensions: dict[str, Extension] = field(default_factory=dict)


@dataclass
class Extension:
    """One job of the rule `extend`: one grid of a sweep (the points sharing ``group``, e.g. an
    optimiser's learning rates on every seed), widened by one step where its choice sits at an
    edge.  ``judge`` (under attnbias.experiments) reads the grid's runs ``runs`` (stems, in the
    folders ``batches``) and says ``"down"``, ``"up"`` or None; the job then trains that side's
    ``candidates`` (the edge value's points with the value divided or multiplied by ``factor``)
    into its folder ``folder``, or nothing."""

    group: dict
    key: str
    factor: float
    judge: str
    runs: list[str]
    batches: list[str]
    candidates: dict[str, list[dict]]
    folder: str
    code: list[str] = field(default_factory=list)


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
    return "_".join(f"{k}{v:g}" if isinstance(v, float) else f"{k}{v}" for k, v in point.items())
