"""The list of figure targets, read from the workflow's own figure table.

``python -m attnbias.figures`` prints every figure target with its one-line description (the
first sentence of its report caption), its paper, what building it takes in each preset (the jobs
and, for training, the runs and their time limits) and whether it needs a GPU; ``--update FILE``
rewrites the generated part of ``docs/figures.md`` and ``--check FILE`` fails when it is stale.

The table is the figure table of the run the workflow builds (:func:`attnbias.run.load_run`, once
per preset), so it lists exactly the registered figures.  The descriptions also label the targets
of ``snakemake --list-target-rules`` (:func:`attnbias.hints.target_labels`).  Nothing heavy is
imported here: the workflow imports this module while it is parsed.
"""

from __future__ import annotations

import re
from pathlib import Path

from attnbias.workflow import PAPERS

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- figure-list:start -->", "<!-- figure-list:end -->"
PAPER_PAGES = {p: f"papers/{p}.md" for p in PAPERS}


def caption_line(root, paper: str, fig: str, width: int = 90) -> str:
    """The one-line description of a figure, from its caption file
    (``workflow/report/<paper>_<fig>.rst``): the caption's bold title, followed by the rest of its
    first sentence when the title alone is short ("Fig. 4(b): the norm ‖p(t)‖ ..."), without
    markup, settings in parentheses or the methods reference, cut at a word boundary to ``width``
    characters ("…" marks a cut); "" when the figure has no caption file."""
    path = Path(root) / "workflow" / "report" / f"{paper}_{fig}.rst"
    if not path.exists():
        return ""
    raw = path.read_text()
    m = re.match(r"\*\*(.+?)\*\*(.*)", raw, re.S)
    title, rest = (m[1], m[2]) if m else ("", raw)
    # the rest of the first sentence: up to a full stop followed by two spaces or a line end
    stop = r"(?<=\.)(?: {2,}|\n)|(?<!Fig)(?<!App)(?<!Thm)(?<!Eq)\. (?=[A-Z])|\*\*Checked"
    rest = re.split(stop, rest, maxsplit=1)[0]
    text = _clean(title) + (_clean(rest) if len(_clean(title)) < 40 else "")
    text = text.strip().rstrip(".:")
    if len(text) <= width:
        return text
    return text[: width - 1].rsplit(" ", 1)[0].rstrip(",;:(—-– ") + "…"


def _clean(text: str) -> str:
    """Caption text on one line, without markup and without parentheses that hold settings
    (``n = 3``), provenance tags or the methods reference."""
    text = " ".join(text.replace("``", "").replace("**", "").split())
    details = r"\s*\([^()]*(?:=|;|[Mm]ethods|not described|has no figures)[^()]*\)"
    text = re.sub(details, "", text)
    return re.sub(r"\s*Methods: \S+", "", text)


def _hours(minutes: float) -> str:
    return f"{minutes / 60:g} h" if minutes >= 60 else f"{minutes:g} min"


def cost(row: dict) -> str:
    """What building one figure takes in one preset, from its row of the figure table: its
    computation jobs, its training runs (and the jobs they run in, their device and the time
    limit of a run), copied results and downloads.  Check and plot jobs (seconds) are left out."""
    parts = []
    if row["cpu_jobs"]:
        parts.append(f"{row['cpu_jobs']} CPU job{'s' * (row['cpu_jobs'] > 1)}")
    if row["gpu_jobs"]:
        parts.append(f"{row['gpu_jobs']} GPU job{'s' * (row['gpu_jobs'] > 1)}")
    for s in row["sweeps"]:
        device = "GPU" if s["gpu"] else "CPU"
        runs = f"{s['runs']} {device} run{'s' * (s['runs'] > 1)}"
        if s["jobs"] != s["runs"]:
            runs += f" in {s['jobs']} job{'s' * (s['jobs'] > 1)}"
        each = " each" if s["runs"] > 1 else ""
        parts.append(f"{runs} (≤ {_hours(s['run_minutes'])}{each})")
        if s.get("extend"):
            jobs = f"{s['extend']} job{'s' * (s['extend'] > 1)}"
            parts.append(f"≤ {s['extra_runs']} more in {jobs} widening grids at an edge")
    if row["precomputed"]:
        parts.append("copied from workflow/precomputed/")
    if row["downloads"]:
        parts.append(f"{row['downloads']} download{'s' * (row['downloads'] > 1)}")
    return ", ".join(parts) or "—"


def read_table(root=ROOT, scale: str = "quick") -> list[dict]:
    """The figure table of the workflow at ``root`` in preset ``scale``: one dict per figure
    (target, paper, figure, description, gpu_figures, cpu_jobs, gpu_jobs, sweeps, precomputed,
    downloads), in the workflow's order, from the run the workflow builds
    (:func:`attnbias.run.load_run`)."""
    from attnbias.run import load_run
    from attnbias.table.costs import figure_rows

    return figure_rows(load_run(root, scale=scale).table, caption_line)


def to_markdown(quick: list[dict], paper: list[dict], measured: dict | None = None) -> str:
    """The figure list as a Markdown table (one row per figure target, both presets), with the
    measured wall time of each figure's jobs in the quick preset (``measured``:
    :func:`attnbias.estimates.figure_table`)."""
    from attnbias.estimates import figure_cell

    measured = measured or {}
    by_target = {r["target"]: r for r in paper}
    lines = [
        "| target | paper | what it shows | quick preset (CPU) | measured (quick) | paper preset "
        "| GPU |",
        "|---|---|---|---|---|---|---|",
    ]
    for q in quick:
        p = by_target[q["target"]]
        gpu = any(s["gpu"] for s in p["sweeps"]) or p["gpu_jobs"] > 0
        desc = q["description"].replace("|", "\\|") or "—"
        link = f"[`{q['target']}`]({PAPER_PAGES[q['paper']]}#{q['target'].lower()})"
        lines.append(
            f"| {link} | {q['paper']} | {desc} | {cost(q)} | "
            f"{figure_cell(measured.get((q['paper'], q['figure'])))} | {cost(p)} | "
            f"{'yes (paper preset)' if gpu else 'no'} |"
        )
    return "\n".join(lines)


def generated(root=ROOT) -> str:
    """The generated block of docs/figures.md, markers included."""
    from attnbias.estimates import Costs, figure_table

    costs = Costs.load(root)
    table = to_markdown(read_table(root, "quick"), read_table(root, "paper"), figure_table(root))
    note = "<!-- generated by `python -m attnbias.figures --update docs/figures.md` -->"
    source = (
        f"**Measured (quick)**: the wall seconds of the figure's jobs in a finished quick run "
        f"(shared jobs counted in every figure that needs them; stage jobs and downloads not "
        f"benchmarked), {costs.source()}."
        if costs else "**Measured (quick)**: no cost table (workflow/costs/) yet."
    )
    return f"{START}\n{note}\n{source}\n\n{table}\n{END}"


def replace_block(text: str, block: str) -> str:
    """``text`` with the part between the markers (inclusive) replaced by ``block``."""
    i, j = text.index(START), text.index(END) + len(END)
    return text[:i] + block + text[j:]


def main(argv=None) -> int:
    """``python -m attnbias.figures [--update FILE | --check FILE]``: print the figure list, or
    rewrite (check) the generated part of FILE (docs/figures.md)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m attnbias.figures", description=main.__doc__)
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--update", metavar="FILE", help="rewrite the generated table in FILE")
    group.add_argument("--check", metavar="FILE", help="exit 1 if FILE's table is out of date")
    ap.add_argument("--root", default=str(ROOT), help="the workflow's folder (default: this one)")
    args = ap.parse_args(argv)
    block = generated(args.root)
    if args.update or args.check:
        path = Path(args.update or args.check)
        text = path.read_text()
        new = replace_block(text, block)
        if args.check:
            if new != text:
                print(f"{path}: the figure list is out of date; run "
                      f"python -m attnbias.figures --update {path}")  # fmt: skip
                return 1
            print(f"{path}: up to date")
            return 0
        path.write_text(new)
        print(f"{path}: figure list updated")
        return 0
    print(block.split("\n", 2)[2].rsplit("\n", 1)[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
