# The rules, each written once with wildcards: `compute`, `train`, `gather`, `precomputed`,
# `check`, `plot`, `table_files`, the claims summary and gate, and the aggregates (the
# deep-learning rules `train`, `gather`, `precomputed` and the downloads are in training.smk).  Their
# inputs, params, threads and resources are functions of the wildcards reading the figure table
# (FIGURES, COMPUTES in common.smk; SWEEPS in sweeps.smk; DOWNLOADS in downloads.smk), which the
# paper files (workflow/rules/<paper>.smk) fill.  Two training shapes cannot be one pattern, since
# a rule's number of outputs is fixed: a quick-preset batch of runs (`<paper>_<sweep>_train_<label>`)
# and a single run writing plot-ready tables itself (`maxmargin_vit_train`); those rules are made
# per entry below, and so is each hub download (`<paper>_download_<name>`, paper preset).  Every
# named target (`maxmargin_fig1c`, `maxmargin`, ...) is an alias rule.


# --- derived tables: which rule makes each plot-ready file -------------------------------------
# sweeps that train here (not copied from workflow/precomputed/)
_TRAINED = {k: s for k, s in SWEEPS.items() if not use_precomputed(s["gpu"])}
# (paper, sweep) -> {file stem: point}: one `train` job per run (sweeps neither batched nor tables)
TRAIN_RUNS = {
    k: {point_label(p): p for p in s["points"]}
    for k, s in _TRAINED.items()
    if s["batch"] is None and not s["tables"]
}
# (paper, group) -> gather entry (+ its sweep)
GATHERS = {
    (paper, group): dict(g, sweep=name)
    for (paper, name), s in _TRAINED.items()
    for group, g in s["gathers"].items()
}
# (paper, group) -> sweep whose committed results are copied (gpu_results=precomputed)
PRECOMPUTED_GROUPS = {
    (paper, group): name
    for (paper, name), s in SWEEPS.items()
    if use_precomputed(s["gpu"])
    for group in [*s["tables"], *s["gathers"]]
}


wildcard_constraints:
    paper="|".join(PAPERS),


# --- computations --------------------------------------------------------------------------------


rule compute:
    input:
        unpack(
            lambda wildcards: dict(
                _compute(wildcards)["inputs"], code=_compute(wildcards)["code"]
            )
        ),
    output:
        csv="results/data/{paper}/{group}.csv",
        meta="results/data/{paper}/{group}.json",
    log:
        "results/logs/{paper}_compute_{group}.log",
    benchmark:
        "results/benchmarks/{paper}_compute_{group}.tsv"
    wildcard_constraints:
        group=one_of(by_paper(COMPUTES)),
    conda:
        "../../environment.yml"
    threads: lambda wildcards: _compute(wildcards)["threads"]
    resources:
        mem_mb=lambda wildcards, attempt: attempt_value(_compute(wildcards)["mem_mb"])(
            wildcards, attempt
        ),
        runtime=lambda wildcards, attempt: attempt_value(
            _compute(wildcards)["runtime"]
        )(wildcards, attempt),
    params:
        func=lambda wildcards: _compute(wildcards)["func"],
        settings=lambda wildcards: _compute(wildcards)["settings"],
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
        code=lambda wildcards: CHECK_CODE[(wildcards.paper, wildcards.fig)],
    output:
        claims="results/claims/{paper}/{fig}.json",
    log:
        "results/logs/{paper}_check_{fig}.log",
    benchmark:
        "results/benchmarks/{paper}_check_{fig}.tsv"
    wildcard_constraints:
        fig=one_of(by_paper(FIGURES)),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        paper="{paper}",
        figure="{fig}",
    script:
        "../../scripts/check.py"


rule plot:
    input:
        data=figure_data,
        claims="results/claims/{paper}/{fig}.json",
        # the caption file, if the figure has one; else none (the plot job takes the first
        # paragraph of its plotting function's docstring)
        caption=lambda wildcards: [
            p
            for p in [f"workflow/report/{wildcards.paper}_{wildcards.fig}.rst"]
            if (Path(workflow.basedir) / p).exists()
        ],
        code=lambda wildcards: PLOT_CODE[(wildcards.paper, wildcards.fig)],
    output:
        pdf="results/figures/{paper}/{fig}.pdf",
        png=report(
            "results/figures/{paper}/{fig}.png",
            caption="../report/figure.rst",
            category=lambda wildcards: PAPERS[wildcards.paper],
            subcategory="{fig}",
            labels={"paper": "{paper}", "figure": "{fig}"},
        ),
        caption="results/figures/{paper}/{fig}.rst",
    log:
        "results/logs/{paper}_{fig}.log",
    benchmark:
        "results/benchmarks/{paper}_{fig}.tsv"
    wildcard_constraints:
        fig=one_of(by_paper(FIGURES)),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        paper="{paper}",
        figure="{fig}",
        # the report's caption (workflow/report/figure.rst) shows this rendered caption
        report_caption=lambda wildcards: Path(
            f"results/figures/{wildcards.paper}/{wildcards.fig}.rst"
        ),
    script:
        "../../scripts/plot.py"


# Tables also written as CSV + Markdown next to their rendered figure: (paper, table) -> entry
# (the plot-ready group it reads, and the function writing the two files), registered by the paper
# files.
rule table_files:
    input:
        data=lambda wildcards: data_files(
            wildcards.paper, TABLE_FILES[(wildcards.paper, wildcards.table)]["group"]
        ),
        code=lambda wildcards: TABLE_FILES[(wildcards.paper, wildcards.table)]["code"],
    output:
        csv="results/figures/{paper}/{table}.csv",
        md="results/figures/{paper}/{table}.md",
    log:
        "results/logs/{paper}_{table}_files.log",
    wildcard_constraints:
        table=one_of(by_paper(TABLE_FILES)),
    localrule: True
    run:
        TABLE_FILES[(wildcards.paper, wildcards.table)]["write"](
            input.data[0], output.csv, output.md
        )


rule claims_summary:
    input:
        [claim_file(p, f) for (p, f) in FIGURES],
    output:
        md="results/claims/summary.md",
        csv=report(
            "results/claims/summary.csv",
            caption="../report/claims_summary.rst",
            category="0 – Claims summary",
        ),
    log:
        "results/logs/claims_summary.log",
    localrule: True
    conda:
        "../../environment.yml"
    script:
        "../../scripts/summary.py"


rule claims_gate:
    input:
        "results/claims/summary.csv",
    output:
        "results/claims/strict.ok",
    log:
        "results/logs/claims_gate.log",
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
            if not e["gpu"]
            for x in figure_outputs(p, f) + [claim_file(p, f)]
        ],


rule gpu_figures:
    input:
        [
            x
            for (p, f), e in FIGURES.items()
            if e["gpu"]
            for x in figure_outputs(p, f) + [claim_file(p, f)]
        ],


rule checks:
    input:
        "results/claims/summary.md",
        "results/claims/summary.csv",


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
                f"results/figures/{p}/{t}.{ext}"
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
from attnbias.workflow import set_aside_stale

for _moved in set_aside_stale(
    [(FIGURES[k]["data"], [*figure_outputs(*k), claim_file(*k)]) for k in FIGURES]
    + [
        (
            [claim_file(*k) for k in FIGURES],
            ["results/claims/summary.md", "results/claims/summary.csv"],
        )
    ]
):
    print(
        f"{_moved}: its data is missing (an interrupted run?); set aside under results/stale/, "
        "it will be rebuilt",
        file=sys.stderr,
    )
