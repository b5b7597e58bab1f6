"""Claim rule entry point: evaluate a figure's claims on its plot-ready data."""

from attnbias.claims import write_claims
from attnbias.io import control_of, load_data
from attnbias.workflow import resolve, rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    p = snakemake.params  # noqa: F821
    csvs = [f for f in snakemake.input.data if f.endswith(".csv")]  # noqa: F821
    data = [load_data(f) for f in csvs]
    claims = resolve("attnbias.claims", f"{p.paper}.check")(p.figure, *data)
    preset = data[0][1].get("provenance", {}).get("preset")
    control = "null" if any(control_of(m) == "null" for _, m in data) else "none"
    write_claims(snakemake.output.claims, p.paper, p.figure, preset, claims, control)  # noqa: F821
    for c in claims:
        verdict = "PASS" if c.passed else "FAIL"
        log.info("%s [%s] %s: %s (threshold %s)", verdict, c.kind, c.id, c.value, c.threshold)
