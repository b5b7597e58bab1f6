"""Claim records: what a figure asserts, what was measured, and the verdict.

A claim JSON (``results/claims/<paper>/<fig>.json``) has the shape

    {"paper", "figure", "preset",
     "claims": [{"id", "kind", "statement", "value", "threshold", "passed"}]}

Every claim has a **kind** (:data:`KINDS`), chosen at the call site (no default):

- ``paper``: a statement the paper makes (or the project's reading of one,
  ``docs/papers/<key>.md``), measured on this run; it could fail if the paper were wrong in this
  setting.  Only these are evidence, and only on a valid run (see *verdicts* below).
- ``sanity``: the run is valid (it trained, converged, the solver's reference is feasible and
  accurate, the construction meets the theorem's hypothesis, a control can detect the effect).
  It can fail when the run is broken, but passing it says nothing about the paper.
- ``identity``: true by construction for any input (a triangle inequality, AM–GM, a square is
  non-negative).  Identities belong in unit tests; one kept in a claim file only documents a
  plotted bound and is never counted as evidence.

**Verdicts.**  A claim file keeps each claim's ``passed`` as measured.  What a claim *says* is its
verdict (:func:`verdicts`, the one place it is derived; the summary, the report captions, the strict
gate and the robustness table all use it): ``passed`` or ``failed`` as measured, except that
the paper claims of a figure whose run failed a sanity check (``measurable`` included: a figure
not measurable at its settings) are ``void``, neither evidence for the paper nor against it, and
name the failed checks (:func:`failed_sanity`).

Check functions for each paper live in ``attnbias.claims.<paper>`` and are shared by the
workflow's claim rules and the tests, so "what the figure claims" has one implementation.
"""

from __future__ import annotations

import json
import math
import operator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..io import jsonable

_OPS = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
}


KINDS = ("paper", "sanity", "identity")
VERDICTS = ("passed", "failed", "void")


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

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id!r}: kind {self.kind!r} is not one of {KINDS}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["passed"] = bool(self.passed)
        for k in ("seeds", "rule"):
            if d[k] is None:
                del d[k]
        return jsonable(d)


def seeds_needed(n: int) -> int:
    """How many of ``n`` seeds a paper claim must hold on (:func:`over_seeds`): at least two
    thirds, rounded up (2 of 3, 3 of 4, 4 of 5; every seed when there are fewer than 3)."""
    return n if n < 3 else -(-2 * n // 3)


def over_seeds(per_seed: dict, mean: list[Claim] | None) -> list[Claim]:
    """One figure's claims judged over its seeds, by the rule fixed before any run was measured
    (docs/outputs.md#claims-over-seeds):

    - a **sanity** check or identity holds only if it holds on every seed (each seed's run must be
      valid); its value is that of the first seed on which it failed, else of the first seed;
    - a **paper** claim holds if it holds on the seed-mean data (``mean``: the claims measured on
      the curves averaged over seeds) and on at least :func:`seeds_needed` of the seeds; its value
      is the seed mean's.  Without ``mean`` (``None``) the per-seed rule alone decides and the value
      is the median of the seeds' values.

    Parameters
    ----------
    per_seed : dict of int to list of Claim
        Each seed's claims, measured on that seed's runs alone; every seed has the same claim ids
        in the same order.
    mean : list of Claim or None
        The paper claims measured on the seed-mean data (sanity checks there are ignored).

    Returns
    -------
    list of Claim
        One claim per id, in the first seed's order, with ``seeds`` (every seed's value and
        outcome) and ``rule`` filled in.
    """
    seeds = sorted(per_seed)
    first = per_seed[seeds[0]]
    ids = [c.id for c in first]
    for s in seeds:
        if [c.id for c in per_seed[s]] != ids:
            raise ValueError(f"seed {s} has other claims than seed {seeds[0]}")
    on_mean = {c.id: c for c in (mean or [])}
    need = seeds_needed(len(seeds))
    out = []
    for i, cid in enumerate(ids):
        each = {s: per_seed[s][i] for s in seeds}
        record = {str(s): {"value": c.value, "passed": bool(c.passed)} for s, c in each.items()}
        held = sum(c.passed for c in each.values())
        base = first[i]
        if base.kind != "paper":
            failing = [c for c in each.values() if not c.passed]
            pick = failing[0] if failing else base
            out.append(Claim(cid, base.kind, pick.statement, pick.value, pick.threshold,
                             held == len(seeds), record, f"on every seed ({len(seeds)})"))
            continue
        m = on_mean.get(cid)
        if m is None and mean is not None:
            raise ValueError(f"paper claim {cid!r} was not measured on the seed-mean data")
        if m is not None:
            value, passed = m.value, bool(m.passed) and held >= need
            rule = f"on the seed mean and on at least {need} of {len(seeds)} seeds"
        else:
            vals = [c.value for c in each.values()]
            nums = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
            value = float(np.median(vals)) if nums else base.value
            passed, rule = held >= need, f"on at least {need} of {len(seeds)} seeds"
        # the statement of the seed mean (a seed's may name that seed's numbers)
        statement = m.statement if m is not None else base.statement
        out.append(Claim(cid, "paper", statement, value, base.threshold, passed, record,
                         rule))  # fmt: skip
    return out


def compare(
    cid: str, statement: str, value: float, op: str, threshold: float, *, kind: str
) -> Claim:
    """A scalar claim ``value <op> threshold``; threshold is recorded as e.g. "> 0.999".  A value
    that is not finite (NaN: nothing to measure) fails."""
    value = float(value)
    passed = bool(math.isfinite(value) and _OPS[op](value, threshold))
    return Claim(cid, kind, statement, value, f"{op} {threshold:g}", passed)


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
    cid: str, statement: str, value, passed: bool, threshold: str = "true", *, kind: str
) -> Claim:
    """A structural claim whose verdict is computed by the caller."""
    return Claim(cid, kind, statement, value, threshold, bool(passed))


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
    return over_seeds(per, [c for c in claims(mean_df, mean_meta) if c.kind == "paper"])


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


def failed_sanity(claims) -> list[str]:
    """The ids of the failed sanity checks among one figure's claims (records with ``kind``, ``id``
    and ``passed``, as in a claim file): the checks that make its paper claims void."""
    return [c["id"] for c in claims if c["kind"] == "sanity" and not c["passed"]]


def verdicts(claims) -> list[str]:
    """The verdict of each of one figure's claims (records with ``kind``, ``id`` and ``passed``),
    in order: one of :data:`VERDICTS`.

    A paper claim is ``void`` when a sanity check of the same figure failed (its run is not valid,
    so the claim is neither a pass nor a fail; :func:`failed_sanity` names the checks), else
    ``passed`` / ``failed`` as measured.  Sanity checks and identities keep their measured outcome.
    """
    claims = list(claims)
    void = bool(failed_sanity(claims))
    return [
        "void" if void and c["kind"] == "paper" else ("passed" if c["passed"] else "failed")
        for c in claims
    ]


def write_claims(
    path, paper: str, figure: str, preset: str, claims: list[Claim], control: str = "none"
) -> dict:
    """Write a figure's claim file.  ``control``: "null" when the data were made under the negative
    control (``--config control=null``): the paper claims are then expected to fail."""
    doc = {
        "paper": paper,
        "figure": figure,
        "preset": preset,
        "control": control,
        "claims": [c.to_dict() for c in claims],
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return doc


def read_claims(path) -> dict:
    return json.loads(Path(path).read_text())
