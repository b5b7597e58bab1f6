"""Training rule entry point: the runs of the job's batch (one run, or a group run in turn in this
one process) trained and saved in the job's folder ``output.runs`` (attnbias.runs.train_runs)."""

from attnbias.workflow import limit_threads, named_inputs, rule_logging

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake; before torch's import)

from attnbias.runs import drop_runs_state, train_runs  # noqa: E402

with rule_logging(snakemake) as log:  # noqa: F821
    p = snakemake.params  # noqa: F821
    inputs = named_inputs(snakemake.input)  # noqa: F821
    inputs.pop("shared", None)  # the uncontrolled runs, read by their folders in p.runs
    train_runs(p.func, p.runs, snakemake.output.runs, inputs, p.preset, p.accelerator, log,  # noqa: F821
               threads=snakemake.threads)  # noqa: F821
    # the outputs are safe: every run's resume state goes
    drop_runs_state(p.runs, log)
