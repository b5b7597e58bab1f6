"""Compute rule entry point: run attnbias.experiments.<func>(**settings) and save the
plot-ready data."""

from attnbias.workflow import limit_threads, resolve, rule_logging

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake)

from attnbias.io import save_data  # noqa: E402

with rule_logging(snakemake) as log:  # noqa: F821
    p = snakemake.params  # noqa: F821
    log.info("computing %s with %s (preset %s)", p.func, dict(p.settings), p.preset)
    df, meta = resolve("attnbias.experiments", p.func)(**dict(p.settings))
    meta.setdefault("settings", dict(p.settings))
    save_data(df, meta, snakemake.output.csv, preset=p.preset)  # noqa: F821
    log.info("wrote %d rows to %s", len(df), snakemake.output.csv)  # noqa: F821
