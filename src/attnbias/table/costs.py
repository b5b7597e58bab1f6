"""What building each figure takes, read from the figure table (``python -m attnbias.figures``
tabulates it in docs/figures.md)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from attnbias.table.registry import Table


def figure_rows(table: Table, describe: Callable[[str, str, str], str]) -> list[dict]:
    """One row per figure of ``table``: what building it takes in this preset (its computation
    jobs; the training runs, their jobs, device and time limit per run; copied results; hub
    downloads), the groups its data are computed from included.

    ``describe(basedir, paper, fig)`` gives the row's one-line description
    (:func:`attnbias.figures.caption_line`).
    """
    gathers, precomputed = table.gathers(), table.precomputed_groups()

    def as_list(v):
        return [str(x) for x in (v if isinstance(v, list) else [v]) if x]

    def add(row, paper, group, seen):
        key = (paper, group)
        if key in seen:
            return
        seen.add(key)
        inputs = {}
        if key in table.computes:
            c = table.computes[key]
            row["gpu_jobs" if c.gpu else "cpu_jobs"] += 1
            owner = table.stage_owner.get(key)
            if owner is not None and (paper, owner, "stages") not in seen:
                seen.add((paper, owner, "stages"))
                row["cpu_jobs"] += 1 + (table.stages[(paper, owner)].svm is not None)
            inputs = c.inputs
        elif key in gathers:
            name = gathers[key].sweep
            s = table.sweeps[(paper, name)]
            if (paper, name, "sweep") not in seen:
                seen.add((paper, name, "sweep"))
                row["sweeps"].append(
                    dict(
                        sweep=f"{paper}/{name}",
                        runs=len(s.points),
                        jobs=len(s.batches),
                        # one `extend` job per tuned grid, each at most one run per seed more
                        extend=len(s.extensions),
                        extra_runs=sum(len(e.candidates["up"]) for e in s.extensions.values()),
                        gpu=s.gpu,
                        run_minutes=s.resources["runtime"],
                    )
                )
            inputs = s.inputs
        elif key in precomputed:
            row["precomputed"] += 1
        for v in inputs.values():
            for f in as_list(v):
                if f.startswith("results/downloads/"):
                    row["downloads"].add(f)
                m = re.search(r"\bdata/(\w+)/(\w+)\.csv$", f)
                if m:  # computed from another group's plot-ready data
                    add(row, m[1], m[2], seen)

    rows = []
    for (paper, fig), entry in table.figures.items():
        row = dict(
            target=f"{paper}_{fig}",
            paper=paper,
            figure=fig,
            description=describe(table.basedir, paper, fig),
            gpu_figures=entry.gpu,
            cpu_jobs=0,
            gpu_jobs=0,
            sweeps=[],
            precomputed=0,
            downloads=set(),
        )
        seen: set = set()
        for f in entry.data:
            if f.endswith(".csv"):
                add(row, paper, Path(f).stem, seen)
        rows.append(dict(row, downloads=len(row["downloads"])))
    return rows
