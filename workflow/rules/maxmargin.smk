# Tarzanagh et al. 2023, "Max-Margin Token Selection in Attention Mechanism" (arXiv 2306.13596).
# Spec: ../shared/specs/maxmargin.md.  Synthetic figures (float64, CPU, seconds); settings live
# under `maxmargin:` in config.yaml, schema workflow/schemas/maxmargin.schema.yaml.

_MM_CODE = [
    "experiments/maxmargin/synthetic.py",
    "models/attention.py",
    "models/prompt.py",
    "optim/fullbatch.py",
    "svm/qp.py",
    "svm/attention_svm.py",
    "data/synthetic.py",
]

register_compute(
    "maxmargin", "fig1", ["fig1a", "fig1b", "fig1c"], "maxmargin.compute_fig1", _MM_CODE
)
register_compute("maxmargin", "fig2", ["fig2"], "maxmargin.compute_fig2", _MM_CODE)
register_compute(
    "maxmargin", "fig3", ["fig3a", "fig3b", "fig3c"], "maxmargin.compute_fig3", _MM_CODE
)
register_compute(
    "maxmargin", "fig4", ["fig4a", "fig4b"], "maxmargin.compute_fig4", _MM_CODE
)
register_compute("maxmargin", "fig5", ["fig5"], "maxmargin.compute_fig5", _MM_CODE)
register_compute("maxmargin", "fig8", ["fig8"], "maxmargin.compute_fig8", _MM_CODE)
register_compute(
    "maxmargin",
    "fig9",
    ["fig9a", "fig9b", "fig10"],
    "maxmargin.compute_fig9",
    _MM_CODE,
    runtime="20m",
)


rule maxmargin:
    input:
        paper_targets("maxmargin"),


# Figs 6-7: ViT [CLS] attention sparsification, trained by the deep-learning engine.  The resume
# checkpoint lives under results/scratch/ (undeclared: Snakemake deletes declared outputs before a
# job runs, so a killed training resumes from there).
_VIT = config["maxmargin"]["vit"][SCALE]
_VIT_GPU = SCALE == "paper"

if _VIT["dataset"] == "cifar10":

    rule maxmargin_download_cifar10:
        output:
            "results/downloads/cifar10.ok",
        log:
            "results/logs/maxmargin_download_cifar10.log",
        retries: 3
        localrule: True  # runs on the submit host: compute nodes often have no internet
        conda:
            "../../environment.yml"
        params:
            source=config["maxmargin"]["vit"]["cifar_source"],
        script:
            "../../scripts/download.py"


if use_precomputed("maxmargin", "vit"):

    rule maxmargin_precomputed_vit:
        input:
            precomputed_files(
                "maxmargin", "vit", ["fig6.csv", "fig6.json", "fig7.csv", "fig7.json"]
            ),
        output:
            "results/data/maxmargin/fig6.csv",
            "results/data/maxmargin/fig6.json",
            "results/data/maxmargin/fig7.csv",
            "results/data/maxmargin/fig7.json",
        localrule: True
        shell:
            "for i in {input}; do cp $i results/data/maxmargin/; done"

else:

    rule maxmargin_train_vit:
        input:
            code=[
                f"src/attnbias/{m}"
                for m in (
                    "experiments/maxmargin/vit.py",
                    "train/engine.py",
                    "train/augment.py",
                    "models/vit.py",
                    "data/images.py",
                    "metrics/core.py",
                )
            ],
            dataset=(
                ancient("results/downloads/cifar10.ok")
                if _VIT["dataset"] == "cifar10"
                else []
            ),
        output:
            fig6="results/data/maxmargin/fig6.csv",
            fig6_meta="results/data/maxmargin/fig6.json",
            fig7="results/data/maxmargin/fig7.csv",
            fig7_meta="results/data/maxmargin/fig7.json",
        log:
            "results/logs/maxmargin_train_vit.log",
        benchmark:
            "results/benchmarks/maxmargin_train_vit.tsv"
        conda:
            "../../environment.yml"
        threads: 2
        resources:
            gpu=1 if _VIT_GPU else 0,
            mem_mb=lambda wc, attempt: (32000 if _VIT_GPU else 4000) * attempt,
            runtime=lambda wc, attempt: (600 if _VIT_GPU else 30) * attempt,
        params:
            func="maxmargin.train_vit",
            settings=dict(_VIT, cifar_source=config["maxmargin"]["vit"]["cifar_source"]),
            preset=SCALE,
            accelerator=config["accelerator"],
            checkpoint=f"results/scratch/maxmargin_train_vit/{SCALE}/checkpoint.pt",
            metrics_log=f"results/scratch/maxmargin_train_vit/{SCALE}/metrics.jsonl",
        script:
            "../../scripts/train.py"


register_figure(
    "maxmargin",
    "fig6",
    ["results/data/maxmargin/fig6.csv", "results/data/maxmargin/fig6.json"],
    gpu=True,
)
register_figure(
    "maxmargin",
    "fig7",
    ["results/data/maxmargin/fig7.csv", "results/data/maxmargin/fig7.json"],
    gpu=True,
)
