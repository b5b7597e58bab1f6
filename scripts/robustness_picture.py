"""Entry point of the rule `robustness_picture`: a paper's claims × seeds, its report caption, and
one note per figure for the figure's own report caption."""

from pathlib import Path

import pandas as pd

from attnbias.claims.robustness import figure_notes, with_verdicts
from attnbias.io import load_data
from attnbias.plotting.robustness import robustness_caption, robustness_grid
from attnbias.plotting.style import save_figure
from attnbias.workflow import rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    p, inp, out = snakemake.params, snakemake.input, snakemake.output  # noqa: F821
    seeds = pd.concat([load_data(f)[0] for f in inp.tables], ignore_index=True)
    seed_list = sorted(int(s) for s in seeds.seed.unique())
    save_figure(robustness_grid(with_verdicts(seeds), p.paper), out.pdf, out.png)
    table = pd.read_csv(inp.summary, keep_default_na=False)
    with open(out.caption, "w") as fh:
        fh.write(robustness_caption(table, p.paper, seed_list))
    # each figure's caption shows its line (workflow/report/figure.rst reads <notes>/<fig>.rst)
    Path(out.notes).mkdir(parents=True, exist_ok=True)
    for (_, fig), note in figure_notes(table[table.paper == p.paper], seed_list).items():
        (Path(out.notes) / f"{fig}.rst").write_text(note)
    log.info("wrote %s, %s and the figures' notes in %s", out.pdf, out.caption, out.notes)
