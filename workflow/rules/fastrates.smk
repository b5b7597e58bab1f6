# Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for Self-attention"
# (arXiv 2402.05738).  Methods: docs/papers/fastrates.md.  Synthetic figures (float64, CPU,
# seconds): Figs 2, 3, 5 and the project's proposals Figs 8-10 and Table 1 (fitted from the Fig 2
# runs).  Deep-learning figures (below): BERT fine-tuning (Figs 1, 4) and the proposals Fig 6 (MNIST,
# the paper's one-layer model) and Fig 7 (ViT-small): CPU, offline stand-ins in the quick preset;
# hub data on a GPU in the paper preset.  Settings live under `fastrates:` in config.yaml and
# workflow/presets/paper.yaml, schema workflow/schemas/fastrates.schema.yaml.

# The synthetic groups run in three stages (stages.smk; entries in attnbias.table.stages):
# instance (the data, one instance per seed) -> svm (W_mm per seed) -> compute (the GD / NGD /
# Polyak trajectories).  Figs 8-10 draw the Fig 2 data.
register_staged_groups("fastrates")


# Table 1 (proposal) is also written as CSV + Markdown next to its rendered figure.
def _rate_table_files(data, csv, md):
    from attnbias.analysis.fastrates import write_rate_table
    from attnbias.io import load_data

    write_rate_table(load_data(data)[0], csv, md)


register_table_files(
    "fastrates", "table1", "fig2", ["analysis.fastrates", "io"], _rate_table_files
)


# --- Deep-learning figures ----------------------------------------------------------------------
# Figs 1, 4 (BERT) and 7 (ViT): one `train` job per (optimiser, grid value) per figure, so sweeps
# run in parallel on a cluster; in the quick preset one `train` job per optimiser (batch
# `opt<name>`) runs its grid values in turn; the `gather` job of <fig> chooses, per optimiser, the
# grid value with the lowest validation loss and writes results/data/fastrates/<fig>.{csv,json}.  Hub data and weights (paper preset) are fetched by
# download rules, never at DAG-build time.
_FR = config["fastrates"]
# the hub datasets of the deep-learning figures (paper preset): default id and config
_FR_HUB_DATA = {
    "mnli": ("nyu-mll/glue", "mnli"),
    "civil_comments": ("google/civil_comments", None),
    "cifar10": ("uoft-cs/cifar10", None),
    "mnist": ("ylecun/mnist", None),
}


def _fr_grid(fig, opt):
    """An optimiser's grid values; under the negative control the SNGD and SPS slots, which then
    run plain SGD, take SGD's own grid, so the control's slots are SGD's runs and every "faster
    than SGD" claim compares SGD with itself (docs/papers/fastrates.md#sps)."""
    slot = "sgd" if CONTROL != "none" and opt in ("sngd", "sps") else opt
    return _FR[fig]["optimizers"][slot]["grid"]


for _fig, _func in (
    ("fig1", "fastrates.train_text"),
    ("fig4", "fastrates.train_text"),
    ("fig7", "fastrates.train_image"),
):
    register_sweep(
        "fastrates",
        _fig,
        # every grid value of every optimiser on every seed (the learning rate is chosen on the
        # seed-mean validation loss, so each seed needs the whole grid)
        points=[
            {"opt": opt, "lr": float(lr), "seed": seed}
            for opt in _FR[_fig]["optimizers"]
            for lr in _fr_grid(_fig, opt)
            for seed in _FR[_fig]["seeds"]
        ],
        func=_func,
        # a run: the figure's typed settings (FinetuneSettings / ImageSettings), its point
        # (opt, lr, seed) and that optimiser's settings but its grid
        settings=lambda point, fig=_fig: dict(
            settings=run_settings("fastrates", fig),
            figure=fig,
            **point,
            opt_settings={
                k: v
                for k, v in _FR[fig]["optimizers"][point["opt"]].items()
                if k != "grid"
            },
        ),
        gathers={
            _fig: dict(
                func="fastrates.gather_dl",
                settings={"figure": _fig, "preset": SCALE},
                figures=[_fig],
            )
        },
        inputs={"downloads": block_downloads("fastrates", _FR[_fig], _FR_HUB_DATA)},
        resources={
            "quick": dict(mem_mb=3000, runtime=20),
            # paper: tokenisation and data loading on 4 cores; gpu_mem_mb: 1.25 x the peak measured
            # on one H100 (2026-11-24, benchmarks/gpu_check.py): BERT-base 6.7 GB, Fig 7 ViT 2.0 GB;
            # runtime: a run was projected at 5-8 min (BERT) and 20 min (Fig 7 ViT) there
            "paper": dict(
                threads=4, mem_mb=32000, runtime=60, gpu_mem_mb=9000, cpus_per_gpu=4
            ),
        },
        # quick: one job per optimiser runs its grid values on every seed in turn (one process's
        # start-up, ≈ 5-13 s, for 9 runs); paper: one GPU job per run, in parallel on a cluster
        batch=("lr", "seed") if SCALE == "quick" else None,
        # under the negative control SNGD and SPS are SGD on SGD's grid: the control's runs are
        # SGD's (and SGD's and AdamW's runs are the default's), relabelled, never trained again
        control_shares="fastrates.runs",
    )


# Fig 6 (proposal): the paper's one-layer model on MNIST 0 vs 1 (full-batch float64, CPU in both
# presets; the quick preset uses the offline digits).
register_compute(
    "fastrates",
    "fig6",
    ["fig6"],
    "fastrates.compute_fig6",
    settings=with_control({"settings": _FR["fig6"]}),  # MnistSettings
    inputs={"downloads": block_downloads("fastrates", _FR["fig6"], _FR_HUB_DATA)},
    mem_mb=grows_with_attempt(16000 if SCALE == "paper" else 2000),
    runtime=grows_with_attempt(120 if SCALE == "paper" else 10),
)
