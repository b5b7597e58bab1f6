# What `all` and the paper aggregates (`maxmargin`, ...) build: every figure of the table, or under
# the negative control only those it reaches (CONTROLLED_DATA, figures.smk).  Functions only; the
# alias rules that use them are in figures.smk.


def shown_figures():
    """The figures a run builds (``all``, the paper aggregates, the claims summary): every figure,
    or under the negative control only those it applies to (CONTROLLED_DATA, figures.smk).
    """
    return [
        k
        for k, entry in FIGURES.items()
        if CONTROL == "none" or set(entry["data"]) & CONTROLLED_DATA
    ]


def paper_targets(paper):
    out = []
    for p, fig in shown_figures():
        if p == paper:
            out += figure_outputs(p, fig) + [claim_file(p, fig)]
    return out


def all_targets():
    out = []
    for paper in PAPERS:
        out += paper_targets(paper)
    out += [f"{RESULTS}/claims/summary.md", f"{RESULTS}/claims/summary.csv"]
    if config["claims_strict"]:
        out.append(f"{RESULTS}/claims/strict.ok")
    return out
