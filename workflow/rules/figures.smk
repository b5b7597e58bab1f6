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


for (_paper, _name), _d in DOWNLOADS.items():

    rule:
        name:
            f"{_paper}_download_{_name}"
        output:
            csv=f"results/downloads/{_paper}/{_name}.csv",
            meta=f"results/downloads/{_paper}/{_name}.json",
        log:
            f"results/logs/{_paper}_download_{_name}.log",
        # no retries offline: the clear error comes at once (hub unreachable: 3 quick retries)
        retries: 0 if OFFLINE else 3
        localrule: True  # runs on the submit host: compute nodes often have no internet
        conda:
            "../../environment.yml"
        threads: _d["threads"]
        resources:
            mem_mb=_d["mem_mb"],
            runtime=_d["runtime"],
        params:
            func=_d["func"],
            settings=_d["settings"],
            hub=_d["hub"],
            prepares=_d["prepares"],
            preset=SCALE,
        script:
            "../../scripts/download.py"


for (_paper, _name), _s in SWEEPS.items():
    _r = _s["resources"]
    _trains = not use_precomputed(_s["gpu"])
    if _trains and _s["batch"] is None:

        rule:
            name:
                f"{_paper}_{_name}_train"
            input:
                **_s["inputs"],
                code=_s["code"],
            output:
                **_s["outputs"],
            log:
                f"results/logs/{_paper}_{_name}_train/{_s['stem']}.log",
            benchmark:
                f"results/benchmarks/{_paper}_{_name}_train/{_s['stem']}.tsv"
            wildcard_constraints:
                **_s["constraints"],
            conda:
                "../../environment.yml"
            threads: _r["threads"]
            resources:
                gpu=1 if _s["gpu"] else 0,
                gpu_mem_mb=_r.get("gpu_mem_mb", 0),
                mem_mb=grows_with_attempt(_r["mem_mb"]),
                runtime=grows_with_attempt(_r["runtime"]),
            params:
                func=_s["func"],
                runs=sweep_runs(_paper, _name),
                preset=SCALE,
                accelerator=config["accelerator"],
            script:
                "../../scripts/train.py"

    # a batched sweep: one job per group of points, run in turn in one process
    for _label, _points in (_s["groups"] if _trains else {}).items():

        rule:
            name:
                f"{_paper}_{_name}_train_{_label}"
            input:
                **_s["inputs"],
                code=_s["code"],
            output:
                **batch_outputs(_paper, _name, _points),
            log:
                f"results/logs/{_paper}_{_name}_train/{_label}.log",
            benchmark:
                f"results/benchmarks/{_paper}_{_name}_train/{_label}.tsv"
            conda:
                "../../environment.yml"
            threads: _r["threads"]
            resources:
                gpu=1 if _s["gpu"] else 0,
                gpu_mem_mb=_r.get("gpu_mem_mb", 0),
                mem_mb=grows_with_attempt(_r["mem_mb"]),
                runtime=grows_with_attempt(_r["runtime"] * len(_points)),
            params:
                func=_s["func"],
                runs=[
                    run_params(_paper, _name, _p, str(_i))
                    for _i, _p in enumerate(_points)
                ],
                preset=SCALE,
                accelerator=config["accelerator"],
            script:
                "../../scripts/train.py"

    _groups = {t: None for t in _s["tables"]} | _s["gathers"]
    for _group, _g in _groups.items():
        if use_precomputed(_s["gpu"]):

            rule:
                name:
                    f"{_paper}_precomputed_{_group}"
                input:
                    precomputed_files(
                        _paper, _group, [f"{_group}.csv", f"{_group}.json"]
                    ),
                output:
                    data_files(_paper, _group),
                localrule: True
                params:
                    folder=f"results/data/{_paper}",
                shell:
                    "cp {input} {params.folder}/"

        elif _g is not None:

            rule:
                name:
                    f"{_paper}_gather_{_group}"
                input:
                    code=_g["code"],
                    parts=_g["parts"],
                output:
                    csv=f"results/data/{_paper}/{_group}.csv",
                    meta=f"results/data/{_paper}/{_group}.json",
                log:
                    f"results/logs/{_paper}_gather_{_group}.log",
                benchmark:
                    f"results/benchmarks/{_paper}_gather_{_group}.tsv"
                localrule: True
                conda:
                    "../../environment.yml"
                params:
                    func=_g["func"],
                    settings=with_control(_g["settings"]),
                    preset=SCALE,
                script:
                    "../../scripts/compute.py"


for (_paper, _fig), _f in FIGURES.items():

    rule:
        name:
            f"{_paper}_check_{_fig}"
        input:
            data=_f["data"],
            code=script_code("scripts/check.py", f"claims.{_paper}"),
        output:
            claims=claim_file(_paper, _fig),
        log:
            f"results/logs/{_paper}_check_{_fig}.log",
        benchmark:
            f"results/benchmarks/{_paper}_check_{_fig}.tsv"
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
            code=script_code("scripts/plot.py", f"plotting.{_paper}"),
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
        benchmark:
            f"results/benchmarks/{_paper}_{_fig}.tsv"
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
