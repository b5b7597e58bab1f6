"""Time one synthetic figure from scratch and what each of its jobs pays before its function runs.

    python benchmarks/bench_startup.py [--repeat 3] [--figure maxmargin_fig1c]

Targets (issue "Speed where users wait"): ``snakemake --cores 2 -F maxmargin_fig1c`` (its
instance, svm, compute, check and plot jobs) ≤ 3 s wall; each job's start-up, from its process's
start to the first line of its function, ≤ 1 s.  In a fresh copy of the workflow (the figure built
once first), it prints:

* the wall time of the figure forced from scratch (median of ``--repeat`` runs) and of a dry run
  (Snakemake's start and the workflow's parse, which every command pays);
* each job's start-up as its log records it (``attnbias.workflow.log_startup``: Python, Snakemake's
  ``script:`` preamble, the imports, reading the inputs), median over the runs;
* what a plot job's start-up is made of: a bare interpreter, Snakemake's preamble (which unpickles
  the job's ``snakemake`` object), and the preamble plus the entry point's imports.

Run it on an idle machine: every number is wall time.
"""

import argparse
import ast
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORE = (".venv", "venv", "results", ".snakemake", ".git", "__pycache__", "*.egg-info")
PREAMBLE_END = "######## snakemake preamble end"


def timed(cmd, cwd) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t0


def median_time(cmd, cwd, repeat) -> float:
    return statistics.median(timed(cmd, cwd) for _ in range(repeat))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--figure", default="maxmargin_fig1c")
    args = ap.parse_args()
    snakemake = str(Path(sys.executable).parent / "snakemake")
    with tempfile.TemporaryDirectory() as tmp:
        wf = Path(tmp) / "attnbias"
        shutil.copytree(ROOT, wf, ignore=shutil.ignore_patterns(*IGNORE))
        subprocess.run([snakemake, "--cores", "2", args.figure], cwd=wf, check=True,
                       capture_output=True)  # fmt: skip
        dry = median_time([snakemake, "-n", args.figure], wf, args.repeat)
        walls, startups = [], {}
        for i in range(args.repeat):
            keep = ["--skip-script-cleanup"] if i == args.repeat - 1 else []
            walls.append(timed([snakemake, "--cores", "2", "-F", args.figure, *keep], wf))
            for log in (wf / "results" / "logs").glob("*.log"):
                for m in re.finditer(r"start-up: ([\d.]+) s from process start to (\S+)",
                                     log.read_text()):  # fmt: skip
                    startups.setdefault(m[2], []).append(float(m[1]))
        print(f"{args.figure}, {time.strftime('%Y-%m-%d %H:%M')}, {_commit()}")
        print(f"snakemake --cores 2 -F {args.figure}: {statistics.median(walls):.2f} s wall "
              f"(median of {args.repeat}: {', '.join(f'{w:.2f}' for w in walls)})"
              "   target <= 3 s")  # fmt: skip
        print(f"snakemake -n {args.figure} (start and parse): {dry:.2f} s")
        print("job start-up, process start -> its function (median)   target <= 1 s")
        for func, ages in sorted(startups.items()):
            print(f"  {statistics.median(ages):5.2f} s  {func}")
        _plot_breakdown(wf, args.repeat, args.figure.split("_", 1)[0])


def _plot_breakdown(wf: Path, repeat: int, paper: str) -> None:
    """A plot job's start-up in parts, from the generated script Snakemake ran."""
    scripts = sorted((wf / ".snakemake" / "scripts").glob("tmp*.plot.py"))
    if not scripts:
        return
    text = scripts[0].read_text()
    preamble = text[: text.index(PREAMBLE_END)]
    body = text[text.index(PREAMBLE_END) :]
    tree = ast.parse(body)
    head = "\n".join(
        ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
    )
    head += f"\nimport attnbias.plotting.{paper}"  # the figure's module, imported by name
    probe = wf / "probe_imports.py"
    probe.write_text(preamble + "\n" + head + "\n")
    bare = median_time([sys.executable, "-c", "pass"], wf, repeat)
    pre = wf / "probe_preamble.py"
    pre.write_text(preamble + "\n")
    with_preamble = median_time([sys.executable, str(pre)], wf, repeat)
    with_imports = median_time([sys.executable, str(probe)], wf, repeat)
    print("a plot job's start-up in parts (median):")
    print(f"  {bare:5.2f} s  Python interpreter (python -c pass)")
    print(f"  {with_preamble:5.2f} s  + Snakemake's script preamble (unpickling the job object)")
    print(f"  {with_imports:5.2f} s  + the imports of scripts/plot.py and plotting.{paper}")


def _commit() -> str:
    res = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)  # fmt: skip
    return "commit " + res.stdout.strip() if res.returncode == 0 else "no git"


if __name__ == "__main__":
    main()
