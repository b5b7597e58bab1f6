"""Shared test fixtures: offline Hugging Face settings and paths."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

# Never touch the network from tests: the hub is unreachable in CI.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(autouse=True, scope="session")
def _hf_home(tmp_path_factory):
    os.environ["HF_HOME"] = str(tmp_path_factory.mktemp("hf_home"))


def snakemake_cmd(*args, cwd=ROOT, timeout=600, check=False):
    """Run the venv's snakemake CLI (the Python API was removed in Snakemake 8)."""
    cmd = [str(BIN / "snakemake"), *map(str, args)]
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stdout[-4000:]}\n{res.stderr[-8000:]}")
    return res


def ci_configfiles(root=ROOT):
    """tests/config/ci.yaml followed by every per-paper ci_<paper>.yaml."""
    cfg = root / "tests" / "config"
    return [cfg / "ci.yaml", *sorted(cfg.glob("ci_*.yaml"))]


def copy_workflow(dest: Path) -> Path:
    """Copy the workflow sources (no results, venv or Snakemake state) into ``dest``."""
    ignore = shutil.ignore_patterns(".venv", "venv", "results", ".snakemake", ".git", "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache")
    shutil.copytree(ROOT, dest, ignore=ignore, dirs_exist_ok=True)
    return dest
