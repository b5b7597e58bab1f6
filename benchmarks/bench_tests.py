"""The test suite's time per layer, per file and per set-up: the guard against creep.

X
    python benchmarks/bench_tests.py --from LOG      # report a finished run's output (CI's, say)
    python benchmarks/bench_tests.py -- tests/unit   # pass pytest arguments after --

The suite runs with ``--durations=0`` (every set-up, call and tear-down that took 5 ms or more);
the report sums those seconds by layer (``tests/<layer>/``: unit, workflow, integration,
rehearsal, slurm), by file, and lists the slowest phases.  Seconds are worker-seconds: with two
pytest-xdist workers the suite's wall time is about half their sum when the workers are balanced,
and never less than its longest group (the end-to-end run and its users, tests/conftest.py
``SHARED_GROUPS``).  docs/performance.md ("The test suite") holds the numbers of record; a change
that adds minutes shows here first.  Time it on an idle machine.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASE = re.compile(r"^(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S+)", re.M)
WALL = re.compile(r"=+ .*? in (\d+(?:\.\d+)?)s(?: \([\d:]+\))? =+\s*$", re.M)


def phases(text: str) -> list[tuple[float, str, str]]:
    """``(seconds, phase, node id)`` of every phase that ``--durations`` printed in ``text``."""
    return [(float(s), phase, node) for s, phase, node in PHASE.findall(text)]


def layer_of(node: str) -> str:
    """The layer of a test, its folder under tests/ (``tests/unit/test_x.py::t`` → ``unit``)."""
    parts = node.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0]


def report(text: str, top: int = 20) -> str:
    """The per-layer, per-file and slowest-phase tables (markdown) of a pytest run's output."""
    rows = phases(text)
    if not rows:
        raise SystemExit("no --durations lines in the output: run pytest with --durations=0")
    by_layer, by_file = defaultdict(float), defaultdict(float)
    for s, _, node in rows:
        by_layer[layer_of(node)] += s
        by_file[node.split("::", 1)[0]] += s
    total = sum(by_layer.values())
    wall = WALL.findall(text)
    out = [f"worker-seconds in all: {total:,.0f}"
           + (f"; pytest's wall time: {float(wall[-1]):,.0f} s" if wall else ""), "",
           "| layer | worker-s | share |", "|---|---|---|"]  # fmt: skip
    for name, s in sorted(by_layer.items(), key=lambda kv: -kv[1]):
        out.append(f"| {name} | {s:,.0f} | {s / total:.0%} |")
    out += ["", "| file | worker-s |", "|---|---|"]
    for name, s in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]:
        out.append(f"| `{name}` | {s:,.0f} |")
    out += ["", f"The {top} slowest phases:", "", "| s | phase | test |", "|---|---|---|"]
    for s, phase, node in sorted(rows, key=lambda r: -r[0])[:top]:
        out.append(f"| {s:,.1f} | {phase} | `{node}` |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="log", help="a finished run's pytest output to report")
    ap.add_argument("--top", type=int, default=20, help="files and phases listed (default 20)")
    ap.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --")
    args = ap.parse_args(argv)
    if args.log:
        print(report(Path(args.log).read_text(), args.top))
        return 0
    cmd = [sys.executable, "-m", "pytest", "--durations=0", *args.pytest_args]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    print(res.stdout[-2000:] if res.returncode else "", end="")
    print(f"{' '.join(cmd[2:])}: exit {res.returncode}, {time.perf_counter() - t0:,.0f} s wall\n")
    print(report(res.stdout, args.top))
    return res.returncode


if __name__ == "__main__":
    raise SystemExit(main())
