"""A figure's report caption, and how every page of the report writes claims' numbers.

The caption (:func:`render_caption`) says each thing once: what is drawn and what it checks (the
figure's static caption), what is claimed (the paper claims' ids), the tally of verdicts and one
line per claim that did not pass (failed, inconclusive or void, and the failed checks) with
its statement and reason; every claim with its measured value is on the claims page
(:func:`attnbias.claims.summary_html.summary_html`).  The plot rule writes it beside the figure
(``scripts/plot.py``); the verdicts come from :func:`attnbias.claims.core.verdicts`, so a caption
counts passed / failed / void exactly as the claims summary and the landing page do.

Numbers a reader sees (:func:`short_value`, :func:`short_number`, :func:`shorten_numbers`) are
written to 4 significant digits, with more where 4 would put a value on the other side of its
threshold (0.99899 against "> 0.999" is 0.99899, not 0.999); the CSV files keep full precision.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from ..io import short_number as _short_number
from .core import failed_regime, failed_sanity, is_not_measurable, reason, verdicts, void_causes

DIGITS = 4  # significant digits of a number on a page (the CSV files keep full precision)


def short_number(v: float, against: float | None = None, digits: int = DIGITS) -> str:
    """:func:`attnbias.io.short_number` at this page's :data:`DIGITS`."""
    return _short_number(v, against, digits)

# a threshold that is one comparison with a number: "> 0.999", "<= 0.5", "≥ 1e-3"
_NUMBER = r"[-+−]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_THRESHOLD = re.compile(rf"^\s*(>=|<=|>|<|≥|≤|==)\s*({_NUMBER})\s*$")
# a decimal number inside a text (not part of a word or of a longer number)
_DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d+(?:[eE][-+]?\d+)?)(?![\w.])")


def threshold_number(threshold) -> float | None:
    """The number of a threshold that is one comparison ("> 0.999" → 0.999), else None."""
    m = _THRESHOLD.match(str(threshold))
    return float(m.group(2).replace("−", "-")) if m else None


def short_value(value, threshold=None) -> str:
    """A claim's value as a page shows it: numbers to :data:`DIGITS` significant digits (a scalar
    kept on its side of ``threshold``, :func:`short_number`), lists to their first six items and
    mappings to their first four."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return short_number(value, threshold_number(threshold))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        items = [f"{k}: {short_value(v)}" for k, v in list(value.items())[:4]]
        return "{" + ", ".join(items) + (", …}" if len(value) > 4 else "}")
    if isinstance(value, (list, tuple)):
        items = [short_value(v) for v in value[:6]]
        return "[" + ", ".join(items) + (", …]" if len(value) > 6 else "]")
    return shorten_numbers(str(value))


def shorten_numbers(text: str) -> str:
    """A text with its long decimals (7 significant digits or more: "0.09900990099009901") written
    to :data:`DIGITS`; the short ones a threshold or a setting is made of ("0.999", "1e-06",
    "0.0001") are left as they are."""

    def short(m: re.Match) -> str:
        digits = m.group(1).split("e")[0].split("E")[0].replace(".", "").lstrip("0")
        return f"{float(m.group(1)):.{DIGITS}g}" if len(digits) >= 7 else m.group(1)

    return _DECIMAL.sub(short, str(text))


def parse_value(text: str):
    """A value as a CSV of claims stores it (JSON, or a word such as "nan") back as a value."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        try:
            return float(text)
        except (TypeError, ValueError):
            return text


def informative(claim: dict, why: str) -> bool:
    """Whether a claim's reason says more than its value and threshold do (its seeds, its own
    words): "meets > 0.999 with +1" says nothing a line with the value and the threshold does
    not."""
    threshold = str(claim.get("threshold"))
    plain = ("meets " + threshold, "misses " + threshold, "holds", "does not hold")
    return not why.startswith(plain)


# Superscripts that Unicode has (no superscript q, no Greek but a few): a TeX superscript made only
# of these is written with them; any other is left as it is (and shows, so it gets noticed).
_SUP = dict(zip(
    "0123456789+-−=()abcdefghijklmnoprstuvwxyzTHK",
    "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᵀᴴᴷ",
    strict=True,
))
# ``^{…}``, or unbraced: a number, a lower-case word (``p^mm``) or one capital (``A^T``)
_TEX_SUP = re.compile(r"\^(?:\{([^{}]+)\}|([-−+]?[0-9]+|[a-z]+|[A-Z]))")
_TEX_SUB = re.compile(r"_\{([^{}]+)\}")
# TeX in a report's text: a superscript ``^``, a braced subscript ``_{…}``, a command ``\frac``,
# a ``$``, or the nuclear norm's ``‖…‖_*``
TEX = re.compile(r"\^|_\{|\\[A-Za-z]|\$|‖_\*")


def _superscript(m: re.Match) -> str:
    text = m.group(1) or m.group(2)
    return "".join(_SUP[c] for c in text) if all(c in _SUP for c in text) else m.group(0)


def unicode_math(text: str) -> str:
    """TeX-like notation in a claim's words as the report can show it (it renders no math):
    superscripts in Unicode (``p^mm`` → pᵐᵐ, ``A^T`` → Aᵀ), braced subscripts unbraced
    (``C_{μ,R}`` → C_(μ,R), ``γ_{i}`` → γ_i) and the nuclear norm ``‖X‖_*`` → ‖X‖⁎.
    Plain subscripts (``W_K``) stay: Unicode has no subscript capitals."""
    text = _TEX_SUP.sub(_superscript, text.replace("‖_*", "‖⁎"))
    return _TEX_SUB.sub(lambda m: "_" + (m.group(1) if len(m.group(1)) == 1 or m.group(1).isalnum()
                                         else f"({m.group(1)})"), text)


def _rst_escape(text: str) -> str:
    """Escape reStructuredText markup characters in free text."""
    for ch in ("\\", "*", "|", "`"):
        text = text.replace(ch, "\\" + ch)
    return text


def _text(text: str) -> str:
    """A claim's words in a caption: its math in Unicode (:func:`unicode_math`), rST-escaped."""
    return _rst_escape(unicode_math(text))


# the counted kinds of the tally, in its order (paper claims first: the evidence)
_TALLY = (("regime", "Regime checks"), ("sanity", "Sanity checks"),
          ("control", "Positive controls"))
_CHECK = {"paper": "paper claim", "control": "positive control", "regime": "regime check",
          "sanity": "sanity check", "identity": "identity"}  # fmt: skip
_MARK = {"failed": "**FAIL**", "inconclusive": "*INCONCLUSIVE*", "void": "*VOID*"}
# where every claim is listed, as the report names it
CLAIMS_PAGE = "*0 – Claims summary* → *every claim*"


def _measured(c: dict) -> str:
    """"measured ``0.9988``, threshold ``> 0.999``" of a claim (its numbers shortened), or, for a
    structural claim with no threshold of its own, "does not hold (``value``)"."""
    value = short_value(c["value"], c["threshold"])
    if str(c["threshold"]) in ("true", "True"):
        return f"{'holds' if c['passed'] else 'does not hold'} (``{value}``)"
    return f"measured ``{value}``, threshold ``{shorten_numbers(c['threshold'])}``"


def _claimed(paper: list[dict]) -> str:
    """What is claimed: the paper claims' ids (the static caption says what they check; their
    statements and values are on the claims page, and in the lines of those that did not pass)."""
    return "**Claimed:** " + ", ".join(f"``{c['id']}``" for c in paper) + "."


def _not_held(claims: list[dict], verdict: dict, cause: dict, failed: list[str]) -> list[str]:
    """One line per claim that did not pass, with its statement and reason: the paper claims
    failed, inconclusive and void (the void ones of one cause on one line, by id, naming the check
    that voids them), then the positive controls, the failed regime and sanity checks and
    identities."""
    lines, voided = [], {}
    for kind in ("paper", "control", "regime", "sanity", "identity"):
        for c in claims:
            v = verdict[c["id"]]
            if c["kind"] != kind or v == "passed":
                continue
            why = reason(c, v, cause[c["id"]] or failed)
            if v == "void":
                voided.setdefault((kind, why), []).append(c["id"])
                continue
            what = "" if kind == "paper" else f" ({_CHECK[kind]})"
            text = f"- {_MARK[v]} ``{c['id']}``{what}: {_text(shorten_numbers(c['statement']))} — "
            if v == "inconclusive":
                text += _text(why.removeprefix("inconclusive: "))
            else:
                text += _measured(c) + (f"; {_text(why)}" if informative(c, why) else "")
            lines.append(text)
        for (k, why), ids in list(voided.items()):
            if k == kind:
                lines.append(f"- {_MARK['void']} {', '.join(f'``{i}``' for i in ids)}: "
                             f"{_text(why.removeprefix('void: '))}")  # fmt: skip
    return lines


def render_caption(template_path, claims_doc: dict, meta: dict, out_path, text=None) -> None:
    """Report caption = the figure's static caption (the file ``template_path``, or ``text`` when
    it is None: what is drawn and what it checks), the run's notes (negative control, not the
    reference run), what is claimed (the paper claims' ids), the preset and the tally of verdicts
    (:func:`attnbias.claims.core.verdicts`: a paper claim of a figure that failed a sanity or
    regime check is void), then one line per claim that did not pass, with its statement and
    reason (:func:`attnbias.claims.core.reason`).  Each thing once: the statement and measured
    value of a claim that passed are on the claims page (:data:`CLAIMS_PAGE`), not here."""
    static = Path(template_path).read_text() if template_path else text
    text = static.rstrip() + "\n\n"
    if claims_doc.get("control", "none") != "none":
        text += (
            "**NEGATIVE CONTROL** (``--config control=null``): these data were made with the "
            "paper's mechanism removed, everything else kept.  Its paper claims are expected to "
            "FAIL here (a paper claim that passes under its control is not evidence) and its "
            "sanity checks to pass.\n\n"
        )
    if claims_doc.get("label"):
        text += (
            f"**Not the reference run** ({claims_doc['label']}): made with settings that differ "
            "from the preset's; ``compare.md`` in this folder (``snakemake compare`` with the same "
            "settings) sets its claims beside the reference run's.\n\n"
        )
    preset = claims_doc.get("preset")
    claims = claims_doc["claims"]
    kinds = ("paper", "control", "regime", "sanity", "identity")
    groups = {k: [c for c in claims if c["kind"] == k] for k in kinds}
    unknown = [c["id"] for c in claims if c["kind"] not in groups]
    if unknown:
        raise ValueError(f"claims of unknown kind: {unknown}")
    verdict = dict(zip((c["id"] for c in claims), verdicts(claims), strict=True))
    cause = dict(zip((c["id"] for c in claims), void_causes(claims), strict=True))
    failed = failed_sanity(claims)
    regime = failed_regime(claims)
    bad = failed or regime
    void_by = ("sanity " if failed else "regime ") + ("checks " if len(bad) > 1 else "check ") + (
        ", ".join(f"``{x}``" for x in bad))  # fmt: skip
    n = {k: Counter(verdict[c["id"]] for c in groups[k]) for k in kinds}
    paper = (
        f"{n['paper']['passed']}/{len(groups['paper'])} passed, {n['paper']['failed']} failed, "
        f"{n['paper']['inconclusive']} inconclusive, {n['paper']['void']} void"
        + (f" ({void_by} failed)" if bad else "")
    )
    if is_not_measurable(claims_doc):
        paper = f"void: not measurable at these settings ({void_by} failed)"
    if groups["paper"]:
        text += _claimed(groups["paper"]) + "\n\n"
    tally = [f"**Paper claims:** {paper}."]
    for kind, label in _TALLY:
        if groups[kind] or kind == "sanity":
            tally.append(f"**{label}:** {n[kind]['passed']}/{len(groups[kind])} passed, "
                         f"{n[kind]['failed']} failed.")  # fmt: skip
    tally.append(f"**Identities (not evidence):** {len(groups['identity'])}.")
    text += f"**Preset:** {preset}.  " + "  ".join(tally) + "\n\n"
    lines = _not_held(claims, verdict, cause, failed)
    if lines:
        text += "**Not passed:**\n\n" + "\n".join(lines) + "\n\n"
    text += f"Every claim with its measured value and threshold: {CLAIMS_PAGE}.\n"
    Path(out_path).write_text(text.rstrip() + "\n")
