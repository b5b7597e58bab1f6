# The aggregate rules, each written once: `table_files` (a figure's table also as CSV + Markdown),
# the claims summary (with the report's landing page) and strict gate, and the `cpu_figures`,
# `gpu_figures` and `checks` targets.


rule table_files:
    input:
        data=RUN.table_files_data,
        code=RUN.value("table_files", "code"),
    output:
        csv=f"{RESULTS}/figures/{{entry}}.csv",
        md=f"{RESULTS}/figures/{{entry}}.md",
    log:
        f"{RESULTS}/logs/table_files/{{entry}}.log",
    wildcard_constraints:
        entry=RUN.constraint("table_files"),
    localrule: True
    run:
        RUN.entry("table_files", wildcards).write(input.data[0], output.csv, output.md)


rule claims_summary:
    input:
        summary_inputs,
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
        shows=RUN.shows(),
        # the robustness table of an earlier `snakemake robustness`, if any (not an input: the
        # summary never waits for the seed runs; the report shows the newer landing page)
        robustness=f"{RUN.robustness.folder}/summary.csv",
        figures=f"{RESULTS}/figures",
        landing=RUN.landing_pages,
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
            for k, e in TABLE.figures.items()
            if not e.gpu
            for x in RUN.figure_targets(*k)
        ],


rule gpu_figures:
    input:
        [x for k, e in TABLE.figures.items() if e.gpu for x in RUN.figure_targets(*k)],


rule checks:
    input:
        f"{RESULTS}/claims/summary.md",
        f"{RESULTS}/claims/summary.csv",


# A run beside the reference run: the claims of the figures the change touches (built here if
# needed) beside the reference run's, and each such figure beside the reference's.
rule compare:
    input:
        other=RUN.compare_inputs,
        reference=RUN.reference_claims,
        code=TABLE.script_code(
            "scripts/compare.py", "claims.comparison", "plotting.compare"
        ),
    output:
        md=f"{RESULTS}/compare.md",
        csv=f"{RESULTS}/compare.csv",
        meta=f"{RESULTS}/compare.json",
        html=report(
            f"{RESULTS}/compare.html",
            caption="../report/compare.rst",
            category="0 – Claims summary",
            labels={"table": "comparison with the reference run"},
        ),
        pairs=report(
            directory(f"{RESULTS}/compare"),
            patterns=["{paper}/{fig}.png"],
            caption="../report/compare_pair.rst",
            category="0 – Claims summary",
            subcategory="comparison with the reference run",
            labels={"paper": "{paper}", "figure": "{fig}"},
        ),
    log:
        f"{RESULTS}/logs/compare.log",
    localrule: True
    conda:
        "../../environment.yml"
    params:
        about=RUN.compare_about,
    script:
        "../../scripts/compare.py"
