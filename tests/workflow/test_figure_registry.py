"""The figure table of ``tests/unit/test_figure_functions.py`` is the workflow's: every job of
the claim rule ``check`` in a dry run of ``all`` reads exactly the data groups listed there (the
plot rule reads the same ``input.data``), so every registered figure has its two functions."""

import importlib.util
import re
from pathlib import Path

from conftest import snakemake_cmd


def _unit_table() -> dict:
    path = Path(__file__).parents[1] / "unit" / "test_figure_functions.py"
    spec = importlib.util.spec_from_file_location("_figure_functions_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FIGURES


def test_figure_table_matches_the_workflow_registry():
    res = snakemake_cmd("-n", "--forceall", "--nolock", "--cores", "1", "all", check=True)
    jobs = re.finditer(
        r"^rule check:\n\s+input: (.*)\n\s+output: results/claims/(\w+)/(\w+)\.json$",
        res.stdout,
        re.M,
    )
    registered = {
        (m[2], m[3]): [Path(f).stem for f in m[1].split(", ") if f.endswith(".csv")]
        for m in jobs
    }
    assert len(registered) == 41
    assert registered == _unit_table()
