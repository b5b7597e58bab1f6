"""Gather rule entry point: run attnbias.experiments.<func>(parts=[...], **settings) on the run
files of a training sweep and save the plot-ready table.  ``parts`` are the runs' CSVs, found by
their stems (``params.runs``, in order) in the folders of the `train` jobs (``input.batches``),
then the runs the `extend` jobs of its grids trained (``input.extensions``; their records are
passed as ``extensions``)."""

from attnbias.workflow import limit_threads, resolve, rule_logging

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake)

from attnbias.io import save_data  # noqa: E402
from attnbias.runs import extension_runs, run_files  # noqa: E402

with rule_logging(snakemake) as log:  # noqa: F821
    p, inputs = snakemake.params, snakemake.input  # noqa: F821
    parts = run_files(inputs.batches, p.runs)
    extra = {}
    if len(getattr(inputs, "extensions", [])):  # it reads grids widened at an edge
        more, extra["extensions"] = extension_runs(inputs.extensions)
        parts += more
    log.info("gathering %d runs with %s %s (preset %s)", len(parts), p.func, dict(p.settings),
             p.preset)  # fmt: skip
    df, meta = resolve("attnbias.experiments", p.func)(**dict(p.settings), parts=parts, **extra)
    meta.setdefault("settings", dict(p.settings))
    save_data(df, meta, snakemake.output.csv, preset=p.preset)  # noqa: F821
    log.info("wrote %d rows to %s", len(df), snakemake.output.csv)  # noqa: F821
