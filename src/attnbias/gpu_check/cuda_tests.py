"""The ``pytest_gpu`` part: the repository's CUDA tests (``pytest -m gpu``), counted from pytest's
JUnit report.  :func:`gpu_test_files` is also what tests/unit/test_gpu_twins.py reads: every test
found there needs its CPU twin."""

from __future__ import annotations

import ast
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from attnbias.gpu_check.preset import ROOT


def marks_gpu(source: str) -> bool:
    """Whether Python ``source`` applies the ``gpu`` mark in its code (``pytest.mark.gpu`` or
    ``mark.gpu``), not merely in a string or a comment."""
    if "mark.gpu" not in source:
        return False
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True  # pytest reports the error
    return any(
        isinstance(n, ast.Attribute)
        and n.attr == "gpu"
        and (
            (isinstance(n.value, ast.Attribute) and n.value.attr == "mark")
            or (isinstance(n.value, ast.Name) and n.value.id == "mark")
        )
        for n in ast.walk(tree)
    )


def gpu_test_files() -> list[str]:
    """The test files that hold CUDA tests (``pytest.mark.gpu``), relative to the repository."""
    return sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("test_*.py")
        if marks_gpu(p.read_text(errors="replace"))
    )


def part_pytest(cpu: bool, device, workdir: Path) -> dict:
    """``pytest -m gpu`` over the files that hold CUDA tests; counts from its JUnit XML."""
    files = gpu_test_files()
    if not files:
        return {"_failure": "no test file marks a test with pytest.mark.gpu"}
    xml = workdir / "junit.xml"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-m",
        "gpu",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=-ra",
        f"--junitxml={xml}",
        *files,
    ]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    print(res.stdout[-20000:], res.stderr[-5000:], sep="\n")
    if not xml.exists():
        return {"_failure": f"pytest wrote no report (exit {res.returncode}): {res.stderr[-500:]}"}
    suite = ET.parse(xml).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    bad = [
        f"{c.get('classname')}.{c.get('name')}"
        for c in suite.iter("testcase")
        if c.find("failure") is not None or c.find("error") is not None
    ]
    out = {
        "collected": counts["tests"],
        "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
        "failed": counts["failures"],
        "errors": counts["errors"],
        "skipped": counts["skipped"],
        "failed_tests": bad,
        "files": files,
        "pytest_seconds": float(suite.get("time", "nan")),
    }
    if bad:
        out["_failure"] = f"{len(bad)} CUDA test(s) failed: {', '.join(bad)[:1500]}"
    elif not cpu and out["passed"] == 0:
        out["_failure"] = "no CUDA test ran on a CUDA machine"
    return out
