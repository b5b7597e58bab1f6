# The deep-learning rules, each written once with wildcards: `train` (one job per batch of runs),
# `extend` (a grid widened at an edge), `gather`, `precomputed` and `download` (an alias target per
# download).  Their entries: the sweeps of the figure table (attnbias.table.registry).


# --- training: one job per batch of runs -----------------------------------------------------------
# A batch is one point of a sweep (paper preset: one GPU job per run), or a group of points run in
# turn by one process (quick preset: the start-up is shared).  Its output is a folder holding its
# runs' files, <point>.{csv,json}; a finished run of a killed batch keeps its tables under
# <root>/scratch/.  Under the negative control, a run the control does not change is the
# uncontrolled run: the job reads it from the uncontrolled folder (`shared`, built there by this
# rule with root=<uncontrolled folder>) and relabels it.
ROOTS = "|".join(re.escape(r) for r in dict.fromkeys([RESULTS, RUN.uncontrolled]))


rule train:
    input:
        unpack(RUN.train_inputs),
        gpu_note=gpu_note,
    output:
        runs=directory("{root}/data/{entry}"),
    log:
        "{root}/logs/train/{entry}.log",
    benchmark:
        "{root}/benchmarks/train/{entry}.tsv"
    wildcard_constraints:
        root=ROOTS,
        entry=RUN.constraint("train"),  # <paper>/<sweep>/<batch>
    conda:
        "../../environment.yml"
    threads: RUN.threads("train")
    resources:
        gpu=RUN.resource("train", "gpu"),
        gpu_mem_mb=RUN.resource("train", "gpu_mem_mb"),
        cpus_per_gpu=RUN.resource("train", "cpus_per_gpu"),
        mem_mb=RUN.resource("train", "mem_mb"),
        runtime=RUN.resource("train", "runtime"),
    params:
        func=RUN.value("train", "func"),
        runs=RUN.batch_runs,
        preset=RUN.scale,
        accelerator=config["accelerator"],
    script:
        "../../scripts/train.py"


# --- grids widened at an edge: one job per grid ----------------------------------------------------
# A sweep registered with `extend` (fastrates Figs 1, 4, 7: each optimiser's learning rates on
# every seed) gets one `extend` job per grid of three or more values: where the seed-mean choice
# sits at an edge it trains the value one step beyond it on every seed into its folder (else
# nothing), recording what it did for the gather.  Under the control its runs are shared as
# `train`'s are.


rule extend:
    input:
        unpack(RUN.extend_inputs),
        gpu_note=gpu_note,
    output:
        runs=directory("{root}/data/{entry}"),
    log:
        "{root}/logs/extend/{entry}.log",
    benchmark:
        "{root}/benchmarks/extend/{entry}.tsv"
    wildcard_constraints:
        root=ROOTS,
        entry=RUN.constraint("extension"),
    conda:
        "../../environment.yml"
    threads: RUN.threads("extend")
    resources:
        gpu=RUN.resource("extend", "gpu"),
        gpu_mem_mb=RUN.resource("extend", "gpu_mem_mb"),
        cpus_per_gpu=RUN.resource("extend", "cpus_per_gpu"),
        mem_mb=RUN.resource("extend", "mem_mb"),
        runtime=RUN.resource("extend", "runtime"),
    params:
        func=RUN.value("extend", "func"),
        judge=RUN.value("extension", "judge"),
        group=RUN.value("extension", "group"),
        key=RUN.value("extension", "key"),
        # the grid's runs (stems, in the batches' folders) and each side's candidates
        runs=RUN.value("extension", "runs"),
        candidates=RUN.extension_runs,
        preset=RUN.scale,
        accelerator=config["accelerator"],
    script:
        "../../scripts/extend.py"


# --- gathers and precomputed copies ----------------------------------------------------------------


rule gather:
    input:
        code=RUN.value("gather", "code"),
        batches=RUN.value("gather", "batches"),
        extensions=RUN.value("gather", "extensions"),
    output:
        csv=f"{RESULTS}/data/{{entry}}.csv",
        meta=f"{RESULTS}/data/{{entry}}.json",
    log:
        f"{RESULTS}/logs/gather/{{entry}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/gather/{{entry}}.tsv"
    wildcard_constraints:
        entry=RUN.constraint("gather"),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        func=RUN.value("gather", "func"),
        # the file stems of the runs gathered, in order (found in the batches' folders)
        runs=RUN.value("gather", "runs"),
        settings=RUN.gather_settings,
        preset=RUN.scale,
    script:
        "../../scripts/gather.py"


rule precomputed:
    input:
        precomputed_files,
    output:
        f"{RESULTS}/data/{{entry}}.csv",
        f"{RESULTS}/data/{{entry}}.json",
    log:
        f"{RESULTS}/logs/precomputed/{{entry}}.log",
    wildcard_constraints:
        entry=RUN.constraint("precomputed"),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        folder=RUN.data_folder,
    shell:
        "cp {input} {params.folder}/ 2> {log}"


# --- hub downloads -------------------------------------------------------------------------------
# One local rule for every hub download (it runs on the submit host: compute nodes often have no
# internet), writing the marker results/downloads/<paper>/<name>.{csv,json}, shared by every
# results folder; the alias `<paper>_download_<name>` is the name the loaders' errors give.


rule download:
    output:
        csv="results/downloads/{entry}.csv",
        meta="results/downloads/{entry}.json",
    log:  # shared by every results folder, like the downloads
        "results/logs/download/{entry}.log",
    wildcard_constraints:
        entry=RUN.constraint("download"),
    # no retries: offline or with the hub unreachable a download cannot succeed, and its error is
    # shown once (online, fetch_assets tries a failed fetch again itself)
    retries: 0
    localrule: True
    conda:
        "../../environment.yml"
    threads: RUN.threads("download")
    resources:
        mem_mb=RUN.resource("download", "mem_mb"),
        runtime=RUN.resource("download", "runtime"),
    params:
        func=RUN.value("download", "func"),
        settings=RUN.value("download", "settings"),
        hub=RUN.value("download", "hub"),
        prepares=RUN.value("download", "prepares"),
        preset=RUN.scale,
        target=RUN.download_target,
    script:
        "../../scripts/download.py"


for _paper, _name in TABLE.downloads:

    rule:
        name:
            f"{_paper}_download_{_name}"
        input:
            f"results/downloads/{_paper}/{_name}.csv",
            f"results/downloads/{_paper}/{_name}.json",
