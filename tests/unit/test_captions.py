"""Report captions (``workflow/report/*.rst``): short, valid reStructuredText, and free of measured
values.

A caption says what is drawn, which data each preset uses, which claims are checked, the departures
from the paper's settings and what the negative control removes.  Measured values come only from
the claim files: the plot rule appends them (``render_caption``), so a number copied into a caption
goes stale at the next run that changes it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

docutils_core = pytest.importorskip("docutils.core")
jinja2 = pytest.importorskip("jinja2")
from docutils import nodes  # noqa: E402

from attnbias.claims.caption import render_caption  # noqa: E402

REPORT = Path(__file__).resolve().parents[2] / "workflow" / "report"
CAPTIONS = sorted(REPORT.glob("*.rst"))
# not figure captions: the report's front page and the summary table's caption
NOT_FIGURES = {"workflow.rst", "claims_summary.rst"}
# the one caption file of the written-once plot rule: it shows the figure's rendered caption
# (the plot job's ``report_caption`` param), so each figure caption is checked through it
WRAPPER = REPORT / "figure.rst"
FIGURES = [p for p in CAPTIONS if p.name not in NOT_FIGURES and p != WRAPPER]
MAX_WORDS = 4000

# What snakemake appends to every caption before rendering it with Jinja (its ``rst_links``,
# without the per-category / per-file loops, which need a finished run).
RST_LINKS = """

.. _Workflow: javascript:show_panel('workflow')
.. _Statistics: javascript:show_panel('statistics')
"""


class _FakeSnakemake:
    config = {"scale": "quick", "seed": 0, "control": "none"}


def _claims_doc(control: str = "none") -> dict:
    """A small claims document whose statements carry the reST markup characters a real one can
    (``|``, ``*``, backquotes), so the appended verdicts are exercised too."""
    claims = [
        ("ratio_drop", "paper", "rank ratio |λ=3| / |λ=0| * 2 `eff`", 0.42, "<= 0.5", True),
        ("trend", "paper", "Spearman ρ(epoch, ζ) with |ρ| > 0.5", -0.497, "< -0.5", False),
        ("finite", "sanity", "every value finite", True, "all finite", True),
        ("bound", "identity", "y <= x for every head", [0.9, 0.8], "<= 1", True),
    ]
    keys = ("id", "kind", "statement", "value", "threshold", "passed")
    return {
        "paper": "p",
        "figure": "f",
        "preset": "quick",
        "control": control,
        "claims": [dict(zip(keys, c, strict=True)) for c in claims],
    }


def _jinja(text: str, rendered: Path | None = None, note: Path | None = None) -> str:
    """Render like snakemake's report (trim_blocks, lstrip_blocks), but strict: an undefined name
    in a caption is an error here rather than an empty string in the report.  ``rendered``: the
    plot job's rendered caption, which the wrapper ``figure.rst`` reads; ``note``: the figure's
    robustness note (absent unless ``snakemake robustness`` ran)."""
    note = note or Path("/nonexistent/robustness-note.rst")

    class job(_FakeSnakemake):
        params = type("params", (), {"report_caption": rendered, "robustness_note": note})

    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined)
    return env.from_string(text + RST_LINKS).render(snakemake=job, categories={}, files=[])


def _system_messages(text: str) -> list[str]:
    """Docutils messages of level ≥ 2 (warning) in the parsed caption: what the HTML report shows
    in a "Docutils System Messages" box.  report_level must be at most 2 for the messages to be
    kept in the tree (at report_level 5 only the ``problematic`` node would remain)."""
    doc = docutils_core.publish_doctree(
        text, settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": False}
    )
    msgs = [
        f"level {m['level']} line {m.get('line')}: {m.astext()[:200]}"
        for m in doc.findall(nodes.system_message)
        if m["level"] >= 2
    ]
    msgs += [f"problematic markup: {p.astext()!r}" for p in doc.findall(nodes.problematic)]
    return msgs


def _rendered(path: Path, tmp_path: Path, control: str = "none") -> str:
    """The caption as the report shows it: the plot rule's ``render_caption`` for a figure (the
    static caption + preset + verdicts), then snakemake's Jinja pass."""
    if path.name in NOT_FIGURES:
        return _jinja(path.read_text())
    out = tmp_path / f"{path.stem}.{control}.rst"
    render_caption(path, _claims_doc(control), {}, out)
    return _jinja(WRAPPER.read_text(), rendered=out)


def test_captions_exist():
    assert len(FIGURES) >= 40, [p.name for p in CAPTIONS]
    assert NOT_FIGURES <= {p.name for p in CAPTIONS}


def _words(text: str) -> int:
    return len(text.split())  # what ``wc -w`` counts


def test_total_words():
    total = sum(_words(p.read_text()) for p in CAPTIONS)
    biggest = sorted(((_words(p.read_text()), p.name) for p in CAPTIONS), reverse=True)[:5]
    assert total <= MAX_WORDS, f"{total} words in workflow/report/*.rst; largest: {biggest}"


@pytest.mark.parametrize("control", ["none", "null"])
@pytest.mark.parametrize("path", [p for p in CAPTIONS if p != WRAPPER], ids=lambda p: p.stem)
def test_caption_renders_without_system_messages(path, control, tmp_path):
    if control == "null" and path.name in NOT_FIGURES:
        pytest.skip("no control paragraph outside figure captions")
    msgs = _system_messages(_rendered(path, tmp_path, control))
    assert not msgs, f"{path.name}: docutils system messages:\n" + "\n".join(msgs)


def test_a_figure_caption_shows_its_robustness_note(tmp_path):
    """Once `snakemake robustness` ran, a figure's report caption ends with its note
    (attnbias.claims.robustness.figure_notes): rendered without docutils messages."""
    import pandas as pd

    from attnbias.claims.robustness import figure_notes

    table = pd.DataFrame(
        [("fastrates", "fig4", "paper", "auc_sngd", "fragile", 3, 5, "1 4", "inconclusive",
          "9/15 hold, 11 needed", "0:passed 1:inconclusive 2:passed 3:passed 4:inconclusive"),
         ("fastrates", "fig4", "paper", "auc_sps", "fails", 0, 5, "0 1 2 3 4", "failed",
          "0/15 hold, 11 needed", "0:failed 1:failed 2:failed 3:failed 4:failed"),
         ("fastrates", "fig4", "paper", "final_sngd", "holds", 5, 5, "", "passed",
          "15/15 hold, 11 needed", "0:passed 1:passed 2:passed 3:passed 4:passed")],
        columns=["paper", "figure", "kind", "claim", "status", "passed", "seeds", "failed_on",
                 "pooled", "pooled_seeds", "verdicts"],
    )  # fmt: skip
    note = tmp_path / "fig4.rst"
    note.write_text(figure_notes(table, [0, 1, 2, 3, 4])[("fastrates", "fig4")])
    out = tmp_path / "fastrates_fig4.rst"
    render_caption(REPORT / "fastrates_fig4.rst", _claims_doc("none"), {}, out)
    text = _jinja(WRAPPER.read_text(), rendered=out, note=note)
    assert "1/3 paper claims hold, 1 fail, 1 inconclusive; 1/3 hold on every draw" in text
    assert "``auc_sngd`` (paper) changes verdict between draws" in text
    assert "pooled inconclusive (9/15 hold, 11 needed)" in text
    assert "Fail on every draw: ``auc_sps``" in text
    assert not _system_messages(text)
    assert "Over the draws" not in _rendered(REPORT / "fastrates_fig4.rst", tmp_path)  # none yet


def test_system_message_check_can_fail():
    """The check above sees a stray substitution reference (the old Fig 7 caption's ``|ρ|``)."""
    assert _system_messages("a trend beyond noise, |ρ| > 0.5\n")
    assert not _system_messages("a trend beyond noise, \\|ρ\\| > 0.5\n")


# --- measured values ------------------------------------------------------------------------------
# A run's outputs are real numbers printed to a few digits (ratios, losses, accuracies,
# correlations); settings are round (η = 0.05, λ ∈ {0, 0.3, 3}, thresholds 0.5, 0.9, 10⁻²).  Two
# heuristics, each of which the old captions failed many times:
#  1. a decimal with three or more significant digits ("0.436", "0.9853", "38.0") is a measurement
#     unless it is a setting listed in SETTINGS below (a grid value that is not round);
#  2. the word "measured" followed, in the same sentence, by a digit ("Measured on the quick
#     preset: ... 0.37") introduces measured values.
# Two-digit measurements outside such a sentence can slip through; the review catches those.
SETTINGS = {
    "1.35",  # fastrates Figs 1/4: quick AdamW lr grid, factor-3 steps (4.5e-4, 1.35e-3, 4.05e-3)
    "4.05",
}
_DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")
# a sentence ends at a full stop followed by white space (not at a decimal point)
_MEASURED = re.compile(r"\bmeasured\b(?:[^.]|\.(?=\S))*?\d", re.IGNORECASE)


def _significant_digits(number: str) -> int:
    return len(number.replace(".", "").lstrip("0"))


def measured_values(text: str) -> list[str]:
    """Suspected measured values in a caption's text (see the heuristics above)."""
    found = [n for n in _DECIMAL.findall(text) if _significant_digits(n) >= 3 and n not in SETTINGS]
    found += [m.group(0) for m in _MEASURED.finditer(text)]
    return found


def test_measured_value_heuristic():
    # sentences of the old captions
    assert measured_values("held-out 0.436, training 0.435 after 30 epochs")
    assert measured_values("W_K^{hT}W_Q^h 0.9833 → 0.9853 (a small rise, but a rise)")
    assert measured_values("Measured on the quick preset (1,800 steps): every λ solved")
    assert measured_values("ζ(30)/ζ(15) = 38.0/46.6 = 0.816")
    # settings
    assert not measured_values("η = 0.05, λ ∈ {0, 0.15, 0.45, 0.95}, thresholds 10⁻² and 0.5")
    assert not measured_values("AdamW lr {4.5·10⁻⁴, 1.35·10⁻³, 4.05·10⁻³}; D = diag(0.2, 0.4)")
    assert not measured_values("the measured values are appended below from the claim file.")


@pytest.mark.parametrize("path", CAPTIONS, ids=lambda p: p.stem)
def test_no_measured_values(path):
    found = measured_values(path.read_text())
    assert not found, (
        f"{path.name} carries what looks like measured values {found}: they belong in the claim "
        "file (the report appends its verdicts); a setting that is not round goes in SETTINGS"
    )
