"""Markdown table of the resources each GPU rule requests, from the run itself.

    python benchmarks/resource_table.py [--target gpu_figures] [--scale paper]
                                        [--profile profiles/slurm | none] [--all-rules]
                                        [-o FILE | --update docs/cluster.md]

The run is imported (:func:`attnbias.run.load_run`, the run the Snakefile builds); no Snakemake
process is started.  The jobs of the target's graph are found from the run's figure table, the way
the rules (``workflow/rules/*.smk``, :data:`RULES`) make them: a figure's data files name the
`compute`, `gather` or `precomputed` job writing them, a gather's batches the `train` and `extend`
jobs, a job's inputs under ``results/downloads/`` the `download` jobs, and so on.  Each job gets
its rule's resources from the run's functions at attempt 1 (``RUN.resource``, ``RUN.threads``),
with the workflow profile on top as Snakemake applies it (default ``profiles/slurm``: what the
cluster gets; ``none``: the rules' own): the profile's ``default-resources`` (with Snakemake's own
defaults) under the rule's, its ``set-resources`` and ``set-threads`` over them, each resource
capped by the global ``resources`` pool.  Snakemake's own parsers read the profile.

One row per rule and, for the rules written once over a table (``train``: one job per training
run), per sweep (``lowrank/lm``): jobs, GPUs, CPUs, host memory, wall-time limit (attempt 1), the
GPU memory it needs (the ``gpu_mem_mb`` resource, which is not sent to SLURM), and, where
``results/benchmarks`` holds a benchmark of the same preset (read from the provenance of the job's
JSON outputs), the measured wall time and peak host memory (max over jobs).  Where the jobs of a
row ask for different amounts, the cell gives the range (``8 GB–32 GB``).  Only the jobs a cluster
run submits are listed (not local rules) that request a GPU (``gpu`` > 0 or a ``gres`` with a GPU);
``--all-rules`` lists every job of the target's graph, local and aggregate rules included.
``--update FILE`` replaces the text between the lines ``<!-- resource-table:start -->`` and
``<!-- resource-table:end -->`` of FILE (e.g. docs/cluster.md) with the table (the file is not
written when the table is unchanged).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- resource-table:start -->", "<!-- resource-table:end -->"


# --- the rules, as workflow/rules/*.smk declare them ---------------------------------------------
class Rule(NamedTuple):
    """What a rule of ``workflow/rules/*.smk`` declares (tests/unit/test_resource_table.py checks
    this against the files).

    entry : the table kind its ``entry`` wildcard ranges over (``RUN.constraint(entry)``).
    outputs : its outputs; ``{results}`` is the run's results folder, ``{root}`` one of the
        results folders the `train` and `extend` rules write to (the run's and the uncontrolled).
    inputs : ``inputs(run, wildcards)``, the files it reads (some of them made by other jobs);
        the wildcards are ``entry``, ``root`` and ``requested``, the targets asked for (the
        workflow's REQUESTED).
    kind : the kind its ``threads`` and ``resources`` functions read (``RUN.resource(kind, ...)``).
    resources : the resources it declares, each ``RUN.resource(kind, name)``.
    threads : whether it declares ``threads: RUN.threads(kind)`` (else one thread).
    local : ``localrule: True``: it runs on the submit host.
    benchmark : its ``benchmark:`` file.
    """

    entry: str | None
    outputs: tuple[str, ...]
    inputs: Callable = lambda run, wildcards: []
    kind: str | None = None
    resources: tuple[str, ...] = ()
    threads: bool = False
    local: bool = False
    benchmark: str | None = None


_GPU_RESOURCES = ("gpu", "gpu_mem_mb", "cpus_per_gpu", "mem_mb", "runtime")
RULES: dict[str, Rule] = {
    # figures.smk
    "instance": Rule(
        "stage", ("{results}/stages/{entry}.instance.npz",),
        inputs=lambda run, wc: run.value("instance", "code")(wc),
    ),
    "svm": Rule(
        "svm", ("{results}/stages/{entry}.svm.npz",),
        inputs=lambda run, wc: [f"{run.results}/stages/{wc.entry}.instance.npz",
                                run.value("svm", "code")(wc)],
    ),
    "compute": Rule(
        "compute", ("{results}/data/{entry}.csv", "{results}/data/{entry}.json"),
        inputs=lambda run, wc: run.compute_inputs(wc),
        kind="compute", resources=("mem_mb", "runtime"), threads=True,
        benchmark="{results}/benchmarks/compute/{entry}.tsv",
    ),
    "check": Rule(
        "figure", ("{results}/claims/{entry}.json",),
        inputs=lambda run, wc: [run.figure_data(wc), run.check_code(wc)],
        local=True, benchmark="{results}/benchmarks/check/{entry}.tsv",
    ),
    "plot": Rule(
        "figure",
        ("{results}/figures/{entry}.pdf", "{results}/figures/{entry}.png",
         "{results}/figures/{entry}.rst"),
        inputs=lambda run, wc: [run.figure_data(wc), f"{run.results}/claims/{wc.entry}.json",
                                run.caption_source(wc), run.plot_code(wc)],
        local=True, benchmark="{results}/benchmarks/plot/{entry}.tsv",
    ),
    # training.smk
    "train": Rule(
        "train", ("{root}/data/{entry}",),
        inputs=lambda run, wc: run.train_inputs(wc),
        kind="train", resources=_GPU_RESOURCES, threads=True,
        benchmark="{root}/benchmarks/train/{entry}.tsv",
    ),
    "extend": Rule(
        "extension", ("{root}/data/{entry}",),
        inputs=lambda run, wc: run.extend_inputs(wc),
        kind="extend", resources=_GPU_RESOURCES, threads=True,
        benchmark="{root}/benchmarks/extend/{entry}.tsv",
    ),
    "gather": Rule(
        "gather", ("{results}/data/{entry}.csv", "{results}/data/{entry}.json"),
        inputs=lambda run, wc: [run.value("gather", "code")(wc), run.value("gather", "batches")(wc),
                                run.value("gather", "extensions")(wc)],
        local=True, benchmark="{results}/benchmarks/gather/{entry}.tsv",
    ),
    "precomputed": Rule(
        "precomputed", ("{results}/data/{entry}.csv", "{results}/data/{entry}.json"),
        inputs=lambda run, wc: [f"workflow/precomputed/{wc.entry}/{wc.entry.split('/')[-1]}.{ext}"
                                for ext in ("csv", "json")],
        local=True,
    ),
    "download": Rule(
        "download", ("results/downloads/{entry}.csv", "results/downloads/{entry}.json"),
        kind="download", resources=("mem_mb", "runtime"), threads=True, local=True,
    ),
    # summary.smk
    "table_files": Rule(
        "table_files", ("{results}/figures/{entry}.csv", "{results}/figures/{entry}.md"),
        inputs=lambda run, wc: [run.table_files_data(wc), run.value("table_files", "code")(wc)],
        local=True,
    ),
    "claims_summary": Rule(
        None,
        ("{results}/claims/summary.md", "{results}/claims/summary.csv",
         "{results}/claims/summary.html", "{results}/claims/landing.rst"),
        inputs=lambda run, wc: [run.table.claim_file(*k)
                                for k in run.summary_figures(wc.requested)],
        local=True,
    ),
    "claims_gate": Rule(
        None, ("{results}/claims/strict.ok",),
        inputs=lambda run, wc: [f"{run.results}/claims/summary.csv"], local=True,
    ),
    "compare": Rule(
        None,
        ("{results}/compare.md", "{results}/compare.csv", "{results}/compare.json",
         "{results}/compare.html", "{results}/compare"),
        inputs=lambda run, wc: [_not_the_reference(run), run.compare_inputs(wc),
                                run.reference_claims(wc),
                                run.table.script_code("scripts/compare.py", "claims.comparison",
                                                      "plotting.compare")],
        local=True,
    ),
}  # fmt: skip


def _not_the_reference(run) -> list:
    """No files: `compare` of the preset's reference run stops here, as the workflow does
    (common.smk)."""
    if run.is_reference():
        raise SystemExit(
            "`compare` needs a run that differs from the preset's reference run "
            "(a --configfile changing a setting, the seed or the control)"
        )
    return []


def aliases(run) -> dict[str, list[str]]:
    """The named targets without a job of their own (alias rules: Snakefile, figures.smk,
    training.smk, summary.smk) and the files each asks for."""
    t = run.table

    def figures(gpu: bool) -> list[str]:
        return [x for k, e in t.figures.items() if e.gpu == gpu for x in run.figure_targets(*k)]

    out = {
        "all": run.all_targets(),
        "cpu_figures": figures(gpu=False),
        "gpu_figures": figures(gpu=True),
        "checks": [f"{run.results}/claims/summary.md", f"{run.results}/claims/summary.csv"],
    }
    out |= {f"{p}_{f}": run.figure_targets(p, f) for p, f in t.figures}
    for paper in dict.fromkeys(p for p, _ in t.figures):
        tables = [f"{run.results}/figures/{p}/{n}.{ext}"
                  for (p, n) in t.table_files if p == paper for ext in ("csv", "md")]  # fmt: skip
        out[paper] = run.paper_targets(paper) + tables
    out |= {f"{p}_download_{n}": [f"results/downloads/{p}/{n}.{ext}" for ext in ("csv", "json")]
            for p, n in t.downloads}  # fmt: skip
    return out


# --- the workflow profile ------------------------------------------------------------------------
class Profile(NamedTuple):
    """What a workflow profile does to a job's resources (Snakemake's own parsers read it)."""

    defaults: object  # snakemake.resources.Resources: `default-resources` (+ Snakemake's defaults)
    set_resources: dict  # rule -> Resources: `set-resources`
    set_threads: dict  # rule -> Resource: `set-threads`
    pool: dict  # resource -> int: the global `resources` pool, which caps every job's


def read_profile(profile: str | Path | None, cwd: Path | None = None) -> Profile:
    """The profile ``profile`` (a folder or its YAML file, relative to ``cwd``; ``None`` or
    ``"none"``: no profile, Snakemake's bare defaults), as Snakemake 9 reads a
    ``--workflow-profile``: its YAML read by Snakemake's profile parser, each value by its resource
    parser, as ``--default-resources``, ``--set-resources``, ``--set-threads`` and
    ``--resources`` read them (snakemake.cli itself is not imported: it loads the executor
    plugins, and the SLURM plugin runs ``which sacct`` when loaded)."""
    from snakemake.profiles import ProfileConfigFileParser
    from snakemake.resources import Resource, Resources

    if profile is None or str(profile) == "none":
        return Profile(Resources.default("bare"), {}, {}, {})
    with open(profile_file(Path(cwd or ROOT, profile))) as stream:
        args = ProfileConfigFileParser().parse(stream)

    def listed(key) -> list[str]:
        value = args.get(key)
        return [] if value is None else [value] if isinstance(value, str) else list(value)

    set_resources: dict[str, list[str]] = {}
    for entry in listed("set-resources"):  # RULE:RESOURCE=VALUE
        rule, assign = entry.split(":", maxsplit=1)
        set_resources.setdefault(rule, []).append(assign)
    set_threads = {}
    for entry in listed("set-threads"):  # RULE=THREADS, a number or an expression
        rule, value = (part.strip() for part in entry.split("=", maxsplit=1))
        set_threads[rule] = (Resource("_cores", int(value)) if value.isdecimal()
                             else Resource.from_cli_expression("_cores", value,
                                                               with_threads_arg=False))  # fmt: skip
    pool = Resources.parse(listed("resources"), allow_expressions=False)
    return Profile(
        defaults=Resources.parse(listed("default-resources"), allow_expressions=True,
                                 defaults="full")
        if "default-resources" in args else Resources.default("bare"),
        set_resources={rule: Resources.parse(assigns, allow_expressions=True)
                       for rule, assigns in set_resources.items()},
        set_threads=set_threads,
        pool={k: r.value for k, r in pool.items() if isinstance(r.value, int)},
    )  # fmt: skip


def profile_file(path: Path) -> Path:
    """A profile's YAML file: ``path`` itself, or in the folder ``path`` the ``config.yaml`` (or
    ``profile.yaml``, or a ``config.v<N>+.yaml`` for Snakemake N or earlier: the highest N), as
    Snakemake picks it."""
    import snakemake

    if path.is_file():
        return path
    major = int(snakemake.__version__.split(".")[0].split("+")[0])
    found = {}
    for f in path.iterdir() if path.is_dir() else []:
        m = re.fullmatch(r"(?:profile|config)(?:\.v(\d+)\+)?\.yaml", f.name)
        if m and int(m[1] or 0) <= major:
            found[f] = int(m[1] or 0)
    if not found:
        raise SystemExit(f"{path}: no profile folder with a config.yaml (or a profile file)")
    return max(found, key=found.get)


class _Input(list):
    """A job's input files as a resource expression sees them (``input.size_mb``): as in
    Snakemake, an input not on disk makes the size unknown (the resource is "<TBD>")."""

    def __init__(self, files, base: Path):
        super().__init__(files)
        self.base = base

    @property
    def size_files(self):
        for f in self:
            if not Path(self.base, f).exists():
                raise FileNotFoundError(2, "No such file or directory", f)
        return [os.path.getsize(Path(self.base, f)) for f in self]

    size = property(lambda self: sum(self.size_files))
    size_kb = property(lambda self: self.size / 1024)
    size_mb = property(lambda self: self.size / 1024**2)
    size_gb = property(lambda self: self.size / 1024**3)


def _async_run(coroutine):
    import asyncio

    return asyncio.run(coroutine)


def job_resources(profile: Profile, rule: str, own: dict, threads: int, wildcards, inputs,
                  base: Path | None = None):  # fmt: skip
    """(threads, resources) of a job, as Snakemake makes them at attempt 1: the profile's
    defaults, the rule's own ``own`` over them, the profile's ``set-resources`` over those (its
    ``set-threads`` over ``threads``); expressions evaluated; each capped by the global pool."""
    from snakemake.resources import Resources

    aux = dict(input=_Input(inputs, base or ROOT), attempt=1, rulename=rule, async_run=_async_run)
    if rule in profile.set_threads:
        threads = profile.set_threads[rule].evaluate(wildcards, **aux).value
    resources = profile.defaults.copy()
    resources.update(Resources.from_mapping(own))
    resources.update(profile.set_resources.get(rule, {}))
    out = {}
    for name, res in resources.items():
        value = res.evaluate(wildcards, threads=threads, **aux).value
        cap = profile.pool.get(name)
        if isinstance(value, int) and isinstance(cap, int):
            value = min(value, cap)
        if value is not None:
            out[name] = value
    return threads, out


# --- the jobs of a target's graph ---------------------------------------------------------------
def _files(value) -> list[str]:
    """Every path in an input value (a path, a list, a dict of them)."""
    if isinstance(value, dict):
        return [f for v in value.values() for f in _files(v)]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _files(v)]
    return [str(value)]


class Graph:
    """The jobs a target needs, built from the run's table as the rules make them."""

    def __init__(self, run, profile: Profile, requested: list[str]):
        self.run, self.profile, self.requested = run, profile, requested
        self.roots = sorted({run.results, run.uncontrolled}, key=len, reverse=True)
        self.keys = {
            r: {"/".join(map(str, k)) for k in run.entries(rule.entry)} if rule.entry else set()
            for r, rule in RULES.items()
        }
        self.jobs: dict[tuple, dict] = {}
        self._made: dict[str, tuple | None] = {}

    def producer(self, path: str):
        """(rule, root, entry) of the job writing ``path``, or None (a source file)."""
        if path not in self._made:
            self._made[path] = self._producer(path)
        return self._made[path]

    def _producer(self, path: str):
        for name, rule in RULES.items():
            roots = self.roots if any("{root}" in o for o in rule.outputs) else [self.run.results]
            for root, template in ((r, o) for r in roots for o in rule.outputs):
                pattern = template.format(results=self.run.results, root=root, entry="\0")
                if "\0" not in pattern:
                    if path == pattern:
                        return name, root, ""
                    continue
                head, tail = pattern.split("\0")
                entry = path[len(head) : len(path) - len(tail)]
                if path.startswith(head) and path.endswith(tail) and entry in self.keys[name]:
                    return name, root, entry
        return None

    def add_target(self, target: str) -> None:
        named = aliases(self.run)
        if target in named:  # an alias rule: a job without outputs, run where Snakemake runs
            wildcards = self._wildcards("", self.run.results)
            self.jobs[(target, "", "")] = self._job(target, None, wildcards, named[target])
            for path in named[target]:
                self.add_file(path)
        elif target in RULES and RULES[target].entry is None:  # a rule without wildcards
            self.add_file(RULES[target].outputs[0].format(results=self.run.results))
        elif self.producer(target):
            self.add_file(target)
        else:
            raise SystemExit(
                f"unknown target {target!r}: give all, gpu_figures, cpu_figures, checks, a paper, "
                "<paper>_<fig>, <paper>_download_<name>, claims_summary, claims_gate, compare or "
                "a file one of their jobs writes"
            )

    def _wildcards(self, entry: str, root: str):
        return SimpleNamespace(entry=entry, root=root, requested=self.requested)

    def add_file(self, path: str) -> None:
        made = self.producer(path)
        if made is None or made in self.jobs:
            return
        name, root, entry = made
        rule = RULES[name]
        wildcards = self._wildcards(entry, root)
        inputs = _files(rule.inputs(self.run, wildcards))
        self.jobs[made] = self._job(name, rule, wildcards, inputs)
        for f in inputs:
            self.add_file(f)

    def _job(self, name: str, rule: Rule | None, wildcards, inputs: list[str]) -> dict:
        own, threads = {}, 1
        if rule is not None and rule.kind:
            own = {r: self.run.resource(rule.kind, r)(wildcards, 1) for r in rule.resources}
            threads = self.run.threads(rule.kind)(wildcards) if rule.threads else 1
        threads, resources = job_resources(self.profile, name, own, threads, wildcards, inputs,
                                           self.run.basedir)  # fmt: skip
        fill = dict(results=self.run.results, root=wildcards.root, entry=wildcards.entry)
        return dict(
            rule=name,
            local=rule is None or rule.local,
            threads=threads,
            resources=resources,
            output=[o.format(**fill) for o in rule.outputs] if rule else [],
            benchmark=rule.benchmark.format(**fill) if rule and rule.benchmark else None,
        )


def dag_jobs(run, target: str, profile: Profile) -> list[dict]:
    """Every job of ``target``'s graph (as ``snakemake --forceall`` schedules them), in the order
    they are reached from the target: {rule, local, threads, resources, output, benchmark}."""
    graph = Graph(run, profile, [target])
    graph.add_target(target)
    return list(graph.jobs.values())


def jobs_of(target: str, scale: str, profile: str | None, configfiles=(), cwd: Path | None = None):
    """The jobs of ``target`` in the run of preset ``scale`` (+ ``configfiles``, relative to
    ``cwd``), with the workflow profile ``profile`` (``"none"``: the rules' own resources)."""
    from attnbias.run import RunError, load_run

    cwd = Path(cwd or ROOT)
    try:
        run = load_run(cwd, scale=scale, configfiles=[Path(cwd, f) for f in configfiles])
    except RunError as e:
        raise SystemExit(str(e)) from None
    return dag_jobs(run, target, read_profile(profile, cwd))


# --- the table -----------------------------------------------------------------------------------
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


def _cell(values: list, fmt: Callable) -> str:
    """One cell for the jobs of a row: their value, the range where they differ in amount, else
    their different values."""
    if all(v == values[0] for v in values):
        return str(fmt(values[0]))
    if all(isinstance(v, (int, float)) and v > 0 for v in values):
        return f"{fmt(min(values))}–{fmt(max(values))}"
    return ", ".join(dict.fromkeys(str(fmt(v)) for v in values))


def _cpus(jobs: list[dict]) -> str:
    """CPUs per GPU where a job asks for them with its GPU, else its threads."""
    per_gpu = [(j["resources"].get("cpus_per_gpu") if gpus(j["resources"]) else None) for j in jobs]
    if all(per_gpu):
        return _cell(per_gpu, lambda c: f"{c} per GPU")
    if not any(per_gpu):
        return _cell([j["threads"] for j in jobs], str)
    return ", ".join(dict.fromkeys(f"{c} per GPU" if c else str(j["threads"])
                                   for c, j in zip(per_gpu, jobs, strict=True)))  # fmt: skip


def sweep_of(job: dict) -> str:
    """``paper/sweep`` of a `train` job (its folder <results>/data/<paper>/<sweep>/<batch>, in the
    run's results folder: results/, results/paper/, ...), else ""."""
    parts = Path(job["output"][0]).parts if job["output"] else ()
    if parts[:1] != ("results",) or "data" not in parts:
        return ""
    rest = parts[parts.index("data") + 1 :]
    return "/".join(rest[:2]) if len(rest) == 3 else ""


def table(jobs: list[dict], scale: str, all_rules: bool = False, cwd: Path | None = None):
    """One row per rule (and sweep): the jobs a cluster run submits that ask for a GPU, or with
    ``all_rules`` every job; ``cwd``: the workflow folder (its results/benchmarks/)."""
    cwd = Path(cwd or ROOT)
    rows = []
    by_rule: dict[tuple[str, str], list[dict]] = {}
    for job in jobs:
        if all_rules or (not job["local"] and gpus(job["resources"]) > 0):
            by_rule.setdefault((job["rule"], sweep_of(job)), []).append(job)
    for (rule, sweep), rjobs in sorted(by_rule.items()):
        res = [j["resources"] for j in rjobs]
        wall, rss, n = measured(rjobs, scale, cwd)
        rows.append({
            "rule": f"`{rule}`",
            "sweep": f"`{sweep}`" if sweep else "—",
            "jobs": len(rjobs),
            "GPUs / job": _cell([gpus(r) for r in res], lambda g: g or "—"),
            "GPU model": _cell([r.get("gpu_model") or r.get("constraint") or "any" for r in res],
                               str),
            "GPU memory": _cell([r.get("gpu_mem_mb") for r in res], _mem),
            "CPUs / job": _cpus(rjobs),
            "host memory": _cell([r.get("mem_mb") for r in res], _mem),
            "time limit": _cell([r.get("runtime") for r in res], _minutes),
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


def render(target: str, scale: str, profile: str, configfiles=(), all_rules: bool = False,
           cwd: Path | None = None) -> str:  # fmt: skip
    """The table's text: a comment saying how it was made, then the Markdown table, for the
    workflow in ``cwd`` (default: this checkout)."""
    df = table(jobs_of(target, scale, profile, configfiles, cwd), scale, all_rules, cwd)
    made = "the rules' own resources" if profile == "none" else f"resources with `{profile}`"
    return (
        f"<!-- generated by `python benchmarks/resource_table.py --target {target} --scale "
        f"{scale} --profile {profile}`: {made}; time limit and memory at attempt 1 "
        "(retries scale them) -->\n"
        + (to_markdown(df) if len(df) else "_(no GPU rule in this target)_\n")
    )


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
    text = render(args.target, args.scale, args.profile, args.configfile, args.all_rules)
    if args.update:
        update_between_markers(Path(args.update), text)
    elif args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)


def update_between_markers(path: Path, text: str) -> None:
    """Put ``text`` between the markers of ``path``; the file is left alone when it holds it
    already."""
    doc = path.read_text()
    if doc.count(START) != 1 or doc.count(END) != 1 or doc.index(START) > doc.index(END):
        raise SystemExit(f"{path}: needs one line {START} followed by one line {END}")
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{text}{END}{tail}"
    if new != doc:
        path.write_text(new)


if __name__ == "__main__":
    main()
