"""Claim rule entry point: evaluate a figure's claims on its plot-ready data."""

from attnbias.claims import MEASUREMENT_ERRORS, not_measurable, write_claims
from attnbias.io import NotMeasurable, control_of, not_measurable_reason
from attnbias.workflow import call_figure, figure_data, rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    p = snakemake.params  # noqa: F821
    data = figure_data(snakemake.input.data)  # noqa: F821  {group: (df, meta)} by file stem
    try:
        for _, meta in data.values():  # a computation that could not make its data says why
            if not_measurable_reason(meta):
                raise NotMeasurable(not_measurable_reason(meta))
        claims = call_figure("claims", p.paper, p.figure, data)
    except MEASUREMENT_ERRORS as e:  # data too small for a statistic: recorded, not a crash
        log.exception("%s %s: the claims cannot be measured on these data", p.paper, p.figure)
        claims = not_measurable(e)
    preset = next(iter(data.values()))[1].get("provenance", {}).get("preset")
    control = "null" if any(control_of(m) == "null" for _, m in data.values()) else "none"
    out = snakemake.output.claims  # noqa: F821
    write_claims(out, p.paper, p.figure, preset, claims, control, p.run)
    for c in claims:
        verdict = "PASS" if c.passed else "FAIL"
        log.info("%s [%s] %s: %s (threshold %s)", verdict, c.kind, c.id, c.value, c.threshold)
