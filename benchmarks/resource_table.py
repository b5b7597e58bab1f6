"""Markdown table of the resources each GPU rule requests, from the workflow itself.

    python benchmarks/resource_table.py [--target gpu_figures] [--scale paper]
                                        [--profile profiles/slurm | none] [--all-rules]
                                        [-o FILE | --update docs/cluster.md]

Runs ``snakemake --dry-run --forceall <target> --config scale=<scale>`` (offline, nothing is
executed) with the given workflow profile (default ``profiles/slurm``: what the cluster gets, i.e.
the rules' own resources with the profile's ``set-resources`` on top; ``none``: the rules' own) and
parses every job's ``resources:`` line.  One row per rule and, for the rules written once over a
table (``train``: one job per training run), per sweep (``lowrank/lm``): jobs, GPUs, CPUs, host
memory, wall-time
limit (attempt 1), the GPU memory it needs (the ``gpu_mem_mb`` resource, which is not sent to
SLURM), and, where ``results/benchmarks`` holds a benchmark of the same preset (read from the
provenance of the job's JSON outputs), the measured wall time and peak host memory (max over jobs).
GPU rules are those requesting ``gpu`` > 0 or a ``gres`` with a GPU; ``--all-rules`` lists every
rule of the target's DAG (local and aggregate rules included: a dry run does not mark them).
``--update FILE`` replaces the text between the lines ``<!-- resource-table:start -->`` and
``<!-- resource-table:end -->`` of FILE (e.g. docs/cluster.md) with the table.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- resource-table:start -->", "<!-- resource-table:end -->"
JOB_HEADER = re.compile(r"^(local)?rule (\w+):\s*$")
FIELD = re.compile(r"^\s+(\w+): (.*)$")
RESOURCE = re.compile(r"(\w+)=(.*?)(?=, \w+=|$)")


def dry_run(target: str, scale: str, profile: str, configfiles=(), cwd: Path = ROOT) -> str:
    snakemake = Path(sys.executable).parent / "snakemake"
    # Many cores, so that the dry run does not scale the rules' threads down to this machine.
    cmd = [str(snakemake), "--dry-run", "--forceall", "--nolock", "--cores", "256",
           "--workflow-profile", profile, "--config", f"scale={scale}"]  # fmt: skip
    if configfiles:
        cmd += ["--configfile", *map(str, configfiles)]
    res = subprocess.run([*cmd, "--", target], cwd=cwd, capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(f"dry run failed ({res.returncode}):\n{res.stderr[-4000:]}")
    return res.stdout


def parse_jobs(text: str) -> list[dict]:
    """Every job of a dry run: {rule, local, threads, resources, output, benchmark}."""
    jobs, job = [], None
    for line in text.splitlines():
        m = JOB_HEADER.match(line)
        if m:
            job = dict(
                rule=m[2], local=bool(m[1]), threads=1, resources={}, output=[], benchmark=None
            )
            jobs.append(job)
            continue
        if job is None:
            continue
        f = FIELD.match(line)
        if not f:
            if not line.strip() or line.startswith("["):
                job = None
            continue
        key, value = f[1], f[2].strip()
        if key == "resources":
            job["resources"] = {k: _number(v.strip()) for k, v in RESOURCE.findall(value)}
        elif key == "threads":
            job["threads"] = int(value)
        elif key == "output":
            job["output"] = [o.strip() for o in value.split(",")]
        elif key == "benchmark":
            job["benchmark"] = value
    return jobs


def _number(value: str):
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return value


def gpus(resources: dict) -> int:
    """GPUs a job requests (``gpu`` or a ``gres`` such as gpu:2 / gpu:a100:1)."""
    if isinstance(resources.get("gpu"), int) and resources["gpu"] > 0:
        return resources["gpu"]
    gres = str(resources.get("gres", ""))
    m = re.search(r"\bgpu(?::[A-Za-z0-9_.]+)?(?::(\d+))?", gres)
    return (int(m[1]) if m[1] else 1) if m else 0


def _preset_of(job: dict, cwd: Path) -> str | None:
    """The preset recorded in a job's JSON outputs (those in a `train` job's folder)."""
    outs = [cwd / o for o in job["output"]]
    for path in [f for o in outs for f in (sorted(o.glob("*.json")) if o.is_dir() else [o])]:
        if path.suffix == ".json" and path.exists():
            try:
                meta = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            preset = meta.get("provenance", {}).get("preset") or meta.get("preset")
            if preset:
                return preset
    return None


def measured(jobs: list[dict], scale: str, cwd: Path):
    """(max wall seconds, max peak RSS MB, n measured) over the jobs' benchmark files of
    ``scale``."""
    secs, rss, n = [], [], 0
    for job in jobs:
        bench = job["benchmark"] and cwd / job["benchmark"]
        if not bench or not bench.exists() or _preset_of(job, cwd) != scale:
            continue
        b = pd.read_csv(bench, sep="\t")
        secs.append(float(b["s"].max()))
        rss.append(float(pd.to_numeric(b["max_rss"], errors="coerce").max()))
        n += 1
    return (max(secs) if secs else None, max(rss) if rss else None, n)


def _mem(mb) -> str:
    if not isinstance(mb, (int, float)):
        return "—"
    return f"{mb / 1000:g} GB" if mb >= 1000 else f"{mb:g} MB"


def _minutes(m) -> str:
    if not isinstance(m, (int, float)):
        return "—"
    return f"{m / 60:g} h" if m >= 60 else f"{m:g} min"


def _seconds(s) -> str:
    if s is None:
        return "—"
    return f"{s / 3600:.1f} h" if s >= 3600 else (f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s")


def sweep_of(job: dict) -> str:
    """``paper/sweep`` of a `train` job (its folder <results>/data/<paper>/<sweep>/<batch>, in the
    run's results folder: results/, results/paper/, ...), else ""."""
    parts = Path(job["output"][0]).parts if job["output"] else ()
    if parts[:1] != ("results",) or "data" not in parts:
        return ""
    rest = parts[parts.index("data") + 1 :]
    return "/".join(rest[:2]) if len(rest) == 3 else ""


def table(jobs: list[dict], scale: str, all_rules: bool = False, cwd: Path = ROOT) -> pd.DataFrame:
    rows = []
    by_rule: dict[tuple[str, str], list[dict]] = {}
    for job in jobs:
        if not job["local"] and (all_rules or gpus(job["resources"]) > 0):
            by_rule.setdefault((job["rule"], sweep_of(job)), []).append(job)
    for (rule, sweep), rjobs in sorted(by_rule.items()):
        res = rjobs[0]["resources"]
        cpus = res.get("cpus_per_gpu") if gpus(res) else None
        wall, rss, n = measured(rjobs, scale, cwd)
        rows.append({
            "rule": f"`{rule}`",
            "sweep": f"`{sweep}`" if sweep else "—",
            "jobs": len(rjobs),
            "GPUs / job": gpus(res) or "—",
            "GPU model": res.get("gpu_model") or res.get("constraint") or "any",
            "GPU memory": _mem(res.get("gpu_mem_mb")),
            "CPUs / job": f"{cpus} per GPU" if cpus else rjobs[0]["threads"],
            "host memory": _mem(res.get("mem_mb")),
            "time limit": _minutes(res.get("runtime")),
            "measured wall time (max)": _seconds(wall) + (f" ({n} jobs)" if n > 1 else ""),
            "measured peak RSS": _mem(rss) if rss is not None else "—",
        })  # fmt: skip
    return pd.DataFrame(rows)


def to_markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(str(row[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--target", default="gpu_figures", help="Snakemake target (default gpu_figures)"
    )
    ap.add_argument("--scale", default="paper", help="preset (default paper)")
    ap.add_argument(
        "--profile",
        default="profiles/slurm",
        help="workflow profile, or none (default profiles/slurm)",
    )
    ap.add_argument("--configfile", nargs="*", default=[], help="extra config files")
    ap.add_argument(
        "--all-rules", action="store_true", help="every rule of the DAG, not only GPU rules"
    )
    out = ap.add_mutually_exclusive_group()
    out.add_argument("-o", "--output", help="write the table here (default: stdout)")
    out.add_argument(
        "--update", metavar="FILE", help=f"replace the table between {START} and {END} in FILE"
    )
    args = ap.parse_args(argv)
    jobs = parse_jobs(dry_run(args.target, args.scale, args.profile, args.configfile))
    df = table(jobs, args.scale, args.all_rules)
    profile = (
        "the rules' own resources" if args.profile == "none" else f"resources with `{args.profile}`"
    )
    text = (
        f"<!-- generated by `python benchmarks/resource_table.py --target {args.target} --scale "
        f"{args.scale} "
        f"--profile {args.profile}`: {profile}; time limit and memory at attempt 1 "
        "(retries scale them) -->\n"
        + (to_markdown(df) if len(df) else "_(no GPU rule in this target)_\n")
    )
    if args.update:
        update_between_markers(Path(args.update), text)
    elif args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)


def update_between_markers(path: Path, text: str) -> None:
    doc = path.read_text()
    if doc.count(START) != 1 or doc.count(END) != 1 or doc.index(START) > doc.index(END):
        raise SystemExit(f"{path}: needs one line {START} followed by one line {END}")
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n{text}{END}{tail}")


if __name__ == "__main__":
    main()
