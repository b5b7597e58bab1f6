"""A figure's report caption: its static text, the preset, and the verdict of every claim.

The plot rule writes it beside the figure (``scripts/plot.py``); the verdicts come from
:func:`attnbias.claims.core.verdicts`, so a caption counts passed / failed / void exactly as the
claims summary and the landing page do.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .core import failed_sanity, is_not_measurable, reason, verdicts


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


def _rst_escape(text: str) -> str:
    """Escape reStructuredText markup characters in free text."""
    for ch in ("\\", "*", "|", "`"):
        text = text.replace(ch, "\\" + ch)
    return text


_CAPTION_KINDS = (
    ("paper", "Paper claims", "the reproduction evidence"),
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
    failed = failed_sanity(claims)
    void_by = ("checks " if len(failed) > 1 else "check ") + ", ".join(f"``{x}``" for x in failed)
    n = {k: Counter(verdict[c["id"]] for c in groups[k]) for k in ("paper", "sanity")}
    paper = (
        f"{n['paper']['passed']}/{len(groups['paper'])} passed, {n['paper']['failed']} failed, "
        f"{n['paper']['inconclusive']} inconclusive, {n['paper']['void']} void"
        + (f" (sanity {void_by} failed)" if failed else "")
    )
    if is_not_measurable(claims_doc):
        paper = f"void: not measurable at these settings (sanity {void_by} failed)"
    tally = [
        f"**Paper claims:** {paper}.",
        f"**Sanity checks:** {n['sanity']['passed']}/{len(groups['sanity'])} passed, "
        f"{n['sanity']['failed']} failed.",
        f"**Identities (not evidence):** {len(groups['identity'])}.",
    ]
    text += f"**Preset:** {preset}.  " + "  ".join(tally) + "\n\n"
    # one generated sentence per paper claim that does not hold on a valid run
    why = [
        f"``{c['id']}`` {'is inconclusive' if verdict[c['id']] == 'inconclusive' else 'fails'}: "
        + _rst_escape(reason(c, verdict[c["id"]]).removeprefix("inconclusive: ")) + "."
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
                f"- {mark} ``{c['id']}``: {_rst_escape(c['statement'])} — measured "
                f"``{_short(c['value'])}``, threshold ``{c['threshold']}``; "
                f"{_rst_escape(reason(c, v, failed))}\n"
            )
        text += "\n"
    Path(out_path).write_text(text.rstrip() + "\n")
