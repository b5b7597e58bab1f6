"""Gather rule entry point: run attnbias.experiments.<func>(parts=[...], **settings) on the run
files of a training sweep and save the plot-ready table.  ``parts`` are the runs' CSVs, found by
their stems (``params.runs``, in order) in the folders of the `train` jobs (``input.batches``)."""

from attnbias.workflow import limit_threads, resolve, rule_logging, run_files

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake)

from attnbias.io import save_data  # noqa: E402

with rule_logging(snakemake) as log:  # noqa: F821
    p = snakemake.params  # noqa: F821
    parts = run_files(snakemake.input.batches, p.runs)  # noqa: F821
    log.info("gathering %d runs with %s %s (preset %s)", len(parts), p.func, dict(p.settings),
             p.preset)  # fmt: skip
    df, meta = resolve("attnbias.experiments", p.func)(**dict(p.settings), parts=parts)
    meta.setdefault("settings", dict(p.settings))
    save_data(df, meta, snakemake.output.csv, preset=p.preset)  # noqa: F821
    log.info("wrote %d rows to %s", len(df), snakemake.output.csv)  # noqa: F821
