"""The claims summary as a table (:func:`summary_table`), its counts (:func:`counts`,
:func:`headline`) and the words the pages share (kinds, verdicts, void groups): what
:mod:`attnbias.claims.summary` writes as Markdown and :mod:`attnbias.claims.summary_html` as
HTML."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ..io import lock_provenance, natural_key, short_number
from .caption import informative, parse_value, short_value, shorten_numbers, unicode_math
from .core import (
    KINDS,
    NOT_MEASURABLE,
    reason,
    seeds_to_resolve,
    verdicts,
    void_causes,
    void_checks,
)

COLUMNS = [
    "paper", "figure", "preset", "control", "kind", "claim", "statement", "value", "threshold",
    "verdict", "reason", "void_by", "to_resolve",
]  # fmt: skip
KIND_LABEL = {"paper": "Paper claims", "control": "Positive controls", "regime": "Regime checks",
              "sanity": "Sanity checks", "identity": "Identities"}  # fmt: skip
KIND_MEANING = {
    "paper": "a statement the paper makes, measured on this run: the reproduction evidence "
    "(only where it passed on a valid run in the regime)",
    "control": "a paper claim's test applied to the reference the paper names as showing the "
    "effect (e.g. AdamW for 'resembling Adam'); a paper claim that does not pass while its control "
    "does not either is void (not testable at this budget); never evidence",
    "regime": "the experiment reached the regime in which the paper's mechanism acts (fixed in "
    "advance from the mechanism); a failed one voids its figure's paper claims",
    "sanity": "the run is valid (trained, converged, solver feasible and accurate, hypotheses "
    "met); not evidence for the paper",
    "identity": "true by construction for any input (kept only to document a plotted bound); "
    "never counted",
}
VOID_MEANING = (
    "a paper claim of a figure whose run failed a sanity check (the run is not valid) or a regime "
    "check (the experiment has not reached the regime the paper's mechanism needs), or whose "
    "positive control fails its test too (not testable at this budget); the check is named with "
    "it, and the claim is neither a pass nor a fail"
)
INCONCLUSIVE_MEANING = (
    "a paper claim whose seeds disagree more than chance allows (or whose "
    "seed mean contradicts them): the effect is not resolved from the draw-to-draw noise, so it "
    "is neither a pass nor a fail"
)
# how a verdict is marked in the per-claim listings (counts say the words)
MARK = {"passed": "PASS", "failed": "FAIL", "inconclusive": "INCONCLUSIVE", "void": "VOID"}


def _full(v) -> str:
    """A claim's value as the CSV keeps it: full precision (JSON; a float as Python writes it)."""
    if isinstance(v, float):
        return repr(v)
    return json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v


def shown(value: str, threshold) -> str:
    """A value of the table (:func:`summary_table`, full precision) as the pages show it: to 4
    significant digits, kept on its side of the threshold
    (:func:`attnbias.claims.caption.short_value`)."""
    return short_value(parse_value(value), threshold)


def _measured(r) -> str:
    """"measured 0.9988, threshold > 0.999" of a row, or for a structural claim (no threshold of
    its own, "true") "does not hold (value 1)"."""
    value = shown(r.value, r.threshold)
    if str(r.threshold) in ("true", "True"):
        return f"{'holds' if r.verdict == 'passed' else 'does not hold'} (value {value})"
    return f"measured {value}, threshold {_words(r.threshold)}"


def _words(text) -> str:
    """A statement, threshold or reason as the pages show it: long decimals shortened, TeX-like
    math in Unicode (:func:`attnbias.claims.caption.unicode_math`)."""
    return unicode_math(shorten_numbers(str(text)))


def summary_table(claim_files) -> pd.DataFrame:
    """One row per claim (columns :data:`COLUMNS`; its value at full precision, JSON), with its
    verdict (passed / failed / inconclusive / void), the reason for it in words, for a void
    one the failed checks (sanity, regime or positive control) that void it (``void_by``) and for
    an inconclusive one the estimated seeds that would resolve it and the command that runs them
    (``to_resolve``, :func:`to_resolve`).
    Papers in the order of ``claim_files``, figures in reading order, and within a figure the
    kinds in the order of :data:`KINDS` (paper claims first, identities last)."""
    rows, papers = [], {}
    for f in claim_files:
        doc = json.loads(Path(f).read_text())
        for c in doc["claims"]:
            if c.get("kind") not in KINDS:
                raise ValueError(f"{f}: claim {c.get('id')!r} has no valid kind ({KINDS})")
        papers.setdefault(doc["paper"], len(papers))
        causes, checks = void_causes(doc["claims"]), void_checks(doc["claims"])
        for c, verdict, cause, by in zip(doc["claims"], verdicts(doc["claims"]), causes, checks,
                                         strict=True):  # fmt: skip
            rows.append(
                {
                    "paper": doc["paper"],
                    "figure": doc["figure"],
                    "preset": doc.get("preset"),
                    "control": doc.get("control", "none"),
                    "kind": c["kind"],
                    "claim": c["id"],
                    "statement": c["statement"],
                    "value": _full(c["value"]),
                    "threshold": c["threshold"],
                    "verdict": verdict,
                    "reason": reason(c, verdict, cause or ()),
                    "void_by": by if verdict == "void" else "",
                    "to_resolve": (to_resolve(c, doc["paper"], doc["figure"], doc.get("preset"))
                                   if verdict == "inconclusive" else ""),
                }
            )
    rank = {k: i for i, k in enumerate(KINDS)}
    rows.sort(key=lambda r: (papers[r["paper"]], natural_key(r["figure"]), rank[r["kind"]]))
    return pd.DataFrame(rows, columns=COLUMNS)


def robustness_command(paper: str, figure: str, shifts: int, preset=None) -> str:
    """The one command that measures ``paper``/``figure`` over ``shifts`` more seed shifts (the
    robustness target restricted to that figure, docs/controls.md#robustness-over-seeds)."""
    seeds = ", ".join(str(s) for s in range(1, shifts + 1))
    scale = f" scale={preset}" if preset and preset != "quick" else ""
    return (f"snakemake --cores 2 robustness --config{scale} "
            f"robustness='{{seeds: [{seeds}], figures: [{paper}/{figure}]}}'")  # fmt: skip


def to_resolve(claim: dict, paper: str, figure: str, preset=None) -> str:
    """An inconclusive claim's seeds to resolve it, labelled as an estimate
    (:func:`attnbias.claims.core.seeds_to_resolve`; docs/outputs.md#seeds-to-resolve), and the
    robustness command that runs them: each seed shift redraws the figure's seeds, so ``N``
    seeds over ``k`` per draw take ``⌈N / k⌉ − 1`` shifts, pooled by the robustness table.  ""
    for a claim not judged over seeds."""
    seeds = claim.get("seeds") or {}
    if len(seeds) < 2:
        return ""
    est = seeds_to_resolve(seeds, claim.get("threshold"))
    k, n = est["seeds"], est["n"]
    how = (f"normal approximation from the seeds' mean {short_number(est['mean'])} and sd "
           f"{short_number(est['sd'])} against {claim.get('threshold')}"
           if est["method"] == "normal approximation" else
           "the share of seeds on the majority's side")  # fmt: skip
    if n is None:
        return (f"seeds to resolve (estimate): no finite number — the seeds split evenly "
                f"({how}: each seed passes with chance ½)")  # fmt: skip
    if n <= k:
        return (f"seeds to resolve (estimate): the {k} seeds already agree ({est['side']}); the "
                "seed-mean data contradict them, so more seeds test whether the mean follows: "
                f"`{robustness_command(paper, figure, 1, preset)}`")  # fmt: skip
    shifts = max(1, math.ceil(n / k) - 1)
    return (
        f"seeds to resolve (estimate): about {n} seeds, each {est['side']} with chance "
        f"{est['p']:.2f} ({how}); {shifts + 1} draws of {k}: "
        f"`{robustness_command(paper, figure, shifts, preset)}`"
    )


# the kinds counted, each by its verdicts (identities are listed, never counted)
COUNTED = (
    ("paper", ("passed", "failed", "inconclusive", "void")),
    ("control", ("passed", "failed", "inconclusive", "void")),
    ("regime", ("passed", "failed")),
    ("sanity", ("passed", "failed")),
)


def counts(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group (in the table's order): paper claims and positive controls passed / failed /
    inconclusive / void / total, regime and sanity checks passed / failed / total (:data:`COUNTED`),
    the number of identities, the failed sanity checks that void
    paper claims (``void_by``), and the figures not measurable at their settings (a failed sanity
    check ``measurable``: their claims were never computed, so every paper claim of theirs is void
    and none is counted)."""
    out = []
    for key, g in df.groupby(by, sort=False) if by else [((), df)]:
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key, strict=True))
        for kind, verdict_names in COUNTED:
            k = g[g.kind == kind]
            for v in verdict_names:
                row[f"{kind}_{v}"] = int((k.verdict == v).sum())
            row[f"{kind}_total"] = len(k)
        row["identities"] = int((g.kind == "identity").sum())
        nm = g[(g.kind == "sanity") & (g.claim == NOT_MEASURABLE) & (g.verdict == "failed")]
        void_by = [*(x for x in g.void_by if x), *([NOT_MEASURABLE] if len(nm) else [])]
        row["void_by"] = ", ".join(dict.fromkeys(void_by))
        row["not_measurable"] = ", ".join(dict.fromkeys(f"{p} {f}" for p, f in
                                                        zip(nm.paper, nm.figure, strict=True)))
        out.append(row)
    cols = [*by, *(f"{k}_{v}" for k, names in COUNTED for v in (*names, "total")),
            "identities", "void_by", "not_measurable"]  # fmt: skip
    return pd.DataFrame(out, columns=cols)


def _paper_cell(row) -> str:
    """E.g. "3/5 passed, 1 failed, 1 inconclusive, 0 void", and the figures not measurable
    (paper claims void, uncounted)."""
    text = (
        f"{row['paper_passed']}/{row['paper_total']} passed, {row['paper_failed']} failed, "
        f"{row['paper_inconclusive']} inconclusive, {row['paper_void']} void"
    )
    if row["not_measurable"]:
        text += f"; not measurable: {row['not_measurable']} (every paper claim void, uncounted)"
    return text


def _sanity_cell(row, kind: str = "sanity") -> str:
    return f"{row[kind + '_passed']}/{row[kind + '_total']} passed, {row[kind + '_failed']} failed"


def _control_cell(row) -> str:
    """Positive controls: "1/2 passed, 1 failed" (with the inconclusive and void, where any)."""
    return f"{row['control_passed']}/{row['control_total']} passed, " + ", ".join(
        f"{row['control_' + v]} {v}" for v in ("failed", "inconclusive", "void")
        if v == "failed" or row["control_" + v]
    )  # fmt: skip


def headline(df: pd.DataFrame) -> str:
    """E.g. "Paper claims: 120/131 passed, 3 failed, 2 inconclusive, 6 void.  Regime checks:
    20/21 passed, 1 failed.  Sanity checks: 40/42 passed, 2 failed.  Positive controls: 2/4
    passed, 2 failed.  Identities (not evidence): 5." — the evidence first, never pooled with the
    rest (regime checks and positive controls are named only where the table has any); a figure
    not measurable at its settings is named."""
    c = counts(df, []).iloc[0]
    return (
        f"{KIND_LABEL['paper']}: {_paper_cell(c)}.  "
        + (f"{KIND_LABEL['regime']}: {_sanity_cell(c, 'regime')}.  " if c["regime_total"] else "")
        + f"{KIND_LABEL['sanity']}: {_sanity_cell(c)}.  "
        + (f"{KIND_LABEL['control']}: {_control_cell(c)}.  " if c["control_total"] else "")
        + f"Identities (not evidence): {int(c['identities'])}."
    )


def _md_row(cells) -> str:
    return "| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |"


def _shows_line(shows) -> str:
    """Which run the claims are from; ``shows["overrides"]``, if any: the settings that differ
    from the preset's reference run."""
    over = shows.get("overrides") or []
    lock = lock_provenance()
    return (
        f"Results of the **{shows['preset']}** preset, control `{shows['control']}`, seed shift "
        f"{shows['seed']}, in `{shows['folder']}/`."
        + (f"  Settings that differ from the preset: {'; '.join(f'`{o}`' for o in over)}."
           if over else "")
        + (f"  Environment: `{lock['lock']}`, sha256 {lock['lock_sha256'][:16]}… (each data "
           "file's JSON records the lock it was made with, `provenance.lock_sha256`)."
           if lock["lock"] else "  Environment: no lock found (an install outside the repository).")
    )  # fmt: skip


def _controlled(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(f"{r.paper} {r.figure}" for r in df.itertuples()
                              if r.control != "none"))  # fmt: skip


def _control_line(controlled: list[str]) -> str:
    return (
        f"**NEGATIVE CONTROL RUN** (`--config control=null`) for {len(controlled)} figures "
        f"({', '.join(controlled)}): their data were made with the paper's mechanism removed, so "
        "their paper claims are EXPECTED TO FAIL and their sanity checks to pass (see "
        "`violations` in the strict gate)."
    )


# A void paper claim's cause, by the kind of the check that voids it (core.void_checks): what that
# check's failure means for the claims it voids.
VOID_BY = {
    "sanity": ("sanity check", "the run is not valid"),
    "regime": ("regime check", "the run has not reached the regime the paper's mechanism needs"),
    "control": ("positive control", "the same test on the paper's reference does not pass "
                "either: not testable at this budget"),
}  # fmt: skip


def void_groups(df: pd.DataFrame) -> list[dict]:
    """The void paper claims of ``df`` (:func:`summary_table`) grouped by figure and by the checks
    that void them, in the table's order: ``paper``, ``figure``, ``by`` (the kind of check:
    sanity, regime or control, :data:`VOID_BY`), ``checks`` (their rows, with statement, value and
    threshold) and ``claims`` (the ids of the void claims)."""
    rows = {(r.paper, r.figure, r.claim): r for r in df.itertuples()}
    out = []
    for (paper, figure, by), g in df[df.verdict == "void"].groupby(
        ["paper", "figure", "void_by"], sort=False
    ):
        checks = [rows[(paper, figure, c)] for c in by.split(", ") if (paper, figure, c) in rows]
        kind = checks[0].kind if checks else "sanity"
        out.append(dict(paper=paper, figure=figure, by=kind if kind in VOID_BY else "sanity",
                        checks=checks, claims=list(g.claim)))  # fmt: skip
    return out


def _void_line(v: dict) -> str:
    """A void group (:func:`void_groups`) in Markdown: the figure, the claims it voids, the failed
    checks with what they measured, and what that means."""
    label, meaning = VOID_BY[v["by"]]
    checks = "; ".join(
        f"`{c.claim}` {c.verdict}{' too' if v['by'] == 'control' else ''} ({_words(c.statement)}: "
        f"{_measured(c)})" for c in v["checks"]
    )  # fmt: skip
    plural = "s" if len(v["checks"]) > 1 else ""
    return (f"- **{v['paper']} {v['figure']}**: " + ", ".join(f"`{c}`" for c in v["claims"])
            + f" — {label}{plural} {checks}: {meaning}")  # fmt: skip


def _why(r) -> str:
    """A row's reason when it says more than its value and threshold (its seeds, its own words),
    else ""."""
    return _words(r.reason) if informative({"threshold": r.threshold}, r.reason) else ""


def _kind_counts(df: pd.DataFrame, by: list[str]) -> tuple[pd.DataFrame, bool]:
    """:func:`counts`, and whether any positive control is among them (its column is shown)."""
    return counts(df, by), bool((df.kind == "control").any())
