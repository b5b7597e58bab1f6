"""Entry point of the rules `instance`, `svm` and `compute`: run attnbias.experiments.<func> and
save what it returns.  Named inputs other than ``code`` reach the function by name (a list of
paths, or one path), so experiment code never takes file paths from params; the stage products
``instance`` and ``svm`` arrive loaded (attnbias.io.load_arrays; ``svm=None`` for the
trajectories of a group without an SVM stage).  A stage (output ``npz``)
returns ``(arrays, doc)``, saved by attnbias.io.save_arrays; a computation returns the plot-ready
``(DataFrame, meta)``, saved by attnbias.io.save_data.  A function that cannot make its data at
these settings raises attnbias.io.NotMeasurable: the job then writes an empty product recording the
reason, which the later stages pass on and the figure's claims and plot report."""

from attnbias.jobstats import log_startup
from attnbias.workflow import limit_threads, named_inputs, resolve, rule_logging

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake)

from attnbias.io import (  # noqa: E402
    NotMeasurable,
    load_arrays,
    not_measurable_reason,
    save_arrays,
    save_data,
)

with rule_logging(snakemake) as log:  # noqa: F821
    p = snakemake.params  # noqa: F821
    out = snakemake.output  # noqa: F821
    inputs = named_inputs(snakemake.input)  # noqa: F821
    stages = {k: load_arrays(inputs.pop(k)) for k in ("instance", "svm") if k in inputs}
    if "instance" in stages and "npz" not in out.keys():
        stages.setdefault("svm", None)  # the trajectories of a group without an SVM stage
    log.info("running %s with %s (preset %s)", p.func, dict(p.settings), p.preset)
    try:
        # an earlier stage that could not make its data passes its reason on
        for product in stages.values():
            if not_measurable_reason(product and product["__doc__"]):
                raise NotMeasurable(product["__doc__"]["not_measurable"])
        func = resolve("attnbias.experiments", p.func)
        log_startup(f"attnbias.experiments.{p.func}")
        if "npz" in out.keys():
            arrays, doc = func(**stages, **dict(p.settings), **inputs)
            save_arrays(out.npz, arrays, doc)
            log.info("wrote %d arrays to %s", len(arrays), out.npz)
        else:
            df, meta = func(**stages, **dict(p.settings), **inputs)
            meta.setdefault("settings", dict(p.settings))
            save_data(df, meta, out.csv, preset=p.preset)
            log.info("wrote %d rows to %s", len(df), out.csv)
    except NotMeasurable as e:  # recorded, and the figure's claims and plot say so
        log.warning("%s: no data at these settings: %s", p.func, e)
        reason = {"not_measurable": str(e)}
        if "npz" in out.keys():
            save_arrays(out.npz, {}, reason)
        else:
            import pandas as pd

            meta = dict(reason, columns={}, settings=dict(p.settings))
            save_data(pd.DataFrame(), meta, out.csv, preset=p.preset)
