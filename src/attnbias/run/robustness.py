"""The tables of ``snakemake robustness`` of a run (:class:`Robustness`): which figures the seed
shift redraws, the seed tables, the examined claims."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from attnbias.table.registry import Table
from attnbias.workflow import PAPERS, parse_yaml, shift_seeds


class RobustnessError(ValueError):
    """A robustness setting or examined-claims file no run can use (names the key)."""


@dataclass
class Robustness:
    """The tables of ``snakemake robustness``: every claim measured over ``settings["seeds"]``.

    Seed 0 is the run itself; each seed N is a run of the workflow with ``--config seed=N`` in its
    own folder, rerunning only the figures the seed shift redraws (``figures``: "<paper>/<fig>" ->
    whether its data are redrawn; restricted by ``robustness.figures``).
    """

    settings: dict
    folder: str
    examined: dict
    figures: dict[str, bool]
    # the code of the runs a seed job starts: any change reruns the seed run, which then reruns
    # exactly the jobs the change affects
    code: list[str] = field(default_factory=list)

    def figures_of(self, paper: str, redrawn_only: bool = False) -> list[str]:
        """The figures of ``paper`` measured over seeds (only those the seed redraws)."""
        return [
            k.split("/")[1]
            for k, redrawn in self.figures.items()
            if k.split("/")[0] == paper and (redrawn or not redrawn_only)
        ]

    @property
    def papers(self) -> list[str]:
        return [p for p in PAPERS if self.figures_of(p)]

    def tables(self, papers) -> list[str]:
        """The seed tables of ``papers``: seed 0's, and every seed's where a figure is redrawn."""
        return [
            f"{self.folder}/{p}/seed-{s}.csv"
            for p in papers
            for s in [0] + (list(self.settings["seeds"]) if self.figures_of(p, True) else [])
        ]


def robustness_of(config: dict, table: Table, results: str, basedir: Path) -> Robustness:
    """The robustness tables: the figures the seed shift redraws, the examined claims."""
    from attnbias.claims.robustness import check_examined

    settings = config["robustness"]
    examined = parse_yaml((basedir / "workflow/report/examined.yaml").read_text()) or {}
    try:
        check_examined(examined)
    except ValueError as e:
        raise RobustnessError(f"workflow/report/examined.yaml: {e}") from None
    known = {f"{p}/{f}" for p, f in table.figures}
    unknown = sorted(set(settings["figures"]) - known)
    if unknown:
        raise RobustnessError(f"robustness.figures: unknown figure(s) {unknown}; "
                       f"allowed: '<paper>/<fig>' of {sorted(known)[:6]} …")  # fmt: skip

    def redrawn(paper, fig):
        return any(
            _redrawn(table, *g) for g in map(_data_group, table.figures[paper, fig].data) if g
        )

    figures = {
        f"{p}/{f}": redrawn(p, f)
        for p, f in table.shown_figures()
        if not settings["figures"] or f"{p}/{f}" in settings["figures"]
    }
    code = sorted(
        str(p.relative_to(basedir))
        for pattern in ("src/attnbias/**/*.py", "scripts/*.py", "workflow/rules/*.smk")
        for p in basedir.glob(pattern)
    ) + ["Snakefile"]
    return Robustness(settings, f"{results}/robustness", examined, figures, code)


def _data_group(path) -> tuple[str, str] | None:
    """(paper, group) of a plot-ready file <results>/data/<paper>/<group>.csv, else None."""
    parts = str(path).split("/")
    if len(parts) >= 3 and parts[-3] == "data" and parts[-1].endswith(".csv"):
        return parts[-2], parts[-1][: -len(".csv")]
    return None


def _redrawn(table: Table, paper: str, group: str) -> bool:
    """Whether `--config seed=N` redraws a plot-ready group: a training sweep always does; a
    computation when its settings hold a seed, or when it reads a group that is redrawn;
    committed precomputed results never."""
    if (paper, group) in table.precomputed_groups():
        return False
    entry = table.computes.get((paper, group))
    if entry is None:
        return True  # gathered from training runs, which are seeded
    if shift_seeds(entry.settings, 1) != entry.settings:
        return True
    files = [p for v in entry.inputs.values() for p in (v if isinstance(v, list) else [v])]
    read = [_data_group(p) for p in files]
    return any(_redrawn(table, *g) for g in read if g is not None)
