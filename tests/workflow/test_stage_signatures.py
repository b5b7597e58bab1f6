"""Every staged synthetic group's functions take exactly the settings the workflow gives them.

The rules `instance`, `svm` and `compute` call the functions of each staged group (the tables
``STAGES``, ``STAGE_OWNER`` and ``COMPUTES`` of the workflow) with keyword arguments:
``instance_<group>`` its data settings, ``svm_<group>`` the instance and its SVM settings,
``trajectories_<group>`` the instance, the SVM stage (None without one) and all the group's
settings (scripts/compute.py).  A schema key a function does not take, or a parameter the workflow
never gives, fails here instead of in a job.  The tables are read from the parsed workflow itself
(a Snakefile in a copy that includes the real one and dumps them), for both presets.
"""

import inspect
import json

import pytest
from conftest import copy_workflow, snakemake_cmd

from attnbias.workflow import resolve

DUMP = """include: "Snakefile"


import json as _json

_keys = lambda entry: entry and dict(func=entry["func"], settings=sorted(entry["settings"]))
with open(f"stage_tables_{SCALE}.json", "w") as _f:
    _json.dump(
        [
            dict(
                group=f"{paper}/{group}",
                instance=_keys(STAGES.get((paper, group), {}).get("instance")),
                svm=_keys(STAGES.get((paper, group), {}).get("svm")),
                trajectories=_keys(COMPUTES[(paper, group)]),
            )
            for (paper, group) in STAGE_OWNER
        ],
        _f,
    )
"""


@pytest.fixture(scope="module")
def wf(tmp_path_factory):
    d = copy_workflow(tmp_path_factory.mktemp("signatures") / "wf")
    (d / "dump_tables.smk").write_text(DUMP)
    return d


def stage_table(wf, preset: str) -> list[dict]:
    res = snakemake_cmd(
        "-s", "dump_tables.smk", "--list-rules", "--config", f"scale={preset}", cwd=wf, check=True
    )  # fmt: skip
    assert "instance" in res.stdout.split()  # the rules were parsed
    return json.loads((wf / f"stage_tables_{preset}.json").read_text())


def parameters(name: str) -> list[str]:
    """The keyword parameters of attnbias.experiments.<name>; no ``*args``/``**kwargs``."""
    params = inspect.signature(resolve("attnbias.experiments", name)).parameters.values()
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD or p.kind is p.KEYWORD_ONLY for p in params), name
    return [p.name for p in params]


def mismatch(name: str, given: list[str]) -> str | None:
    """None when ``name`` takes exactly ``given``; else what differs."""
    takes = parameters(name)
    if sorted(takes) == sorted(given):
        return None
    return (
        f"{name}: not taken {sorted(set(given) - set(takes))}, "
        f"never given {sorted(set(takes) - set(given))}"
    )


@pytest.mark.parametrize("preset", ["quick", "paper"])
def test_stage_functions_take_exactly_the_settings_the_workflow_gives(wf, preset):
    """Every staged group's trajectories; the instance and SVM functions of every group that owns
    its stage files (a group sharing another's, ``data_of``, runs none of its own)."""
    table = stage_table(wf, preset)
    groups = {e["group"] for e in table}
    assert {"maxmargin/fig1", "fastrates/fig2", *(f"nucnorm/p{k}" for k in range(1, 6))} <= groups
    assert len(table) >= 16, sorted(groups)
    problems = []
    for e in table:
        calls = [(e["trajectories"]["func"], ["instance", "svm", *e["trajectories"]["settings"]])]
        if e["instance"] is not None:
            calls.append((e["instance"]["func"], e["instance"]["settings"]))
        if e["svm"] is not None:
            calls.append((e["svm"]["func"], ["instance", *e["svm"]["settings"]]))
        problems += [m for func, given in calls if (m := mismatch(func, given))]
    assert not problems, "\n".join(problems)


def test_a_key_the_function_does_not_take_is_reported():
    """The check itself: a setting too many and a parameter never given are both named."""
    name = "nucnorm.full.instance_p1"
    given = [k for k in parameters(name) if k != "lr"] + ["steps"]
    assert mismatch(name, given) == f"{name}: not taken ['steps'], never given ['lr']"
    assert mismatch(name, parameters(name)) is None


def test_a_stage_parameter_that_is_no_setting_stops_the_parse_naming_it(tmp_path):
    """The settings of the instance and svm stages are read from their functions' signatures; a
    parameter the group's settings do not have is named when the workflow is parsed."""
    wf = copy_workflow(tmp_path / "wf")
    module = wf / "src" / "attnbias" / "experiments" / "nucnorm" / "full.py"
    text = module.read_text()
    assert "def instance_p1(\n    instances: list," in text
    module.write_text(text.replace("def instance_p1(\n", "def instance_p1(\n    margin_tol,\n", 1))
    res = snakemake_cmd("-n", "nucnorm_p1", cwd=wf)
    assert res.returncode != 0
    expected = "nucnorm.full.instance_p1 takes ['margin_tol'], which are not settings of nucnorm.p1"
    assert expected in res.stdout + res.stderr, res.stderr[-3000:]
