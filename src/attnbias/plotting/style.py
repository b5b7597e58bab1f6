"""Shared plot style, byte-stable saving, and report captions with measured verdicts."""

from __future__ import annotations

import inspect
import os
from collections import Counter
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from ..claims.core import failed_sanity, is_not_measurable, verdicts

# No pyplot: figures are made as matplotlib.figure.Figure and saved by their own canvas (Agg for
# PNG, the PDF backend for PDF), which spares every plot job pyplot's import (≈ 0.3 s) and its
# global figure registry; the rendered bytes are the same.

os.environ.setdefault("SOURCE_DATE_EPOCH", "0")

STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 7,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "lines.linewidth": 1.2,
    "svg.hashsalt": "attnbias",
}
matplotlib.rcParams.update(STYLE)

# Method colours used by every paper (GD blue, NGD red, Polyak green, Adam purple).
METHOD_COLORS = {
    "gd": "tab:blue",
    "sgd": "tab:blue",
    "ngd": "tab:red",
    "sngd": "tab:red",
    "polyak": "tab:green",
    "ps": "tab:green",
    "sps": "tab:green",
    "adam": "tab:purple",
}


def new_figure(width: float = 3.4, height: float = 3.0, ncols: int = 1, nrows: int = 1, **kw):
    fig = Figure(figsize=(width, height))
    ax = fig.subplots(nrows, ncols, **kw)
    return fig, ax


def stand_in_title(ax, title: str, stand_in: str | None = None) -> None:
    """Title an axis; figures computed on stand-in data say so in the title."""
    ax.set_title(title if not stand_in else f"{title}\n[stand-in: {stand_in}]")


CONTROL_BANNER = "NEGATIVE CONTROL (--config control=null)"


def mark_control(fig, what: str = "the paper's mechanism is removed") -> None:
    """Head a figure drawn from negative-control data (``--config control=null``) with a red banner
    saying ``what`` the control removed (each paper's ``plotting.<paper>.CONTROL_NOTES``), above
    its own suptitle if it has one, so it can never pass for the real experiment."""
    old = fig._suptitle.get_text() if fig._suptitle is not None else ""
    text = f"{CONTROL_BANNER}: {what}" + ("\n" + old if old else "")
    fig.suptitle(text, color="tab:red", fontsize=9, fontweight="bold")


def not_measurable_figure(title: str, reason: str):
    """A figure that says, instead of drawing, why its data could not be drawn (settings too small
    for what the figure shows); used only when the figure's claims are also not measurable."""
    fig, ax = new_figure(4.5, 2.0)
    ax.set_axis_off()
    ax.set_title(f"{title}: not measurable at these settings", color="tab:red")
    ax.text(0.5, 0.5, reason, ha="center", va="center", wrap=True, fontsize=7)
    return fig


def save_figure(fig, pdf_path, png_path) -> None:
    """Save the PDF and PNG twins with reproducible bytes (no creation dates)."""
    fig.tight_layout()
    Path(pdf_path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(pdf_path, metadata={"CreationDate": None, "ModDate": None})
    fig.savefig(png_path, metadata={"Software": None})


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
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


def docstring_caption(func) -> str:
    """A figure's static caption when it has no ``workflow/report/<paper>_<fig>.rst``: the first
    paragraph of its plotting function's docstring, as one line."""
    doc = inspect.getdoc(func) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def render_caption(template_path, claims_doc: dict, meta: dict, out_path, text=None) -> None:
    """Report caption = the figure's static caption (the file ``template_path``, or ``text`` when
    it is None) + the preset + the verdicts (:func:`attnbias.claims.core.verdicts`: a paper claim
    of a figure that failed a sanity check is void), grouped by claim kind: paper claims first
    (the evidence), then sanity checks, then identities (listed, never counted)."""
    static = Path(template_path).read_text() if template_path else text
    text = static.rstrip() + "\n\n"
    if claims_doc.get("control", "none") != "none":
        text += (
            "**NEGATIVE CONTROL** (``--config control=null``): these data were made with the "
            "paper's mechanism removed, everything else kept.  Its paper claims are expected to "
            "FAIL here (a paper claim that passes under its control is not evidence) and its "
            "sanity checks to pass.\n\n"
        )
    preset = claims_doc.get("preset")
    claims = claims_doc["claims"]
    groups = {k: [c for c in claims if c["kind"] == k] for k, _, _ in _CAPTION_KINDS}
    unknown = [c["id"] for c in claims if c["kind"] not in groups]
    if unknown:
        raise ValueError(f"claims of unknown kind: {unknown}")
    verdict = dict(zip((c["id"] for c in claims), verdicts(claims), strict=True))
    void_by = ", ".join(f"``{x}``" for x in failed_sanity(claims))
    n = {k: Counter(verdict[c["id"]] for c in groups[k]) for k in ("paper", "sanity")}
    paper = (
        f"{n['paper']['passed']}/{len(groups['paper'])} passed, {n['paper']['failed']} failed, "
        f"{n['paper']['void']} void" + (f" (sanity check {void_by} failed)" if void_by else "")
    )
    if is_not_measurable(claims_doc):
        paper = f"void: not measurable at these settings (sanity check {void_by} failed)"
    tally = [
        f"**Paper claims:** {paper}.",
        f"**Sanity checks:** {n['sanity']['passed']}/{len(groups['sanity'])} passed, "
        f"{n['sanity']['failed']} failed.",
        f"**Identities (not evidence):** {len(groups['identity'])}.",
    ]
    text += f"**Preset:** {preset}.  " + "  ".join(tally) + "\n\n"
    for kind, label, meaning in _CAPTION_KINDS:
        if not groups[kind]:
            continue
        text += f"*{label}* ({meaning}):\n\n"
        for c in groups[kind]:
            mark = {"passed": "PASS", "failed": "**FAIL**", "void": "*VOID*"}[verdict[c["id"]]]
            text += (
                f"- {mark} ``{c['id']}``: {_rst_escape(c['statement'])} — measured "
                f"``{_short(c['value'])}``, "
                f"threshold ``{c['threshold']}``\n"
            )
        text += "\n"
    Path(out_path).write_text(text.rstrip() + "\n")
