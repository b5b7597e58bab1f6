"""Plot rule entry point: draw a figure from plot-ready data only, and write its report caption."""

from attnbias.claims import read_claims
from attnbias.io import load_data
from attnbias.plotting import mark_control, render_caption, save_figure
from attnbias.workflow import resolve, rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    p, inp, out = snakemake.params, snakemake.input, snakemake.output  # noqa: F821
    data = [load_data(f) for f in inp.data if f.endswith(".csv")]
    fig = resolve("attnbias.plotting", f"{p.paper}.plot")(p.figure, *data)
    claims = read_claims(inp.claims)
    if claims.get("control", "none") != "none":
        mark_control(fig, resolve("attnbias.plotting", f"{p.paper}.CONTROL_NOTES")[p.figure])
    save_figure(fig, out.pdf, out.png)
    render_caption(inp.caption, claims, data[0][1], out.caption)
    log.info("wrote %s, %s and %s", out.pdf, out.png, out.caption)
