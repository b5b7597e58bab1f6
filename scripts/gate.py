"""claims_strict: fail the run when any paper claim or sanity check failed (or an identity: a
bug); a void paper claim (its figure failed a sanity check) is counted apart, its failed sanity
check being the violation.  The summary itself is kept."""

from attnbias.claims.summary import gate
from attnbias.workflow import rule_logging

with rule_logging(snakemake):  # noqa: F821
    gate(snakemake.input[0], snakemake.output[0])  # noqa: F821
