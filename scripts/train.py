"""Training rule entry point: for each run of the job's batch (one run, or a group run in turn in
this one process), run attnbias.experiments.<func>(**settings, **inputs) with an undeclared resume
checkpoint, then save each returned table in the job's folder ``output.runs``: ``<run>.csv`` for a
run's one table (``"csv"``), ``<run>_<table>.csv`` for each of several (attnbias.workflow.run_file).
A run that the negative control trains as an uncontrolled run (``shared``: that run's folder, file
stem and relabelling function, attnbias.table ``Table.shared_run``) is that run, relabelled.
"""

from attnbias.workflow import (
    drop_run_state,
    finished_tables,
    keep_finished_tables,
    limit_threads,
    named_inputs,
    resolve,
    rule_logging,
    run_file,
)

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake)

import torch  # noqa: E402

from attnbias.io import load_data, save_data  # noqa: E402

torch.set_num_threads(snakemake.threads)  # noqa: F821

with rule_logging(snakemake) as log:  # noqa: F821
    p, folder = snakemake.params, snakemake.output.runs  # noqa: F821
    inputs = named_inputs(snakemake.input)  # noqa: F821
    inputs.pop("shared", None)  # the uncontrolled runs relabelled below
    func = resolve("attnbias.experiments", p.func)
    for run in p.runs:
        settings = dict(run["settings"])
        shared = run.get("shared")
        if shared:
            source = run_file(shared["folder"], shared["label"], "csv")
            relabel = resolve("attnbias.experiments", shared["relabel"])
            tables = relabel({"csv": load_data(source)}, settings)
            log.info("run %s: the uncontrolled run %s, relabelled (%s)", run["label"], source,
                     shared["relabel"])  # fmt: skip
        elif (tables := finished_tables(run["finished"], settings)) is not None:
            log.info("%s: reused the finished run's tables in %s", settings, run["finished"])
        else:
            log.info("run %s: training %s with %s (preset %s), checkpoint %s", run["label"], p.func,
                     settings, p.preset, run["checkpoint"])  # fmt: skip
            tables = func(
                **settings, **inputs, checkpoint=run["checkpoint"],
                metrics_log=run["metrics_log"], accelerator=p.accelerator,
            )  # fmt: skip
            for _, meta in tables.values():
                meta.setdefault("settings", settings)
            # kept until the whole job is done: a batched job killed later resumes after this run
            keep_finished_tables(run["finished"], settings, tables, p.preset)
        for name, (df, meta) in tables.items():
            target = run_file(folder, run["label"], name if len(tables) > 1 else "csv")
            save_data(df, meta, target, preset=p.preset)
            log.info("wrote %s (%d rows)", target, len(df))
    # The outputs are safe: drop every run's resume state, so a later rerun (e.g. after a code
    # change, which the checkpoint's settings fingerprint cannot see) trains afresh instead of
    # "resuming" a finished run.
    for run in p.runs:
        drop_run_state(run["checkpoint"], run["finished"])
        log.info("removed the finished run's checkpoint %s", run["checkpoint"])
