# The workflow's aggregate rules, each written once: `table_files` (a figure's table also as CSV +
# Markdown), the claims summary (with the report's landing page) and strict gate, and the
# `cpu_figures` / `gpu_figures` / `checks` targets.  They read the figure table (FIGURES,
# TABLE_FILES of common.smk).

# The report's landing page, written by the claims summary and by the robustness summary (each
# with the other's table when it exists); workflow/report/workflow.rst shows the newer one.
LANDING_PAGES = [
    Path(f"{RESULTS}/claims/landing.rst"),
    Path(f"{RESULTS}/robustness/summary.landing.rst"),
]


# Tables also written as CSV + Markdown next to their rendered figure: (paper, table) -> entry
# (the plot-ready group it reads, and the function writing the two files), registered by the paper
# files.
rule table_files:
    input:
        data=lambda wildcards: data_files(
            entry_key(wildcards)[0], TABLE_FILES[entry_key(wildcards)].group
        ),
        code=lambda wildcards: TABLE_FILES[entry_key(wildcards)].code,
    output:
        csv=f"{RESULTS}/figures/{{entry}}.csv",
        md=f"{RESULTS}/figures/{{entry}}.md",
    log:
        f"{RESULTS}/logs/table_files/{{entry}}.log",
    wildcard_constraints:
        entry=key_constraint(TABLE_FILES),
    localrule: True
    run:
        TABLE_FILES[entry_key(wildcards)].write(
            input.data[0], output.csv, output.md
        )


rule claims_summary:
    input:
        [claim_file(p, f) for (p, f) in shown_figures()],
    output:
        md=f"{RESULTS}/claims/summary.md",
        csv=f"{RESULTS}/claims/summary.csv",
        # every claim, shown inline in the report (an HTML page, not a download)
        html=report(
            f"{RESULTS}/claims/summary.html",
            caption="../report/claims_summary.rst",
            category="0 – Claims summary",
            labels={"table": "every claim"},
        ),
        # the report's landing page (workflow/report/workflow.rst shows it)
        landing=f"{RESULTS}/claims/landing.rst",
    log:
        f"{RESULTS}/logs/claims_summary.log",
    localrule: True
    conda:
        "../../environment.yml"
    params:
        shows=dict(preset=SCALE, control=CONTROL, seed=config["seed"], folder=RESULTS)
        | SHOWS_OVERRIDES,
        # the robustness table of an earlier `snakemake robustness`, if any (not an input: the
        # summary never waits for the seed runs; the report shows the newer landing page)
        robustness=f"{RESULTS}/robustness/summary.csv",
        figures=f"{RESULTS}/figures",
        landing=LANDING_PAGES,
    script:
        "../../scripts/summary.py"


rule claims_gate:
    input:
        f"{RESULTS}/claims/summary.csv",
    output:
        f"{RESULTS}/claims/strict.ok",
    log:
        f"{RESULTS}/logs/claims_gate.log",
    localrule: True
    conda:
        "../../environment.yml"
    script:
        "../../scripts/gate.py"


rule cpu_figures:
    input:
        [
            x
            for (p, f), e in FIGURES.items()
            if not e.gpu
            for x in figure_outputs(p, f) + [claim_file(p, f)]
        ],


rule gpu_figures:
    input:
        [
            x
            for (p, f), e in FIGURES.items()
            if e.gpu
            for x in figure_outputs(p, f) + [claim_file(p, f)]
        ],


rule checks:
    input:
        f"{RESULTS}/claims/summary.md",
        f"{RESULTS}/claims/summary.csv",
