"""The paper preset, rehearsed end to end before anyone downloads anything.

In a temporary copy of the workflow, tests/rehearsal/fake_hub.py writes format-faithful stand-ins
of every hub artefact the paper preset reads (results/rehearsal/hub/<hub id>/), and the workflow
runs with ``scale=paper`` and tests/config/rehearsal.yaml, which changes only sizes and points the
sources at those local folders.  Every figure that reads hub data in the paper preset is built:
its loaders, tokenizers, pretrained models, training jobs, gathers, plots and claims all run on
the paper code path.  The data are noise, so the claims must be *computed*, not passed.

Why this file takes minutes: the paper preset trains each run in a job of its own, so the
rehearsal's toy sizes still start dozens of training processes, each loading torch, transformers
and a (fake) pretrained model; it is the only test of the paper preset's code path
(docs/performance.md, "The test suite").
"""

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import copy_workflow, set_reference, snakemake_cmd

# The GPU figures of the paper preset, plus the CPU figures that read hub artefacts there.
FIGURES = {
    "maxmargin": ["fig6", "fig7"],
    "fastrates": ["fig1", "fig4", "fig6", "fig7"],
    "lowrank": ["fig2", "fig3", "figC", "table1", "fig4", "figB"],
}
TARGETS = ["gpu_figures", "fastrates_fig6", "lowrank_fig4", "lowrank_figB"]
# the training sweeps: the benchmark folders results/paper/benchmarks/train/<paper>/<sweep>/ of
# their runs (one job of rule `train` per run in the paper preset, maxmargin's ViT included)
TRAIN_SWEEPS = [
    "maxmargin/vit",
    "fastrates/fig1",
    "fastrates/fig4",
    "fastrates/fig7",
    "lowrank/fig2",
    "lowrank/lm",
    "lowrank/vit",
]
# the hub repository each figure's data come from in the paper preset
SOURCES = {
    ("maxmargin", "fig6"): "uoft-cs/cifar10",
    ("fastrates", "fig1"): "nyu-mll/glue",
    ("fastrates", "fig4"): "google/civil_comments",
    ("fastrates", "fig6"): "ylecun/mnist",
    ("fastrates", "fig7"): "uoft-cs/cifar10",
    ("lowrank", "fig3_lm"): "monology/pile-uncopyrighted",
    ("lowrank", "fig3_vit"): "ILSVRC/imagenet-1k",
    ("lowrank", "fig4"): "meta-llama/Llama-2-7b-hf",
    ("lowrank", "figB"): "meta-llama/Llama-2-13b-hf",
}


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    # the rehearsal settings are this copy's reference run (a user's rehearsal, an override of the
    # paper preset, writes into results/paper/custom/<digest>/), so its files are in results/paper/
    d = copy_workflow(tmp_path_factory.mktemp("rehearsal") / "attnbias")
    set_reference(d, d / "tests/config/rehearsal.yaml")
    hub = subprocess.run(
        [sys.executable, "tests/rehearsal/fake_hub.py", "results/rehearsal/hub"],
        cwd=d, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=str(d / "src")),
    )  # fmt: skip
    assert hub.returncode == 0, hub.stderr[-3000:]
    res = snakemake_cmd(
        "--cores", "2", *TARGETS, "--configfile", "tests/config/rehearsal.yaml",
        "--config", "scale=paper", cwd=d, timeout=1800,
    )  # fmt: skip
    assert res.returncode == 0, f"{res.stdout[-3000:]}\n{res.stderr[-6000:]}"
    return d, res.stdout + res.stderr


@pytest.mark.slow
def test_every_hub_figure_and_its_claims_are_built(rehearsal):
    out = rehearsal[0] / "results" / "paper"  # the paper preset's own folder
    for paper, figs in FIGURES.items():
        for fig in figs:
            for ext in ("pdf", "png"):
                assert (out / "figures" / paper / f"{fig}.{ext}").stat().st_size > 1000
            doc = json.loads((out / "claims" / paper / f"{fig}.json").read_text())
            assert doc["preset"] == "paper", (paper, fig)
            assert doc["claims"], (paper, fig)  # computed (they may fail: the data are noise)


@pytest.mark.slow
def test_data_provenance_names_the_paper_sources(rehearsal):
    out = rehearsal[0] / "results" / "paper"
    for (paper, group), hub_id in SOURCES.items():
        meta = json.loads((out / "data" / paper / f"{group}.json").read_text())
        assert meta["provenance"]["preset"] == "paper", (paper, group)
        assert hub_id in json.dumps(meta), (paper, group, hub_id)


@pytest.mark.slow
def test_every_paper_training_rule_ran(rehearsal):
    d, log = rehearsal
    out = d / "results" / "paper"
    assert "precomputed" not in " ".join(re.findall(r"^(?:local)?rule (\w+):", log, re.M))
    for sweep in TRAIN_SWEEPS:
        runs = list((out / "benchmarks" / "train" / sweep).glob("*.tsv"))
        assert runs, f"{sweep} did not run"
    tokens = json.loads((d / "results/downloads/lowrank/pile/tokens.json").read_text())
    assert tokens["tokens"]["train"] > 0 and "pile-uncopyrighted" in tokens["source"]
