# The rules of the robustness table (`snakemake robustness`), each written once, reading the
# tables of robustness_table.smk: `robustness_config` (the settings every seed run gets) ->
# `robustness_default` (seed 0: this run's claims) and `robustness_seed` (seed N: a run of this
# workflow with `--config seed=N`, per paper) -> `robustness_summary` (summary.{md,csv}, or one
# paper's) and `robustness_picture` (a paper's claims × seeds, in the report).
from attnbias.layout import execution_options, results_root


rule robustness_config:
    output:
        f"{ROBUST_DIR}/config.yaml",
    log:
        f"{ROBUST_DIR}/logs/robustness_config.log",
    localrule: True
    params:
        config=CONFIG_GIVEN,
    run:
        write_given_config(output[0], params.config, log[0])


rule robustness_default:
    input:
        claims=lambda wildcards: [
            claim_file(wildcards.paper, f) for f in robust_figures(wildcards.paper)
        ],
        code=script_code("scripts/robustness_seed.py", "claims.robustness"),
    output:
        csv=f"{ROBUST_DIR}/{{paper}}/seed-0.csv",
        meta=f"{ROBUST_DIR}/{{paper}}/seed-0.json",
    log:
        f"{ROBUST_DIR}/logs/robustness_{{paper}}_seed-0.log",
    localrule: True
    conda:
        "../../environment.yml"
    params:
        seed=0,
        redrawn=ROBUST_FIGURES,
        preset=SCALE,
    script:
        "../../scripts/robustness_seed.py"


rule robustness_seed:
    input:
        config=f"{ROBUST_DIR}/config.yaml",
        code=ROBUST_CODE,
    output:
        csv=f"{ROBUST_DIR}/{{paper}}/seed-{{seed}}.csv",
        meta=f"{ROBUST_DIR}/{{paper}}/seed-{{seed}}.json",
    log:
        f"{ROBUST_DIR}/logs/robustness_{{paper}}_seed-{{seed}}.log",
    wildcard_constraints:
        seed="[1-9][0-9]*",
    localrule: True
    conda:
        "../../environment.yml"
    threads: lambda wildcards: seed_run_threads()
    params:
        seed=lambda wildcards: int(wildcards.seed),
        redrawn=ROBUST_FIGURES,
        preset=SCALE,
        folder=lambda wildcards: results_root(
            SCALE, CONTROL, int(wildcards.seed), OVERRIDE
        ),
        targets=lambda wildcards: [
            f"{results_root(SCALE, CONTROL, int(wildcards.seed), OVERRIDE)}/claims/{wildcards.paper}/{f}.json"
            for f in robust_figures(wildcards.paper, redrawn_only=True)
        ],
        snakefile=str(Path(workflow.basedir) / "Snakefile"),
        forward=execution_options(sys.argv),
    script:
        "../../scripts/robustness_seed.py"


rule robustness_summary:
    input:
        tables=lambda wildcards: robust_tables(
            ROBUST_PAPERS if wildcards.scope == "summary" else [wildcards.scope]
        ),
        code=script_code("scripts/robustness_summary.py", "claims.robustness"),
    output:
        md=f"{ROBUST_DIR}/{{scope}}.md",
        csv=report(
            f"{ROBUST_DIR}/{{scope}}.csv",
            caption="../report/robustness_summary.rst",
            category="0 – Claims summary",
            subcategory="robustness over seeds",
            labels={"table": "{scope}"},
        ),
        seeds=f"{ROBUST_DIR}/{{scope}}.json",
        headline=f"{ROBUST_DIR}/{{scope}}.headline.rst",
        # the report's landing page with this table (the one of scope `summary` is shown)
        landing=f"{ROBUST_DIR}/{{scope}}.landing.rst",
    log:
        f"{ROBUST_DIR}/logs/robustness_{{scope}}.log",
    wildcard_constraints:
        scope="|".join(["summary", *PAPERS]),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        # the report's caption of the table (workflow/report/robustness_summary.rst) shows it
        headline=lambda wildcards: Path(f"{ROBUST_DIR}/{wildcards.scope}.headline.rst"),
        examined=EXAMINED,
        # this run's claims summary, if made (not an input: the robustness target builds only the
        # claims it measures over seeds)
        summary=f"{RESULTS}/claims/summary.csv",
        figures=f"{RESULTS}/figures",
        landing=LANDING_PAGES,
        shows=dict(
            preset=SCALE,
            control=CONTROL,
            folders=[
                results_root(SCALE, CONTROL, s, OVERRIDE)
                for s in [0, *ROBUST["seeds"]]
            ],
        ),
    script:
        "../../scripts/robustness_summary.py"


rule robustness_picture:
    input:
        tables=lambda wildcards: robust_tables([wildcards.paper]),
        summary=f"{ROBUST_DIR}/{{paper}}.csv",
        code=script_code("scripts/robustness_picture.py", "plotting.robustness"),
    output:
        pdf=f"{ROBUST_DIR}/{{paper}}.pdf",
        png=report(
            f"{ROBUST_DIR}/{{paper}}.png",
            caption="../report/robustness.rst",
            category="0 – Claims summary",
            subcategory="robustness over seeds",
            labels={"paper": "{paper}", "figure": "robustness"},
        ),
        caption=f"{ROBUST_DIR}/{{paper}}.rst",
        # one note per figure, shown in its report caption (workflow/report/figure.rst)
        notes=directory(f"{ROBUST_DIR}/{{paper}}.notes"),
    log:
        f"{ROBUST_DIR}/logs/robustness_{{paper}}_picture.log",
    localrule: True
    conda:
        "../../environment.yml"
    params:
        paper="{paper}",
        report_caption=lambda wildcards: Path(f"{ROBUST_DIR}/{wildcards.paper}.rst"),
    script:
        "../../scripts/robustness_picture.py"


rule robustness:
    input:
        f"{ROBUST_DIR}/summary.md",
        f"{ROBUST_DIR}/summary.csv",
        [f"{ROBUST_DIR}/{p}.{ext}" for p in ROBUST_PAPERS for ext in ("pdf", "png")],


for _paper in ROBUST_PAPERS:

    rule:
        name:
            f"robustness_{_paper}"
        input:
            [f"{ROBUST_DIR}/{_paper}.{ext}" for ext in ("md", "csv", "pdf", "png")],
