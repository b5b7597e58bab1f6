"""Claim checks (one implementation shared by the workflow and the tests): ``claims.<paper>.<fig>``
(e.g. :func:`attnbias.claims.maxmargin.fig1a`) checks one figure, taking its data groups as named
``(DataFrame, meta)`` arguments and returning its list of :class:`Claim`.

No submodule is named after a function exported here: importing ``attnbias.claims.<name>`` binds
the package's attribute ``<name>`` to the module (two runs' claims side by side are
:mod:`attnbias.claims.comparison`, not ``claims.compare``, which would hide :func:`compare`)."""

from .core import (
    KINDS,
    MEASUREMENT_ERRORS,
    Claim,
    compare,
    holds,
    is_not_measurable,
    not_measurable,
    read_claims,
    within,
    write_claims,
)

__all__ = [
    "KINDS",
    "MEASUREMENT_ERRORS",
    "Claim",
    "compare",
    "holds",
    "is_not_measurable",
    "not_measurable",
    "read_claims",
    "within",
    "write_claims",
]
