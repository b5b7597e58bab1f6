"""Every figure the workflow registers has its two functions: in a dry run of ``all``, each job of
the claim rule ``check`` reads data groups that are exactly the arguments of
``plotting.<paper>.<fig>`` and ``claims.<paper>.<fig>`` (the plot rule reads the same
``input.data``); and the table of ``tests/unit/test_figure_functions.py`` agrees with it where it
lists a figure (a new figure need not be added there)."""

import importlib.util
import inspect
import re
from pathlib import Path

from conftest import snakemake_cmd

from attnbias.workflow import figure_function


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
    assert len(registered) >= 41
    for (paper, fig), groups in registered.items():
        for package in ("plotting", "claims"):
            fn = figure_function(package, paper, fig)
            assert list(inspect.signature(fn).parameters) == groups, (package, paper, fig)
    unit = _unit_table()
    assert {k: registered.get(k) for k in unit} == unit
