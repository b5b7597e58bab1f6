"""The verdict of each of a figure's claims (:func:`verdicts`) and, for a void one, why
(:func:`void_causes`): the one place where a failed sanity or regime check, or a positive control
that fails its test too, voids a paper claim (docs/outputs.md#claims-and-their-kinds).  Records
are claim dictionaries as in a claim file (``kind``, ``id``, ``passed`` and, over seeds,
``outcome``; a paper claim's ``positive_control``); :mod:`attnbias.claims.core` re-exports
these functions."""

from __future__ import annotations

import math

# the kinds judged over seeds by the sign test (the others must hold on every seed)
SIGN_TESTED = ("paper", "control")
# the kinds whose failure voids a figure's paper claims
VALIDITY = ("sanity", "regime")


def _num(v) -> str:
    """A value as a reason shows it: numbers to 3 significant digits, signed when any could be
    negative; other values by their outcome only."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return "…"
    return f"{v:+.3g}" if math.isfinite(v) else "nan"


def applies(check, claim) -> bool:
    """Whether a sanity or regime check bears on a claim: a check of no ``part`` bears on every
    claim of its figure, one of a part (lowrank Fig 3's "lm" or "vit") on that part's claims and
    on the figure's claims of no part."""
    return check.get("part") is None or claim.get("part") in (None, check.get("part"))


def failed_sanity(claims, claim=None) -> list[str]:
    """The ids of the failed sanity checks among one figure's claims (records with ``kind``, ``id``
    and ``passed``, as in a claim file): the checks that make its paper claims void; with
    ``claim``, only those that bear on it (:func:`applies`)."""
    return [c["id"] for c in claims if c["kind"] == "sanity" and not c["passed"]
            and (claim is None or applies(c, claim))]  # fmt: skip


def failed_regime(claims, claim=None) -> list[str]:
    """The ids of the failed regime checks among one figure's claims: the experiment did not reach
    the regime the paper's mechanism needs, so its paper claims are void; with ``claim``, only
    those that bear on it (:func:`applies`)."""
    return [c["id"] for c in claims if c["kind"] == "regime" and not c["passed"]
            and (claim is None or applies(c, claim))]  # fmt: skip


def _outcome(c) -> str:
    return c.get("outcome") or ("passed" if c["passed"] else "failed")


def _checks(kind: str, ids) -> str:
    return f"the {kind} check{'s' if len(ids) > 1 else ''} {', '.join(ids)}"


def void_causes(claims) -> list[str | None]:
    """Why each of one figure's claims is void, in words (``None`` for a claim that is not).

    In order of precedence: a **paper** claim or positive control of a figure whose run failed a
    sanity check (the run is not valid) or a regime check (the experiment has not reached the
    regime the paper's mechanism needs); then a paper claim that does not pass while its positive
    control (``positive_control``: the same test applied to the paper's reference) does not pass
    either: the test cannot show the effect at this budget, so it can fail no claim.  A paper
    claim that passes stands whatever its control.  Checks and identities are never void.  Where a
    figure holds two experiments, a check of one part voids only that part's claims
    (:func:`applies`)."""
    claims = list(claims)
    by_id = {c["id"]: c for c in claims}
    out: list[str | None] = []
    for c in claims:
        sanity, regime = failed_sanity(claims, c), failed_regime(claims, c)
        if c["kind"] not in SIGN_TESTED:
            out.append(None)
        elif sanity:
            out.append(f"void: its figure's run failed {_checks('sanity', sanity)}, so it is not "
                       "evidence")  # fmt: skip
        elif regime:
            out.append(f"void: its figure's run has not reached the regime the paper's mechanism "
                       f"needs ({_checks('regime', regime)} failed), so it measures the budget, "
                       "not the paper")  # fmt: skip
        elif (c["kind"] == "paper" and c.get("positive_control") and _outcome(c) != "passed"
              and _outcome(ctrl := by_id[c["positive_control"]]) != "passed"):  # fmt: skip
            measured = (f" ({_num(ctrl['value'])} against {ctrl['threshold']})"
                        if "value" in ctrl else "")  # fmt: skip
            out.append(f"void: not testable at this budget: the same test applied to the paper's "
                       f"reference, the positive control {ctrl['id']}, is {_outcome(ctrl)} too"
                       f"{measured}, so it cannot fail the paper")  # fmt: skip
        else:
            out.append(None)
    return out


def void_checks(claims) -> list[str]:
    """The ids of the checks (sanity, regime, positive control) that void each of one figure's
    claims, comma-joined per claim ("" where none), in the precedence of :func:`void_causes`."""
    claims = list(claims)
    out = []
    for c, cause in zip(claims, void_causes(claims), strict=True):
        checks = failed_sanity(claims, c) or failed_regime(claims, c) or [c.get("positive_control")]
        out.append("" if cause is None else ", ".join(checks))
    return out


def verdicts(claims) -> list[str]:
    """The verdict of each of one figure's claims (records with ``kind``, ``id``, ``passed`` and,
    over seeds, ``outcome`` and ``positive_control``), in order: one of :data:`VERDICTS`.

    A paper claim or positive control is ``void`` when a sanity or regime check of the same figure
    failed, and a paper claim also when it does not pass and neither does its positive control
    (:func:`void_causes` says why); else its outcome: ``passed`` / ``failed`` as measured, or
    ``inconclusive`` when it was judged over seeds that did not resolve it (:func:`over_seeds`).
    Checks and identities keep their measured outcome.
    """
    claims = list(claims)
    out = []
    for c, cause in zip(claims, void_causes(claims), strict=True):
        if cause is not None:
            out.append("void")
        elif c.get("outcome") == "inconclusive":
            out.append("inconclusive")
        else:
            out.append("passed" if c["passed"] else "failed")
    return out


