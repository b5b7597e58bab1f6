"""One figure, one function: ``attnbias.plotting.<paper>.<fig>`` and
``attnbias.claims.<paper>.<fig>`` exist for every registered figure and take its data groups (the
stems of its plot-ready CSVs) as named arguments; the plot and claim rules find them by name
(``attnbias.workflow.call_figure``).

``FIGURES`` is checked against the workflow's own registry in
``tests/workflow/test_figure_registry.py`` (a dry run), so it cannot drift from the rules; that
test also checks the figures it does not list (a new figure need not be added here)."""

import importlib
import inspect

import pandas as pd
import pytest

from attnbias.workflow import call_figure, figure_function

# (paper, figure) -> the data groups its plot and claim rules read, in the rule's order
FIGURES = {
    **{("maxmargin", f): ["fig1"] for f in ("fig1a", "fig1b", "fig1c")},
    ("maxmargin", "fig2"): ["fig2"],
    **{("maxmargin", f): ["fig3"] for f in ("fig3a", "fig3b", "fig3c")},
    **{("maxmargin", f): ["fig4"] for f in ("fig4a", "fig4b")},
    **{("maxmargin", f): [f] for f in ("fig5", "fig6", "fig7", "fig8")},
    **{("maxmargin", f): ["fig9"] for f in ("fig9a", "fig9b", "fig10")},
    **{("fastrates", f): [f] for f in "fig1 fig2 fig3 fig4 fig5 fig6 fig7 fig8 fig9 fig10".split()},
    ("fastrates", "table1"): ["fig2"],
    **{("nucnorm", f): [f] for f in ("p1", "p2", "p3", "p4", "p5")},
    **{("lowrank", f): [f] for f in ("fig1", "figA", "figL", "fig2", "table1", "fig4", "figB")},
    ("lowrank", "fig3"): ["fig3_lm", "fig3_vit"],
    ("lowrank", "figC"): ["fig3_lm"],
}
PACKAGES = ("plotting", "claims")


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("paper,fig", list(FIGURES), ids=[f"{p}/{f}" for p, f in FIGURES])
def test_every_figure_has_its_function_with_the_data_groups_as_arguments(package, paper, fig):
    fn = getattr(importlib.import_module(f"attnbias.{package}.{paper}"), fig)
    assert list(inspect.signature(fn).parameters) == FIGURES[(paper, fig)]
    assert fn.__doc__ and fn.__doc__.strip(), f"{package}.{paper}.{fig} has no docstring"


@pytest.mark.parametrize("package", PACKAGES)
@pytest.mark.parametrize("paper", ["maxmargin", "fastrates", "nucnorm", "lowrank"])
def test_no_dispatcher_left(package, paper):
    module = importlib.import_module(f"attnbias.{package}.{paper}")
    assert not hasattr(module, "plot") and not hasattr(module, "check")


def test_a_missing_function_is_a_clear_error():
    with pytest.raises(LookupError, match=r"maxmargin fig4c: no function attnbias\.claims\."):
        figure_function("claims", "maxmargin", "fig4c")


def test_a_missing_or_extra_group_is_a_clear_error():
    data = (pd.DataFrame(), {})
    expected = r"lowrank fig3: .*\['fig3_lm', 'fig3_vit'\].*missing: \['fig3_vit'\].*extra: \[\]"
    with pytest.raises(TypeError, match=expected):
        call_figure("claims", "lowrank", "fig3", {"fig3_lm": data})
    with pytest.raises(TypeError, match=r"maxmargin fig1a: .*\['fig1'\].*extra: \['fig2'\]"):
        call_figure("plotting", "maxmargin", "fig1a", {"fig1": data, "fig2": data})


def test_call_figure_passes_the_groups_by_name(monkeypatch):
    import attnbias.claims.lowrank as lowrank

    seen = {}

    def fig3(fig3_lm, fig3_vit):
        seen.update(lm=fig3_lm, vit=fig3_vit)

    monkeypatch.setattr(lowrank, "fig3", fig3)
    call_figure("claims", "lowrank", "fig3", {"fig3_vit": "V", "fig3_lm": "L"})
    assert seen == {"lm": "L", "vit": "V"}
