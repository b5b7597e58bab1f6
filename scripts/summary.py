"""Gather every claim JSON into <results>/claims/summary.{md,csv,html} (paper claims first, counted
passed / failed / void; sanity checks separately; identities listed but not counted) and write the
report's landing page (attnbias.claims.landing), with the robustness table if one was made."""

from attnbias.claims.landing import write_landing
from attnbias.claims.summary import write_summary
from attnbias.workflow import rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    out, p = snakemake.output, snakemake.params  # noqa: F821
    n_fail = write_summary(list(snakemake.input), out.md, out.csv, p.shows, out.html)  # noqa: F821
    log.info("%d failed claims (paper, sanity or identity; see %s)", n_fail, out.md)
    png = p.figures + "/{paper}/{fig}.png"
    write_landing(out.landing, out.csv, p.robustness, png, p.shows.get("label"))
    log.info("wrote the report's landing page %s", out.landing)
