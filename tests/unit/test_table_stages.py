"""The staged synthetic groups of the figure table (attnbias.table.stages), read by import.

The rules `instance`, `svm` and `compute` call each group's functions with keyword arguments:
``instance_<source>`` its data settings, ``svm_<source>`` the instance and its SVM settings,
``trajectories_<group>`` the instance, the SVM solution (None without an SVM stage) and every
setting of the group (scripts/compute.py).  A schema key a function does not take, or a parameter
never given, fails here instead of in a job, in both presets.
"""

import inspect

import pytest
from conftest import ROOT

from attnbias.table.stages import STAGED_GROUPS, StagedGroup, stage_settings, staged_group
from attnbias.workflow import load_config, resolve


@pytest.fixture(scope="module", params=["quick", "paper"])
def config(request):
    return load_config(ROOT, scale=request.param)


def parameters(name: str) -> list[str]:
    """The keyword parameters of attnbias.experiments.<name>; no ``*args``/``**kwargs``."""
    params = inspect.signature(resolve("attnbias.experiments", name)).parameters.values()
    assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params), name
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


def test_the_table_lists_every_staged_group_once():
    keys = [(g.paper, g.group) for g in STAGED_GROUPS]
    assert len(keys) == len(set(keys)) == 18
    assert {p for p, _ in keys} == {"maxmargin", "fastrates", "nucnorm"}
    figures = [(g.paper, f) for g in STAGED_GROUPS for f in g.figures]
    assert len(figures) == len(set(figures))  # a figure is drawn from one group
    for i, g in enumerate(STAGED_GROUPS):  # a group's data_of is listed before it
        if g.data_of:
            assert (g.paper, g.data_of) in keys[:i], g


def test_every_stage_function_takes_exactly_the_settings_it_is_given(config):
    problems = []
    for g in STAGED_GROUPS:
        settings = config[g.paper][g.group]
        data, svm = stage_settings(g, settings)
        calls = [(g.trajectories_func, ["instance", "svm", *settings]),
                 (g.instance_func, list(data))]  # fmt: skip
        if svm is not None:
            calls.append((g.svm_func, ["instance", *svm]))
        problems += [m for func, given in calls if (m := mismatch(func, given))]
    assert not problems, "\n".join(problems)


def test_settings_split_by_signature(config):
    """A GD setting belongs to the trajectories only; a data setting to the instance."""
    fig2 = staged_group("fastrates", "fig2")
    data, svm = stage_settings(fig2, config["fastrates"]["fig2"])
    assert list(data) == ["n", "T", "d", "sigma", "seeds"] and svm == {}
    fig4 = staged_group("maxmargin", "fig4")
    assert stage_settings(fig4, config["maxmargin"]["fig4"]) == ({}, None)  # no SVM stage
    fig8 = staged_group("fastrates", "fig8")
    assert fig8.instance_func == "fastrates.problems.instance_fig2"  # drawn as Fig 2's data
    assert fig8.trajectories_func == "fastrates.synthetic.trajectories_fig8"


def test_the_check_names_what_differs():
    name = "nucnorm.full.instance_p1"
    given = [k for k in parameters(name) if k != "lr"] + ["steps"]
    assert mismatch(name, given) == f"{name}: not taken ['steps'], never given ['lr']"
    assert mismatch(name, parameters(name)) is None


def test_a_stage_parameter_that_is_no_setting_is_named(tmp_path):
    module = tmp_path / "src" / "attnbias" / "experiments" / "toy.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "def instance_g(n, margin_tol):\n    pass\n\n\ndef svm_g(instance, n):\n    pass\n"
    )
    g = StagedGroup("maxmargin", "g", ("g",), family="toy")
    with pytest.raises(ValueError, match=r"toy.instance_g takes \['margin_tol'\], which are not"):
        stage_settings(g, {"n": 1}, tmp_path)
    with pytest.raises(ValueError, match=r"both take \['n'\]"):
        stage_settings(g, {"n": 1, "margin_tol": 0.1}, tmp_path)
    with pytest.raises(ValueError, match="no function toy.instance_h"):
        stage_settings(StagedGroup("maxmargin", "h", ("h",), family="toy"), {}, tmp_path)


def test_an_unknown_group_is_named():
    with pytest.raises(KeyError, match="maxmargin fig6 is no staged group"):
        staged_group("maxmargin", "fig6")
