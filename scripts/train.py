"""Training rule entry point: run attnbias.experiments.<func>(**settings, **inputs) with an
undeclared resume checkpoint, then save each returned plot-ready table: to the output of the same
name, or, for a run returning one table, to ``csv``."""

from attnbias.workflow import limit_threads, named_inputs, resolve, rule_logging

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake)

from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from attnbias.io import save_data  # noqa: E402

torch.set_num_threads(snakemake.threads)  # noqa: F821

with rule_logging(snakemake) as log:  # noqa: F821
    p, out = snakemake.params, snakemake.output  # noqa: F821
    inputs = named_inputs(snakemake.input)  # noqa: F821
    log.info("training %s with %s (preset %s), checkpoint %s", p.func, dict(p.settings), p.preset,
             p.checkpoint)  # fmt: skip
    tables = resolve("attnbias.experiments", p.func)(
        **dict(p.settings), **inputs, checkpoint=p.checkpoint, metrics_log=p.metrics_log,
        accelerator=p.accelerator,
    )  # fmt: skip
    names = list(out.keys())
    for name, (df, meta) in tables.items():
        target = out[name] if name in names else out["csv"]
        meta.setdefault("settings", dict(p.settings))
        save_data(df, meta, target, preset=p.preset)
        log.info("wrote %s (%d rows)", target, len(df))
    # The outputs are safe: drop the resume checkpoint, so a later rerun (e.g. after a code change,
    # which the checkpoint's settings fingerprint cannot see) trains afresh instead of "resuming"
    # a finished run.
    Path(p.checkpoint).unlink(missing_ok=True)
    log.info("removed the finished run's checkpoint %s", p.checkpoint)
