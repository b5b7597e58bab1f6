"""Claim records: what a figure asserts, what was measured, and the verdict.

A claim JSON (``results/claims/<paper>/<fig>.json``) has the shape

    {"paper", "figure", "preset",
     "claims": [{"id", "kind", "statement", "value", "threshold", "passed", "verdict",
                 "reason", ("seeds", "rule", "outcome" over seeds)}]}

Every claim has a **kind** (:data:`KINDS`), chosen at the call site (no default):

- ``paper``: a statement the paper makes (or the project's reading of one,
  ``docs/papers/<key>.md``), measured on this run; it could fail if the paper were wrong in this
  setting.  Only these are evidence, and only on a valid run (see *verdicts* below).
- ``control``: a **positive control**, the paper claim's own test applied to the reference the
  paper names as showing the effect (fastrates: "resembling Adam": the test of SNGD against SGD
  applied to AdamW against SGD).  Judged over seeds like a paper claim, never evidence; a paper
  claim that does not pass while its control does not pass either is ``void`` ("not testable at
  this budget": the test cannot detect the effect even where the paper says it is).
- ``regime``: the experiment reached the regime in which the paper's mechanism acts (the
  baseline has learned, weight decay has acted, the late phase starts after the fit, a rank read
  at the end has settled), a check fixed in advance from the mechanism
  (``docs/papers/<key>.md``).  Judged on every seed like a sanity check; a failed one voids the
  figure's paper claims: the verdict would measure the stand-in's budget, not the paper.
- ``sanity``: the run is valid (it trained, converged, the solver's reference is feasible and
  accurate, the construction meets the theorem's hypothesis, a control can detect the effect).
  It can fail when the run is broken, but passing it says nothing about the paper.
- ``identity``: true by construction for any input (a triangle inequality, AM–GM, a square is
  non-negative).  Identities belong in unit tests; one kept in a claim file only documents a
  plotted bound and is never counted as evidence.

**Verdicts.**  A claim file keeps each claim's ``passed`` as measured and, for a claim judged over
seeds, its ``outcome`` (passed / failed / inconclusive, :func:`over_seeds`).  What a claim *says*
is its verdict (:func:`verdicts`, the one place it is derived; the summary, the report captions,
the strict gate and the robustness table all use it): ``passed``, ``failed`` or ``inconclusive``
as measured, except that the paper claims of a figure whose run failed a sanity check
(``measurable`` included: a figure not measurable at its settings) or a regime check are ``void``,
neither evidence for the paper nor against it, and name the failed checks (:func:`failed_sanity`,
:func:`failed_regime`); so is a paper claim that does not pass while its positive control
(``positive_control``) does not pass either (:func:`void_causes`).  Every claim
carries a ``reason`` generated from its values (:func:`reason`), written beside its verdict.

Check functions for each paper live in ``attnbias.claims.<paper>`` and are shared by the
workflow's claim rules and the tests, so "what the figure claims" has one implementation.
"""

from __future__ import annotations

import json
import math
import operator
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..io import jsonable
from .verdicts import (  # noqa: F401  (the verdict functions are read from here too)
    SIGN_TESTED,
    VALIDITY,
    _num,
    failed_regime,
    failed_sanity,
    verdicts,
    void_causes,
    void_checks,
)

_OPS = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
}


KINDS = ("paper", "control", "regime", "sanity", "identity")
VERDICTS = ("passed", "failed", "inconclusive", "void")
# The largest chance that a claim judged over seeds holds when its effect is nil: each seed is then
# equally likely to land on either side of the threshold (docs/outputs.md#claims-over-seeds).
FALSE_PASS = 1 / 8


@dataclass
class Claim:
    id: str
    kind: str
    statement: str
    value: object
    threshold: object
    passed: bool
    # a claim judged over several seeds (:func:`over_seeds`): each seed's value and outcome,
    # ``{"<seed>": {"value": ..., "passed": ...}}``, and the rule that combined them
    seeds: dict | None = None
    rule: str | None = None
    # over seeds: "passed", "failed" or "inconclusive" (:func:`over_seeds`; ``passed`` is then
    # ``outcome == "passed"``), and the reason in words, generated from the values
    outcome: str | None = None
    reason: str | None = None
    # a paper claim's positive control: the id of the ``control`` claim that applies its test to
    # the paper's reference (a paper claim that does not pass is void while its control does not
    # pass either)
    positive_control: str | None = None
    # the part of a figure a claim belongs to, where one figure holds two experiments (lowrank
    # Fig 3: "lm" and "vit"): a failed sanity or regime check of one part voids only that part's
    # claims (and the figure's claims of no part); a check of no part voids them all
    part: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id!r}: kind {self.kind!r} is not one of {KINDS}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["passed"] = bool(self.passed)
        for k in ("seeds", "rule", "outcome", "reason", "positive_control", "part"):
            if d[k] is None:
                del d[k]
        return jsonable(d)


def _binom_tail(n: int, k: int) -> float:
    """P[Binomial(n, 1/2) ≥ k]."""
    return sum(math.comb(n, j) for j in range(k, n + 1)) / 2**n


def seeds_needed(n: int, false_pass: float = FALSE_PASS) -> int:
    """How many of ``n`` seeds must agree for a claim judged over them to be resolved
    (:func:`over_seeds`): the smallest ``k`` with P[Binomial(n, ½) ≥ k] ≤ ``false_pass`` (a
    one-sided sign test), so that a claim with no effect at all, each seed equally likely on
    either side of its threshold, holds with probability at most ``false_pass``: 3 of 3, 4 of 4,
    5 of 5, 5 of 6, 6 of 7, 11 of 15.  With fewer than three seeds no count reaches 1/8: every seed
    (false-pass rate 1/2 or 1/4, :func:`false_pass_rate`)."""
    if n < 1:
        raise ValueError("a claim over seeds needs at least one seed")
    return next((k for k in range(n + 1) if _binom_tail(n, k) <= false_pass), n)


def false_pass_rate(n: int, false_pass: float = FALSE_PASS) -> float:
    """The chance that a claim with no effect holds over ``n`` seeds by :func:`seeds_needed`."""
    return _binom_tail(n, seeds_needed(n, false_pass))


def resolve(outcomes) -> str:
    """``"passed"``, ``"failed"`` or ``"inconclusive"`` from the seeds' outcomes (booleans): passed
    when at least :func:`seeds_needed` of them hold, failed when at least as many fail, else
    inconclusive (the seeds disagree more than chance allows)."""
    outcomes = [bool(x) for x in outcomes]
    n, k = len(outcomes), sum(outcomes)
    need = seeds_needed(n)
    return "passed" if k >= need else "failed" if n - k >= need else "inconclusive"


def seeds_to_resolve(seeds: dict, threshold, cap: int = 1000) -> dict:
    """An **estimate** of how many seeds the sign test (:func:`resolve`) would need to resolve a
    claim judged over ``seeds`` (``{seed: {"value", "passed"}}``, a claim's ``seeds``), at the
    observed effect and spread.

    The chance ``p`` that one more seed lands on the majority's side of the threshold is, where
    every value is a finite number, the threshold is one-sided (``"> t"``, ``"< t"``, …) and the
    values spread, a normal approximation: ``Φ(|mean − t| / sd)`` from the seeds' mean and
    standard deviation; otherwise the observed share of seeds on the majority's side.  The
    estimate is the smallest ``N`` with ``N·p ≥`` :func:`seeds_needed` ``(N)``: the seeds at which
    the agreement the test requires is the expected one (about an even chance of resolving; more
    seeds make it likelier).  ``p = ½`` (the seeds split evenly, or the mean sits on the
    threshold): no finite number.

    Returns
    -------
    dict
        ``n`` (the estimate, None for no finite number or more than ``cap``), ``p``, ``side``
        ("passed" or "failed": where the majority lies), ``method`` ("normal approximation" or
        "pass rate"), ``mean`` and ``sd`` (normal approximation only) and ``seeds`` (how many
        there are now).
    """
    runs = list(seeds.values())
    held = sum(bool(r["passed"]) for r in runs)
    vals = _numbers(r["value"] for r in runs)
    m = re.fullmatch(r"\s*(>=|<=|>|<)\s*([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*", str(threshold))
    out = dict(n=None, seeds=len(runs), mean=None, sd=None)
    if vals and len(vals) > 1 and m and all(math.isfinite(v) for v in vals):
        mean, sd = float(np.mean(vals)), float(np.std(vals, ddof=1))
        if sd > 0:
            z = (mean - float(m[2])) / sd * (1 if m[1].startswith(">") else -1)
            p_pass = 0.5 * (1 + math.erf(z / math.sqrt(2)))
            out.update(method="normal approximation", mean=mean, sd=sd)
    if "method" not in out:
        p_pass = held / max(1, len(runs))
        out["method"] = "pass rate"
    side = "passed" if p_pass >= 0.5 else "failed"
    p = max(p_pass, 1 - p_pass)
    out.update(p=p, side=side)
    if p - 0.5 > 1e-9:
        out["n"] = next((n for n in range(1, cap + 1) if n * p >= seeds_needed(n)), None)
    return out


def _numbers(values) -> list[float] | None:
    vals = list(values)
    if vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return [float(v) for v in vals]
    return None


def seeds_text(seeds: dict) -> str:
    """``0 ✓ +0.37, 1 ✗ +0.62, …`` (each seed's mark and value), then the mean and the range of
    the finite numbers: ``; mean +0.44, min–max +0.34 – +0.62``."""
    each = ", ".join(
        f"{s} {'✓' if r['passed'] else '✗'}"
        + ("" if _numbers([r["value"]]) is None else f" {_num(r['value'])}")
        for s, r in seeds.items()
    )
    nums = _numbers(r["value"] for r in seeds.values())
    finite = [v for v in nums or [] if math.isfinite(v)]
    if finite:
        each += (f"; mean {_num(float(np.mean(finite)))}, min–max {_num(min(finite))} – "
                 f"{_num(max(finite))}")  # fmt: skip
    return each


def reason(claim: dict, verdict: str | None = None, void_by=()) -> str:
    """Why a claim has its verdict, in words generated from its values: a claim measured once
    ("meets > 0 with +0.3"), over seeds (each seed's value and outcome, the mean and the range,
    the count the rule needs), or void (the failed sanity checks).

    Parameters
    ----------
    claim : dict
        A claim record (:meth:`Claim.to_dict`).
    verdict : str, optional
        Its verdict (:func:`verdicts`); default its measured outcome.
    void_by : str or sequence of str
        For a void claim: why (:func:`void_causes`, a sentence), or the failed sanity checks of its
        figure.
    """
    verdict = verdict or claim.get("outcome") or ("passed" if claim["passed"] else "failed")
    if verdict == "void":
        if isinstance(void_by, str) and void_by:
            return void_by
        checks = ", ".join(void_by) or "a sanity check"
        return f"void: its figure's run failed the sanity check {checks}, so it is not evidence"
    if claim.get("reason"):
        return claim["reason"]
    v, threshold = claim["value"], str(claim["threshold"])
    if threshold == "true":  # a structural claim (:func:`holds`) with no threshold of its own
        text = "holds" if claim["passed"] else "does not hold"
    else:
        text = f"{'meets' if claim['passed'] else 'misses'} {threshold}"
    if _numbers([v]) is not None:
        return f"{text} with {_num(v)}"
    return f"{text}: {v}" if isinstance(v, str) else text


def _seed_reason(kind: str, outcome: str, record: dict, need: int, mean: Claim | None) -> str:
    """The reason of a claim judged over seeds (:func:`over_seeds`)."""
    n, k = len(record), sum(r["passed"] for r in record.values())
    values = seeds_text(record)
    if kind not in SIGN_TESTED:
        return (f"holds on every seed ({n}): {values}" if outcome == "passed" else
                f"fails on {n - k} of {n} seeds (a valid run needs every seed): {values}")
    on_mean = "" if mean is None else (
        "; on the seed-mean data"
        + (f" {_num(mean.value)}" if _numbers([mean.value]) else "")
        + (" ✓" if mean.passed else " ✗")
    )
    if outcome == "passed":
        return f"holds on {k} of {n} seeds (needs {need}){on_mean}: {values}"
    if outcome == "failed":
        return f"fails on {n - k} of {n} seeds (needs {need}){on_mean}: {values}"
    by_seeds = "passed" if k >= need else "failed" if n - k >= need else None
    if by_seeds is not None:  # the seeds agree, the seed-mean data do not
        side = "hold" if by_seeds == "passed" else "fail"
        return (f"inconclusive: {max(k, n - k)} of {n} seeds {side} but the seed-mean data "
                f"disagree{on_mean}: {values}")  # fmt: skip
    return (f"inconclusive: seeds disagree ({k} hold, {n - k} fail; a verdict needs {need} of "
            f"{n}){on_mean}: {values}")  # fmt: skip


def over_seeds(per_seed: dict, mean: list[Claim] | None) -> list[Claim]:
    """One figure's claims judged over its seeds, by the rule fixed before any run was measured
    (docs/outputs.md#claims-over-seeds):

    - a **sanity** or **regime** check or an identity holds only if it holds on every seed (each
      seed's run must be valid and in the regime); its value is that of the first seed on which
      it failed, else of the first seed;
    - a **paper** claim is resolved by a sign test over the seeds (:func:`resolve`): it is
      ``passed`` when at least :func:`seeds_needed` of them hold (3 of 3) and the claim measured
      on the seed-mean data (``mean``) holds too, ``failed`` when as many fail and the seed-mean
      data fail too, and ``inconclusive`` otherwise: the seeds disagree, or the seed mean
      contradicts them.  With no effect at all it holds with probability at most
      :data:`FALSE_PASS`.  Its value is the seed mean's; without ``mean`` (``None``) the seeds
      alone decide and the value is the median of the seeds' values.  A positive control
      (kind ``control``) is judged by the same rule.

    Every claim gets its ``reason`` (each seed's value and outcome, mean and min–max, and the
    outcome in words).

    Parameters
    ----------
    per_seed : dict of int to list of Claim
        Each seed's claims, measured on that seed's runs alone; every seed has the same claim ids
        in the same order.
    mean : list of Claim or None
        The paper claims and positive controls measured on the seed-mean data (the checks there
        are ignored).

    Returns
    -------
    list of Claim
        One claim per id, in the first seed's order, with ``seeds`` (every seed's value and
        outcome), ``rule``, ``outcome`` and ``reason`` filled in.
    """
    seeds = sorted(per_seed)
    first = per_seed[seeds[0]]
    ids = [c.id for c in first]
    for s in seeds:
        if [c.id for c in per_seed[s]] != ids:
            raise ValueError(f"seed {s} has other claims than seed {seeds[0]}")
    on_mean = {c.id: c for c in (mean or [])}
    n = len(seeds)
    need = seeds_needed(n)
    out = []
    for i, cid in enumerate(ids):
        each = {s: per_seed[s][i] for s in seeds}
        record = {str(s): {"value": c.value, "passed": bool(c.passed)} for s, c in each.items()}
        held = sum(c.passed for c in each.values())
        base = first[i]
        if base.kind not in SIGN_TESTED:
            failing = [c for c in each.values() if not c.passed]
            pick = failing[0] if failing else base
            outcome = "passed" if held == n else "failed"
            out.append(Claim(cid, base.kind, pick.statement, pick.value, pick.threshold,
                             held == n, record, f"on every seed ({n})", outcome,
                             _seed_reason(base.kind, outcome, record, n, None),
                             base.positive_control))  # fmt: skip
            continue
        m = on_mean.get(cid)
        if m is None and mean is not None:
            raise ValueError(f"{base.kind} claim {cid!r} was not measured on the seed-mean data")
        outcome = resolve(c.passed for c in each.values())
        if m is not None:
            value = m.value
            if outcome != "inconclusive" and bool(m.passed) != (outcome == "passed"):
                outcome = "inconclusive"
            rule = (f"sign test: {need} of {n} seeds agree and the seed mean with them "
                    f"(false-pass rate ≤ {false_pass_rate(n):.3g})")  # fmt: skip
        else:
            vals = _numbers(c.value for c in each.values())
            value = float(np.median(vals)) if vals else base.value
            rule = (f"sign test: {need} of {n} seeds agree "
                    f"(false-pass rate ≤ {false_pass_rate(n):.3g})")  # fmt: skip
        # the statement of the seed mean (a seed's may name that seed's numbers)
        statement = m.statement if m is not None else base.statement
        out.append(Claim(cid, base.kind, statement, value, base.threshold, outcome == "passed",
                         record, rule, outcome,
                         _seed_reason("paper", outcome, record, need, m),
                         base.positive_control, base.part))  # fmt: skip
    return out


def compare(
    cid: str, statement: str, value: float, op: str, threshold: float, *, kind: str,
    positive_control: str | None = None,
) -> Claim:
    """A scalar claim ``value <op> threshold``; threshold is recorded as e.g. "> 0.999".  A value
    that is not finite (NaN: nothing to measure) fails.  ``positive_control``: the id of its
    positive control (a paper claim's, :data:`KINDS`)."""
    value = float(value)
    passed = bool(math.isfinite(value) and _OPS[op](value, threshold))
    return Claim(cid, kind, statement, value, f"{op} {threshold:g}", passed,
                 positive_control=positive_control)


def within(cid: str, statement: str, value, target, tol: float, *, kind: str) -> Claim:
    """max |value − target| ≤ tol (vectors allowed; an empty or non-finite value fails)."""
    import numpy as np

    v = np.atleast_1d(np.asarray(value, dtype=float))
    t = np.atleast_1d(np.asarray(target, dtype=float))
    err = float(np.max(np.abs(v - t))) if v.size and t.size else float("nan")
    return Claim(
        cid,
        kind,
        statement,
        v.tolist(),
        f"|· − {t.tolist()}| ≤ {tol:g} (max error {err:.2e})",
        bool(math.isfinite(err) and err <= tol),
    )


def holds(
    cid: str, statement: str, value, passed: bool, threshold: str = "true", *, kind: str,
    positive_control: str | None = None,
) -> Claim:
    """A structural claim whose verdict is computed by the caller."""
    return Claim(cid, kind, statement, value, threshold, bool(passed),
                 positive_control=positive_control)


def judged_over_seeds(
    claims, df, meta: dict, seed_meta=None, mean_data=None
) -> list[Claim]:
    """``claims(df, meta)`` judged over the seeds of a plot-ready table (column ``seed``) by
    :func:`over_seeds`: measured on each seed's rows (with ``seed_meta(meta, seed)``, default the
    meta as it is) and, for the paper claims, on ``mean_data(df, meta)`` (a ``(table, meta)``
    pair: the seed-mean data; default the table and meta as they are, for claims whose summaries
    are already means over equal rows per seed).  A table of one seed, or without seeds, is judged
    as it is."""
    seeds = sorted(int(x) for x in df["seed"].unique()) if "seed" in df.columns else []
    seed_meta = seed_meta or (lambda m, s: m)
    if len(seeds) < 2:
        return claims(df, seed_meta(meta, seeds[0]) if seeds else meta)
    per = {s: claims(df[df["seed"] == s], seed_meta(meta, s)) for s in seeds}
    mean_df, mean_meta = mean_data(df, meta) if mean_data else (df, meta)
    return over_seeds(per, [c for c in claims(mean_df, mean_meta) if c.kind in SIGN_TESTED])


# What a claim function raises when its data are too small for a statistic it computes (a window
# of steps that is empty, a fit with fewer points than parameters, ...): the figure is then recorded
# as not measurable at its settings, never as a crash.  A TypeError or AttributeError is a bug and
# is not caught.
MEASUREMENT_ERRORS = (ValueError, IndexError, ZeroDivisionError, FloatingPointError)
NOT_MEASURABLE = "measurable"


def not_measurable(error: BaseException) -> list[Claim]:
    """The claim list of a figure whose claims could not be computed on its data: one failed
    sanity check, ``measurable``, whose value is the reason (the error), so the summary, the
    strict gate and the report caption show it; the traceback is in the claim job's log."""
    return [
        Claim(
            NOT_MEASURABLE,
            "sanity",
            "The figure's claims can be measured on its data (its settings are large enough for "
            "every statistic the claims compute)",
            f"not measurable: {type(error).__name__}: {error}",
            "no error",
            False,
        )
    ]


def is_not_measurable(claims_doc: dict) -> bool:
    """Whether a claim file records its figure as not measurable (:func:`not_measurable`)."""
    return any(c["id"] == NOT_MEASURABLE and not c["passed"] for c in claims_doc["claims"])


def write_claims(
    path, paper: str, figure: str, preset: str, claims: list[Claim], control: str = "none",
    run: dict | None = None,
) -> dict:
    """Write a figure's claim file: every claim with its ``verdict`` (:func:`verdicts`) and the
    ``reason`` for it (:func:`reason`).  ``control``: "null" when the data were made under the
    negative control (``--config control=null``): the paper claims are then expected to fail or
    be inconclusive.  ``run``: what a run that is not the reference run is
    (:meth:`attnbias.run.Run.run_note`: ``label``, ``overrides`` — each ``{setting, default,
    used}`` —, ``seed``), recorded beside the claims; none for the reference run."""
    records = [c.to_dict() for c in claims]
    ids = [r["id"] for r in records]
    for r in records:
        if r.get("positive_control") and r["positive_control"] not in ids:
            raise ValueError(f"claim {r['id']!r}: its positive control {r['positive_control']!r} "
                             "is not a claim of the figure")  # fmt: skip
    for r, v, cause in zip(records, verdicts(records), void_causes(records), strict=True):
        r["verdict"], r["reason"] = v, reason(r, v, cause or ())
    doc = {
        "paper": paper,
        "figure": figure,
        "preset": preset,
        "control": control,
        **(run or {}),
        "claims": records,
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return doc


def read_claims(path) -> dict:
    return json.loads(Path(path).read_text())
