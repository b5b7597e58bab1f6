"""A claim's margin to its threshold (:func:`margin`): how far its value lies on the passing or
the failing side, on one scale for claims of any size (the robustness table's colours,
:mod:`attnbias.claims.robustness`)."""

from __future__ import annotations

import math
import re

_COMPARE = re.compile(r"^\s*(>=|<=|>|<|==)\s*([-+0-9.eE]+|inf|nan)\s*$")
_WITHIN = re.compile(r"≤\s*([-+0-9.eE]+)\s*\(max error\s*([-+0-9.eEnainf]+)\)")


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return float("nan")
    return float(value)


def margin(value, threshold) -> float:
    """Signed distance of a claim's value from its threshold, relative to the larger of the two
    magnitudes, so claims of any scale share one colour scale.

    Parameters
    ----------
    value : object
        The claim's recorded value.
    threshold : str
        The claim's recorded threshold: ``"> 0.999"``-style comparisons
        (:func:`~attnbias.claims.core.compare`) and ``"|· − [..]| ≤ tol (max error e)"``
        tolerances (:func:`~attnbias.claims.core.within`) have a margin; structural claims do not.

    Returns
    -------
    float
        For ``value op t``: ``d / max(|value|, |t|)`` with ``d = value − t`` for ``>``/``>=``,
        ``t − value`` for ``<``/``<=`` and ``−|value − t|`` for ``==`` (so in [−2, 2], > 0 on the
        passing side of a strict inequality); for a tolerance ``(tol − e) / max(tol, e)``; NaN
        otherwise, or when the value is not a finite number.
    """
    threshold = str(threshold)
    m = _WITHIN.search(threshold)
    if m:
        tol, err = float(m.group(1)), float(m.group(2))
        scale = max(abs(tol), abs(err))
        return (tol - err) / scale if math.isfinite(err) and scale > 0 else float("nan")
    m = _COMPARE.match(threshold)
    v = _number(value)
    if not m or not math.isfinite(v):
        return float("nan")
    op, t = m.group(1), float(m.group(2))
    if not math.isfinite(t):
        return float("nan")
    d = {">": v - t, ">=": v - t, "<": t - v, "<=": t - v, "==": -abs(v - t)}[op]
    scale = max(abs(v), abs(t))
    return d / scale if scale > 0 else 0.0
