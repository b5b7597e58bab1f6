"""The synthetic groups computed in three stages, and how their settings split between them.

A *staged group* draws its data, solves its max-margin problems and runs its gradient-descent
trajectories as three jobs (rules ``instance`` → ``svm`` → ``compute`` of the workflow), three
functions of ``attnbias.experiments``:

* ``instance_<source>(**data settings) -> (arrays, doc)``: the data (``<source>`` is the group
  itself, or the group whose data it draws, :attr:`StagedGroup.data_of`);
* ``svm_<source>(instance, **svm settings) -> (arrays, doc)``: its max-margin solutions; a group
  whose module defines no ``svm_<source>`` has no SVM stage;
* ``trajectories_<group>(instance, svm, **settings) -> (df, meta)``: the plot-ready table, given
  every setting of the group (its sidecar records them).

Which settings of the group's config block (``config[paper][group]``) each of the first two
stages takes is read from their signatures (:func:`stage_settings`, a static read of their
module: nothing is imported), never listed a second time; so a GD setting (steps, lr) reruns the
trajectories only.  :func:`run_stages` runs the three in one call, as the workflow's jobs do in
turn (tests, notebooks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from attnbias.closure import function_parameters
from attnbias.table.registry import Stage, Stages, Table, TableError


@dataclass(frozen=True)
class StagedGroup:
    """One synthetic group of the figure table.

    Parameters
    ----------
    paper, group : str
        Its key: the settings block ``config[paper][group]`` and the plot-ready table
        ``results/data/<paper>/<group>.{csv,json}``.
    figures : tuple of str
        The figures drawn from that table.
    family : str
        The module under ``attnbias.experiments`` defining ``trajectories_<group>``.
    problems : str or None
        The module defining ``instance_<source>`` and ``svm_<source>`` (default: ``family``).
    data_of : str or None
        A group of the same paper, listed before this one, whose data this group draws
        (``instance_<data_of>``, ``svm_<data_of>``); where the data and SVM settings of both are
        equal they share one instance and one SVM solution, computed once.
    resources : dict
        The ``compute`` job's resources where they differ from the default (``runtime=20``).
    """

    paper: str
    group: str
    figures: tuple[str, ...]
    family: str
    problems: str | None = None
    data_of: str | None = None
    resources: dict = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The group whose ``instance_``/``svm_`` functions draw this group's data."""
        return self.data_of or self.group

    @property
    def instance_func(self) -> str:
        return f"{self.problems or self.family}.instance_{self.source}"

    @property
    def svm_func(self) -> str:
        return f"{self.problems or self.family}.svm_{self.source}"

    @property
    def trajectories_func(self) -> str:
        return f"{self.family}.trajectories_{self.group}"


def _groups(paper, family, *entries, **common):
    return tuple(
        StagedGroup(paper, group, tuple(figures), family=kw.pop("family", family), **common, **kw)
        for group, figures, kw in ((e[0], e[1], dict(e[2]) if len(e) > 2 else {}) for e in entries)
    )


# The staged groups, in the order the workflow registers them (a group's ``data_of`` before it).
STAGED_GROUPS: tuple[StagedGroup, ...] = (
    # maxmargin (docs/papers/maxmargin.md): Figs 4 and 9 have no SVM stage (Fig 4 solves none;
    # the Fig 9 QPs are those of the selections GD reaches)
    *_groups(
        "maxmargin",
        "maxmargin.synthetic",
        ("fig1", ["fig1a", "fig1b", "fig1c"]),
        ("fig2", ["fig2"]),
        ("fig3", ["fig3a", "fig3b", "fig3c"], {"family": "maxmargin.joint"}),
        ("fig4", ["fig4a", "fig4b"]),
        ("fig5", ["fig5"]),
        ("fig8", ["fig8"]),
        ("fig9", ["fig9a", "fig9b", "fig10"], {"family": "maxmargin.study",
                                               "resources": {"runtime": 20}}),
    ),  # fmt: skip
    # fastrates (docs/papers/fastrates.md): Figs 8-10 draw the Fig 2 data; at Fig 2's data
    # settings (Figs 9, 10 in both presets) they read its instance and W_mm, solved once
    *_groups(
        "fastrates",
        "fastrates.synthetic",
        ("fig2", ["fig2", "table1"]),
        ("fig3", ["fig3"]),
        ("fig5", ["fig5"]),
        ("fig8", ["fig8"], {"data_of": "fig2"}),
        ("fig9", ["fig9"], {"data_of": "fig2"}),
        ("fig10", ["fig10"], {"data_of": "fig2"}),
        problems="fastrates.problems",
    ),
    # nucnorm (docs/papers/nucnorm.md): p1-p3 select their instances (data/nucnorm.py), so every
    # setting the selection reads is a data setting; p4, p5 have their data and SVM stages in
    # nucnorm/problems.py (p5 runs no dynamics: it tabulates the solutions)
    *_groups("nucnorm", "nucnorm.full", ("p1", ["p1"])),
    *_groups("nucnorm", "nucnorm.diagonal", ("p2", ["p2"]), ("p3", ["p3"])),
    *_groups("nucnorm", "nucnorm.alignment", ("p4", ["p4"]), problems="nucnorm.problems"),
    *_groups("nucnorm", "nucnorm.convex", ("p5", ["p5"]), problems="nucnorm.problems"),
)


def staged_group(paper: str, group: str) -> StagedGroup:
    """The table entry of ``paper``'s staged group ``group`` (KeyError naming it if none)."""
    for entry in STAGED_GROUPS:
        if (entry.paper, entry.group) == (paper, group):
            return entry
    raise KeyError(f"{paper} {group} is no staged group of attnbias.table.stages")


def stage_settings(
    entry: StagedGroup, settings: dict, root: str | Path | None = None
) -> tuple[dict, dict | None]:
    """The settings of ``entry``'s instance and SVM stages: the keys of ``settings`` (the group's
    config block) that ``instance_<source>`` and ``svm_<source>`` take, read from their
    signatures (the SVM's after its first parameter, the instance), in the block's order; None
    for the SVM where the module defines no ``svm_<source>``.

    ``root``: the repository whose sources are read (default: this package's).  Raises
    ValueError when the module defines no ``instance_<source>``, when a stage takes a parameter
    that is no setting of the group, or when both stages take the same setting.
    """
    data = function_parameters(f"experiments.{entry.instance_func}", root)
    svm = function_parameters(f"experiments.{entry.svm_func}", root)
    if data is None:
        raise ValueError(f"{entry.paper} {entry.group}: no function {entry.instance_func}")
    svm = None if svm is None else svm[1:]
    for func, names in ((entry.instance_func, data), (entry.svm_func, svm or [])):
        unknown = sorted(set(names) - set(settings))
        if unknown:
            raise ValueError(
                f"{func} takes {unknown}, which are not settings of {entry.paper}.{entry.group} "
                f"(workflow/schemas/{entry.paper}.schema.yaml)"
            )
    if svm and set(svm) & set(data):
        raise ValueError(
            f"{entry.paper} {entry.group}: {entry.instance_func} and {entry.svm_func} both take "
            f"{sorted(set(svm) & set(data))}: each setting belongs to one stage"
        )
    pick = lambda names: {k: v for k, v in settings.items() if k in names}  # noqa: E731
    return pick(data), (None if svm is None else pick(svm))


def run_stages(paper: str, group: str, settings: dict):
    """The plot-ready table of a staged group, its three stages in one call (in memory, where
    the workflow's jobs pass ``.npz`` files): ``trajectories_<group>(instance, svm,
    **settings)``, with ``instance`` and ``svm`` computed from the settings their functions take.

    Parameters
    ----------
    paper, group : str
        The group (:data:`STAGED_GROUPS`).
    settings : dict
        Every setting of the group, as in ``config[paper][group]``.

    Returns
    -------
    (pandas.DataFrame, dict)
        The table and its metadata, as the workflow's ``compute`` job writes them.
    """
    from attnbias.workflow import resolve

    entry = staged_group(paper, group)
    data, svm = stage_settings(entry, settings)
    instance, _ = resolve("attnbias.experiments", entry.instance_func)(**data)
    solution = None
    if svm is not None:
        solution, _ = resolve("attnbias.experiments", entry.svm_func)(instance, **svm)
    return resolve("attnbias.experiments", entry.trajectories_func)(instance, solution, **settings)


def register_staged_groups(table: Table, paper: str) -> None:
    """Register ``paper``'s staged groups in ``table``: for each, its stages (``table.stages``:
    the `instance` and `svm` jobs, given only their own settings, so a GD setting reruns the
    trajectories only) and the `compute` job of its trajectories, given every setting.  A group
    drawn from another's data (``data_of``) with the same data and SVM settings reads that
    group's stage files (``table.stage_owner``)."""
    for group in (g for g in STAGED_GROUPS if g.paper == paper):
        name, settings = group.group, table.config[paper][group.group]
        try:
            data, svm = stage_settings(group, settings, table.basedir)
        except ValueError as e:
            raise TableError(str(e)) from None
        entry = Stages(
            instance=Stage(group.instance_func, data),
            svm=None if svm is None else Stage(group.svm_func, svm),
        )
        owner = table.stage_owner.get((paper, group.data_of), name) if group.data_of else name
        if owner != name and _without_code(table.stages[(paper, owner)]) != _without_code(entry):
            owner = name
        if owner == name:
            for stage in (entry.instance, entry.svm):
                if stage is not None:
                    stage.code = table.experiment_code(stage.func)
            table.stages[(paper, name)] = entry
        table.stage_owner[(paper, name)] = owner
        inputs = {"instance": table.stage_file(paper, owner, "instance")}
        if svm is not None:
            inputs["svm"] = table.stage_file(paper, owner, "svm")
        table.register_compute(
            paper, name, group.figures, group.trajectories_func, inputs=inputs, **group.resources
        )


def _without_code(entry: Stages) -> tuple:
    return tuple(None if s is None else (s.func, s.settings) for s in (entry.instance, entry.svm))
