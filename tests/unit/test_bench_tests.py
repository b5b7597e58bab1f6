"""benchmarks/bench_tests.py reads pytest's ``--durations`` lines into per-layer and per-file
sums (the suite's creep guard, docs/performance.md "The test suite")."""

import importlib.util

import pytest
from conftest import ROOT

_spec = importlib.util.spec_from_file_location("bench_tests", ROOT / "benchmarks/bench_tests.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

OUTPUT = """\
============================= slowest durations ==============================
1132.76s setup    tests/integration/test_end_to_end.py::test_every_claim_passes
309.24s call     tests/integration/test_end_to_end.py::test_negative_control_fails
474.99s call     tests/workflow/test_schema_minimums.py::test_every_figure_runs
0.50s call     tests/unit/test_lock.py::test_every_locked_package_is_hashed
0.25s teardown tests/unit/test_lock.py::test_every_locked_package_is_hashed
====== 2 failed, 1588 passed, 17 skipped, 1 warning in 1893.59s (0:31:33) ======
"""


def test_phases_layers_and_files_are_summed():
    rows = bench.phases(OUTPUT)
    assert len(rows) == 5 and rows[0] == (1132.76, "setup", rows[0][2])
    assert [bench.layer_of(n) for _, _, n in rows] == [
        "integration", "integration", "workflow", "unit", "unit"]  # fmt: skip
    text = bench.report(OUTPUT, top=2)
    assert "worker-seconds in all: 1,918; pytest's wall time: 1,894 s" in text
    assert "| integration | 1,442 | 75% |" in text and "| unit | 1 | 0% |" in text
    assert "| `tests/integration/test_end_to_end.py` | 1,442 |" in text
    # the slowest phases, longest first, cut at --top
    slow = text.split("slowest phases:")[1]
    assert slow.index("1,132.8 | setup") < slow.index("475.0 | call") and "309.2" not in slow


def test_an_output_without_durations_is_refused():
    with pytest.raises(SystemExit, match="--durations=0"):
        bench.report("== 3 passed in 1.0s ==")
