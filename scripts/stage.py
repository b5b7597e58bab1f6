"""Stage rule entry point (rules `instance` and `svm`): run attnbias.experiments.<func> and save
the arrays it returns as an .npz (attnbias.io.save_arrays).  An `svm` job's function gets the
problem instance (input ``instance``, loaded) first; both get their own settings by name."""

from attnbias.workflow import limit_threads, resolve, rule_logging

limit_threads(snakemake.threads)  # noqa: F821 (injected by Snakemake)

from attnbias.io import load_arrays, save_arrays  # noqa: E402

with rule_logging(snakemake) as log:  # noqa: F821
    p = snakemake.params  # noqa: F821
    log.info("running %s with %s (preset %s)", p.func, dict(p.settings), p.preset)
    func = resolve("attnbias.experiments", p.func)
    inputs = snakemake.input  # noqa: F821
    before = [load_arrays(inputs.instance)] if "instance" in inputs.keys() else []
    arrays, doc = func(*before, **dict(p.settings))
    save_arrays(snakemake.output[0], arrays, doc)  # noqa: F821
    log.info("wrote %d arrays to %s", len(arrays), snakemake.output[0])  # noqa: F821
