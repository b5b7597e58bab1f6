# Rules generated from the registry of common.smk: one compute rule per registered compute group,
# one plot rule `<paper>_<fig>` and one claim rule `<paper>_check_<fig>` per figure, the claims
# summary, and the aggregate targets.

for (_paper, _group), _c in COMPUTES.items():

    rule:
        name:
            f"{_paper}_compute_{_group}"
        input:
            code=_c["code"],
        output:
            csv=f"results/data/{_paper}/{_group}.csv",
            meta=f"results/data/{_paper}/{_group}.json",
        log:
            f"results/logs/{_paper}_compute_{_group}.log",
        benchmark:
            f"results/benchmarks/{_paper}_compute_{_group}.tsv"
        conda:
            "../../environment.yml"
        threads: _c["threads"]
        resources:
            mem_mb=_c["mem_mb"],
            runtime=_c["runtime"],
        params:
            func=_c["func"],
            settings=config[_paper][_group],
            preset=SCALE,
        script:
            "../../scripts/compute.py"


for (_paper, _fig), _f in FIGURES.items():

    rule:
        name:
            f"{_paper}_check_{_fig}"
        input:
            data=_f["data"],
            code=[f"src/attnbias/claims/{_paper}.py", "src/attnbias/claims/core.py"],
        output:
            claims=claim_file(_paper, _fig),
        log:
            f"results/logs/{_paper}_check_{_fig}.log",
        localrule: True
        conda:
            "../../environment.yml"
        params:
            paper=_paper,
            figure=_fig,
        script:
            "../../scripts/check.py"

    rule:
        name:
            f"{_paper}_{_fig}"
        input:
            data=_f["data"],
            claims=claim_file(_paper, _fig),
            caption=f"workflow/report/{_paper}_{_fig}.rst",
            code=[
                f"src/attnbias/plotting/{_paper}.py",
                "src/attnbias/plotting/style.py",
            ],
        output:
            pdf=f"results/figures/{_paper}/{_fig}.pdf",
            png=report(
                f"results/figures/{_paper}/{_fig}.png",
                caption=f"../../results/figures/{_paper}/{_fig}.rst",
                category=PAPERS[_paper],
                subcategory=_fig,
                labels={"paper": _paper, "figure": _fig},
            ),
            caption=f"results/figures/{_paper}/{_fig}.rst",
        log:
            f"results/logs/{_paper}_{_fig}.log",
        localrule: True
        conda:
            "../../environment.yml"
        params:
            paper=_paper,
            figure=_fig,
        script:
            "../../scripts/plot.py"


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
