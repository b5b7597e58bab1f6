"""Training rule entry point: run attnbias.experiments.<func>(**settings) with an undeclared resume
checkpoint, then save each returned plot-ready table to the output of the same name."""

from attnbias.workflow import limit_threads, resolve, rule_logging

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake)

from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from attnbias.io import save_data  # noqa: E402

torch.set_num_threads(snakemake.threads)  # noqa: F821

with rule_logging(snakemake) as log:  # noqa: F821
    p = snakemake.params  # noqa: F821
    log.info(
        "training %s with %s (preset %s), checkpoint %s",
        p.func,
        dict(p.settings),
        p.preset,
        p.checkpoint,
    )
    tables = resolve("attnbias.experiments", p.func)(
        **dict(p.settings),
        checkpoint=p.checkpoint,
        metrics_log=p.metrics_log,
        accelerator=p.accelerator,
    )
    for name, (df, meta) in tables.items():
        meta.setdefault("settings", dict(p.settings))
        save_data(df, meta, snakemake.output[name], preset=p.preset)  # noqa: F821
        log.info("wrote %s (%d rows)", snakemake.output[name], len(df))  # noqa: F821
    # The outputs are safe: drop the resume checkpoint, so a later rerun (e.g. after a code change,
    # which the checkpoint's settings fingerprint cannot see) trains afresh instead of "resuming"
    # a finished run.
    Path(p.checkpoint).unlink(missing_ok=True)
    log.info("removed the finished run's checkpoint %s", p.checkpoint)
