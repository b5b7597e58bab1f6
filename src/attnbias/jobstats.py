"""What a job costs, written to its log: its start-up (process start to its function) and its
CPU time and peak memory.  ``benchmarks/bench_startup.py`` and ``bench_workflow.py`` read them."""

from __future__ import annotations

import logging
import os
from pathlib import Path


def process_age() -> float | None:
    """Seconds since this process started (from Linux's /proc, in clock ticks of 10 ms), or None
    where there is no /proc."""
    try:
        stat = Path("/proc/self/stat").read_text()
        start = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, starttime, after the name
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return uptime - start / os.sysconf("SC_CLK_TCK")


def log_startup(func: str) -> None:
    """Log the job's start-up, the time from its process's start (Python, Snakemake's script
    preamble, imports, reading the inputs) to calling ``func``: benchmarks/bench_startup.py
    reads these lines from the jobs' logs."""
    age = process_age()
    if age is not None:
        logging.getLogger("attnbias").info("start-up: %.2f s from process start to %s", age, func)


def log_usage(log) -> None:
    """The job's CPU time (its process and its children) and peak memory, read from its log by
    benchmarks/bench_workflow.py (Snakemake's benchmark files sample the CPU and miss most)."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    log.info("cpu: %.2f s, max RSS %.0f MB", cpu, max(me.ru_maxrss, kids.ru_maxrss) / 1024)
