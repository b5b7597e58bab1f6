"""Every figure the workflow registers has its two functions: in the figure table (built by import,
as the Snakefile builds it), each figure's plot-ready data groups (what its `check` and `plot`
jobs read as ``input.data``) are exactly the arguments of ``plotting.<paper>.<fig>`` and
``claims.<paper>.<fig>``; and the table of ``tests/unit/test_figure_functions.py`` agrees with it
where it lists a figure (a new figure need not be added there)."""

import importlib.util
import inspect
from pathlib import Path

import pytest

from attnbias.run import load_run
from attnbias.workflow import figure_function

ROOT = Path(__file__).resolve().parents[2]


def _unit_table() -> dict:
    path = Path(__file__).parents[1] / "unit" / "test_figure_functions.py"
    spec = importlib.util.spec_from_file_location("_figure_functions_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FIGURES


@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_figure_table_matches_the_workflow_registry(scale):
    registered = {
        key: [Path(f).stem for f in entry.data if f.endswith(".csv")]
        for key, entry in load_run(ROOT, scale=scale).table.figures.items()
    }
    assert len(registered) >= 41
    for (paper, fig), groups in registered.items():
        for package in ("plotting", "claims"):
            fn = figure_function(package, paper, fig)
            assert list(inspect.signature(fn).parameters) == groups, (package, paper, fig)
    unit = _unit_table()
    assert {k: registered.get(k) for k in unit} == unit
