"""Claim records: what a figure asserts, what was measured, and the verdict.

A claim JSON (``results/claims/<paper>/<fig>.json``) has the shape

    {"paper", "figure", "preset", "claims": [{"id", "statement", "value", "threshold", "passed"}]}

Check functions for each paper live in ``attnbias.claims.<paper>`` and are shared by the
workflow's claim rules and the tests, so "what the figure claims" has one implementation.
"""

from __future__ import annotations

import json
import math
import operator
from dataclasses import asdict, dataclass
from pathlib import Path

from ..io import jsonable

_OPS = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
}


@dataclass
class Claim:
    id: str
    statement: str
    value: object
    threshold: object
    passed: bool

    def to_dict(self) -> dict:
        d = asdict(self)
        d["passed"] = bool(self.passed)
        return jsonable(d)


def compare(cid: str, statement: str, value: float, op: str, threshold: float) -> Claim:
    """A scalar claim ``value <op> threshold``; threshold is recorded as e.g. "> 0.999"."""
    value = float(value)
    passed = bool(math.isfinite(value) and _OPS[op](value, threshold))
    return Claim(cid, statement, value, f"{op} {threshold:g}", passed)


def within(cid: str, statement: str, value, target, tol: float) -> Claim:
    """max |value − target| ≤ tol (vectors allowed)."""
    import numpy as np

    v = np.atleast_1d(np.asarray(value, dtype=float))
    t = np.atleast_1d(np.asarray(target, dtype=float))
    err = float(np.max(np.abs(v - t)))
    return Claim(
        cid,
        statement,
        v.tolist(),
        f"|· − {t.tolist()}| ≤ {tol:g} (max error {err:.2e})",
        bool(err <= tol),
    )


def holds(cid: str, statement: str, value, passed: bool, threshold: str = "true") -> Claim:
    """A structural claim whose verdict is computed by the caller."""
    return Claim(cid, statement, value, threshold, bool(passed))


def write_claims(path, paper: str, figure: str, preset: str, claims: list[Claim]) -> dict:
    doc = {
        "paper": paper,
        "figure": figure,
        "preset": preset,
        "claims": [c.to_dict() for c in claims],
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return doc


def read_claims(path) -> dict:
    return json.loads(Path(path).read_text())
