"""Gather every claim JSON into results/claims/summary.{md,csv}."""

from attnbias.claims.summary import write_summary
from attnbias.workflow import rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    n_fail = write_summary(list(snakemake.input), snakemake.output.md, snakemake.output.csv)  # noqa: F821
    log.info("%d failed claims", n_fail)
