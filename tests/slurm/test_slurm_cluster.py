"""The workflow on a real SLURM scheduler, through profiles/slurm.

A single-node SLURM cluster is started on localhost by ``tests/slurm/local_slurm.sh``
(conventions §5: munged, slurmctld, slurmd, no accounting database) and stopped again, by recorded
PID, when the module ends, whatever happened.  The tests need root (they install the Debian
packages when missing and start daemons); without root, apt or a free slot they are skipped with
the reason.  Deselect them with ``-m "not slurm"``.

* a slice of the workflow (two synthetic maxmargin figures and one small torch training job) runs
  with ``--workflow-profile profiles/slurm``: the compute jobs must show up as SLURM jobs (executor
  output, ``squeue -t all``, ``scontrol show job``, the slurmctld log, the jobs' own SLURM logs),
  the plot and claim rules must stay local, and the plot-ready CSVs must equal a local run's;
* a job failing on its first attempt is resubmitted by the profile's ``retries`` (with the longer
  time limit of attempt 2) and the workflow completes;
* a job cancelled with ``scancel`` fails the run without losing the outputs that did complete, and
  the next invocation reruns only that job.

Every executor run is wrapped in ``timeout -k 10``: a wrong status command hangs forever (§5.4).
The training rule is a parameter (``TRAIN_RULE``: the environment variable
``ATTNBIAS_SLURM_TRAIN_RULE``, else ``train``, the one rule of every training run); its first job
in the DAG of ``all`` under the CI configs runs, on one thread, and the run files in its folder
must equal the local run's.

Why this file takes minutes: on a fresh machine its set-up installs Debian's SLURM packages and
starts the daemons, and each workflow run waits on the scheduler's job turnaround (submission,
status polls); most of that time is waiting, not CPU (docs/performance.md, "The test suite").
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import BIN, ci_configfiles, ci_copy

pytestmark = pytest.mark.slurm

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "local_slurm.sh"
SLURM_ROOT = os.environ.get("ATTNBIAS_SLURM_ROOT", "/var/lib/slurm-local")
LOCK_FILE = Path(os.environ.get("ATTNBIAS_SLURM_LOCK", "/tmp/attnbias-local-slurm.lock"))
LOCK_WAIT_S = float(os.environ.get("ATTNBIAS_SLURM_LOCK_WAIT", "900"))


# The torch training rule whose first job (in the DAG of `all` under the CI configs) runs on the
# cluster; ATTNBIAS_SLURM_TRAIN_RULE overrides it ("" leaves training out).
TRAIN_RULE = os.environ.get("ATTNBIAS_SLURM_TRAIN_RULE", "train")
# Synthetic figures, and the plot-ready data their jobs of the (non-local) rule `compute` write
# after their stages `instance` (both) and `svm` (Fig 3; Fig 4 has no SVM stage), also SLURM jobs
# (the rules `plot` and `check` are local).
FIGURES = {
    "maxmargin_fig4a": "results/data/maxmargin/fig4.csv",
    "maxmargin_fig3a": "results/data/maxmargin/fig3.csv",
}

STATUS_INTERVAL = 5  # --slurm-init-seconds-before-status-checks; MinJobAge=600 >= 3 x 5 (§5.4)
SLURM_OVERRIDES = [
    # What a user of this one-node cluster passes on top of the shipped profile: no account, the
    # partition `main`, short limits, squeue for status (no slurmdbd), quick status checks.
    "--slurm-no-account",
    "--default-resources", "slurm_partition=main", "runtime=10", "mem_mb=1000",
    "--slurm-status-command", "squeue",
    "--slurm-init-seconds-before-status-checks", str(STATUS_INTERVAL),
    "--jobs", "2",
]  # fmt: skip

SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")


# --------------------------------------------------------------------------------------------
# helpers


def _env():
    """The venv's bin first on PATH: sbatch exports the environment, so jobs find the same tools."""
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def run_cmd(cmd, cwd=None, timeout=60):
    return subprocess.run(
        [str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_env()
    )


def slurm_snakemake_cmd(profile: Path, options, targets, limit_s: int):
    """The executor run: `timeout -k 10 <limit> snakemake --workflow-profile profiles/slurm ...`."""
    return [
        "timeout", "-k", "10", str(limit_s),
        BIN / "snakemake", "--workflow-profile", profile, "--nolock",
        *SLURM_OVERRIDES, *options, "--", *targets,
    ]  # fmt: skip


def run_slurm_snakemake(cwd: Path, profile: Path, options, targets, limit_s=300):
    cmd = slurm_snakemake_cmd(profile, options, targets, limit_s)
    res = run_cmd(cmd, cwd=cwd, timeout=limit_s + 30)
    res.log = res.stdout + res.stderr
    # 124: stopped by SIGTERM; 137 / -9: killed 10 s later (Snakemake waits for running jobs).
    assert res.returncode not in (124, 137, -9), (
        f"executor run timed out after {limit_s} s:\n{res.log[-6000:]}"
    )
    return res


def submissions(log: str):
    """(snakemake job id, SLURM job id, rule) for every sbatch submission in the executor's log."""
    out = []
    for jobid, slurm_id, logfile in SUBMITTED.findall(log):
        m = re.search(r"slurm_logs/rule_([A-Za-z0-9_]+)/", logfile)
        out.append((jobid, slurm_id, m[1] if m else "?", logfile))
    return out


def squeue_all():
    """{SLURM job id: {name, state, comment, limit, partition}} from `squeue -t all`."""
    res = run_cmd(["squeue", "-t", "all", "-h", "-o", "%i|%j|%T|%k|%l|%P"])
    assert res.returncode == 0, res.stderr
    jobs = {}
    for line in res.stdout.splitlines():
        jid, name, state, comment, limit, part = line.strip().split("|")
        jobs[jid] = dict(name=name, state=state, comment=comment, limit=limit, partition=part)
    return jobs


def scontrol_job(jid: str) -> dict:
    res = run_cmd(["scontrol", "show", "job", jid])
    assert res.returncode == 0, res.stderr
    return dict(re.findall(r"(\w+)=(\S*)", res.stdout))


def slurmctld_log() -> str:
    return (Path(SLURM_ROOT) / "log" / "slurmctld.log").read_text(errors="replace")


def dry_run_jobs(cwd: Path, target: str, configfiles, rule: str):
    """Outputs of every job of ``rule`` in the dry run of ``target`` (forced)."""
    res = run_cmd(
        [BIN / "snakemake", "-n", "--nolock", "--forceall", "--cores", "1", "--configfile",
         *configfiles, "--", target],
        cwd=cwd, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-4000:]
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", res.stdout):
        m = re.match(r"(?:local)?rule (\w+):", block.strip())
        if m and m[1] == rule:
            out = re.search(r"^\s+output: (.+)$", block, re.M)
            jobs.append([o.strip() for o in out[1].split(",")])
    return jobs


def list_rules(cwd: Path) -> set[str]:
    res = run_cmd([BIN / "snakemake", "--list-rules", "--nolock"], cwd=cwd, timeout=300)
    assert res.returncode == 0, res.stderr[-4000:]
    return set(res.stdout.split())


# --------------------------------------------------------------------------------------------
# the cluster


@pytest.fixture(scope="module")
def slurm_cluster():
    """A running single-node SLURM cluster; its daemons are stopped (by PID) at module end."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the local SLURM recipe needs Linux (Debian 12)")
    if os.geteuid() != 0:
        pytest.skip(
            "the local SLURM cluster needs root: it installs slurmctld/slurmd/munge with apt and "
            "starts daemons"
        )
    if shutil.which("timeout") is None:
        pytest.skip("coreutils `timeout` is missing")
    # One local cluster per machine: concurrent test sessions queue here.
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    lock = open(LOCK_FILE, "w")  # noqa: SIM115 (held for the whole module)
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                lock.close()
                pytest.skip(
                    f"another test session held the local SLURM cluster ({LOCK_FILE}) for "
                    f"{LOCK_WAIT_S:.0f} s"
                )
            time.sleep(2)
    env = dict(os.environ, SLURM_ROOT=SLURM_ROOT)
    try:
        res = subprocess.run(
            ["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=900, env=env
        )
        if res.returncode == 77:
            pytest.skip(f"no local SLURM cluster: {res.stderr.strip().splitlines()[-1]}")
        if res.returncode != 0:
            pytest.fail(
                f"local_slurm.sh start failed ({res.returncode}):\n{res.stdout}\n{res.stderr}"
            )
        yield Path(SLURM_ROOT)
    finally:
        stop = subprocess.run(
            ["bash", str(SCRIPT), "stop"], capture_output=True, text=True, timeout=120, env=env
        )
        sys.stderr.write(stop.stderr)
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory):
    return ci_copy(tmp_path_factory.mktemp("slurm_wf") / "attnbias")


@pytest.fixture(scope="module")
def train_job(workflow_copy):
    """(rule, outputs) of one job of TRAIN_RULE, or None when training is left out."""
    if not TRAIN_RULE:
        return None
    if TRAIN_RULE not in list_rules(workflow_copy):
        pytest.fail(
            f"training rule {TRAIN_RULE!r} is not a rule of the workflow "
            "(set ATTNBIAS_SLURM_TRAIN_RULE)"
        )
    jobs = dry_run_jobs(workflow_copy, "all", ci_configfiles(workflow_copy), TRAIN_RULE)
    assert jobs, f"rule {TRAIN_RULE} has no job in the DAG of `all` under the CI configs"
    return TRAIN_RULE, jobs[0]


# --------------------------------------------------------------------------------------------
# a slice of the workflow on the cluster, compared with a local run


@pytest.fixture(scope="module")
def cluster_run(slurm_cluster, workflow_copy, train_job, tmp_path_factory):
    """Run the slice through profiles/slurm while a local `--cores 1` reference run proceeds."""
    wf = workflow_copy
    cfgs = ci_configfiles(wf)
    targets = list(FIGURES)
    expected_rules = {"instance", "svm", "compute"}
    compare = {f"compute ({fig})": csv for fig, csv in FIGURES.items()}
    options = ["--configfile", *cfgs, "--slurm-keep-successful-logs"]
    if train_job:
        rule, outputs = train_job
        targets += outputs
        expected_rules.add(rule)
        # a `train` job's output is the folder of its batch's run files
        compare[rule] = outputs[0]
        # The CI node is far smaller than a GPU node: replace the profile's paper-scale
        # set-resources (GPU partition, a GPU, CPUs per GPU, memory) for this rule, and train on
        # one thread, as the `--cores 1` reference does, so that the numbers can be equal.
        options += [
            "--set-resources",
            f"{rule}:gpu=0",
            f"{rule}:slurm_partition=main",
            f"{rule}:runtime=15",
            "--set-threads",
            f"{rule}=1",
        ]

    # Local reference, in another copy, with the default profile.
    ref = ci_copy(tmp_path_factory.mktemp("local_wf") / "attnbias")
    local_log = ref.parent / "local_run.log"
    with open(local_log, "w") as sink:
        local = subprocess.Popen(
            [str(BIN / "snakemake"), "--nolock", "--cores", "1", "--configfile",
             *map(str, ci_configfiles(ref)), "--", *compare.values()],
            cwd=ref, stdout=sink, stderr=subprocess.STDOUT, env=_env(),
        )  # fmt: skip
        try:
            res = run_slurm_snakemake(wf, wf / "profiles" / "slurm", options, targets, limit_s=420)
        finally:
            try:
                local.wait(timeout=600)
            except subprocess.TimeoutExpired:
                local.kill()
                local.wait()
    assert res.returncode == 0, f"cluster run failed:\n{res.log[-8000:]}"
    assert local.returncode == 0, f"local reference run failed:\n{local_log.read_text()[-6000:]}"
    return dict(
        wf=wf, ref=ref, log=res.log, expected_rules=expected_rules, compare=compare, train=train_job
    )


def test_compute_jobs_ran_as_slurm_jobs(cluster_run):
    log = cluster_run["log"]
    assert "Using workflow specific profile" in log and "profiles/slurm" in log
    subs = submissions(log)
    assert {rule for _, _, rule, _ in subs} == cluster_run["expected_rules"], subs
    computes = [sid for _, sid, rule, _ in subs if rule == "compute"]
    assert len(computes) == len(FIGURES), subs  # one job of `compute` per figure's data
    run_id = re.search(r"SLURM run ID: (\S+)", log)[1]
    queue = squeue_all()
    ctld = slurmctld_log()
    for _, sid, rule, _ in subs:
        job = queue[sid]
        assert job["state"] == "COMPLETED", (rule, job)
        assert job["name"] == run_id and job["partition"] == "main", (rule, job)
        assert job["comment"].startswith(f"rule_{rule}"), (rule, job)
        info = scontrol_job(sid)
        assert info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0", info
        # started by the main scheduler or by backfill, on this node
        started = (
            f"sched: Allocate JobId={sid} NodeList=localhost",
            f"Started JobId={sid} in main on localhost",
        )
        assert any(s in ctld for s in started), (rule, sid)
        assert f"_slurm_rpc_submit_batch_job: JobId={sid} " in ctld
        assert f"_job_complete: JobId={sid} WEXITSTATUS 0" in ctld
    # The figure table's resources reach SLURM (Table.register_compute: 1 thread, 2000 MB, 30 min).
    for sid in computes:
        info = scontrol_job(sid)
        assert info["TimeLimit"] == "00:30:00" and "cpu=1,mem=2000M" in info["TRES"], info
    # The job itself ran inside the allocation: its SLURM log (kept) is Snakemake's job output.
    for _, _, rule, logfile in subs:
        text = Path(logfile).read_text(errors="replace")
        assert f"rule {rule}:" in text and "Finished jobid" in text, (rule, text[-2000:])


def test_plot_and_claim_rules_stay_local(cluster_run):
    log = cluster_run["log"]
    submitted = {rule for _, _, rule, _ in submissions(log)}
    for rule in ("plot", "check"):
        assert f"localrule {rule}:" in log
        assert rule not in submitted
    for fig in FIGURES:
        paper, name = fig.split("_", 1)
        for ext in ("pdf", "png"):
            assert (
                cluster_run["wf"] / "results" / "figures" / paper / f"{name}.{ext}"
            ).stat().st_size > 1000


def test_plot_ready_data_equal_a_local_run(cluster_run):
    for rule, out in cluster_run["compare"].items():
        folder = cluster_run["ref"] / out
        inside = [str(f.relative_to(cluster_run["ref"])) for f in sorted(folder.glob("*.csv"))]
        csvs = [out] if out.endswith(".csv") else inside
        assert csvs, out
        for csv in csvs:
            got = pd.read_csv(cluster_run["wf"] / csv)
            want = pd.read_csv(cluster_run["ref"] / csv)
            assert len(got) > 0, csv
            pd.testing.assert_frame_equal(got, want, check_exact=True, obj=f"{csv} ({rule})")


def test_a_training_job_ran_on_the_cluster(cluster_run):
    if cluster_run["train"] is None:
        pytest.skip("training left out (ATTNBIAS_SLURM_TRAIN_RULE is empty)")
    rule, outputs = cluster_run["train"]
    assert rule in {r for _, _, r, _ in submissions(cluster_run["log"])}
    for out in outputs:
        assert (cluster_run["wf"] / out).exists(), out


# --------------------------------------------------------------------------------------------
# failures: retries and scheduler cancellations (tests/slurm/flaky/Snakefile)


@pytest.fixture
def flaky_dir(tmp_path):
    d = tmp_path / "flaky"
    d.mkdir()
    shutil.copy(HERE / "flaky" / "Snakefile", d / "Snakefile")
    return d


def test_failed_job_is_retried_by_the_profile(slurm_cluster, workflow_copy, flaky_dir):
    res = run_slurm_snakemake(
        flaky_dir, workflow_copy / "profiles" / "slurm", [], ["flaky.txt"], limit_s=240
    )
    assert res.returncode == 0, res.log[-6000:]
    assert (flaky_dir / "flaky.txt").read_text().strip() == "ok"
    assert "Trying to restart job" in res.log
    ids = [sid for _, sid, rule, _ in submissions(res.log) if rule == "flaky"]
    assert len(ids) == 2, submissions(res.log)
    queue = squeue_all()
    first, second = (scontrol_job(i) for i in ids)
    assert queue[ids[0]]["state"] == "FAILED" and first["ExitCode"] == "1:0", first
    assert queue[ids[1]]["state"] == "COMPLETED", queue[ids[1]]
    # runtime = 2 * attempt minutes: the retry is attempt 2.
    assert first["TimeLimit"] == "00:02:00" and second["TimeLimit"] == "00:04:00", (first, second)


def _wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def test_cancelled_job_is_rerun_next_time_without_losing_outputs(
    slurm_cluster, workflow_copy, flaky_dir
):
    profile = workflow_copy / "profiles" / "slurm"
    targets = ["quick.txt", "slow.txt"]
    # First invocation: no retries, so the cancelled job stays failed in this run.
    cmd = slurm_snakemake_cmd(profile, ["--retries", "0"], targets, limit_s=240)
    proc = subprocess.Popen(
        [str(c) for c in cmd],
        cwd=flaky_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )
    try:

        def slow_running_and_quick_done():
            jobs = [
                j | {"id": i}
                for i, j in squeue_all().items()
                if j["comment"] in ("rule_slow", "rule_quick")
            ]
            slow = [j for j in jobs if j["comment"] == "rule_slow" and j["state"] == "RUNNING"]
            quick_done = (flaky_dir / "quick.txt").exists()
            return slow[0]["id"] if slow and quick_done else None

        slow_id = _wait_for(
            slow_running_and_quick_done, 120, "the slow job to run and quick.txt to exist"
        )
        assert run_cmd(["scancel", slow_id]).returncode == 0
        out, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode not in (0, 124, 137, -9), out[-6000:]
    assert "CANCELLED" in out, out[-6000:]
    assert squeue_all()[slow_id]["state"] == "CANCELLED"
    assert (flaky_dir / "quick.txt").exists() and not (flaky_dir / "slow.txt").exists()
    quick_mtime = (flaky_dir / "quick.txt").stat().st_mtime_ns

    # Second invocation (the profile as shipped): only the cancelled job runs again.
    (flaky_dir / "release").touch()
    res = run_slurm_snakemake(flaky_dir, profile, [], targets, limit_s=240)
    assert res.returncode == 0, res.log[-6000:]
    rerun = submissions(res.log)
    assert [rule for _, _, rule, _ in rerun] == ["slow"], rerun
    assert squeue_all()[rerun[0][1]]["state"] == "COMPLETED"
    assert (flaky_dir / "slow.txt").read_text().strip() == "ok"
    assert (flaky_dir / "quick.txt").stat().st_mtime_ns == quick_mtime
