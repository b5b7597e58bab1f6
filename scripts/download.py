"""Download rule entry point: run attnbias.<func>(**settings), which fetches a hub dataset or model
into the Hugging Face cache (or prepares files from it in the folder beside the marker), and write
its manifest as the marker."""

from pathlib import Path

from attnbias.io import save_data
from attnbias.workflow import resolve, rule_logging

with rule_logging(snakemake) as log:  # noqa: F821 (injected by Snakemake)
    p = snakemake.params  # noqa: F821
    log.info("fetching with %s %s", p.func, dict(p.settings))
    out = snakemake.output  # noqa: F821
    extra = {"out_dir": str(Path(out.csv).with_suffix(""))} if p.prepares else {}
    df, meta = resolve("attnbias", p.func)(**dict(p.settings), **extra)
    meta.setdefault("settings", dict(p.settings))
    save_data(df, meta, out.csv, preset=p.preset)
    log.info("fetched: %s", df.to_dict("records"))
