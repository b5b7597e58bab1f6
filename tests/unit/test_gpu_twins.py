"""Every CUDA test has a CPU twin that runs in CI.

A test marked ``gpu`` is skipped wherever there is no CUDA, which is every CI run: alone, it can
break unseen (issue #35: a CUDA test still called a signature that had changed).  So each one
must be a device-parametrised test (``tests/unit/test_cuda_paths.py``'s ``device`` fixture or a
``device`` parameter) whose ``cuda`` case carries the mark and whose ``cpu`` case, with the same
other parameters, does not.  The test files are those the GPU check (``python -m
attnbias.gpu_check``) runs with ``pytest -m gpu`` (``attnbias.gpu_check.cuda_tests.
gpu_test_files``); their items are collected by pytest itself in a
child process, with the marks pytest applies (module ``pytestmark``, parameter marks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from attnbias.gpu_check.cuda_tests import gpu_test_files, marks_gpu

ROOT = Path(__file__).resolve().parents[2]

# A pytest plugin (-p) that writes the collected items: node id, parameters, the gpu mark.
PLUGIN = '''
import json
import os


def pytest_collection_modifyitems(session, config, items):
    rows = []
    for item in items:
        spec = getattr(item, "callspec", None)
        rows.append(
            {
                "nodeid": item.nodeid,
                "test": item.nodeid.split("[")[0],
                "params": {k: repr(v) for k, v in spec.params.items()} if spec else {},
                "gpu": item.get_closest_marker("gpu") is not None,
            }
        )
    with open(os.environ["GPU_TWINS_OUT"], "w") as f:
        json.dump(rows, f)
'''


def collect(files: list[str], rootdir: Path, tmp: Path) -> list[dict]:
    """The items pytest collects from ``files`` (run in ``rootdir``), with their gpu mark."""
    (tmp / "gpu_twins_plugin.py").write_text(PLUGIN)
    out = tmp / "items.json"
    env = {
        **os.environ,
        "GPU_TWINS_OUT": str(out),
        "PYTHONPATH": os.pathsep.join(
            [str(tmp), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "gpu_twins_plugin",
         "-p", "no:cacheprovider", "-o", "addopts=", *files],
        cwd=rootdir, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0 and out.exists(), res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(out.read_text())


def missing_twins(items: list[dict]) -> list[str]:
    """The gpu-marked items without a CPU twin: an unmarked item of the same test whose
    parameters are the same but ``device``, which is ``'cpu'`` there (``'cuda'`` here)."""
    unmarked = {
        (i["test"], tuple(sorted(i["params"].items()))) for i in items if not i["gpu"]
    }
    missing = []
    for item in items:
        if not item["gpu"]:
            continue
        params = dict(item["params"])
        if params.get("device") != repr("cuda"):
            missing.append(f"{item['nodeid']}: not a device-parametrised test (device='cuda')")
            continue
        params["device"] = repr("cpu")
        if (item["test"], tuple(sorted(params.items()))) not in unmarked:
            missing.append(f"{item['nodeid']}: no unmarked device='cpu' case")
    return missing


def test_every_gpu_test_has_a_cpu_twin(tmp_path):
    files = gpu_test_files()
    assert "tests/unit/test_cuda_paths.py" in files, files
    items = collect(files, ROOT, tmp_path)
    gpu = [i for i in items if i["gpu"]]
    assert len(gpu) >= 14, [i["nodeid"] for i in gpu]  # the CUDA tests are collected as such
    assert missing_twins(items) == []


SYNTHETIC = '''
import pytest

GPU = [pytest.mark.gpu, pytest.mark.skipif(True, reason="needs CUDA")]
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=GPU)]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def test_twinned(device):
    pass


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_twinned_with_dtype(device, dtype):
    pass


@pytest.mark.parametrize("device", [pytest.param("cuda", marks=GPU)])
def test_cuda_only(device):
    pass


@pytest.mark.parametrize(
    "device, dtype",
    [
        ("cpu", "f32"),
        pytest.param("cuda", "f32", marks=GPU),
        pytest.param("cuda", "bf16", marks=GPU),
    ],
)
def test_one_cpu_case_missing(device, dtype):
    pass


@pytest.mark.parametrize("device", ["cpu", "cuda"])  # both unmarked: not a CUDA test
def test_unmarked(device):
    pass
'''

SYNTHETIC_MODULE_MARK = '''
import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(True, reason="needs CUDA")]


def test_on_cuda():
    pass
'''


def test_the_twin_check_reports_each_kind_of_missing_twin(tmp_path):
    """The check on a synthetic test tree: the twinned tests pass, a CUDA-only parameter, a
    parameter combination without its CPU case and a module-wide gpu mark (the form of the old
    CUDA tests) are each reported."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pytest.ini").write_text("[pytest]\nmarkers =\n    gpu: needs CUDA\n")
    (tree / "test_synthetic.py").write_text(textwrap.dedent(SYNTHETIC))
    (tree / "test_module_mark.py").write_text(textwrap.dedent(SYNTHETIC_MODULE_MARK))
    items = collect(["test_synthetic.py", "test_module_mark.py"], tree, tmp_path)
    assert len(items) == 13
    assert sorted(m.split(": ")[0] for m in missing_twins(items)) == [
        "test_module_mark.py::test_on_cuda",
        "test_synthetic.py::test_cuda_only[cuda]",
        "test_synthetic.py::test_one_cpu_case_missing[cuda-bf16]",
    ]
    assert missing_twins([i for i in items if "test_synthetic.py::test_twinned" in i["test"]]) == []


def test_the_gpu_test_files_are_those_that_mark_a_test_in_code():
    """``gpu_test_files`` (what this test and the GPU check's ``pytest_gpu`` part collect) finds
    the mark applied in code, in either spelling, and not the mark named in a string (as in this
    file)."""
    assert marks_gpu("import pytest\n\n@pytest.mark.gpu\ndef test_a():\n    pass\n")
    assert marks_gpu("from pytest import mark\n\nGPU = [mark.gpu]\n")
    assert not marks_gpu('COMMAND = "pytest -m gpu"  # pytest.mark.gpu\nX = "mark.gpu"\n')
    assert not marks_gpu("import pytest\n\n@pytest.mark.slow\ndef test_a():\n    pass\n")
    files = gpu_test_files()
    assert {"tests/unit/test_cuda_paths.py", "tests/unit/test_gpu_check.py"} <= set(files)
    assert "tests/unit/test_gpu_twins.py" not in files
