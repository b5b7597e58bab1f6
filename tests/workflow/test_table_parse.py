"""The Snakefile's run is the one :func:`attnbias.run.load_run` builds by import from the same
settings (Snakemake layers the configuration; load_run layers it the same way): the settings, the
folders, every table entry and every run's params equal, in the default run, under the negative
control, with a seed shift, in the paper preset and with a changed setting.  So the tests and
tools that read the run by import read what the jobs get."""

import dataclasses
import inspect
import json

import pytest
from conftest import copy_workflow, snakemake_cmd

from attnbias.run import load_run
from attnbias.table.registry import point_label

# (after the Snakefile and plain_table's source)
DUMP = """
import json as _json

from attnbias.table.registry import point_label as _label

with open("table.json", "w") as _f:
    _json.dump(
        dict(
            entries=plain_table(TABLE),
            runs={
                f"{p}/{n}/{_label(pt)}/{root}": TABLE.run_params(p, n, pt, root)
                for (p, n), s in TABLE.sweeps.items()
                for pt in s.points
                for root in dict.fromkeys([RUN.results, RUN.uncontrolled])
            },
            shown=TABLE.shown_figures(),
            config=RUN.config,
            given=RUN.given,
            folders=[RUN.results, RUN.uncontrolled],
            robustness=RUN.robustness.figures,
        ),
        _f,
        default=str,
    )
"""


def plain_table(table) -> dict:
    """Every entry of ``table`` as JSON-able values (functions by name)."""

    def plain(x):
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            return {f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
        if isinstance(x, dict):
            return {str(k): plain(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return getattr(x, "__qualname__", x) if callable(x) else x

    kinds = ("figures", "computes", "sweeps", "downloads", "table_files", "stages", "stage_owner")
    return {kind: plain(getattr(table, kind)) for kind in kinds}


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory):
    """A copy of the workflow with ``dump_table.smk``: the Snakefile, then its table to JSON."""
    wf = copy_workflow(tmp_path_factory.mktemp("table_parse") / "wf")
    helper = inspect.getsource(plain_table)
    text = f'include: "Snakefile"\n\n\nimport dataclasses\n\n\n{helper}\n{DUMP}'
    (wf / "dump_table.smk").write_text(text)
    return wf


@pytest.mark.parametrize(
    "config",
    [{}, {"control": "null"}, {"seed": 1}, {"scale": "paper"}, {"maxmargin.fig1.steps": 500}],
    ids=["default", "control", "seed", "paper", "custom"],
)
def test_the_snakefile_builds_the_run_load_run_builds(workflow_copy, config):
    args = [f"{k}={v}" for k, v in config.items() if "." not in k]
    if "maxmargin.fig1.steps" in config:  # a nested --config value, as users pass it
        args.append("maxmargin={fig1: {steps: 500}}")
        config = {"maxmargin": {"fig1": {"steps": 500}}}
    snakemake_cmd(
        "-s", "dump_table.smk", "--list-rules", *(["--config", *args] if args else []),
        cwd=workflow_copy, check=True,
    )  # fmt: skip
    parsed = json.loads((workflow_copy / "table.json").read_text())
    scale = config.pop("scale", None)
    run = load_run(workflow_copy, scale=scale, config=config)
    table = run.table
    runs = {
        f"{p}/{n}/{point_label(pt)}/{root}": table.run_params(p, n, pt, root)
        for (p, n), s in table.sweeps.items()
        for pt in s.points
        for root in dict.fromkeys([table.results, table.uncontrolled])
    }
    mine = json.loads(
        json.dumps(
            dict(
                entries=plain_table(table), runs=runs, shown=table.shown_figures(),
                config=run.config, given=run.given, folders=[run.results, run.uncontrolled],
                robustness=run.robustness.figures,
            ),
            default=str,
        )
    )  # fmt: skip
    for part in ("entries", "runs", "shown", "config", "given", "folders", "robustness"):
        assert mine[part] == parsed[part], part
    assert len(parsed["entries"]["figures"]) >= 20
