"""A figure's report caption: its static text, the preset, and the verdict of every claim.

The plot rule writes it beside the figure (``scripts/plot.py``); the verdicts come from
:func:`attnbias.claims.core.verdicts`, so a caption counts passed / failed / void exactly as the
claims summary and the landing page do.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from .core import failed_regime, failed_sanity, is_not_measurable, reason, verdicts, void_causes


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dict):
        items = [f"{k}: {_short(v)}" for k, v in list(value.items())[:4]]
        return "{" + ", ".join(items) + (", …}" if len(value) > 4 else "}")
    if isinstance(value, list):
        items = [_short(v) for v in value[:8]]
        return "[" + ", ".join(items) + (", …]" if len(value) > 8 else "]")
    return str(value)


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


_CAPTION_KINDS = (
    ("paper", "Paper claims", "the reproduction evidence"),
    ("control", "Positive controls", "the paper claim's test on the paper's reference; not "
     "evidence, but a claim cannot fail where its control fails too"),
    ("regime", "Regime checks", "the experiment reached the regime the paper's mechanism needs; "
     "fixed in advance, not evidence"),
    ("sanity", "Sanity checks", "the run is valid; not evidence for the paper"),
    ("identity", "Identities", "true by construction; shown for reference, never counted"),
)


def render_caption(template_path, claims_doc: dict, meta: dict, out_path, text=None) -> None:
    """Report caption = the figure's static caption (the file ``template_path``, or ``text`` when
    it is None) + the preset + the verdicts (:func:`attnbias.claims.core.verdicts`: a paper claim
    of a figure that failed a sanity check is void), grouped by claim kind: paper claims first
    (the evidence), then sanity checks, then identities (listed, never counted).  Every line ends
with the reason for its verdict (:func:`attnbias.claims.core.reason`), and each failed or
inconclusive paper claim gets one sentence after the tally."""
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
    groups = {k: [c for c in claims if c["kind"] == k] for k, _, _ in _CAPTION_KINDS}
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
    n = {k: Counter(verdict[c["id"]] for c in groups[k]) for k, _, _ in _CAPTION_KINDS}
    paper = (
        f"{n['paper']['passed']}/{len(groups['paper'])} passed, {n['paper']['failed']} failed, "
        f"{n['paper']['inconclusive']} inconclusive, {n['paper']['void']} void"
        + (f" ({void_by} failed)" if bad else "")
    )
    if is_not_measurable(claims_doc):
        paper = f"void: not measurable at these settings ({void_by} failed)"
    tally = [f"**Paper claims:** {paper}."]
    for kind, label in (("regime", "Regime checks"), ("sanity", "Sanity checks"),
                        ("control", "Positive controls")):  # fmt: skip
        if groups[kind] or kind == "sanity":
            tally.append(f"**{label}:** {n[kind]['passed']}/{len(groups[kind])} passed, "
                         f"{n[kind]['failed']} failed.")  # fmt: skip
    tally.append(f"**Identities (not evidence):** {len(groups['identity'])}.")
    text += f"**Preset:** {preset}.  " + "  ".join(tally) + "\n\n"
    # one generated sentence per paper claim that does not hold on a valid run
    why = [
        f"``{c['id']}`` {'is inconclusive' if verdict[c['id']] == 'inconclusive' else 'fails'}: "
        + _text(reason(c, verdict[c["id"]]).removeprefix("inconclusive: ")) + "."
        for c in groups["paper"]
        if verdict[c["id"]] in ("failed", "inconclusive")
    ]
    if why:
        text += "**Why not held:** " + "  ".join(why) + "\n\n"
    for kind, label, meaning in _CAPTION_KINDS:
        if not groups[kind]:
            continue
        text += f"*{label}* ({meaning}):\n\n"
        for c in groups[kind]:
            v = verdict[c["id"]]
            mark = {"passed": "PASS", "failed": "**FAIL**", "inconclusive": "*INCONCLUSIVE*",
                    "void": "*VOID*"}[v]  # fmt: skip
            text += (
                f"- {mark} ``{c['id']}``: {_text(c['statement'])} — measured "
                f"``{_short(c['value'])}``, threshold ``{c['threshold']}``; "
                f"{_text(reason(c, v, cause[c['id']] or failed))}\n"
            )
        text += "\n"
    Path(out_path).write_text(text.rstrip() + "\n")
