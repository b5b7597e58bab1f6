"""The workflow linters CI runs after the tests (.ci/run), run here too, so that a local
`pytest` fails where CI would: snakefmt's format check of the rule files and ruff."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _tool(name):
    path = BIN / name
    if not path.exists():
        found = shutil.which(name)
        if found is None:
            pytest.fail(f"{name} is not installed: it is pinned in pyproject's dev extra")
        path = Path(found)
    return str(path)


def test_rule_files_are_formatted_by_snakefmt():
    proc = subprocess.run(
        [_tool("snakefmt"), "--check", "Snakefile", "workflow/"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, (
        "snakefmt would reformat a rule file; run `snakefmt Snakefile workflow/`\n" + proc.stderr
    )


def test_python_passes_ruff():
    proc = subprocess.run(
        [_tool("ruff"), "check", "src", "tests", "scripts", "benchmarks"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
