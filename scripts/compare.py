"""Compare rule entry point: the claims of the figures a change touches beside the reference
run's (attnbias.claims.comparison), and each such figure beside the reference's
(attnbias.plotting.compare)."""

from attnbias.claims.comparison import comparison, write_comparison
from attnbias.plotting.compare import figure_pair
from attnbias.workflow import rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    out, about = snakemake.output, dict(snakemake.params.about)  # noqa: F821
    figures = [tuple(k) for k in about.pop("figures")]
    df = comparison(about["reference"], about["other"], figures)
    write_comparison(df, about, out.md, out.csv, out.html, pictures=out.pairs)
    log.info("%d claims of %d figures compared; %d changed verdict", len(df), len(figures),
             int(df.verdict_changed.sum()))  # fmt: skip
    for paper, fig in figures:
        figure_pair(
            f"{about['reference']}/figures/{paper}/{fig}.png",
            f"{about['other']}/figures/{paper}/{fig}.png",
            f"reference run ({about['reference']}/)",
            f"this run: {about['label']}",
            f"{out.pairs}/{paper}/{fig}.png",
        )
    log.info("wrote %s, %s and %d figure pairs in %s", out.md, out.csv, len(figures), out.pairs)
# on the console (Snakemake shows a job's stdout; the log above has the rest): where to look
changed = int(df.verdict_changed.sum())
print(f"compare: {len(df)} claims of {len(figures)} figure(s), {changed} changed verdict; read "
      f"{out.md} (pictures in {out.pairs}/)", flush=True)  # fmt: skip
