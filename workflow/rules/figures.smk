# The rules of the synthetic stages (`instance`, `svm`, `compute`), of every figure (`check`,
# `plot`) and the named targets (`maxmargin_fig1c`, `maxmargin`), each written once with
# wildcards.  A rule's wildcard `entry` is its table key written as a path ("maxmargin/fig1"); its
# inputs, params, threads and resources are the run's functions of the wildcards (attnbias.run).


wildcard_constraints:
    paper="|".join(PAPERS),


# --- the stages of a synthetic group: instance -> svm -> compute --------------------------------
# Each writes an .npz (attnbias.io.save_arrays) read by the next; the table entry
# (attnbias.table.stages) names the functions; their signatures say which settings each takes.


rule instance:
    input:
        code=RUN.value("instance", "code"),
    output:
        npz=f"{RESULTS}/stages/{{entry}}.instance.npz",
    log:
        f"{RESULTS}/logs/instance/{{entry}}.log",
    wildcard_constraints:
        entry=RUN.constraint("stage"),
    conda:
        "../../environment.yml"
    params:
        func=RUN.value("instance", "func"),
        settings=RUN.value("instance", "settings"),
        preset=RUN.scale,
    script:
        "../../scripts/compute.py"


rule svm:
    input:
        instance=f"{RESULTS}/stages/{{entry}}.instance.npz",
        code=RUN.value("svm", "code"),
    output:
        npz=f"{RESULTS}/stages/{{entry}}.svm.npz",
    log:
        f"{RESULTS}/logs/svm/{{entry}}.log",
    wildcard_constraints:
        entry=RUN.constraint("svm"),
    conda:
        "../../environment.yml"
    params:
        func=RUN.value("svm", "func"),
        settings=RUN.value("svm", "settings"),
        preset=RUN.scale,
    script:
        "../../scripts/compute.py"


# --- computations (for a staged group: its trajectories) ----------------------------------------


rule compute:
    input:
        unpack(RUN.compute_inputs),
    output:
        csv=f"{RESULTS}/data/{{entry}}.csv",
        meta=f"{RESULTS}/data/{{entry}}.json",
    log:
        f"{RESULTS}/logs/compute/{{entry}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/compute/{{entry}}.tsv"
    wildcard_constraints:
        entry=RUN.constraint("compute"),
    conda:
        "../../environment.yml"
    threads: RUN.threads("compute")
    resources:
        mem_mb=RUN.resource("compute", "mem_mb"),
        runtime=RUN.resource("compute", "runtime"),
    params:
        func=RUN.value("compute", "func"),
        settings=RUN.value("compute", "settings"),
        preset=RUN.scale,
    script:
        "../../scripts/compute.py"


# --- claims and figures: the code of a figure's jobs is the import closure of the script and of
# claims.<paper>.<fig> / plotting.<paper>.<fig> (a per-figure function or module where there is
# one, else the whole module claims.<paper> / plotting.<paper>)


rule check:
    input:
        data=RUN.figure_data,
        code=RUN.check_code,
        stale=stale_forced,
    output:
        claims=f"{RESULTS}/claims/{{entry}}.json",
    log:
        f"{RESULTS}/logs/check/{{entry}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/check/{{entry}}.tsv"
    wildcard_constraints:
        entry=RUN.constraint("figure"),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        paper=RUN.part(0),
        figure=RUN.part(1),
        # what a custom run or seed shift is (recorded in the claim file; none in the reference)
        run=RUN.run_note(),
    script:
        "../../scripts/check.py"


rule plot:
    input:
        data=RUN.figure_data,
        claims=f"{RESULTS}/claims/{{entry}}.json",
        caption=RUN.caption_source,
        code=RUN.plot_code,
        stale=stale_forced,
    output:
        pdf=f"{RESULTS}/figures/{{entry}}.pdf",
        png=report(
            f"{RESULTS}/figures/{{entry}}.png",
            caption="../report/figure.rst",
            category=RUN.report_category,
            subcategory=RUN.report_menu,
            labels=RUN.report_labels,
        ),
        caption=f"{RESULTS}/figures/{{entry}}.rst",
    log:
        f"{RESULTS}/logs/plot/{{entry}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/plot/{{entry}}.tsv"
    wildcard_constraints:
        entry=RUN.constraint("figure"),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        paper=RUN.part(0),
        figure=RUN.part(1),
        run=RUN.run_note(),
        # the report's caption (workflow/report/figure.rst) shows this rendered caption
        report_caption=RUN.report_caption,
        # how its claims fared over seeds, once `snakemake robustness` has run (else absent)
        robustness_note=RUN.robustness_note,
    script:
        "../../scripts/plot.py"


# --- named targets: one alias rule per figure (`maxmargin_fig1c`) and per paper (`maxmargin`) ---
for _paper, _fig in TABLE.figures:

    rule:
        name:
            f"{_paper}_{_fig}"
        input:
            RUN.figure_targets(_paper, _fig),


for _paper in PAPERS:

    rule:
        name:
            _paper
        input:
            RUN.paper_targets(_paper),
            [
                f"{RESULTS}/figures/{p}/{t}.{ext}"
                for (p, t) in TABLE.table_files
                if p == _paper
                for ext in ("csv", "md")
            ],
