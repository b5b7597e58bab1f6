"""Gather every claim JSON into <results>/claims/summary.{md,csv}: paper claims first, sanity
checks separately, identities listed but not counted."""

from attnbias.claims.summary import write_summary
from attnbias.workflow import rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    out = snakemake.output  # noqa: F821
    n_fail = write_summary(list(snakemake.input), out.md, out.csv, snakemake.params.shows)  # noqa: F821
    log.info("%d failed claims (paper, sanity or identity; see %s)", n_fail, out.md)
