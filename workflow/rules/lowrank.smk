# Kobayashi, Akram, von Oswald 2024, "Weight decay induces low-rank attention layers" (arXiv 2410.23819).
# Methods: docs/papers/lowrank.md.  Settings live under `lowrank:` in config.yaml (quick preset) and
# workflow/presets/paper.yaml; schema workflow/schemas/lowrank.schema.yaml.
#   fig1, figA, figL: float64 toys (seconds, CPU).
#   fig2: associative recall, one run per (lambda, seed) (quick: one job per lambda over its seeds),
#     gathered.
#   fig3 (left), figC, table1: GPT-2 language models, one run per (lambda_SA, lambda_MLP, seed) (quick:
#     one job per (lambda_SA, lambda_MLP) over its seeds); the runs the grids share are trained once.
#   fig3 (right): ViTs, one run per (lambda_attn, seed) (quick: one job per lambda_attn over its seeds).
#   fig4, figB: per-head balance of a pretrained model (quick: the shipped MiniLM).

_LR = config["lowrank"]

register_compute(
    "lowrank",
    "fig1",
    ["fig1"],
    "lowrank.toys.compute_fig1",
)
register_compute(
    "lowrank",
    "figA",
    ["figA"],
    "lowrank.toys.compute_figA",
)
register_compute(
    "lowrank",
    "figL",
    ["figL"],
    "lowrank.toys.compute_figL",
)


# --- Fig 2: associative recall ------------------------------------------------------------------
_FIG2 = _LR["fig2"]
register_sweep(
    "lowrank",
    "fig2",
    points=grid_points(("lam", as_floats(_FIG2["lambdas"])), ("seed", _FIG2["seeds"])),
    func="lowrank.recall.train_recall_job",
    # the runs' typed settings (RecallSettings), the point (lam, seed) added
    settings={"settings": run_settings("lowrank", "fig2")},
    gathers={
        "fig2": dict(
            func="lowrank.recall.gather_fig2",
            settings={
                "lr": _FIG2["lr"],
                "steps": _FIG2["steps"],
                "solved_acc": _FIG2["solved_acc"],
                "preset": SCALE,
            },
            figures=["fig2"],
        )
    },
    resources={
        "quick": dict(mem_mb=2000, runtime=15),
        # paper: data sampled on the fly (2 cores); host memory above 2000: the CUDA runtime
        # alone takes 1-2 GB; gpu_mem_mb: the recall run peaked at 1.5 GB on one H100 (2026-11-24)
        "paper": dict(
            threads=2, mem_mb=4000, runtime=60, gpu_mem_mb=2000, cpus_per_gpu=2
        ),
    },
    gpu_figures=SCALE == "paper",
    # quick: one job per λ runs its seeds in turn (process start-up, ≈ 5 CPU-s, shared); trained
    # side by side in one model (train_recall_runs) they took no less CPU on one core (within
    # ±13 %, 2026-11-27: docs/papers/lowrank.md#lowrank_fig2); paper: one GPU job per run
    batch="seed" if SCALE == "quick" else None,
    # under the negative control every λ trains as λ = 0: the default run's λ = 0 run, relabelled
    control_shares="lowrank.recall",
)

# --- Fig 3 (left), App. Fig. C, Table 1: GPT-2 language models ----------------------------------
_LM, _FIG3, _FIGC, _T1 = _LR["lm"], _LR["fig3"], _LR["figC"], _LR["table1"]
_LM_FIG3 = grid_points(
    ("sa", as_floats(_FIG3["lam_sa"])),
    ("mlp", as_floats(_FIG3["lam_mlp"])),
    ("seed", _FIG3["seeds"]),
)
_LM_T1 = grid_points(
    ("mlp", as_floats(_T1["lam_mlp"])),
    ("sa", as_floats(_T1["lam_sa"])),
    ("seed", _T1["seeds"]),
)
_LM_T1 = [{"sa": p["sa"], "mlp": p["mlp"], "seed": p["seed"]} for p in _LM_T1]
_LM_LAYERS = {"layers_fig3": _FIG3["layers"], "layers_figC": _FIGC["layers"]}
# (layers count from 1, each at most lm.n_layer: attnbias.config_rules, checked at parse time)
# the token files' splits are settings of the Pile download (a training run reads its files)
_LM_SPLITS = ("train_split", "val_split")
register_sweep(
    "lowrank",
    "lm",
    points=_LM_FIG3 + [p for p in _LM_T1 if p not in _LM_FIG3],
    func="lowrank.lm.train_lm",
    # the runs' typed settings (LMSettings), the point (sa, mlp, seed) added
    settings={"settings": run_settings("lowrank", "lm")},
    gathers={
        "fig3_lm": dict(
            points=_LM_FIG3,
            func="lowrank.lm.gather_lm",
            settings=dict(_LM_LAYERS, preset=SCALE),
            figures=["figC"],
        ),
        "table1": dict(
            points=_LM_T1,
            func="lowrank.lm.gather_lm",
            settings=dict(_LM_LAYERS, preset=SCALE, grid=_T1),
            figures=["table1"],
        ),
    },
    # A local Pile directory keeps this rule: it tokenises the local shards (no network).
    inputs=(
        {
            "tokens": register_download(
                "lowrank",
                "pile",
                "data.text_lm.download_pile",
                {
                    k: _LM[k]
                    for k in ("source", "tokenizer", "train_tokens", "val_tokens")
                    + _LM_SPLITS
                },
                hub=hub_assets(("dataset", _LM["source"]), ("model", _LM["tokenizer"])),
                prepares=True,
                threads=8,
                mem_mb=16000,
                runtime=600,
            )
        }
        if _LM["corpus"] == "hub"
        else {}
    ),
    resources={
        "quick": dict(mem_mb=2000, runtime=20),
        # paper: 5,000 steps of 0.5 M tokens; token windows read from the uint16 file (8 cores);
        # gpu_mem_mb: 1.25 x the 32.0 GB peak of train_lm measured on one H100 (2026-11-24,
        # benchmarks/gpu_check.py; micro-batch 32 x 1024 tokens, loss compiled with the model);
        # runtime: a run was projected at 1.8 h there (408k tokens/s), hub data loading not included
        "paper": dict(
            threads=8, mem_mb=64000, runtime=240, gpu_mem_mb=40000, cpus_per_gpu=8
        ),
    },
    gpu_figures=SCALE == "paper",
    # quick: one job per (λ_SA, λ_MLP) runs its seeds in turn (start-up shared); paper: one GPU
    # job per run
    batch="seed" if SCALE == "quick" else None,
    control_shares="lowrank.lm",  # under the control every λ_SA trains as λ_SA = 0
)


# Table 1 is also written as CSV + Markdown next to its heatmap.
def _table1_files(data, csv, md):
    from attnbias.analysis.lowrank import table1
    from attnbias.io import load_data, write_table

    write_table(**table1(*load_data(data)), csv_path=csv, md_path=md)


register_table_files(
    "lowrank", "table1", "table1", ["analysis.lowrank", "io"], _table1_files
)


# --- Fig 3 (right): ViTs over lambda_attn --------------------------------------------------------
_VIT = _LR["vit"]
register_sweep(
    "lowrank",
    "vit",
    points=grid_points(("attn", as_floats(_VIT["lam_attn"])), ("seed", _VIT["seeds"])),
    func="lowrank.vit.train_vit_wd",
    # the runs' typed settings (VitSettings), the point (attn, seed) added
    settings={"settings": run_settings("lowrank", "vit")},
    gathers={
        "fig3_vit": dict(
            func="lowrank.vit.gather_vit",
            settings={"preset": SCALE, "solved_acc": _VIT["solved_acc"]},
            figures=[],
        )
    },
    inputs=(
        {
            "downloads": register_download(
                "lowrank",
                "imagenet",
                "data.imagenet.download_image_dataset",
                {"source": _VIT["source"]},
                hub=hub_assets(("dataset", _VIT["source"])),
                threads=8,
                mem_mb=32000,
                runtime=1440,
            )
        }
        if _VIT["dataset"] != "digits" and not is_local(_VIT["source"])
        else {}
    ),
    resources={
        "quick": dict(mem_mb=2000, runtime=20),
        # paper: JPEG decoding of ImageNet batches (16 cores); gpu_mem_mb: 1.25 x the 14.0 GB peak of
        # train_vit_wd (ViT-S/16, 224², bf16) measured on one H100 (2026-11-24, gpu_check.py)
        "paper": dict(
            threads=16, mem_mb=96000, runtime=2880, gpu_mem_mb=18000, cpus_per_gpu=16
        ),
    },
    # quick: one job per λ_attn runs its seeds in turn (start-up, ≈ 10 CPU-s, shared)
    batch="seed" if SCALE == "quick" else None,
    control_shares="lowrank.vit",  # under the control every λ_attn trains as λ_attn = 0
)
register_figure(
    "lowrank",
    "fig3",
    [*data_files("lowrank", "fig3_lm"), *data_files("lowrank", "fig3_vit")],
    gpu=SCALE == "paper",
)


# --- Fig 4 and App. Fig. B: balance of pretrained attention (own file: length) ------------------
include: "lowrank_balance.smk"
