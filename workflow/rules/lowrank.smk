# Kobayashi, Akram, von Oswald 2024, "Weight decay induces low-rank attention layers" (arXiv 2410.23819).
# Spec: ../shared/specs/lowrank.md.  Settings live under `lowrank:` in config.yaml, schema
# workflow/schemas/lowrank.schema.yaml.  fig1, figA, figL: float64 toys (seconds, CPU).  fig2: one
# associative-recall training job per (lambda, seed) (torch; CPU in the quick preset, GPU in the
# paper preset), gathered into the plot-ready results/data/lowrank/fig2.{csv,json}.

_LR_TOY_CODE = ["experiments/lowrank.py", "metrics/rank.py", "optim/fullbatch.py"]

register_compute("lowrank", "fig1", ["fig1"], "lowrank.compute_fig1", _LR_TOY_CODE)
register_compute(
    "lowrank", "figA", ["figA"], "lowrank.compute_figA", ["experiments/lowrank.py"]
)
register_compute("lowrank", "figL", ["figL"], "lowrank.compute_figL", _LR_TOY_CODE)

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
            [PRECOMPUTED / "lowrank" / "fig2" / f for f in ("fig2.csv", "fig2.json")],
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
                    "experiments/lowrank.py",
                    "metrics/rank.py",
                    "models/recall.py",
                    "data/recall.py",
                )
            ],
        output:
            csv=f"{_LR_FIG2_RUNS}.csv",
            meta=f"{_LR_FIG2_RUNS}.json",
            weights="results/models/lowrank/fig2/lam{lam}_seed{seed}.pt",  # fig4 proxies reuse them
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
            func="lowrank.train_recall",
            # a function of the wildcards only: Snakemake's params trigger ignores params derived
            # from input/output, so the weights path is spelled out rather than taken from output
            settings=lambda wildcards: dict(
                _LR_FIG2_RUN,
                lam=float(wildcards.lam),
                seed=int(wildcards.seed),
                accelerator=config["accelerator"],
                weights_path=f"results/models/lowrank/fig2/lam{wildcards.lam}_seed{wildcards.seed}.pt",
            ),
            preset=_LR_FIG2_PRESET,
        script:
            "../../scripts/compute.py"

    rule lowrank_fig2_gather:
        input:
            parts=_LR_FIG2_PARTS,
            code="src/attnbias/experiments/lowrank.py",
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
            func="lowrank.gather_fig2",
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


rule lowrank:
    input:
        paper_targets("lowrank"),
