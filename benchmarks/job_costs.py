"""The measured cost table ``workflow/costs/`` from a finished quick-preset run.

    python benchmarks/job_costs.py [--results results] [--update] [--commit SHA] [--date DATE]
                                   [--machine TEXT] [--cores N] [--configfile FILE ...]

Reads the run's benchmark files (``<results>/benchmarks/<stage>/<entry>.tsv``, stages
:data:`attnbias.estimates.STAGES`: wall seconds ``s``) and job logs
(``<results>/logs/<stage>/<entry>.log``: the job's own CPU time, ``cpu: … s``; the benchmark's
sampled ``cpu_time`` where the log has none), maps each job to the figures that need it with the
workflow's figure table (``attnbias.run.load_run(ROOT).table``,
:func:`attnbias.estimates.figure_jobs`), prints the per-figure table and, with ``--update``,
writes ``workflow/costs/jobs.csv``, ``figures.csv`` and ``measured.json``
(:mod:`attnbias.estimates` describes them), then the figure list ``docs/figures.md`` with its
measured column (``python -m attnbias.figures --update docs/figures.md``).  Where and when:
``--commit`` (default: the run's provenance ``git_sha``, else this checkout's HEAD), ``--date``
(default: the day, UTC, of the newest benchmark file), ``--machine`` (default: this machine's
CPU model and core count) and ``--cores`` (the cores the run had, default 2).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from attnbias.claims.headline import run_commit  # noqa: E402
from attnbias.estimates import FOLDER, STAGES, figure_jobs  # noqa: E402

CPU_LINE = re.compile(r"\bcpu: ([0-9.]+) s\b")


def read_job(results: Path, stage: str, entry: str) -> dict | None:
    """A job's ``wall_s`` (benchmark ``s``; the last line: its last attempt) and ``cpu_s`` (its
    log's ``cpu:`` line, else the benchmark's ``cpu_time``); None without a benchmark file."""
    bench = results / "benchmarks" / stage / f"{entry}.tsv"
    if not bench.is_file():
        return None
    with open(bench, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows:
        return None
    last = rows[-1]
    cpu = _float(last.get("cpu_time"))
    log = results / "logs" / stage / f"{entry}.log"
    if log.is_file():
        found = CPU_LINE.findall(log.read_text(errors="replace"))
        cpu = float(found[-1]) if found else cpu
    return dict(wall_s=_float(last.get("s")), cpu_s=cpu)


def _float(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def measure(results: Path, table) -> tuple[list[dict], list[dict], dict]:
    """(jobs rows, figure rows, total) of the run in ``results`` for the figure table ``table``."""
    per_figure = figure_jobs(table)
    needed: dict[tuple[str, str], list[str]] = {}
    for (paper, fig), jobs in per_figure.items():
        for key in jobs:
            needed.setdefault(key, []).append(f"{paper}/{fig}")
    measured = {key: read_job(results, *key) for key in needed}
    jobs_rows = [
        dict(stage=s, entry=e, cpu_s=_fmt(m and m["cpu_s"]), wall_s=_fmt(m and m["wall_s"]),
             figures=";".join(needed[(s, e)]))
        for (s, e), m in sorted(measured.items(), key=lambda kv: (STAGES.index(kv[0][0]), kv[0][1]))
    ]  # fmt: skip
    fig_rows = []
    for (paper, fig), jobs in per_figure.items():
        row = dict(paper=paper, figure=fig, jobs=len(jobs), cpu_s=0.0, wall_s=0.0, missing=0)
        for s in STAGES:
            row[f"{s}_cpu_s"] = row[f"{s}_wall_s"] = 0.0
        for s, e in jobs:
            m = measured[(s, e)]
            if m is None or m["wall_s"] is None:
                row["missing"] += 1
                continue
            for what in ("cpu_s", "wall_s"):
                row[what] += m[what] or 0.0
                row[f"{s}_{what}"] += m[what] or 0.0
        fig_rows.append({k: _fmt(v) if isinstance(v, float) else v for k, v in row.items()})
    got = [m for m in measured.values() if m and m["wall_s"] is not None]
    total = dict(jobs=len(measured), measured=len(got),
                 cpu_s=round(sum(m["cpu_s"] or 0 for m in got), 2),
                 wall_s=round(sum(m["wall_s"] for m in got), 2))  # fmt: skip
    return jobs_rows, fig_rows, total


def _fmt(v) -> str:
    return "" if v is None else f"{v:.2f}"


def default_date(results: Path) -> str:
    times = [p.stat().st_mtime for p in (results / "benchmarks").rglob("*.tsv")]
    stamp = max(times) if times else dt.datetime.now(dt.UTC).timestamp()
    return dt.datetime.fromtimestamp(stamp, dt.UTC).date().isoformat()


def default_machine() -> str:
    model = ""
    try:
        text = Path("/proc/cpuinfo").read_text()
        model = re.search(r"^model name\s*:\s*(.+)$", text, re.M)[1].strip()
    except (OSError, TypeError):
        pass
    return f"{model or 'unknown CPU'}, {os.cpu_count()} cores"


def write(folder: Path, jobs_rows, fig_rows, meta) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("jobs.csv", jobs_rows), ("figures.csv", fig_rows)):
        with open(folder / name, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
    (folder / "measured.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="results", help="the finished run's results folder")
    ap.add_argument("--update", action="store_true", help=f"write {FOLDER}/")
    ap.add_argument("--root", default=str(ROOT), help="the workflow (its figure table; the table "
                    "is written under it)")  # fmt: skip
    ap.add_argument("--commit")
    ap.add_argument("--date")
    ap.add_argument("--machine")
    ap.add_argument("--cores", type=int, default=2, help="the cores the run had")
    ap.add_argument("--configfile", nargs="*", default=[],
                    help="the --configfile(s) the run had (default none: the preset's own)")
    ap.add_argument("--note", default="", help="anything else about the run (e.g. 'idle')")
    args = ap.parse_args(argv)
    from attnbias.run import load_run

    results = Path(args.results)
    if not (results / "benchmarks").is_dir():
        ap.error(f"{results}/benchmarks: no benchmark files (a finished run's results folder?)")
    run = load_run(args.root, configfiles=args.configfile)
    jobs_rows, fig_rows, total = measure(results, run.table)
    meta = dict(
        machine=args.machine or default_machine(), date=args.date or default_date(results),
        commit=args.commit or run_commit(results), cores=args.cores, preset=run.scale,
        configfiles=args.configfile, results=str(results), note=args.note, total=total,
    )  # fmt: skip
    for r in fig_rows:
        print(f"{r['paper']:10} {r['figure']:8} {r['jobs']:>3} jobs {r['wall_s']:>9} s wall "
              f"{r['cpu_s']:>9} CPU-s" + (f" ({r['missing']} unmeasured)" if r["missing"] else ""))
    print(f"total over {total['jobs']} distinct jobs ({total['measured']} measured): "
          f"{total['wall_s']:.0f} s wall, {total['cpu_s']:.0f} CPU-s")  # fmt: skip
    if args.update:
        write(Path(args.root) / FOLDER, jobs_rows, fig_rows, meta)
        print(f"wrote {Path(args.root) / FOLDER}/ ({meta['commit']}, {meta['date']})")
        page = Path(args.root) / "docs" / "figures.md"
        if page.is_file():  # its measured column reads the table
            from attnbias.figures import main as figure_list

            figure_list(["--update", str(page), "--root", str(args.root)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
