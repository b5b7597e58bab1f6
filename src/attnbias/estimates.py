"""What a run will cost, estimated from measured times: the cost table ``workflow/costs/``.

The table is measured, never written by hand: ``benchmarks/job_costs.py --update`` reads the
benchmark files (``<results>/benchmarks/<stage>/<entry>.tsv``: wall seconds ``s``) and the job
logs (``cpu: … s``, :func:`attnbias.jobstats.log_usage`; the benchmark's sampled ``cpu_time``
where a log has none) of a finished run of the quick preset and writes

- ``jobs.csv``: one row per job (``stage``, ``entry``, ``cpu_s``, ``wall_s``, ``figures``: the
  figures that need it, ``;``-separated; a job several figures share, e.g. lowrank's LM runs, is
  listed once);
- ``figures.csv``: one row per figure (``paper``, ``figure``, ``jobs``, ``cpu_s``, ``wall_s``,
  ``missing`` and per stage ``<stage>_cpu_s``, ``<stage>_wall_s``), every job it needs counted
  in full (shared jobs in every figure that needs them);
- ``measured.json``: where and when (``machine``, ``date``, ``commit``, ``cores``, ``preset``,
  ``results``) and the total over distinct jobs.

Every cost the workflow prints is computed here from that table (:class:`Costs`): the robustness
note, ``compare`` with a seed shift, the negative control (:func:`attnbias.hints.first_notes`) and
the measured column of ``docs/figures.md`` (:mod:`attnbias.figures`); each names its measurement
(:meth:`Costs.source`).  An estimate of a set of figures sums the wall seconds of their distinct
jobs and divides by the cores (jobs are single-threaded), never below the longest job.  Only the
standard library is imported: the workflow reads this module while it is parsed.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = "workflow/costs"
# the rules with a benchmark file, in the order a figure's jobs run
STAGES = ("compute", "train", "extend", "gather", "check", "plot")


def figure_jobs(table) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """``{(paper, figure): [(stage, entry), ...]}``: the benchmarked jobs each figure of the
    figure table ``table`` needs (:data:`STAGES`; ``entry`` as in the rule's benchmark path), the
    groups its data are computed from included.  Stage jobs (`instance`, `svm`), downloads and
    copied results have no benchmark file and are not listed."""
    gathers = table.gathers()

    def tail(path: str) -> str:  # results[/...]/data/<paper>/<sweep>/<batch> -> paper/sweep/batch
        return str(path).split("/data/", 1)[1]

    def add(out, paper, group, seen):
        if (paper, group) in seen:
            return
        seen.add((paper, group))
        inputs = {}
        if (paper, group) in table.computes:
            out.append(("compute", f"{paper}/{group}"))
            inputs = table.computes[(paper, group)].inputs
        elif (paper, group) in gathers:
            g = gathers[(paper, group)]
            out += [("train", tail(b)) for b in g.batches]
            out += [("extend", tail(e)) for e in g.extensions]
            out.append(("gather", f"{paper}/{group}"))
        for v in inputs.values():
            for f in v if isinstance(v, list) else [v]:
                parts = str(f).split("/")
                if len(parts) >= 3 and parts[-3] == "data" and parts[-1].endswith(".csv"):
                    add(out, parts[-2], parts[-1][: -len(".csv")], seen)

    result = {}
    for (paper, fig), entry in table.figures.items():
        jobs: list[tuple[str, str]] = []
        seen: set = set()
        for f in entry.data:
            parts = str(f).split("/")
            if f.endswith(".csv"):
                add(jobs, parts[-2], parts[-1][: -len(".csv")], seen)
        jobs += [("check", f"{paper}/{fig}"), ("plot", f"{paper}/{fig}")]
        result[(paper, fig)] = list(dict.fromkeys(jobs))
    return result


@dataclass
class Costs:
    """The measured cost table (``workflow/costs/``): ``jobs`` maps ``(stage, entry)`` to its
    ``cpu_s``, ``wall_s`` (None where the reference run has no measurement) and ``figures``;
    ``meta`` is ``measured.json``."""

    jobs: dict[tuple[str, str], dict] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    @classmethod
    def load(cls, root=ROOT) -> Costs | None:
        """The committed table of the workflow at ``root``, or None where it has none."""
        folder = Path(root) / FOLDER
        if not (folder / "jobs.csv").is_file() or not (folder / "measured.json").is_file():
            return None
        jobs = {}
        with open(folder / "jobs.csv", newline="") as f:
            for r in csv.DictReader(f):
                jobs[(r["stage"], r["entry"])] = dict(
                    cpu_s=_number(r["cpu_s"]), wall_s=_number(r["wall_s"]),
                    figures=[x for x in r["figures"].split(";") if x],
                )  # fmt: skip
        return cls(jobs, json.loads((folder / "measured.json").read_text()))

    def source(self) -> str:
        """Where the numbers come from: "measured at commit 71fdbd3 on <machine>, 2026-12-02,
        workflow/costs/"."""
        m = self.meta
        return (f"measured at commit {m.get('commit', '?')} on {m.get('machine', '?')}, "
                f"{m.get('date', '?')}, {FOLDER}/")  # fmt: skip

    def of(self, jobs: Iterable[tuple[str, str]], share=None) -> dict:
        """The cost of the distinct jobs ``jobs`` (``(stage, entry)``), each scaled by
        ``share(stage, entry)`` (the part of it that runs; default all): ``jobs`` (those that
        run), ``cpu_s``, ``wall_s``, ``longest_s`` and ``missing`` (jobs with no measurement)."""
        out = dict(jobs=0, cpu_s=0.0, wall_s=0.0, longest_s=0.0, missing=0)
        for key in dict.fromkeys(jobs):
            part = 1.0 if share is None else share(*key)
            if part <= 0:
                continue
            row = self.jobs.get(key)
            out["jobs"] += 1
            if row is None or row["wall_s"] is None:
                out["missing"] += 1
                continue
            out["cpu_s"] += part * (row["cpu_s"] or 0.0)
            out["wall_s"] += part * row["wall_s"]
            out["longest_s"] = max(out["longest_s"], part * row["wall_s"])
        return out

    def figures(self, figures: Iterable[str]) -> list[tuple[str, str]]:
        """The distinct measured jobs of ``figures`` ("<paper>/<fig>")."""
        wanted = set(figures)
        return [k for k, r in self.jobs.items() if wanted & set(r["figures"])]


def minutes(cost: dict, cores: int, times: int = 1) -> float:
    """Wall minutes of ``times`` repeats of ``cost`` (:meth:`Costs.of`) on ``cores`` idle cores:
    the job-seconds over the cores, never below the longest job."""
    cores = max(1, int(cores or 1))
    return max(times * cost["wall_s"] / cores, cost["longest_s"]) / 60


def about(minutes: float) -> str:
    """"about 40 s", "about 2.5 min", "about 42 min"."""
    if minutes < 1:
        return f"about {minutes * 60:.0f} s"
    return f"about {minutes:.1f} min" if minutes < 10 else f"about {minutes:.0f} min"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _number(text: str) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _unmeasured(cost: dict) -> str:
    n = cost["missing"]
    return f", {n} job{'s' * (n > 1)} not measured" if n else ""


def robustness_estimate(costs: Costs | None, redrawn: list[str], seeds, cores: int) -> str:
    """What the seed runs of ``robustness`` cost: the figures each seed shift redraws
    (``redrawn``, "<paper>/<fig>"), their distinct jobs but the plots (a seed run builds claim
    files) once per seed, on ``cores`` cores."""
    seeds = list(seeds)
    if costs is None:
        return "no measured cost table (workflow/costs/): run benchmarks/job_costs.py --update"
    # a seed run builds claim files only (attnbias.run.jobs seed_targets): no plot jobs
    c = costs.of(k for k in costs.figures(redrawn) if k[0] != "plot")
    return (
        f"{_plural(len(redrawn), 'redrawn figure')}, {_plural(c['jobs'], 'job')} a seed shift: "
        f"{about(minutes(c, cores, len(seeds)))} for the {_plural(len(seeds), 'seed shift')} on "
        f"{_plural(cores, 'idle core')} ({len(seeds) * c['cpu_s']:.0f} CPU-s in jobs, each seed "
        f"run's start-up aside{_unmeasured(c)}; {costs.source()})"
    )


def figures_estimate(costs: Costs | None, figures: list[str], cores: int, share=None,
                     what: str = "jobs") -> str:  # fmt: skip
    """The cost of building ``figures`` ("<paper>/<fig>") anew, their distinct jobs (each scaled
    by ``share``, :meth:`Costs.of`), on ``cores`` cores."""
    if costs is None:
        return "no measured cost table (workflow/costs/): run benchmarks/job_costs.py --update"
    c = costs.of(costs.figures(figures), share)
    return (
        f"{_plural(len(figures), 'figure')}, {c['jobs']} {what}: {about(minutes(c, cores))} on "
        f"{_plural(cores, 'idle core')} ({c['cpu_s']:.0f} CPU-s{_unmeasured(c)}; "
        f"{costs.source()})"
    )


def control_share(table):
    """``share(stage, entry)`` of the negative control's run (``table``, built under
    ``control=null``): the part of a `train` or `extend` job the control trains (its runs that are
    not relabelled copies of the default run's, :meth:`Table.shared_run`); 1 for other jobs."""
    from_batch = {}
    for (paper, name), sweep in table.trained_sweeps().items():
        for batch, points in sweep.batches.items():
            own = [table.shared_run(paper, name, p) is None for p in points]
            from_batch[("train", f"{paper}/{name}/{batch}")] = sum(own) / max(1, len(own))
        for e in sweep.extensions.values():
            cands = [p for side in e.candidates.values() for p in side]
            own = [table.shared_run(paper, name, p) is None for p in cands]
            entry = str(e.folder).split("/data/", 1)[1]
            from_batch[("extend", entry)] = sum(own) / max(1, len(own))

    def share(stage, entry):
        return from_batch.get((stage, entry), 1.0)

    return share


def figure_cell(row: dict | None) -> str:
    """A figure's measured cost for docs/figures.md: "41 s wall (6 jobs)" (minutes from 120 s),
    "—" when unmeasured; shared jobs counted in full."""
    if row is None or row.get("wall_s") in (None, ""):
        return "—"
    wall = float(row["wall_s"])
    text = f"{wall / 60:.1f} min" if wall >= 120 else f"{wall:.0f} s"
    missing = int(float(row.get("missing") or 0))
    jobs = int(float(row["jobs"]))
    return f"{text} ({jobs} job{'s' * (jobs > 1)}" + (f", {missing} unmeasured)" if missing
                                                       else ")")  # fmt: skip


def figure_table(root=ROOT) -> dict[tuple[str, str], dict]:
    """``figures.csv`` as ``{(paper, figure): row}`` ({} without a table)."""
    path = Path(root) / FOLDER / "figures.csv"
    if not path.is_file():
        return {}
    with open(path, newline="") as f:
        return {(r["paper"], r["figure"]): r for r in csv.DictReader(f)}


class RunEstimates:
    """The estimates the workflow prints for the run ``run`` (:class:`attnbias.run.Run`), from
    the cost table at its ``basedir``; each computed only when asked for."""

    def __init__(self, run, costs: Costs | None = None):
        self.run = run
        self._costs = costs

    @property
    def costs(self) -> Costs | None:
        if self._costs is None:
            self._costs = Costs.load(self.run.basedir)
        return self._costs

    def robustness(self, seeds, cores: int, papers=None) -> str:
        """The seed runs of ``robustness`` (:func:`robustness_estimate`), of ``papers`` only
        where given (``robustness_<paper>``)."""
        redrawn = [k for k, v in self.run.robustness.figures.items()
                   if v and (papers is None or k.split("/")[0] in papers)]  # fmt: skip
        return robustness_estimate(self.costs, redrawn, seeds, cores)

    def compare(self, cores: int) -> str:
        """`compare` of this run (a seed shift, a changed setting): the figures it touches."""
        figures = [f"{p}/{f}" for p, f in self.run.touched]
        return figures_estimate(self.costs, figures, cores)

    def control(self, cores: int) -> str:
        """The negative control's run: its figures' jobs, the training jobs counted for the runs
        the control retrains (:func:`control_share`)."""
        figures = [f"{p}/{f}" for p, f in self.run.shown_figures()]
        share = control_share(self.run.table)
        return figures_estimate(self.costs, figures, cores, share,
                                what="jobs (training jobs counted for the runs it retrains)")
