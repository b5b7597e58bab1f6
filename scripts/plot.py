"""Plot rule entry point: draw a figure from plot-ready data only, and write its report caption
(``workflow/report/<paper>_<fig>.rst``, or else the plotting function's docstring)."""

from attnbias.claims import MEASUREMENT_ERRORS, is_not_measurable, read_claims
from attnbias.claims.caption import render_caption
from attnbias.io import NotMeasurable, not_measurable_reason
from attnbias.plotting import (
    docstring_caption,
    mark_control,
    mark_run,
    not_measurable_figure,
    save_figure,
)
from attnbias.workflow import call_figure, figure_data, figure_function, resolve, rule_logging

with rule_logging(snakemake) as log:  # noqa: F821
    p, inp, out = snakemake.params, snakemake.input, snakemake.output  # noqa: F821
    data = figure_data(inp.data)  # {group: (df, meta)}, the groups named by the file stems
    claims = read_claims(inp.claims)
    try:
        for _, meta in data.values():  # a computation that could not make its data says why
            if not_measurable_reason(meta):
                raise NotMeasurable(not_measurable_reason(meta))
        fig = call_figure("plotting", p.paper, p.figure, data)
    except MEASUREMENT_ERRORS as e:  # only data its claims could not measure either: else a bug
        if not is_not_measurable(claims):
            raise
        log.exception("%s %s: not drawable at these settings", p.paper, p.figure)
        fig = not_measurable_figure(f"{p.paper} {p.figure}", f"{type(e).__name__}: {e}")
    if claims.get("control", "none") != "none":
        mark_control(fig, resolve("attnbias.plotting", f"{p.paper}.CONTROL_NOTES")[p.figure])
    if p.run:  # a custom run or seed shift: its figures say so
        mark_run(fig, p.run["label"])
    save_figure(fig, out.pdf, out.png)
    # the caption file, or (none written) the first paragraph of the plotting function's docstring
    template = next(iter(inp.caption), None)  # a list of none or one file
    text = None if template else docstring_caption(figure_function("plotting", p.paper, p.figure))
    render_caption(template, claims, next(iter(data.values()))[1], out.caption, text=text)
    log.info("wrote %s, %s and %s", out.pdf, out.png, out.caption)
