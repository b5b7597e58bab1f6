# Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for Self-attention"
# (arXiv 2402.05738).  Spec: ../shared/specs/fastrates.md.  Synthetic figures (float64, CPU,
# seconds): Figs 2, 3, 5 and the spec's proposals Figs 8-10 and Table 1 (fitted from the Fig 2
# runs).  Deep-learning figures (below): BERT fine-tuning (Figs 1, 4) and the proposals Fig 6 (MNIST,
# the paper's one-layer model) and Fig 7 (ViT-small), each with a quick (CPU, offline stand-in) and a
# paper (hub data, GPU) block.  Settings live under `fastrates:` in config.yaml, schema
# workflow/schemas/fastrates.schema.yaml.

_FR_CODE = [
    "experiments/fastrates/__init__.py",
    "experiments/fastrates/synthetic.py",
    "analysis/fastrates.py",
    "models/attention.py",
    "models/prompt.py",
    "models/selfattn.py",
    "optim/fullbatch.py",
    "svm/qp.py",
    "svm/attention_svm.py",
    "svm/frobenius.py",
    "data/fastrates.py",
]

register_compute(
    "fastrates", "fig2", ["fig2", "table1"], "fastrates.compute_fig2", _FR_CODE
)
register_compute("fastrates", "fig3", ["fig3"], "fastrates.compute_fig3", _FR_CODE)
register_compute("fastrates", "fig5", ["fig5"], "fastrates.compute_fig5", _FR_CODE)
register_compute("fastrates", "fig8", ["fig8"], "fastrates.compute_fig8", _FR_CODE)
register_compute("fastrates", "fig9", ["fig9"], "fastrates.compute_fig9", _FR_CODE)
register_compute("fastrates", "fig10", ["fig10"], "fastrates.compute_fig10", _FR_CODE)


# Table 1 (proposal) is also written as CSV + Markdown next to its rendered figure.
rule fastrates_table1_files:
    input:
        data=data_files("fastrates", "fig2"),
        code=["src/attnbias/analysis/fastrates.py", "src/attnbias/io.py"],
    output:
        csv="results/figures/fastrates/table1.csv",
        md="results/figures/fastrates/table1.md",
    log:
        "results/logs/fastrates_table1_files.log",
    localrule: True
    run:
        from attnbias.io import load_data
        from attnbias.analysis.fastrates import write_rate_table

        write_rate_table(load_data(input.data[0])[0], output.csv, output.md)


# --- Deep-learning figures ----------------------------------------------------------------------
# Figs 1, 4 (BERT) and 7 (ViT): one training job per (figure, optimiser, grid value), so sweeps run
# in parallel locally and on a cluster; a gather job per figure chooses, per optimiser, the grid
# value with the lowest validation loss and writes results/data/fastrates/<fig>.{csv,json}.  Resume
# checkpoints go to results/scratch/fastrates_train/<fig>/<preset>/<optimiser>_lr<value>/ (undeclared).
# Hub data and weights (paper preset only) are fetched by download rules, never at DAG-build time.


_FR_DL_FIGS = ("fig1", "fig4", "fig6", "fig7")
_FR_TRAIN_FIGS = ("fig1", "fig4", "fig7")
_FR_TEXT_FIGS = ("fig1", "fig4")
_FR_HUB_DATA = {"mnli": "nyu-mll/glue", "civil_comments": "google/civil_comments", "cifar10": "uoft-cs/cifar10", "mnist": "ylecun/mnist"}  # fmt: skip
_FR_HUB_CONFIG = {"mnli": "mnli"}
# the preset of each figure (`fastrates.<fig>.scale`, else the global scale) and its settings block
_FR_PRESET = {f: config["fastrates"][f]["scale"] or SCALE for f in _FR_DL_FIGS}
_FR_BLOCK = {f: config["fastrates"][f][_FR_PRESET[f]] for f in _FR_DL_FIGS}
_FR_GPU = {f: _FR_PRESET[f] == "paper" for f in _FR_DL_FIGS}
# download markers each figure's jobs need (hub datasets and models: paper preset only)
_FR_ASSETS = {
    f: (
        [f"results/downloads/fastrates/{b['dataset']}.csv"]
        if b["dataset"] in _FR_HUB_DATA
        else []
    )
    + (
        ["results/downloads/fastrates/models.csv"]
        if f in _FR_TEXT_FIGS and b["model"] != "minilm"
        else []
    )
    for f, b in _FR_BLOCK.items()
}
# settings shared by every run of a figure (the optimiser and its grid value come from wildcards)
_FR_RUN = {
    f: dict({k: v for k, v in _FR_BLOCK[f].items() if k != "optimizers"}, figure=f)
    for f in _FR_TRAIN_FIGS
}
# one training job per (optimiser, grid value)
_FR_PARTS = {
    f: [
        f"results/data/fastrates/{f}/{opt}_lr{lr:g}.csv"
        for opt, o in _FR_BLOCK[f]["optimizers"].items()
        for lr in o["grid"]
    ]
    for f in _FR_TRAIN_FIGS
}
_FR_DATASETS = sorted(
    {_FR_BLOCK[f]["dataset"] for f in _FR_DL_FIGS} & set(_FR_HUB_DATA)
)
_FR_MODELS = sorted({_FR_BLOCK[f]["model"] for f in _FR_TEXT_FIGS} - {"minilm"})

for _ds in _FR_DATASETS:

    rule:
        name:
            f"fastrates_download_{_ds}"
        output:
            csv=f"results/downloads/fastrates/{_ds}.csv",
            meta=f"results/downloads/fastrates/{_ds}.json",
        log:
            f"results/logs/fastrates_download_{_ds}.log",
        retries: 3
        conda:
            "../../environment.yml"
        threads: 1
        resources:
            mem_mb=16000,
            runtime=120,
        params:
            func="fastrates.fetch_assets",
            settings={
                "kind": "dataset",
                "names": [
                    next(
                        _FR_BLOCK[f]["source"] or _FR_HUB_DATA[_ds]
                        for f in _FR_DL_FIGS
                        if _FR_BLOCK[f]["dataset"] == _ds
                    )
                ],
                "config": _FR_HUB_CONFIG.get(_ds),
            },
            preset="paper",
        script:
            "../../scripts/compute.py"


if _FR_MODELS:

    rule fastrates_download_model:
        output:
            csv="results/downloads/fastrates/models.csv",
            meta="results/downloads/fastrates/models.json",
        log:
            "results/logs/fastrates_download_model.log",
        retries: 3
        conda:
            "../../environment.yml"
        threads: 1
        resources:
            mem_mb=8000,
            runtime=60,
        params:
            func="fastrates.fetch_assets",
            settings={"kind": "model", "names": _FR_MODELS},
            preset="paper",
        script:
            "../../scripts/compute.py"


rule fastrates_train:
    input:
        code=lambda wildcards: [
            f"src/attnbias/{m}"
            for m in (
                "experiments/fastrates/__init__.py",
                "experiments/fastrates/runs.py",
                "analysis/fastrates.py",
                "train/__init__.py",
                "train/engine.py",
                "train/augment.py",
                "train/probe.py",
                "optim/stochastic.py",
                "data/hub.py",
            )
            + (
                (
                    "experiments/fastrates/finetune.py",
                    "models/sequence.py",
                    "data/text.py",
                    "data/offline.py",
                )
                if wildcards.fig in _FR_TEXT_FIGS
                else (
                    "experiments/fastrates/image.py",
                    "models/vit.py",
                    "data/images.py",
                )
            )
        ],
        assets=lambda wildcards: [ancient(a) for a in _FR_ASSETS[wildcards.fig]],
    output:
        csv="results/data/fastrates/{fig}/{opt}_lr{lr}.csv",
        meta="results/data/fastrates/{fig}/{opt}_lr{lr}.json",
    log:
        "results/logs/fastrates_train/{fig}/{opt}_lr{lr}.log",
    benchmark:
        "results/benchmarks/fastrates_train/{fig}/{opt}_lr{lr}.tsv"
    wildcard_constraints:
        fig="fig1|fig4|fig7",
        opt="sgd|sngd|sps|adamw",
        lr=r"[0-9.e+-]+",
    conda:
        "../../environment.yml"
    threads: lambda wildcards: 4 if _FR_GPU[wildcards.fig] else 1
    resources:
        gpu=lambda wildcards: 1 if _FR_GPU[wildcards.fig] else 0,
        mem_mb=lambda wildcards, attempt: (32000 if _FR_GPU[wildcards.fig] else 3000)
        * attempt,
        runtime=lambda wildcards, attempt: (240 if _FR_GPU[wildcards.fig] else 20)
        * attempt,
    params:
        func=lambda wildcards: (
            "fastrates.train_text"
            if wildcards.fig in _FR_TEXT_FIGS
            else "fastrates.train_image"
        ),
        settings=lambda wildcards: dict(
            _FR_RUN[wildcards.fig],
            optimizer=wildcards.opt,
            lr=float(wildcards.lr),
            opt_settings={
                k: v
                for k, v in _FR_BLOCK[wildcards.fig]["optimizers"][
                    wildcards.opt
                ].items()
                if k != "grid"
            },
        ),
        preset=lambda wildcards: _FR_PRESET[wildcards.fig],
        accelerator=config["accelerator"],
        checkpoint=lambda wildcards: (
            f"results/scratch/fastrates_train/{wildcards.fig}/{_FR_PRESET[wildcards.fig]}/"
            f"{wildcards.opt}_lr{wildcards.lr}/checkpoint.pt"
        ),
        metrics_log=lambda wildcards: (
            f"results/scratch/fastrates_train/{wildcards.fig}/{_FR_PRESET[wildcards.fig]}/"
            f"{wildcards.opt}_lr{wildcards.lr}/metrics.jsonl"
        ),
    script:
        "../../scripts/train.py"


# gpu_results=precomputed (paper preset): copy committed plot-ready results instead of training;
# missing ones are an error only for the targets that need them (precomputed_files, common.smk).
for _fig in _FR_TRAIN_FIGS:
    if _FR_GPU[_fig] and config["gpu_results"] == "precomputed":

        rule:
            name:
                f"fastrates_precomputed_{_fig}"
            input:
                precomputed_files("fastrates", _fig, [f"{_fig}.csv", f"{_fig}.json"]),
            output:
                data_files("fastrates", _fig),
            localrule: True
            shell:
                "for i in {input}; do cp $i results/data/fastrates/; done"

    else:

        rule:
            name:
                f"fastrates_gather_{_fig}"
            input:
                parts=_FR_PARTS[_fig],
                code=[
                    f"src/attnbias/{m}"
                    for m in (
                        "experiments/fastrates/__init__.py",
                        "experiments/fastrates/gather.py",
                        "analysis/fastrates.py",
                        "io.py",
                    )
                ],
            output:
                csv=f"results/data/fastrates/{_fig}.csv",
                meta=f"results/data/fastrates/{_fig}.json",
            log:
                f"results/logs/fastrates_gather_{_fig}.log",
            localrule: True
            conda:
                "../../environment.yml"
            threads: 1
            params:
                func="fastrates.gather_dl",
                settings={
                    "figure": _fig,
                    "parts": _FR_PARTS[_fig],
                    "preset": _FR_PRESET[_fig],
                },
                preset=_FR_PRESET[_fig],
            script:
                "../../scripts/compute.py"

    register_figure("fastrates", _fig, data_files("fastrates", _fig), gpu=True)


# Fig 6 (proposal): the paper's one-layer model on MNIST 0 vs 1 (full-batch float64, CPU in both
# presets; the quick preset uses the offline digits).
rule fastrates_compute_fig6:
    input:
        code=[
            f"src/attnbias/{m}"
            for m in _FR_CODE
            + [
                "experiments/fastrates/mnist.py",
                "data/digits.py",
                "data/text.py",
                "data/hub.py",
            ]
        ],
        assets=[ancient(a) for a in _FR_ASSETS["fig6"]],
    output:
        csv="results/data/fastrates/fig6.csv",
        meta="results/data/fastrates/fig6.json",
    log:
        "results/logs/fastrates_compute_fig6.log",
    benchmark:
        "results/benchmarks/fastrates_compute_fig6.tsv"
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=lambda wildcards, attempt: (
            16000 if _FR_PRESET["fig6"] == "paper" else 2000
        )
        * attempt,
        runtime=lambda wildcards, attempt: (
            120 if _FR_PRESET["fig6"] == "paper" else 10
        )
        * attempt,
    params:
        func="fastrates.compute_fig6",
        settings=_FR_BLOCK["fig6"],
        preset=_FR_PRESET["fig6"],
    script:
        "../../scripts/compute.py"


register_figure("fastrates", "fig6", data_files("fastrates", "fig6"))


rule fastrates:
    input:
        paper_targets("fastrates"),
        rules.fastrates_table1_files.output,
