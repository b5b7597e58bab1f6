"""Compute rule entry point: run attnbias.experiments.<func>(**settings, **inputs) and save the
plot-ready data.  Named inputs other than ``code`` reach the function by name (a list of paths,
or one path), so experiment code never takes file paths from params; the stage products
``instance`` and ``svm`` (rules `instance`, `svm`) arrive loaded (attnbias.io.load_arrays)."""

from attnbias.workflow import limit_threads, named_inputs, resolve, rule_logging

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake)

from attnbias.io import load_arrays, save_data  # noqa: E402

with rule_logging(snakemake) as log:  # noqa: F821
    p = snakemake.params  # noqa: F821
    inputs = named_inputs(snakemake.input)  # noqa: F821
    stages = {k: load_arrays(inputs.pop(k)) for k in ("instance", "svm") if k in inputs}
    log.info("computing %s with %s (preset %s)", p.func, dict(p.settings), p.preset)
    df, meta = resolve("attnbias.experiments", p.func)(**stages, **dict(p.settings), **inputs)
    meta.setdefault("settings", dict(p.settings))
    save_data(df, meta, snakemake.output.csv, preset=p.preset)  # noqa: F821
    log.info("wrote %d rows to %s", len(df), snakemake.output.csv)  # noqa: F821
