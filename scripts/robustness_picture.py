"""Entry point of the rule `robustness_picture`: a paper's claims × seeds and its report caption."""

import pandas as pd

from attnbias.io import load_data
from attnbias.plotting.robustness import robustness_caption, robustness_grid
from attnbias.plotting.style import save_figure
from attnbias.workflow import rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    p, inp, out = snakemake.params, snakemake.input, snakemake.output  # noqa: F821
    seeds = pd.concat([load_data(f)[0] for f in inp.tables], ignore_index=True)
    seed_list = sorted(int(s) for s in seeds.seed.unique())
    save_figure(robustness_grid(seeds, p.paper), out.pdf, out.png)
    table = pd.read_csv(inp.summary, keep_default_na=False)
    with open(out.caption, "w") as fh:
        fh.write(robustness_caption(table, p.paper, seed_list))
    log.info("wrote %s, %s", out.pdf, out.caption)
