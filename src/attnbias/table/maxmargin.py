"""The maxmargin entries of the figure table (Tarzanagh et al. 2023; docs/papers/maxmargin.md).

The synthetic figures (Figs 1-5, 8-10; float64, CPU, seconds) are staged groups
(:mod:`attnbias.table.stages`).  Figs 6-7, the ViT's [CLS] attention sparsification, are one
training run per seed of ``vit.seeds`` (a `train` job each: CPU in the quick preset, a GPU in the
paper preset), each returning both figures' tables; a gather per figure stacks the seeds' tables
(column ``seed``).  One job per seed in both presets: a quick run is about a minute of training
against seconds of start-up, and separate jobs run side by side on the cores (and on a cluster).
"""

from __future__ import annotations

from attnbias.data.hub import is_local
from attnbias.table.downloads import hub_assets, register_download
from attnbias.table.registry import Table, point_label
from attnbias.table.stages import register_staged_groups


def register(table: Table) -> None:
    """Register the maxmargin figures in ``table``."""
    register_staged_groups(table, "maxmargin")
    vit = table.config["maxmargin"]["vit"]
    points = [{"seed": s} for s in vit["seeds"]]
    hub = vit["dataset"] == "cifar10" and not is_local(vit["cifar_source"])
    table.register_sweep(
        "maxmargin",
        "vit",
        points=points,
        func="maxmargin.train_vit",
        # the runs' typed settings (ViTSettings) without `seeds`, the point (seed) added
        settings={"settings": table.run_settings("maxmargin", "vit")},
        gathers={
            fig: dict(
                func="maxmargin.vit_gather.gather_vit",
                # each run writes <point>_fig6 and <point>_fig7
                runs=[f"{point_label(p)}_{fig}" for p in points],
                figures=[fig],
            )
            for fig in ("fig6", "fig7")
        },
        inputs={
            "downloads": register_download(
                table, "maxmargin", "cifar10", "data.hub.fetch_assets",
                {"kind": "dataset", "names": [vit["cifar_source"]]},
                hub=hub_assets(("dataset", vit["cifar_source"])),
            )  # fmt: skip
        }
        if hub
        else {},
        resources={
            # one thread: the tiny quick model gains little from a second one, and one thread
            # makes the run bit-reproducible (float reductions in a fixed order)
            "quick": dict(threads=1, mem_mb=4000, runtime=30),
            # paper: ViT-B (257 tokens, bf16) from scratch on CIFAR-10 for 400 epochs: 6 h (12 h
            # on a retry; training resumes); cpus_per_gpu: the data stay on the GPU (GPU-side
            # augmentation), so a few cores for the Python loop suffice; gpu_mem_mb (not sent to
            # SLURM): 1.25 x the 18.4 GB peak of the whole train_vit job (compiled) measured on
            # one H100 (2026-11-24, attnbias.gpu_check); eager training alone peaked at
            # 14.1 GB; runtime: 400 epochs were projected at 4.0 h for the whole job there
            "paper": dict(threads=2, mem_mb=32000, runtime=360, gpu_mem_mb=24000, cpus_per_gpu=4),
        },
    )
