"""The execution profiles, checked without a scheduler: every key is a CLI option of Snakemake 9 /
the slurm plugin, every line is commented, every GPU job of the workflow gets cluster resources (a
GPU partition from the SLURM profile; CPUs per GPU, memory, time and GPU memory from the figure
table, never lowered by the profile), the default profile keeps GPU jobs one at a time, and
benchmarks/resource_table.py, which imports the run instead of starting Snakemake, finds the jobs
and resources a real dry run schedules (tests/unit/test_resource_table.py tests it further)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import BIN, ROOT, snakemake_cmd, workflow_copy

PROFILES = {p.parent.name: p for p in sorted((ROOT / "profiles").glob("*/config.yaml"))}

_spec = importlib.util.spec_from_file_location(
    "resource_table", ROOT / "benchmarks" / "resource_table.py"
)
resource_table = importlib.util.module_from_spec(_spec)
sys.modules["resource_table"] = resource_table
_spec.loader.exec_module(resource_table)


def test_both_profiles_exist():
    assert {"default", "slurm"} <= set(PROFILES)
    assert (ROOT / "profiles" / "slurm" / "partitions.yaml").exists()


@pytest.fixture(scope="module")
def cli_options():
    res = subprocess.run(
        [str(BIN / "snakemake"), "--help"], capture_output=True, text=True, cwd=ROOT
    )
    assert res.returncode == 0
    return set(re.findall(r"(?<![\w-])--([a-z][a-z0-9-]*)", res.stdout))


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_profile_keys_are_cli_long_options(name, cli_options):
    text = PROFILES[name].read_text()
    keys = set(yaml.safe_load(text))
    # Commented-out options in the profile must be real options too.
    keys |= set(re.findall(r"^# ([a-z][a-z0-9-]+): ", text, re.M)) - {"default-resources"}
    unknown = sorted(k for k in keys if k not in cli_options)
    assert not unknown, f"profiles/{name}: not options of `snakemake --help`: {unknown}"


YAML_FILES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "profiles").rglob("*.yaml"))


@pytest.mark.parametrize("name", YAML_FILES)
def test_every_profile_line_is_commented(name):
    lines = (ROOT / name).read_text().splitlines()
    bare = [
        f"{i + 1}: {line}"
        for i, line in enumerate(lines)
        if line.strip() and not line.lstrip().startswith("#") and " # " not in line
        and not (i > 0 and lines[i - 1].lstrip().startswith("#"))
    ]  # fmt: skip
    assert not bare, f"{name}: lines without a comment above them:\n" + "\n".join(bare)


def test_slurm_profile_shape():
    prof = yaml.safe_load(PROFILES["slurm"].read_text())
    assert prof["executor"] == "slurm"
    assert prof["slurm-status-command"] == "squeue"
    assert prof["retries"] >= 1 and prof["rerun-incomplete"] and prof["keep-going"]
    assert {"slurm_account", "slurm_partition", "runtime", "mem_mb"} <= set(
        prof["default-resources"]
    )
    assert 3 * prof["slurm-init-seconds-before-status-checks"] <= 300  # Slurm's default MinJobAge
    from snakemake_executor_plugin_slurm.partitions import read_partition_file

    parts = read_partition_file(ROOT / "profiles" / "slurm" / "partitions.yaml")
    assert any(p.limits.max_gpu > 0 for p in parts) and any(p.limits.max_gpu == 0 for p in parts)


def test_default_profile_shape():
    prof = yaml.safe_load(PROFILES["default"].read_text())
    assert prof["resources"] == {"gpu": 1}
    assert prof["rerun-incomplete"] and prof["keep-going"] and prof["printshellcmds"]
    assert "executor" not in prof


# --- the SLURM profile against the workflow's GPU rules (paper preset, dry runs) ---------------
JOB_HEADER = re.compile(r"^(local)?rule (\w+):\s*$")
FIELD = re.compile(r"^\s+(\w+): (.*)$")
RESOURCE = re.compile(r"(\w+)=(.*?)(?=, \w+=|$)")


def dry_run(target: str, scale: str, profile: str, cwd) -> str:
    """What `snakemake --dry-run --forceall <target>` prints (many cores: the rules' threads are
    not scaled down to this machine)."""
    res = snakemake_cmd("--dry-run", "--forceall", "--nolock", "--cores", "256",
                        "--workflow-profile", profile, "--config", f"scale={scale}", "--", target,
                        cwd=cwd, check=True)  # fmt: skip
    return res.stdout


def parse_dry_run(text: str) -> list[dict]:
    """Every job a dry run prints: {rule, threads, resources, output, benchmark}."""
    jobs, job = [], None
    for line in text.splitlines():
        m = JOB_HEADER.match(line)
        if m:
            job = dict(rule=m[2], local=False, threads=1, resources={}, output=[], benchmark=None)
            jobs.append(job)
            continue
        f = FIELD.match(line) if job is not None else None
        if not f:
            if job is not None and (not line.strip() or line.startswith("[")):
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
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


@pytest.fixture(scope="module")
def paper_jobs():
    """Jobs of `all` at paper scale: with the rules' own resources, and with profiles/slurm."""
    wf = workflow_copy()
    own = parse_dry_run(dry_run("all", "paper", "none", cwd=wf))
    slurm = parse_dry_run(dry_run("all", "paper", str(ROOT / "profiles" / "slurm"), cwd=wf))
    return own, slurm


def test_slurm_profile_covers_every_gpu_rule(paper_jobs):
    own, slurm = paper_jobs
    gpu_rules = {j["rule"] for j in own if resource_table.gpus(j["resources"]) > 0}
    assert gpu_rules == {"train", "extend"}, gpu_rules
    prof = yaml.safe_load(PROFILES["slurm"].read_text())["set-resources"]
    missing = sorted(gpu_rules - set(prof))
    assert not missing, (
        "GPU rules without cluster resources in profiles/slurm/config.yaml (set-resources): "
        f"{missing}; add slurm_partition and gpu for each"
    )
    for rule in gpu_rules:
        assert "slurm_partition" in prof[rule], rule
        assert "gpu" in prof[rule] or "gres" in prof[rule], rule
    for job in slurm:  # the rest comes from the figure table, per sweep
        if resource_table.gpus(job["resources"]):
            res = job["resources"]
            for key in ("cpus_per_gpu", "mem_mb", "runtime", "gpu_mem_mb"):
                assert isinstance(res.get(key), int) and res[key] > 0, (job["output"], key)


def test_slurm_profile_names_only_existing_rules():
    """Every rule the profile names exists in the paper preset it is written for."""
    paper = snakemake_cmd("--list-rules", "--nolock", "--config", "scale=paper", check=True)
    rules = set(paper.stdout.split())
    assert "train" in rules
    prof = yaml.safe_load(PROFILES["slurm"].read_text())["set-resources"]
    assert not sorted(set(prof) - rules), "profiles/slurm set-resources names unknown rules (typo?)"


def test_slurm_profile_never_gives_less_than_the_rule_asks(paper_jobs):
    own, slurm = paper_jobs
    asked = {(j["rule"], tuple(j["output"])): j["resources"] for j in own}
    for job in slurm:
        mine = asked[(job["rule"], tuple(job["output"]))]
        got = job["resources"]
        for key in ("mem_mb", "runtime"):
            if isinstance(mine.get(key), (int, float)):
                assert got[key] >= mine[key], (job["rule"], key, got[key], mine[key])
        if resource_table.gpus(mine):
            assert resource_table.gpus(got) >= resource_table.gpus(mine), job["rule"]


def test_resource_table_lists_the_gpu_rules(paper_jobs):
    _, slurm = paper_jobs
    wf = workflow_copy()
    jobs = resource_table.jobs_of("all", "paper", str(ROOT / "profiles" / "slurm"), cwd=wf)
    df = resource_table.table(jobs, "paper", cwd=wf)
    gpu_rules = {j["rule"] for j in slurm if resource_table.gpus(j["resources"]) > 0}
    assert {r.strip("`") for r in df["rule"]} == gpu_rules
    # one row per training sweep of the one `train` rule
    sweeps = {s.strip("`") for r, s in zip(df["rule"], df["sweep"], strict=True) if r == "`train`"}
    expected = {"lowrank/lm", "lowrank/fig2", "lowrank/vit", "fastrates/fig1", "maxmargin/vit"}
    assert expected <= sweeps
    assert (df["GPU memory"] != "—").all() and (df["time limit"] != "—").all()
    md = resource_table.to_markdown(df)
    assert md.startswith("| rule | sweep | jobs | GPUs / job |") and md.count("\n") == len(df) + 2


# The resources a dry run prints twice over (mem, mem_mib beside mem_mb; disk, disk_mib).
EXPANDED = {"mem", "mem_mib", "disk", "disk_mib"}


def planned(jobs: list[dict]) -> dict:
    """(rule, outputs) -> (threads, resources, benchmark) of every job."""
    return {
        (j["rule"], tuple(sorted(j["output"]))): (
            j["threads"],
            {k: v for k, v in j["resources"].items() if k not in EXPANDED},
            j["benchmark"],
        )
        for j in jobs
    }


def assert_same_jobs(dry: list[dict], imported: list[dict]) -> None:
    dry, imported = planned(dry), planned(imported)
    assert sorted(set(dry) - set(imported)) == [], "jobs the table misses"
    assert sorted(set(imported) - set(dry)) == [], "jobs Snakemake does not schedule"
    differ = [(k, dry[k], imported[k]) for k in dry if dry[k] != imported[k]]
    assert not differ, f"{len(differ)} jobs differ, e.g. (dry run, table): {differ[:3]}"


def test_resource_table_jobs_are_the_dry_runs(paper_jobs):
    """benchmarks/resource_table.py imports the run: its jobs of `all` (every rule) are the
    dry run's, each with the same threads, resources (the profile applied) and benchmark file."""
    own, slurm = paper_jobs
    wf = workflow_copy()
    assert_same_jobs(own, resource_table.jobs_of("all", "paper", "none", cwd=wf))
    slurm_profile = str(ROOT / "profiles" / "slurm")
    assert_same_jobs(slurm, resource_table.jobs_of("all", "paper", slurm_profile, cwd=wf))


# A profile using what a site may write: human-friendly sizes and times, an expression of the
# attempt, set-threads, a global pool capping a resource.
CUSTOM_PROFILE = """\
default-resources:
  slurm_partition: cpu
  mem: 3G
  runtime: 2h
set-resources:
  train:
    slurm_partition: gpu
    gpu_model: h100
    runtime: "attempt * 500"
  compute:
    mem_mb: 1234
set-threads:
  train: 6
  instance: 3
resources:
  gpu: 1
"""


def test_resource_table_applies_a_profile_as_snakemake_does(tmp_path):
    (tmp_path / "prof").mkdir()
    (tmp_path / "prof" / "config.yaml").write_text(CUSTOM_PROFILE)
    wf, prof = workflow_copy(), str(tmp_path / "prof")
    dry = parse_dry_run(dry_run("maxmargin", "paper", prof, cwd=wf))
    imported = resource_table.jobs_of("maxmargin", "paper", prof, cwd=wf)
    assert_same_jobs(dry, imported)
    train = next(j for j in imported if j["rule"] == "train")
    assert train["threads"] == 6 and train["resources"]["gpu_model"] == "h100"


# --- the default profile: two GPU jobs never share the GPU ------------------------------------

GPU_CAP_SNAKEFILE = """
rule all:
    input: "g1.t", "g2.t", "c1.t"

rule g:
    output: "g{i}.t"
    resources: gpu=1
    shell: "s=$(date +%s.%N); sleep 2; echo $s $(date +%s.%N) > {output}"

rule c:
    output: "c{i}.t"
    shell: "s=$(date +%s.%N); sleep 2; echo $s $(date +%s.%N) > {output}"
"""


def test_default_profile_runs_one_gpu_job_at_a_time(tmp_path):
    (tmp_path / "Snakefile").write_text(GPU_CAP_SNAKEFILE)
    shutil.copytree(ROOT / "profiles" / "default", tmp_path / "profiles" / "default")
    res = snakemake_cmd("--cores", "3", "--nolock", cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Using workflow specific profile profiles/default" in res.stdout + res.stderr
    span = {
        n: tuple(map(float, (tmp_path / f"{n}.t").read_text().split())) for n in ("g1", "g2", "c1")
    }
    (a0, a1), (b0, b1) = sorted([span["g1"], span["g2"]])
    assert b0 >= a1, f"the two gpu=1 jobs overlapped: {span}"
    c0, c1 = span["c1"]
    assert c0 < a1 and c1 > a0, f"the CPU job did not run beside a GPU job: {span}"
