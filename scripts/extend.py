"""Extend rule entry point: one grid of a training sweep (e.g. an optimiser's learning rates on
every seed), widened by one step where its choice sits at an edge.  ``params.judge`` (under
attnbias.experiments) reads the grid's runs and says which side, if any; the job then trains that
side's candidate runs (``params.candidates[side]``) into its folder, and records what it did
there (attnbias.runs.write_extension: the gather reads the record)."""

from attnbias.workflow import limit_threads, named_inputs, resolve, rule_logging

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake)

from attnbias.io import load_data  # noqa: E402
from attnbias.runs import drop_runs_state, run_files, train_runs, write_extension  # noqa: E402

with rule_logging(snakemake) as log:  # noqa: F821
    p, folder = snakemake.params, snakemake.output.runs  # noqa: F821
    inputs = named_inputs(snakemake.input)  # noqa: F821
    inputs.pop("batches")
    inputs.pop("shared", None)  # the uncontrolled runs, read by their folders in the candidates
    base = [load_data(f) for f in run_files(list(snakemake.input.batches), p.runs)]  # noqa: F821
    side = resolve("attnbias.experiments", p.judge)(base)
    runs = p.candidates[side] if side else []
    value = runs[0]["settings"][p.key] if runs else None
    log.info("grid %s: choice %s; %d runs added (%s = %s)", dict(p.group),
             f"at the {'low' if side == 'down' else 'high'} edge" if side else "inside",
             len(runs), p.key, value)  # fmt: skip
    if runs:
        train_runs(p.func, runs, folder, inputs, p.preset, p.accelerator, log,
                   threads=snakemake.threads)  # noqa: F821
    write_extension(folder, {
        "group": dict(p.group), "key": p.key, "side": side, "value": value,
        "runs": [r["label"] for r in runs],
    })  # fmt: skip
    drop_runs_state(runs, log)
