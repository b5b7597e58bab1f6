# The robustness table (`snakemake robustness`, `robustness_<paper>`): every claim measured across
# seeds.  Seed 0 is this run (its claim files); each seed N of `robustness.seeds` is a run of this
# workflow with `--config seed=N` (every random seed shifted by N) in its own results folder, one
# `robustness_seed` job per (paper, seed), so a cluster runs the seeds in parallel and a killed
# run resumes where it stopped.  Only the figures the seed shift redraws are rerun
# (attnbias.run.Robustness).  `robustness_config` -> `robustness_default` / `robustness_seed` ->
# `robustness_summary` (summary.{md,csv}, or one paper's) and `robustness_picture` (the report's).
from attnbias.layout import execution_options, write_given_config

ROBUST = RUN.robustness
ROBUST_DIR = ROBUST.folder


rule robustness_config:
    output:
        f"{ROBUST_DIR}/config.yaml",
    log:
        f"{ROBUST_DIR}/logs/robustness_config.log",
    localrule: True
    params:
        config=RUN.given,
    run:
        write_given_config(output[0], params.config, log[0])


rule robustness_default:
    input:
        claims=RUN.robustness_claims,
        code=TABLE.script_code("scripts/robustness_seed.py", "claims.robustness"),
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
        redrawn=ROBUST.figures,
        preset=RUN.scale,
    script:
        "../../scripts/robustness_seed.py"


rule robustness_seed:
    input:
        config=f"{ROBUST_DIR}/config.yaml",
        code=ROBUST.code,
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
    threads: seed_run_threads
    params:
        seed=lambda wildcards: int(wildcards.seed),
        redrawn=ROBUST.figures,
        preset=RUN.scale,
        folder=RUN.seed_folder,
        targets=RUN.seed_targets,
        snakefile=str(Path(workflow.basedir) / "Snakefile"),
        forward=execution_options(sys.argv),
    script:
        "../../scripts/robustness_seed.py"


rule robustness_summary:
    input:
        tables=RUN.seed_tables,
        code=TABLE.script_code("scripts/robustness_summary.py", "claims.robustness"),
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
        examined=ROBUST.examined,
        # this run's claims summary, if made (not an input: the robustness target builds only the
        # claims it measures over seeds)
        summary=f"{RESULTS}/claims/summary.csv",
        figures=f"{RESULTS}/figures",
        landing=RUN.landing_pages,
        shows=RUN.robustness_shows(),
    script:
        "../../scripts/robustness_summary.py"


rule robustness_picture:
    input:
        tables=RUN.seed_tables,
        summary=f"{ROBUST_DIR}/{{paper}}.csv",
        code=TABLE.script_code("scripts/robustness_picture.py", "plotting.robustness"),
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
        [f"{ROBUST_DIR}/{p}.{ext}" for p in ROBUST.papers for ext in ("pdf", "png")],


for _paper in ROBUST.papers:

    rule:
        name:
            f"robustness_{_paper}"
        input:
            [f"{ROBUST_DIR}/{_paper}.{ext}" for ext in ("md", "csv", "pdf", "png")],
