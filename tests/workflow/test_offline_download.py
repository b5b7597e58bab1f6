"""Paper-preset download rules offline, and local sources, in a copy of the workflow.

Offline (``HF_HUB_OFFLINE=1``) or with the hub unreachable, a download rule of an uncached
artefact cannot succeed: it must fail at once, in one attempt (no retries, no network attempts;
it took about 110 s with three retries before), printing its message once, without a traceback,
naming the setting to point at a local copy by its key path.  Local source directories remove
the download rules from the DAG, except the Pile's, which also tokenises."""

import re
import time

import pytest
from conftest import copy_workflow, snakemake_cmd


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("offline") / "attnbias")


def test_download_rule_offline_fails_at_once_with_one_attempt(copy, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))  # nothing cached
    rule = "maxmargin_download_cifar10"
    start = time.monotonic()
    res = snakemake_cmd(
        "--cores", "1", rule, "--config", "scale=paper", cwd=copy, timeout=120
    )  # fmt: skip
    elapsed = time.monotonic() - start
    assert res.returncode != 0
    out = res.stdout + res.stderr
    log = (copy / "results/logs/download/maxmargin/cifar10.log").read_text()
    assert "DatasetUnavailable" in log and "uoft-cs/cifar10" in log
    assert "Offline mode is on (HF_HUB_OFFLINE" in log and rule in log
    assert out.count("Error in rule download:") == 1, out[-3000:]  # one attempt, no retry
    assert "Trying to restart" not in out
    assert elapsed < 30, f"took {elapsed:.1f} s"
    # the message once, naming the key to set, and no traceback
    assert out.count("Could not load the dataset uoft-cs/cifar10") == 1, out[-3000:]
    assert "set maxmargin.vit.cifar_source to a local directory" in out
    assert "Traceback" not in out


def test_unreachable_hub_fails_once_quickly(copy, tmp_path, monkeypatch):
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: refused at once
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    rule = "fastrates_download_mnist"
    start = time.monotonic()
    res = snakemake_cmd("--cores", "1", rule, "--config", "scale=paper", cwd=copy, timeout=300)
    elapsed = time.monotonic() - start
    assert res.returncode != 0
    log = (copy / "results/logs/download/fastrates/mnist.log").read_text()
    assert "The hub cannot be reached from this machine (http://127.0.0.1:9" in log
    assert "ylecun/mnist" in log and rule in log
    out = res.stdout + res.stderr
    assert out.count("Error in rule download:") == 1, out[-3000:]  # it cannot succeed: no retry
    assert "Trying to restart" not in out and "Traceback" not in out
    message = out[out.index("Could not load the dataset ylecun/mnist") :]
    message = message[: message.index("RuleException")].strip().splitlines()
    assert len(message) == 10, message  # what failed, why, and the three ways on
    assert "set fastrates.fig6.source to a local directory" in "\n".join(message)
    assert elapsed < 30, f"took {elapsed:.1f} s"  # one attempt of a few seconds (was ~110 s)


def test_local_sources_need_no_download_rules_but_the_pile(copy, tmp_path):
    dirs = {}
    for name in ("cifar10", "glue", "civil", "mnist", "bert", "pile", "gpt2", "imnet", "llama"):
        dirs[name] = tmp_path / name
        dirs[name].mkdir()
    cfg = tmp_path / "local.yaml"
    cfg.write_text(
        f"maxmargin: {{vit: {{cifar_source: {dirs['cifar10']}}}}}\n"
        "fastrates:\n"
        f"  fig1: {{source: {dirs['glue']}, model: {dirs['bert']}}}\n"
        f"  fig4: {{source: {dirs['civil']}, model: {dirs['bert']}}}\n"
        f"  fig6: {{source: {dirs['mnist']}}}\n"
        f"  fig7: {{source: {dirs['cifar10']}}}\n"
        "lowrank:\n"
        f"  lm: {{source: {dirs['pile']}, tokenizer: {dirs['gpt2']}}}\n"
        f"  vit: {{source: {dirs['imnet']}}}\n"
        f"  fig4: {{source: {dirs['llama']}}}\n"
        f"  figB: {{source: {dirs['llama']}}}\n"
    )
    args = ("-n", "--cores", "1", "--nolock", "all", "--forceall", "--config", "scale=paper")
    res = snakemake_cmd(*args, "--configfile", cfg, cwd=copy, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    downloads = re.findall(r"^(?:local)?rule download:\n\s+output: ([^,\n]+)", res.stdout, re.M)
    assert downloads == ["results/downloads/lowrank/pile.csv"], downloads
    # a path-like value that is not a directory is an error naming the key
    cfg.write_text("fastrates: {fig6: {source: ./no-such-mnist}}\n")
    res = snakemake_cmd(*args, "--configfile", cfg, cwd=copy, timeout=300)
    assert res.returncode != 0
    assert "fastrates.fig6.source = './no-such-mnist'" in res.stdout + res.stderr
