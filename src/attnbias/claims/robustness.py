"""Every claim measured across seeds: the robustness table (``snakemake robustness``).

A run with ``--config seed=N`` shifts every random seed of every figure by N (data, initialisations,
batches).  The robustness target runs every figure whose data are redrawn by that shift at each
seed of ``robustness.seeds`` (the default run is seed 0) and collects their claims here:

* :func:`seed_table` — the claims of one seed's run, one row per claim, with the **margin** of
  each scalar claim to its threshold (:func:`margin`);
* :func:`robustness_table` — one row per claim over the draws: how many draws it passes, fails,
  is inconclusive and is void on (:func:`attnbias.claims.core.verdicts`: a paper claim is void on
  a draw whose run of its figure failed a sanity check), the min / median / max of its value, its
  **status**, and its **pooled** verdict: the same sign test as within one draw
  (:func:`attnbias.claims.core.resolve`) over every seed of every valid draw (five draws of three
  seeds: fifteen seeds), so more draws sharpen the verdict;
* :func:`write_robustness` — ``summary.md`` (headline, seed-fragile claims first) and ``.csv``.

A claim is **seed-fragile** when its verdict differs between draws (passed, failed,
inconclusive); a draw on which it is void counts as none of them (evidence is what passed on valid
runs only).  Figures whose data no seed changes (the deterministic synthetic constructions,
committed precomputed results) are measured once and listed as such: agreeing with themselves is
not evidence of robustness.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..io import natural_key
from .core import KINDS, SIGN_TESTED, resolve, seeds_needed, verdicts
from .ids import current_ids
from .margin import _number, margin  # noqa: F401  (margin: read from here too)

SEED_COLUMNS = {
    "seed": "the seed shift of the run (--config seed=N; 0 = the default draws)",
    "paper": "paper key",
    "figure": "figure id",
    "kind": "paper (the evidence), control (a positive control: a paper claim's test on the "
    "paper's reference), regime (the experiment reached the regime of the paper's mechanism), "
    "sanity (the run is valid) or identity (true by construction)",
    "claim": "claim id (unique within its figure)",
    "statement": "what the claim says",
    "threshold": "the threshold as recorded by the claim",
    "value": "the measured value as recorded (JSON for lists)",
    "value_num": "the measured value when it is one number, else NaN",
    "passed": "whether the claim holds on this seed's run",
    "outcome": "passed, failed or inconclusive as measured on this seed's run (inconclusive: a "
    "claim judged over the run's own seeds that they did not resolve)",
    "seed_outcomes": "JSON list: the outcome (true = holds) on each of the run's own seeds (one "
    "entry for a claim measured once); the robustness table pools them over the draws",
    "margin": "signed distance of the value from its threshold, relative to the larger of |value| "
    "and |threshold| (> 0 on the passing side; in [-2, 2]); NaN where the claim is not a "
    "scalar comparison",
    "redrawn": "whether the seed shift redraws this figure's data (False: deterministic or "
    "precomputed; measured once)",
    "positive_control": "a paper claim's positive control (the id of its control claim; empty "
    "for none): the claim is void on a draw where it does not pass and its control does not "
    "either",
    "part": "the part of its figure the claim belongs to where a figure holds two experiments "
    "(lowrank Fig 3: lm, vit; empty for none): a failed check of one part voids only that part's "
    "claims",
}

SUMMARY_COLUMNS = [
    "paper", "figure", "kind", "claim", "statement", "threshold", "status", "pooled",
    "pooled_seeds", "verdicts", "seeds_passed", "passed", "failed", "inconclusive", "void", "seeds",
    "failed_on", "inconclusive_on", "void_on", "value_min", "value_median", "value_max",
    "examined", "examination",
]  # fmt: skip
STATUS = {
    "fragile": "seed-fragile: its verdict differs between draws (passed, failed or inconclusive; "
    "draws where it is void aside)",
    "rate-fails": "examined, outcome (a): passes on fewer draws than the share fixed for it "
    "(a void draw counts as not passing)",
    "fails": "fails on every draw where its figure's run is valid",
    "inconclusive": "inconclusive on every draw where its figure's run is valid: its seeds never "
    "resolve it",
    "void": "void on every draw: its figure's run failed a sanity check on each",
    "rate-holds": "examined, outcome (a): passes on at least the share of draws fixed for it",
    "holds-valid": "passes on every draw where its figure's run is valid, void on the others",
    "holds": "holds on every draw",
    "once-holds": "not redrawn by the seed (deterministic or precomputed): holds, measured once",
    "once-fails": "not redrawn by the seed (deterministic or precomputed): fails, measured once",
    "once-inconclusive": "not redrawn by the seed shift: inconclusive over its own seeds, measured "
    "once",
    "once-void": "not redrawn by the seed (deterministic or precomputed): void (its run failed a "
    "sanity check), measured once",
}
# How a seed-fragile claim was examined (workflow/report/examined.yaml), decided from the paper and
# its methods page (docs/papers/<key>.md), never from the measured values.
OUTCOMES = {
    "a": "the paper states the effect for typical draws: the claim is judged by its pass rate over "
    "the seeds, against a share fixed in advance",
    "b": "the project's reading asked more than the paper says: the threshold now follows the "
    "paper's words",
    "c": "the run was underpowered: more compute (steps, trials, runs), the same for every seed",
    "d": "none of these: it stays seed-fragile, shown as such",
}
_ORDER = {s: i for i, s in enumerate(STATUS)}
def seed_table(claim_files, seed: int, redrawn: dict) -> pd.DataFrame:
    """The claims of one seed's run, one row per claim (columns :data:`SEED_COLUMNS`).

    Parameters
    ----------
    claim_files : iterable of path
        The run's claim files (``<results>/claims/<paper>/<fig>.json``).
    seed : int
        The run's seed shift.
    redrawn : dict
        ``{"<paper>/<fig>": bool}``: whether the seed shift redraws the figure's data.
    """
    rows = []
    for f in claim_files:
        doc = json.loads(Path(f).read_text())
        key = f"{doc['paper']}/{doc['figure']}"
        for c in doc["claims"]:
            if c.get("kind") not in KINDS:
                raise ValueError(f"{f}: claim {c.get('id')!r} has no valid kind ({KINDS})")
            value = c["value"]
            rows.append(
                {
                    "seed": int(seed),
                    "paper": doc["paper"],
                    "figure": doc["figure"],
                    "kind": c["kind"],
                    "claim": c["id"],
                    "statement": c["statement"],
                    "threshold": str(c["threshold"]),
                    "value": value if isinstance(value, str) else json.dumps(value),
                    "value_num": _number(value),
                    "passed": bool(c["passed"]),
                    "outcome": c.get("outcome") or ("passed" if c["passed"] else "failed"),
                    "seed_outcomes": json.dumps(
                        [bool(r["passed"]) for r in c["seeds"].values()] if c.get("seeds")
                        else [bool(c["passed"])]
                    ),
                    "margin": margin(value, c["threshold"]),
                    "redrawn": bool(redrawn[key]),
                    "positive_control": c.get("positive_control") or "",
                    "part": c.get("part") or "",
                }
            )
    return pd.DataFrame(rows, columns=list(SEED_COLUMNS))


def _status(verdict: pd.Series, redrawn: bool) -> str:
    """A claim's status over the draws from its verdict on each (:data:`STATUS`)."""
    valid = [v for v in verdict if v != "void"]
    if not redrawn:  # measured once (seed 0 only)
        once = {"passed": "holds", "failed": "fails", "inconclusive": "inconclusive"}
        return "once-" + (once[valid[0]] if len(valid) == len(verdict) else "void")
    if not valid:
        return "void"
    if len(set(valid)) > 1:
        return "fragile"
    if valid[0] == "failed":
        return "fails"
    if valid[0] == "inconclusive":
        return "inconclusive"
    return "holds" if len(valid) == len(verdict) else "holds-valid"


def pooled(seed_outcomes, verdict, kind: str = "paper") -> tuple[str, str]:
    """A claim's verdict over every seed of every draw on which its figure's run is valid, by the
    rule of a single draw: a paper claim by the sign test of
    :func:`attnbias.claims.core.resolve` on the pooled seeds' outcomes (the seed-mean agreement a
    single draw also asks for is not available across draws: their data are never averaged), a
    sanity check or identity on every seed.  Returns the verdict (``void`` when no draw is valid)
    and, e.g., "14/15 hold, 11 needed"."""
    outcomes = [o for s, v in zip(seed_outcomes, verdict, strict=True) if v != "void"
                for o in json.loads(s)]  # fmt: skip
    if not outcomes:
        return "void", ""
    n, k = len(outcomes), sum(outcomes)
    if kind not in SIGN_TESTED:
        return ("passed" if k == n else "failed"), f"{k}/{n} hold, {n} needed"
    return resolve(outcomes), f"{k}/{n} hold, {seeds_needed(n)} needed"


def with_verdicts(seeds: pd.DataFrame) -> pd.DataFrame:
    """The seed tables with each claim's verdict on its draw (``verdict``: passed / failed /
    inconclusive / void, :func:`attnbias.claims.core.verdicts` applied to each figure's claims at
    each draw), every claim under its present id (tables written before carry old ids:
    :func:`attnbias.claims.ids.current_id`)."""
    seeds = seeds.assign(claim=current_ids(seeds))
    verdict = pd.Series("", index=seeds.index, dtype=object)
    outcome = seeds["outcome"] if "outcome" in seeds else pd.Series("", index=seeds.index)
    control = (seeds["positive_control"].fillna("") if "positive_control" in seeds
               else pd.Series("", index=seeds.index))  # fmt: skip
    part = seeds["part"].fillna("") if "part" in seeds else pd.Series("", index=seeds.index)
    for _, g in seeds.groupby(["seed", "paper", "figure"], sort=False):
        records = [
            {"kind": k, "id": c, "passed": bool(p), "outcome": o or None,
             "positive_control": pc or None, "part": pt or None}
            for k, c, p, o, pc, pt in zip(g["kind"], g["claim"], g["passed"], outcome[g.index],
                                          control[g.index], part[g.index], strict=True)  # fmt: skip
        ]
        verdict[g.index] = verdicts(records)
    return seeds.assign(verdict=verdict)


def robustness_table(seeds: pd.DataFrame, examined: dict | None = None) -> pd.DataFrame:
    """One row per claim over the draws (columns :data:`SUMMARY_COLUMNS`), in the order of
    :data:`STATUS` (seed-fragile claims first, the claims of figures no seed redraws last); paper
    claims before sanity checks and identities within each.

    Parameters
    ----------
    seeds : DataFrame
        The concatenated :func:`seed_table` of every draw (a figure that is not redrawn appears
        for seed 0 only).
    examined : dict, optional
        ``{"<paper>/<figure>/<claim>": {"outcome": "a"|"b"|"c"|"d", "note": str, "rate": float}}``
        (workflow/report/examined.yaml, :data:`OUTCOMES`): a claim examined with outcome (a) is
        judged by the share of draws it passes against its ``rate`` (status ``rate-holds`` or
        ``rate-fails``); every examined claim carries its outcome and note.
    """
    examined = examined or {}
    out = []
    keys = ["paper", "figure", "claim"]
    if "seed_outcomes" not in seeds:  # tables from before the pooled verdict: one per draw
        seeds = seeds.assign(seed_outcomes=[json.dumps([bool(p)]) for p in seeds["passed"]])
    for (paper, figure, claim), g in with_verdicts(seeds).groupby(keys, sort=False):
        g = g.sort_values("seed")
        vals = g["value_num"].to_numpy(float)
        finite = vals[np.isfinite(vals)]
        status = _status(g["verdict"], bool(g["redrawn"].all()))
        passed = g["verdict"] == "passed"
        exam = examined.get(f"{paper}/{figure}/{claim}", {})
        if exam.get("outcome") == "a" and not status.startswith("once"):
            status = "rate-holds" if passed.mean() >= exam["rate"] else "rate-fails"
        pool, pool_seeds = pooled(g["seed_outcomes"], g["verdict"], g["kind"].iloc[0])
        on = {v: " ".join(str(s) for s in g.loc[g["verdict"] == v, "seed"])
              for v in ("failed", "inconclusive", "void")}  # fmt: skip
        out.append(
            {
                "paper": paper,
                "figure": figure,
                "kind": g["kind"].iloc[0],
                "claim": claim,
                "statement": g["statement"].iloc[0],
                "threshold": g["threshold"].iloc[-1],
                "status": status,
                "pooled": pool,
                "pooled_seeds": pool_seeds,
                "verdicts": " ".join(f"{s}:{v}" for s, v in zip(g["seed"], g["verdict"],
                                                                  strict=True)),
                "seeds_passed": f"{int(passed.sum())}/{len(g)}",
                "passed": int(passed.sum()),
                "failed": int((g["verdict"] == "failed").sum()),
                "inconclusive": int((g["verdict"] == "inconclusive").sum()),
                "void": int((g["verdict"] == "void").sum()),
                "seeds": len(g),
                "failed_on": on["failed"],
                "inconclusive_on": on["inconclusive"],
                "void_on": on["void"],
                "value_min": float(finite.min()) if finite.size else float("nan"),
                "value_median": float(np.median(finite)) if finite.size else float("nan"),
                "value_max": float(finite.max()) if finite.size else float("nan"),
                "examined": exam.get("outcome", ""),
                "examination": _examination(exam),
            }
        )
    kinds = {k: i for i, k in enumerate(KINDS)}
    papers = {p: i for i, p in enumerate(dict.fromkeys(seeds["paper"]))}
    out.sort(key=lambda r: (_ORDER[r["status"]], kinds[r["kind"]], papers[r["paper"]],
                            natural_key(r["figure"])))  # fmt: skip
    return pd.DataFrame(out, columns=SUMMARY_COLUMNS)


def _examination(exam: dict) -> str:
    if not exam:
        return ""
    rate = f" (required share of seeds: {exam['rate']:.0%})" if exam["outcome"] == "a" else ""
    return f"({exam['outcome']}){rate} {exam['note']}"


def check_examined(examined: dict) -> None:
    """``examined`` (workflow/report/examined.yaml) well formed: keys ``<paper>/<figure>/<claim>``,
    an outcome of :data:`OUTCOMES` with a note, and a ``rate`` in (0, 1] exactly for outcome (a)."""
    for key, e in examined.items():
        if key.count("/") != 2 or not isinstance(e, dict):
            raise ValueError(f"examined: {key!r} is not '<paper>/<figure>/<claim>: {{...}}'")
        if e.get("outcome") not in OUTCOMES or not str(e.get("note", "")).strip():
            raise ValueError(f"examined: {key}: needs an outcome in {list(OUTCOMES)} and a note")
        rate = e.get("rate")
        if (e["outcome"] == "a") != (rate is not None) or (rate is not None and not 0 < rate <= 1):
            raise ValueError(f"examined: {key}: a rate in (0, 1] goes with outcome (a) only")
        extra = sorted(set(e) - {"outcome", "note", "rate"})
        if extra:
            raise ValueError(f"examined: {key}: unknown keys {extra}")


def headline(table: pd.DataFrame, seeds: list[int]) -> str:
    """E.g. "Paper claims pooled over the seeds of every draw (seed shifts 0, 1, 2, 3, 4): 150/195
    hold, 2 fail, 30 inconclusive, 0 void (35 of them measured once: not redrawn by the seed).
    Per draw: 160 hold on every draw, 20 seed-fragile (20 not yet examined), 3 fail on every
    draw where their run is valid, 5 inconclusive on every such draw, 2 void on some draw (1 pass
    on every other draw, 0 void on every draw)."."""
    p = table[table.kind == "paper"]
    pool = p["pooled"] if "pooled" in p else pd.Series("", index=p.index)
    once = p.status.str.startswith("once").sum()
    rated = p[p.status.str.startswith("rate-")]
    fragile = p[p.status == "fragile"]
    void = p[p["void"] > 0] if "void" in p else p.iloc[:0]
    text = (
        f"Paper claims pooled over the seeds of every draw (seed shifts "
        f"{', '.join(map(str, seeds))}): {(pool == 'passed').sum()}/{len(p)} hold, "
        f"{(pool == 'failed').sum()} fail, {(pool == 'inconclusive').sum()} inconclusive, "
        f"{(pool == 'void').sum()} void ({once} of them measured once: not redrawn by the seed).  "
        f"Per draw: {p.status.isin(['holds', 'once-holds']).sum()} hold on every draw, "
        f"{len(fragile) + len(rated)} seed-fragile"
    )
    if len(rated):
        text += (f", of which {(rated.status == 'rate-holds').sum()}/{len(rated)} judged by their "
                 "pass rate meet it")  # fmt: skip
    if "examined" in p:
        text += f" ({(fragile.examined == '').sum()} not yet examined)"
    text += (
        f", {(p.status == 'fails').sum()} fail on every draw where their run is valid, "
        f"{p.status.isin(['inconclusive', 'once-inconclusive']).sum()} inconclusive on every "
        f"such draw, {len(void)} void on some draw"
    )
    if len(void):
        text += (
            f" ({(void.status == 'holds-valid').sum()} pass on every other draw, "
            f"{void.status.isin(['void', 'once-void']).sum()} void on every draw)"
        )
    return text + "."


def figure_summary(table: pd.DataFrame) -> dict[tuple[str, str], str]:
    """One short line per figure of ``table`` (:func:`robustness_table`) for the report's landing
    table: its paper claims' pooled verdicts over every seed of every draw, how many hold on every
    draw, are seed-fragile, fail, are inconclusive or are void on some draw; or that no seed
    redraws it."""
    out = {}
    for (paper, figure), t in table.groupby(["paper", "figure"], sort=False):
        p = t[t.kind == "paper"]
        if t.status.str.startswith("once").all():
            out[(paper, figure)] = "measured once (not redrawn)"
            continue
        draws = int(t.seeds.max())
        pool = p["pooled"] if "pooled" in p else pd.Series("", index=p.index)
        parts = [f"pooled: {(pool == 'passed').sum()}/{len(p)} hold"
                 + "".join(f", {(pool == v).sum()} {w}" for v, w in
                           (("failed", "fail"), ("inconclusive", "inconclusive"), ("void", "void"))
                           if (pool == v).any())]  # fmt: skip
        parts.append(f"{(p.status == 'holds').sum()}/{len(p)} hold on all {draws} draws")
        n = {
            "seed-fragile": p.status.isin(["fragile", "rate-holds", "rate-fails"]).sum(),
            "fail on every valid draw": (p.status == "fails").sum(),
            "inconclusive on every valid draw": (p.status == "inconclusive").sum(),
            "void on some draw": (p["void"] > 0).sum() if "void" in p else 0,
        }
        parts += [f"{v} {k}" for k, v in n.items() if v]
        sanity = t[(t.kind == "sanity") & ~t.status.isin(["holds", "once-holds"])]
        if len(sanity):
            parts.append(f"sanity failing on some draw: {', '.join(sanity.claim)}")
        out[(paper, figure)] = "; ".join(parts)
    return out


def _fmt(x) -> str:
    return "" if isinstance(x, float) and not math.isfinite(x) else f"{x:.4g}"


def write_robustness(
    seeds: pd.DataFrame, md_path, csv_path, shows: dict, examined: dict | None = None
) -> pd.DataFrame:
    """Write the robustness summary (``.md``, ``.csv`` and, beside the CSV, ``.json``: the seeds
    it covers) of the concatenated seed tables; return it.

    ``shows``: which runs (``preset``, ``control``, ``seeds``, ``folders``), said in the first
    lines; ``examined``: the examined claims (:func:`robustness_table`)."""
    table = robustness_table(seeds, examined)
    table.to_csv(csv_path, index=False, float_format="%.6g")
    seed_list = sorted(int(s) for s in seeds["seed"].unique())
    # the seeds the table covers, for readers of the CSV (the report's landing page)
    Path(csv_path).with_suffix(".json").write_text(json.dumps({"seeds": seed_list}) + "\n")
    lines = [
        "# Robustness of the claims over seeds",
        "",
        f"Preset **{shows['preset']}**, control `{shows['control']}`; seed 0 is the default run "
        f"(`{shows['folders'][0]}/`), seed N the run of `--config seed=N` "
        f"(`{shows['folders'][1] if len(shows['folders']) > 1 else '…'}/` and so on).",
        "",
        f"**{headline(table, seed_list)}**",
        "",
        *(f"- **{k}**: {v}" for k, v in STATUS.items()),
        "",
        "Pooled: the same sign test as within one draw (docs/outputs.md#claims-over-seeds) over "
        "every seed of every draw on which the figure's run is valid.",
        "",
        "| paper | figure | kind | claim | pooled | pooled seeds | status | verdict per draw | min "
        "| median | max | threshold | examined |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        cells = [
            r.paper, r.figure, r.kind, r.claim, r.pooled, r.pooled_seeds, r.status, r.verdicts,
            _fmt(r.value_min), _fmt(r.value_median), _fmt(r.value_max), r.threshold, r.examined,
        ]  # fmt: skip
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    done = table[table.examined != ""]
    if len(done):
        lines += ["", "## Seed-fragile claims examined", ""]
        lines += [f"- **{k}**: {v}" for k, v in OUTCOMES.items()]
        lines += [""] + [
            f"- {r.paper} {r.figure} `{r.claim}` ({r.status}, {r.seeds_passed}): {r.examination}"
            for r in done.itertuples()
        ]
    Path(md_path).write_text("\n".join(lines) + "\n")
    return table


def figure_notes(table: pd.DataFrame, seeds: list[int]) -> dict[tuple[str, str], str]:
    """For each figure of ``table`` (:func:`robustness_table`), the lines its report caption adds
    once the robustness table exists: its paper claims' pooled verdicts over every seed of every
    draw, how many hold on every draw, and which claims change verdict between draws, fail or are
    inconclusive on every draw where the run is valid, or are void on some draw (their figure's
    run failed a sanity check there)."""
    seed_text = ", ".join(map(str, seeds))
    notes = {}
    for (paper, figure), t in table.groupby(["paper", "figure"], sort=False):
        head = f"**Over the draws** of seed shifts {seed_text} (``snakemake robustness``): "
        if t.status.str.startswith("once").all():
            notes[(paper, figure)] = head + "no seed redraws this figure; measured once.\n"
            continue
        p = t[t.kind == "paper"]
        pool = p["pooled"] if "pooled" in p else pd.Series("", index=p.index)
        lines = [head + f"pooled over their seeds, {(pool == 'passed').sum()}/{len(p)} paper "
                 f"claims hold, {(pool == 'failed').sum()} fail, "
                 f"{(pool == 'inconclusive').sum()} inconclusive; "
                 f"{(p.status == 'holds').sum()}/{len(p)} hold on every draw."]  # fmt: skip
        for r in t[t.status.isin(["fragile", "rate-holds", "rate-fails"])].itertuples():
            lines.append(
                f"``{r.claim}`` ({r.kind}) changes verdict between draws ({r.verdicts}); pooled "
                f"{r.pooled} ({r.pooled_seeds})"
                + (f"; {STATUS[r.status]}" if r.status != "fragile" else "")
                + (f".  Examined {getattr(r, 'examination', '')}" if getattr(r, "examined", "")
                   else ".")
            )  # fmt: skip
        void_n = t["void"] if "void" in t else pd.Series(0, index=t.index)
        for status, what in (("fails", "Fail"), ("inconclusive", "Inconclusive")):
            part = t.status == status
            for sub, words in ((part & (void_n == 0), "every draw"),
                               (part & (void_n > 0), "every valid draw")):  # fmt: skip
                if sub.any():
                    names = ", ".join(f"``{c}``" for c in t.claim[sub])
                    lines.append(f"{what} on {words}: {names}.")
        void = t[void_n > 0]
        if len(void):
            lines.append(
                "Void (the figure's run failed a sanity check): "
                + ", ".join(f"``{c}`` on draw {on}" for c, on in zip(void.claim, void.void_on,
                                                                     strict=True)) + "."
            )  # fmt: skip
        notes[(paper, figure)] = "  ".join(lines) + "\n"
    return notes
