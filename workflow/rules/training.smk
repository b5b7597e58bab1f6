# The deep-learning rules, each written once with wildcards: `train` (one job per batch of runs),
# `gather`, `precomputed` and `download` (hub downloads; an alias target per download).  They
# read the figure table and the derived tables of figures.smk (TRAIN_BATCHES, GATHERS,
# PRECOMPUTED_GROUPS); see its header.


# --- training: one job per batch of runs -----------------------------------------------------------
# A batch is one point of a sweep (paper preset: one GPU job per run), or with Table.register_sweep(batch=)
# a group of points run in turn by one process (quick preset: the start-up is shared).  Its output
# is a folder holding its runs' files, <point>.{csv,json} (<point>_<table> for a run returning
# several tables); a finished run of a killed batch keeps its tables under results/scratch/.


# Under the negative control, a run the control does not change (Table.register_sweep's
# ``control_shares``) is the uncontrolled run: the job reads it from the uncontrolled folder
# (``shared``, built there by this rule with root=UNCONTROLLED if missing) and relabels it.


rule train:
    input:
        unpack(train_inputs),
    output:
        runs=directory("{root}/data/{entry}"),
    log:
        "{root}/logs/train/{entry}.log",
    benchmark:
        "{root}/benchmarks/train/{entry}.tsv"
    wildcard_constraints:
        root="|".join(re.escape(r) for r in dict.fromkeys([RESULTS, UNCONTROLLED])),
        # <paper>/<sweep>/<batch>
        entry=key_constraint(
            [(*k, b) for k, batches in TRAIN_BATCHES.items() for b in batches]
        ),
    conda:
        "../../environment.yml"
    threads: train_threads
    resources:
        gpu=train_gpu,
        gpu_mem_mb=train_resource("gpu_mem_mb"),
        cpus_per_gpu=train_resource("cpus_per_gpu"),
        mem_mb=train_resource("mem_mb", per_attempt=True),
        runtime=train_resource("runtime", per_attempt=True, per_run=True),
    params:
        func=entry_value(_sweep, "func"),
        runs=batch_runs,
        preset=SCALE,
        accelerator=config["accelerator"],
    script:
        "../../scripts/train.py"


# --- grids widened at an edge: one job per grid ----------------------------------------------------
# A sweep registered with `extend` (attnbias.table Extension; fastrates Figs 1, 4, 7: each
# optimiser's learning rates on every seed) gets one `extend` job per grid of three or more values:
# it reads the grid's runs and, where the seed-mean choice sits at an edge, trains the value one step
# beyond it on every seed into its folder (else nothing), recording what it did for the gather.
# Under the negative control its runs are shared like `train`'s: the uncontrolled grid's `extend`
# job (root=UNCONTROLLED) trains them, and this job relabels them.


rule extend:
    input:
        unpack(extend_inputs),
    output:
        runs=directory("{root}/data/{entry}"),
    log:
        "{root}/logs/extend/{entry}.log",
    benchmark:
        "{root}/benchmarks/extend/{entry}.tsv"
    wildcard_constraints:
        root="|".join(re.escape(r) for r in dict.fromkeys([RESULTS, UNCONTROLLED])),
        entry=key_constraint(EXTENSIONS),
    conda:
        "../../environment.yml"
    threads: train_threads
    resources:
        gpu=train_gpu,
        gpu_mem_mb=train_resource("gpu_mem_mb"),
        cpus_per_gpu=train_resource("cpus_per_gpu"),
        mem_mb=train_resource("mem_mb", per_attempt=True),
        runtime=train_resource("runtime", per_attempt=True, per_run=True),
    params:
        func=entry_value(_sweep, "func"),
        judge=entry_value(_extension, "judge"),
        group=entry_value(_extension, "group"),
        key=entry_value(_extension, "key"),
        # the grid's runs (stems, in the batches' folders) and each side's candidates
        runs=entry_value(_extension, "runs"),
        candidates=extension_runs,
        preset=SCALE,
        accelerator=config["accelerator"],
    script:
        "../../scripts/extend.py"


# --- gathers and precomputed copies ----------------------------------------------------------------


rule gather:
    input:
        code=entry_value(_gather, "code"),
        batches=entry_value(_gather, "batches"),
        extensions=entry_value(_gather, "extensions"),
    output:
        csv=f"{RESULTS}/data/{{entry}}.csv",
        meta=f"{RESULTS}/data/{{entry}}.json",
    log:
        f"{RESULTS}/logs/gather/{{entry}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/gather/{{entry}}.tsv"
    wildcard_constraints:
        entry=key_constraint(GATHERS),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        func=entry_value(_gather, "func"),
        # the file stems of the runs gathered, in order (found in the batches' folders)
        runs=entry_value(_gather, "runs"),
        settings=lambda wildcards: TABLE.with_control(_gather(wildcards).settings),
        preset=SCALE,
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
        entry=key_constraint(PRECOMPUTED_GROUPS),
    localrule: True
    conda:
        "../../environment.yml"
    params:
        folder=lambda wildcards: f"{RESULTS}/data/{entry_key(wildcards)[0]}",
    shell:
        "cp {input} {params.folder}/ 2> {log}"


# --- hub downloads -------------------------------------------------------------------------------
# One rule for every hub download (the table DOWNLOADS: attnbias.table.downloads), a local rule (it runs on the
# submit host: compute nodes often have no internet) writing the marker
# results/downloads/<paper>/<name>.{csv,json}, shared by every results folder; the alias
# `<paper>_download_<name>` (below) is the name the loaders' errors give.


rule download:
    output:
        csv="results/downloads/{entry}.csv",
        meta="results/downloads/{entry}.json",
    log:  # shared by every results folder, like the downloads
        "results/logs/download/{entry}.log",
    wildcard_constraints:
        entry=key_constraint(DOWNLOADS),
    # no retries: offline or with the hub unreachable a download cannot succeed, and its error is
    # shown once (online, fetch_assets tries a failed fetch again itself)
    retries: 0
    localrule: True
    conda:
        "../../environment.yml"
    threads: entry_value(_download, "threads")
    resources:
        mem_mb=entry_value(_download, "mem_mb"),
        runtime=entry_value(_download, "runtime"),
    params:
        func=entry_value(_download, "func"),
        settings=entry_value(_download, "settings"),
        hub=entry_value(_download, "hub"),
        prepares=entry_value(_download, "prepares"),
        preset=SCALE,
        target=lambda wildcards: "{}_download_{}".format(*entry_key(wildcards)),
    script:
        "../../scripts/download.py"


for _paper, _name in DOWNLOADS:

    rule:
        name:
            f"{_paper}_download_{_name}"
        input:
            f"results/downloads/{_paper}/{_name}.csv",
            f"results/downloads/{_paper}/{_name}.json",
