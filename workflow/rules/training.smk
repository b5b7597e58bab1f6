# The deep-learning rules, each written once with wildcards where a pattern can express them:
# `train` (one job per run), `gather`, `precomputed`, and the rules made per entry (quick-preset
# batches, `maxmargin_vit_train`, hub downloads).  They read the figure table and the derived
# tables of figures.smk (TRAIN_RUNS, GATHERS, PRECOMPUTED_GROUPS); see its header.


# --- training: one job per run -------------------------------------------------------------------


rule train:
    input:
        unpack(
            lambda wildcards: dict(
                _sweep(wildcards)["inputs"], code=_sweep(wildcards)["code"]
            )
        ),
    output:
        csv=RESULTS + "/data/{paper}/{sweep}/{point}.csv",
        meta=RESULTS + "/data/{paper}/{sweep}/{point}.json",
    log:
        RESULTS + "/logs/{paper}_{sweep}_train/{point}.log",
    benchmark:
        RESULTS + "/benchmarks/{paper}_{sweep}_train/{point}.tsv"
    wildcard_constraints:
        sweep=one_of(by_paper(TRAIN_RUNS)),
        point=one_of({f"{p}/{s}/": list(runs) for (p, s), runs in TRAIN_RUNS.items()}),
    conda:
        "../../environment.yml"
    threads: lambda wildcards: _sweep(wildcards)["resources"]["threads"]
    resources:
        gpu=lambda wildcards: 1 if _sweep(wildcards)["gpu"] else 0,
        gpu_mem_mb=_train_resource("gpu_mem_mb"),
        cpus_per_gpu=_train_resource("cpus_per_gpu"),
        mem_mb=_train_resource("mem_mb", per_attempt=True),
        runtime=_train_resource("runtime", per_attempt=True),
    params:
        func=lambda wildcards: _sweep(wildcards)["func"],
        runs=lambda wildcards: [
            run_params(
                wildcards.paper,
                wildcards.sweep,
                TRAIN_RUNS[(wildcards.paper, wildcards.sweep)][wildcards.point],
            )
        ],
        preset=SCALE,
        accelerator=config["accelerator"],
    script:
        "../../scripts/train.py"


# Training shapes one pattern cannot express (a rule's outputs are fixed in number): a quick-preset
# batch of runs in one process (register_sweep(batch=...)), and one run writing plot-ready tables.
for (_paper, _name), _s in _TRAINED.items():
    _r = _s["resources"]
    if _s["tables"]:
        _jobs = {"": [_s["single"]]}
    else:
        _jobs = {f"_{label}": points for label, points in _s["groups"].items()}
    for _suffix, _points in _jobs.items():

        rule:
            name:
                f"{_paper}_{_name}_train{_suffix}"
            input:
                **_s["inputs"],
                code=_s["code"],
            output:
                **(
                    _s["outputs"]
                    if _s["tables"]
                    else batch_outputs(_paper, _name, _points)
                ),
            log:
                f"{RESULTS}/logs/{_paper}_{_name}_train/{_suffix[1:] or _s['stem']}.log",
            benchmark:
                f"{RESULTS}/benchmarks/{_paper}_{_name}_train/{_suffix[1:] or _s['stem']}.tsv"
            conda:
                "../../environment.yml"
            threads: _r["threads"]
            resources:
                gpu=1 if _s["gpu"] else 0,
                gpu_mem_mb=_r.get("gpu_mem_mb", 0),
                cpus_per_gpu=_r.get("cpus_per_gpu", 0),
                mem_mb=grows_with_attempt(_r["mem_mb"]),
                runtime=grows_with_attempt(_r["runtime"] * len(_points)),
            params:
                func=_s["func"],
                runs=(
                    [run_params(_paper, _name, _points[0])]
                    if _s["tables"]
                    else [
                        run_params(_paper, _name, _p, str(_i))
                        for _i, _p in enumerate(_points)
                    ]
                ),
                preset=SCALE,
                accelerator=config["accelerator"],
            script:
                "../../scripts/train.py"


# --- gathers and precomputed copies ----------------------------------------------------------------


rule gather:
    input:
        code=lambda wildcards: _gather(wildcards)["code"],
        parts=lambda wildcards: _gather(wildcards)["parts"],
    output:
        csv=RESULTS + "/data/{paper}/{group}.csv",
        meta=RESULTS + "/data/{paper}/{group}.json",
    log:
        RESULTS + "/logs/{paper}_gather_{group}.log",
    benchmark:
        RESULTS + "/benchmarks/{paper}_gather_{group}.tsv"
    wildcard_constraints:
        group=one_of(by_paper(GATHERS)),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        func=lambda wildcards: _gather(wildcards)["func"],
        settings=lambda wildcards: with_control(_gather(wildcards)["settings"]),
        preset=SCALE,
    script:
        "../../scripts/compute.py"


rule precomputed:
    input:
        lambda wildcards: precomputed_files(
            wildcards.paper,
            wildcards.group,
            [f"{wildcards.group}.csv", f"{wildcards.group}.json"],
        )(wildcards),
    output:
        RESULTS + "/data/{paper}/{group}.csv",
        RESULTS + "/data/{paper}/{group}.json",
    log:
        RESULTS + "/logs/{paper}_precomputed_{group}.log",
    wildcard_constraints:
        group=one_of(by_paper(PRECOMPUTED_GROUPS)),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        folder=RESULTS + "/data/{paper}",
    shell:
        "cp {input} {params.folder}/ 2> {log}"


# --- hub downloads -------------------------------------------------------------------------------


# One rule per download (`<paper>_download_<name>`, the name the loaders' errors give): a job
# reruns on a change of its script, and scripts/download.py names the rule it runs in its error.
for (_paper, _name), _d in DOWNLOADS.items():

    rule:
        name:
            f"{_paper}_download_{_name}"
        output:
            csv=f"results/downloads/{_paper}/{_name}.csv",
            meta=f"results/downloads/{_paper}/{_name}.json",
        log:  # shared by every results folder, like the downloads
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
