"""Entry point of the rule `robustness_summary`: the robustness table over seeds
(attnbias.claims.robustness.write_robustness) of every paper, or of one, its report caption, and
the report's landing page with it (attnbias.claims.landing; with the run's claims summary if it
exists)."""

import pandas as pd

from attnbias.claims.landing import write_landing
from attnbias.claims.robustness import headline, write_robustness
from attnbias.io import load_data
from attnbias.workflow import rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    seeds = pd.concat([load_data(f)[0] for f in snakemake.input.tables], ignore_index=True)  # noqa: F821
    out = snakemake.output  # noqa: F821
    p = snakemake.params  # noqa: F821
    table = write_robustness(seeds, out.md, out.csv, p.shows, dict(p.examined))
    seed_list = sorted(int(s) for s in seeds.seed.unique())
    with open(out.headline, "w") as fh:  # the report's caption of the table
        fh.write(
            f"**Robustness over seeds.**  {headline(table, seed_list)}  One row per claim: its "
            "verdict pooled over every seed of every valid draw (the sign test of a single draw, "
            "docs/outputs.md#claims-over-seeds), its verdict on each draw (passed, failed, "
            "inconclusive or void: its figure's run failed a sanity check on that draw) and the "
            "min / median / max of its value; seed-fragile claims (whose verdict differs between "
            "draws) first.  Figures no seed redraws are measured once.\n"
        )
    write_landing(out.landing, p.summary, out.csv, p.figures + "/{paper}/{fig}.png")
    log.info("%d claims over seeds %s", len(table), seed_list)
