"""Download rule entry point: fetch a hub dataset into the Hugging Face cache and leave a marker."""

from pathlib import Path

from attnbias.data.images import load_cifar10
from attnbias.workflow import rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    splits = load_cifar10(snakemake.params.source, limit_train=1, limit_test=1)  # noqa: F821
    Path(snakemake.output[0]).write_text(f"{snakemake.params.source} cached\n")  # noqa: F821
    log.info("dataset %s is in the Hugging Face cache", snakemake.params.source)  # noqa: F821
