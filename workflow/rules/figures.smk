# The rules, each written once with wildcards: the synthetic stages `instance` and `svm`, `compute`,
# `check`, `plot` and the target aliases (the deep-learning rules `train`, `gather`, `precomputed`
# and the downloads are in training.smk; `table_files`, the claims summary and gate and the
# aggregate targets in summary.smk).  Their inputs, params, threads and resources are functions of
# the wildcards (inputs.smk) reading the job's entry in the figure table (attnbias.table, built in
# common.smk).  The rule names are the same in both presets; made per entry are only the named
# targets (`maxmargin_fig1c`, `maxmargin`, the paper preset's `<paper>_download_<name>`, ...),
# alias rules.


wildcard_constraints:
    paper="|".join(PAPERS),


# --- the stages of a synthetic group: instance -> svm -> compute --------------------------------
# Each writes an .npz (attnbias.io.save_arrays) read by the next; the table entry
# (attnbias.table.stages) names the functions; their signatures say which settings each stage
# takes.  Every rule's wildcard `entry` is its table key written as a path, "<paper>/<name>"
# (key_constraint, inputs.smk): the path says which entry made it, so the rules that write
# plot-ready data (`compute`, `gather`, `precomputed`) each match exactly their own entries.


rule instance:
    input:
        code=entry_value(_instance, "code"),
    output:
        npz=f"{RESULTS}/stages/{{entry}}.instance.npz",
    log:
        f"{RESULTS}/logs/instance/{{entry}}.log",
    wildcard_constraints:
        entry=key_constraint(STAGES),
    conda:
        "../../environment.yml"
    params:
        func=entry_value(_instance, "func"),
        settings=entry_value(_instance, "settings"),
        preset=SCALE,
    script:
        "../../scripts/compute.py"


rule svm:
    input:
        instance=f"{RESULTS}/stages/{{entry}}.instance.npz",
        code=entry_value(_svm, "code"),
    output:
        npz=f"{RESULTS}/stages/{{entry}}.svm.npz",
    log:
        f"{RESULTS}/logs/svm/{{entry}}.log",
    wildcard_constraints:
        entry=key_constraint([k for k, s in STAGES.items() if s.svm]),
    conda:
        "../../environment.yml"
    params:
        func=entry_value(_svm, "func"),
        settings=entry_value(_svm, "settings"),
        preset=SCALE,
    script:
        "../../scripts/compute.py"


# --- computations (for a staged group: its trajectories) ----------------------------------------


rule compute:
    input:
        unpack(
            lambda wildcards: dict(
                job_inputs(_compute(wildcards).inputs), code=_compute(wildcards).code
            )
        ),
    output:
        csv=f"{RESULTS}/data/{{entry}}.csv",
        meta=f"{RESULTS}/data/{{entry}}.json",
    log:
        f"{RESULTS}/logs/compute/{{entry}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/compute/{{entry}}.tsv"
    wildcard_constraints:
        entry=key_constraint(COMPUTES),
    conda:
        "../../environment.yml"
    threads: entry_value(_compute, "threads")
    resources:
        mem_mb=lambda wildcards, attempt: attempt_value(_compute(wildcards).mem_mb)(
            wildcards, attempt
        ),
        runtime=lambda wildcards, attempt: attempt_value(_compute(wildcards).runtime)(
            wildcards, attempt
        ),
    params:
        func=entry_value(_compute, "func"),
        settings=entry_value(_compute, "settings"),
        preset=SCALE,
    script:
        "../../scripts/compute.py"


# --- claims and figures --------------------------------------------------------------------------
# The code of a figure's claim and plot jobs: the import closures of the scripts' own imports and
# of claims.<paper>.<fig> / plotting.<paper>.<fig> (a per-figure function or module where there is
# one, else the whole module claims.<paper> / plotting.<paper>).
CHECK_CODE = {
    (p, f): script_code("scripts/check.py", f"claims.{p}.{f}") for p, f in FIGURES
}
PLOT_CODE = {
    (p, f): script_code("scripts/plot.py", f"plotting.{p}.{f}") for p, f in FIGURES
}


rule check:
    input:
        data=figure_data,
        code=lambda wildcards: CHECK_CODE[entry_key(wildcards)],
    output:
        claims=f"{RESULTS}/claims/{{entry}}.json",
    log:
        f"{RESULTS}/logs/check/{{entry}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/check/{{entry}}.tsv"
    wildcard_constraints:
        entry=key_constraint(FIGURES),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        paper=entry_part(0),
        figure=entry_part(1),
    script:
        "../../scripts/check.py"


from attnbias.claims.landing import report_menu


rule plot:
    input:
        data=figure_data,
        claims=f"{RESULTS}/claims/{{entry}}.json",
        # the caption file, if the figure has one; else none (the plot job takes the first
        # paragraph of its plotting function's docstring)
        caption=lambda wildcards: [
            p
            for p in ["workflow/report/{}_{}.rst".format(*entry_key(wildcards))]
            if (Path(workflow.basedir) / p).exists()
        ],
        code=lambda wildcards: PLOT_CODE[entry_key(wildcards)],
    output:
        pdf=f"{RESULTS}/figures/{{entry}}.pdf",
        png=report(
            f"{RESULTS}/figures/{{entry}}.png",
            caption="../report/figure.rst",
            category=lambda wildcards: PAPERS[entry_key(wildcards)[0]],
            # "01 fig1a" … "19 fig10": the report's menu in reading order
            subcategory=lambda wildcards: report_menu(
                entry_key(wildcards)[1],
                [f for p, f in FIGURES if p == entry_key(wildcards)[0]],
            ),
            labels=lambda wildcards: dict(
                zip(("paper", "figure"), entry_key(wildcards))
            ),
        ),
        caption=f"{RESULTS}/figures/{{entry}}.rst",
    log:
        f"{RESULTS}/logs/plot/{{entry}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/plot/{{entry}}.tsv"
    wildcard_constraints:
        entry=key_constraint(FIGURES),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        paper=entry_part(0),
        figure=entry_part(1),
        # the report's caption (workflow/report/figure.rst) shows this rendered caption
        report_caption=lambda wildcards: Path(
            f"{RESULTS}/figures/{wildcards.entry}.rst"
        ),
        # how its claims fared over seeds, once `snakemake robustness` has run (else absent)
        robustness_note=lambda wildcards: Path(
            "{}/robustness/{}.notes/{}.rst".format(RESULTS, *entry_key(wildcards))
        ),
    script:
        "../../scripts/plot.py"


# --- named targets: one alias rule per figure (`maxmargin_fig1c`) and per paper (`maxmargin`) ---
for (_paper, _fig), _f in FIGURES.items():

    rule:
        name:
            f"{_paper}_{_fig}"
        input:
            figure_outputs(_paper, _fig),
            claim_file(_paper, _fig),


for _paper in PAPERS:

    rule:
        name:
            _paper
        input:
            paper_targets(_paper),
            [
                f"{RESULTS}/figures/{p}/{t}.{ext}"
                for (p, t) in TABLE_FILES
                if p == _paper
                for ext in ("csv", "md")
            ],


# --- interrupted runs ------------------------------------------------------------------------------
# A job's declared outputs are deleted when it starts and when it is killed, and Snakemake treats a
# missing intermediate file like a temp() file: with the figures and claims made from it still in
# place, nothing would rerun and the old figure would look current with its data gone.  Such
# products are set aside under results/stale/ (nothing is deleted), so Snakemake sees them missing:
# the next plain run rebuilds the data and everything made from it, and a dry run lists those jobs.
# Only in the process the user started: a cluster job parses the workflow too, while other jobs
# may be rewriting their data (tests/workflow/test_job_parse.py).
from attnbias.layout import set_aside_stale

if workflow.is_main_process:
    for _moved in set_aside_stale(
        [(FIGURES[k].data, [*figure_outputs(*k), claim_file(*k)]) for k in FIGURES]
        + [
            (
                [claim_file(*k) for k in FIGURES],
                [f"{RESULTS}/claims/summary.md", f"{RESULTS}/claims/summary.csv"],
            )
        ]
    ):
        print(
            f"{_moved}: its data is missing (an interrupted run?); set aside under results/stale/, "
            "it will be rebuilt",
            file=sys.stderr,
        )
