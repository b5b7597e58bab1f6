"""The fastrates entries of the figure table (Vasudeva, Deora, Thrampoulidis;
docs/papers/fastrates.md).

Synthetic figures (float64, CPU, seconds): Figs 2, 3, 5 and the project's proposals Figs 8-10 and
Table 1 (fitted from the Fig 2 runs), staged groups (:mod:`attnbias.table.stages`); Figs 8-10 draw
the Fig 2 data.  Deep-learning figures: BERT fine-tuning (Figs 1, 4) and the proposals Fig 6
(MNIST, the paper's one-layer model) and Fig 7 (ViT-small): CPU, offline stand-ins in the quick
preset; hub data on a GPU in the paper preset.  Figs 1, 4 and 7 are one run per (optimiser, grid
value, seed) (quick: one `train` job per optimiser runs them in turn); one `extend` job per
optimiser widens its grid by one step where the seed-mean choice sits at an edge; the gather of each
figure chooses, per optimiser, the grid value with the lowest seed-mean validation loss.
"""

from __future__ import annotations

from attnbias.table.downloads import block_downloads
from attnbias.table.registry import Table
from attnbias.table.stages import register_staged_groups

# the hub datasets of the deep-learning figures (paper preset): default id and config
HUB_DATA = {
    "mnli": ("nyu-mll/glue", "mnli"),
    "civil_comments": ("google/civil_comments", None),
    "cifar10": ("uoft-cs/cifar10", None),
    "mnist": ("ylecun/mnist", None),
}

# the ratio of neighbouring grid values, and of the step a grid is widened by at an edge
GRID_STEP = 3.0

# the deep-learning sweeps: figure -> the training function under attnbias.experiments
SWEEPS = {
    "fig1": "fastrates.train_text",
    "fig4": "fastrates.train_text",
    "fig7": "fastrates.train_image",
}


def _rate_table_files(data, csv, md):
    from attnbias.analysis.fastrates import write_rate_table
    from attnbias.io import load_data

    write_rate_table(load_data(data)[0], csv, md)


def grid(table: Table, fig: str, opt: str) -> list:
    """An optimiser's grid values; under the negative control the SNGD and SPS slots, which then
    run plain SGD, take SGD's own grid, so the control's slots are SGD's runs and every "faster
    than SGD" claim compares SGD with itself (docs/papers/fastrates.md#sps)."""
    slot = "sgd" if table.control != "none" and opt in ("sngd", "sps") else opt
    return table.config["fastrates"][fig]["optimizers"][slot]["grid"]


def run_settings(table: Table, fig: str, point: dict) -> dict:
    """A run's settings: the figure's typed settings (FinetuneSettings / ImageSettings), its
    point (opt, lr, seed) and that optimiser's settings but its grid."""
    opt = table.config["fastrates"][fig]["optimizers"][point["opt"]]
    return dict(
        settings=table.run_settings("fastrates", fig),
        figure=fig,
        **point,
        opt_settings={k: v for k, v in opt.items() if k != "grid"},
    )


def register(table: Table) -> None:
    """Register the fastrates figures in ``table``."""
    register_staged_groups(table, "fastrates")
    # Table 1 (proposal) is also written as CSV + Markdown next to its rendered figure.
    table.register_table_files(
        "fastrates", "table1", "fig2", ["analysis.fastrates", "io"], _rate_table_files
    )
    fr, quick = table.config["fastrates"], table.scale == "quick"
    for fig, func in SWEEPS.items():
        table.register_sweep(
            "fastrates",
            fig,
            # every grid value of every optimiser on every seed (the learning rate is chosen on
            # the seed-mean validation loss, so each seed needs the whole grid)
            points=[
                {"opt": opt, "lr": float(lr), "seed": seed}
                for opt in fr[fig]["optimizers"]
                for lr in grid(table, fig, opt)
                for seed in fr[fig]["seeds"]
            ],
            func=func,
            settings=lambda point, fig=fig: run_settings(table, fig, point),
            gathers={
                fig: dict(
                    func="fastrates.gather_dl",
                    settings={"figure": fig, "preset": table.scale},
                    figures=[fig],
                )
            },
            inputs={"downloads": block_downloads(table, "fastrates", fr[fig], HUB_DATA)},
            resources={
                "quick": dict(mem_mb=3000, runtime=20),
                # paper: tokenisation and data loading on 4 cores; gpu_mem_mb: 1.25 x the peak
                # measured on one H100 (2026-11-24, attnbias.gpu_check): BERT-base 6.7 GB,
                # Fig 7 ViT 2.0 GB; runtime: a run was projected at 5-8 min (BERT) and 20 min
                # (Fig 7 ViT) there
                "paper": dict(
                    threads=4, mem_mb=32000, runtime=60, gpu_mem_mb=9000, cpus_per_gpu=4
                ),
            },
            # quick: one job per optimiser runs its grid values on every seed in turn (one
            # process's start-up, ≈ 5-13 s, for 9 runs); paper: one GPU job per run, in parallel
            batch=("lr", "seed") if quick else None,
            # under the negative control SNGD and SPS are SGD on SGD's grid: the control's runs
            # are SGD's (and SGD's and AdamW's runs are the default's), relabelled, never trained
            # again
            control_shares="fastrates.runs",
            # a grid whose seed-mean choice sits at an edge is widened once by one factor-3 step
            # on that side (docs/papers/fastrates.md#learning-rate-grids-and-selection): one
            # `extend` job per optimiser's grid trains that value on every seed, or nothing
            extend=dict(by="opt", key="lr", factor=GRID_STEP, judge="fastrates.edge_side"),
        )
    # Fig 6 (proposal): the paper's one-layer model on MNIST 0 vs 1 (full-batch float64, CPU in
    # both presets; the quick preset uses the offline digits).
    table.register_compute(
        "fastrates",
        "fig6",
        ["fig6"],
        "fastrates.compute_fig6",
        settings=table.with_control({"settings": fr["fig6"]}),  # MnistSettings
        inputs={"downloads": block_downloads(table, "fastrates", fr["fig6"], HUB_DATA)},
        mem_mb=2000 if quick else 16000,
        runtime=10 if quick else 120,
    )
