"""Every GPU training family's paper-preset entry point runs in CI, called as its job calls it.

The paper preset trains on GPUs that CI never has.  Here each GPU training sweep of the paper
preset's figure table (``Table.sweeps`` with ``gpu``, built by import as the Snakefile builds it:
:func:`attnbias.run.load_run`) gives the ``train`` job's own parameters for its first point: the
function, the run's settings (the paper preset's block, ``workflow/presets/paper.yaml`` over
``config.yaml``, and the point) and the named inputs.  The job script itself,
``scripts/train.py``, then runs in this process with those parameters, the block's model, batch
and evaluation sizes shrunk to ``attnbias.gpu_check.standins.TINY`` and the run made a few steps
long, on the CPU, the hub loaders replaced by synthetic data of the same layout (the stand-ins of
``attnbias.gpu_check.standins``, with which the GPU check's families run on the GPU).  So a
changed signature, settings type or settings key of any family fails here; every other key of the
block keeps its paper-preset value (optimiser, schedule, augmentation, compile: traced by Dynamo
with the ``eager`` backend, no code generation).
"""

from __future__ import annotations

import functools
import math
import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from attnbias.gpu_check import standins as fam
from attnbias.io import load_data
from attnbias.run import load_run

ROOT = Path(__file__).resolve().parents[2]

# The run length of each sweep's tiny run (keys of its settings block), over standins.TINY.
SHORT = {
    "maxmargin/vit": dict(epochs=2, map_epochs=[1, 2]),
    "fastrates/fig1": dict(steps=4, log_every=1, eval_every=2, select_at=1, ckpt_every=2),
    "fastrates/fig4": dict(steps=4, log_every=1, eval_every=2, select_at=1, ckpt_every=2),
    "fastrates/fig7": dict(epochs=2, select_at=1, n_val=16),
    "lowrank/lm": dict(steps=4, steps_per_epoch=2),
    "lowrank/vit": dict(epochs=2),
    "lowrank/fig2": dict(steps=20, log_every=10, spectra_at=[0, 10]),
}
# the tables each job writes, and a column that must be finite in each
TABLES = {
    "maxmargin/vit": {"fig6": None, "fig7": "zeta"},
    "fastrates/fig1": {"csv": "train_loss"},
    "fastrates/fig4": {"csv": "train_loss"},
    "fastrates/fig7": {"csv": "train_loss"},
    "lowrank/lm": {"csv": "val_loss"},
    "lowrank/vit": {"csv": "eff_rank"},
    "lowrank/fig2": {"csv": "train_loss"},
}
SWEEPS = list(SHORT)


@pytest.fixture(scope="module")
def paper_jobs() -> dict:
    """``{<paper>/<sweep>: the train job's func, first run, inputs, accelerator}`` of the paper
    preset's GPU sweeps, from its figure table."""
    table = load_run(ROOT, scale="paper").table
    return {
        f"{paper}/{name}": dict(
            func=s.func,
            run=table.run_params(paper, name, s.points[0], table.results),
            inputs=dict(s.inputs),
            accelerator=table.config["accelerator"],
        )
        for (paper, name), s in table.sweeps.items()
        if s.gpu
    }


def test_every_gpu_sweep_of_the_paper_preset_is_run_here(paper_jobs):
    """A new GPU sweep (or a renamed one) fails until it has its tiny run here."""
    assert sorted(paper_jobs) == sorted(SWEEPS)
    assert sorted(SHORT) == sorted(fam.TINY) == sorted(TABLES)


def _shrunk(sweep: str, block: dict, workdir: Path) -> dict:
    """The paper block with the tiny sizes and run length; each shrunk key must exist there."""
    small = {**fam.TINY[sweep], **SHORT[sweep]}
    if sweep.startswith("fastrates/fig") and sweep != "fastrates/fig7":
        from transformers import BertConfig, BertModel

        torch.manual_seed(0)
        model_dir = workdir / "bert-random"
        BertModel(BertConfig(**fam.TINY_BERT)).save_pretrained(model_dir)  # no classifier head
        small["model"] = str(model_dir)
    unknown = sorted(set(small) - set(block))
    assert not unknown, f"{sweep}: the paper block has no {unknown}; keys: {sorted(block)}"
    return {**block, **small}


def _stand_ins(sweep: str, s: dict, inputs: dict, monkeypatch) -> dict:
    """Replace the hub loaders ``sweep`` reads by synthetic data sized for its tiny run (the
    stand-ins of attnbias.gpu_check.standins); the rule's named inputs, each given a stand-in
    where read."""
    import attnbias.data.images as images
    import attnbias.data.text as text
    import attnbias.experiments.lowrank.vit as lvit
    import attnbias.models.sequence as sequence

    if sweep == "maxmargin/vit":
        data = fam.synthetic_cifar(s["batch_size"] * 2, max(s["probe_size"], 64))
        monkeypatch.setattr(images, "load_cifar10", lambda *a, **k: data)
    elif sweep == "fastrates/fig7":
        data = fam.synthetic_cifar(s["batch_size"] * 2 + s["n_val"], 32)
        monkeypatch.setattr(images, "load_cifar10", lambda *a, **k: data)
    elif sweep in ("fastrates/fig1", "fastrates/fig4"):
        from transformers import BertConfig

        vocab = BertConfig().vocab_size
        monkeypatch.setattr(sequence, "load_tokenizer", lambda name: fam.SyntheticTokenizer(vocab))
        labels, pairs = (3, True) if sweep.endswith("fig1") else (2, False)
        splits = fam.synthetic_text_splits(s["batch_size"] * s["steps"], 8, labels, pairs)
        monkeypatch.setattr(text, "load_text_dataset", lambda *a, **k: splits)
    elif sweep == "lowrank/vit":
        fake = (fam.SyntheticImageNet(3 * s["batch_size"], 1000), fam.SyntheticImageNet(64, 1000))
        monkeypatch.setattr(lvit, "load_image_dataset", lambda *a, **k: fake)
        monkeypatch.setattr(lvit, "HubImageBatches", fam.SyntheticImageBatches)
    elif sweep == "lowrank/lm":
        # the download rule's marker results/downloads/lowrank/pile.csv; its tokens beside it
        marker = Path(inputs["tokens"])
        fam.synthetic_token_dir(
            marker.with_suffix(""),
            (s["steps"] * s["batch_size"] + 4) * s["ctx"],
            (s["val_windows"] + 4) * s["ctx"],
            vocab=512,
        )
        marker.write_text("synthetic\n")
    return {**inputs, "code": [str(ROOT / "scripts" / "train.py")], "shared": []}


@pytest.mark.parametrize("sweep", SWEEPS)
def test_paper_entry_point_runs_as_its_train_job(sweep, paper_jobs, tmp_path, monkeypatch):
    job = paper_jobs[sweep]
    monkeypatch.chdir(tmp_path)  # the job's relative paths (results/paper/...) land here
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, "1")  # scripts/train.py sets them; restored after the test
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    run = dict(job["run"])
    settings = dict(run["settings"])
    assert isinstance(settings.get("settings"), dict), "the run's settings block"
    settings["settings"] = _shrunk(sweep, settings["settings"], tmp_path)
    run["settings"] = settings
    inputs = _stand_ins(sweep, settings["settings"], job["inputs"], monkeypatch)
    out = tmp_path / "results" / "paper" / "data" / sweep / run["label"]
    snakemake = SimpleNamespace(
        threads=1,
        params=SimpleNamespace(func=job["func"], runs=[run], preset="paper", accelerator="cpu"),
        input=inputs,
        output=SimpleNamespace(runs=str(out)),
        log=[],
    )
    threads = torch.get_num_threads()
    try:
        runpy.run_path(str(ROOT / "scripts" / "train.py"), init_globals={"snakemake": snakemake})
    finally:
        torch.set_num_threads(threads)
    files = sorted(p.name for p in out.iterdir())
    stems = [run["label"]] if list(TABLES[sweep]) == ["csv"] else [
        f"{run['label']}_{t}" for t in TABLES[sweep]
    ]  # fmt: skip
    assert files == sorted(f"{stem}.{ext}" for stem in stems for ext in ("csv", "json"))
    for stem, column in zip(stems, TABLES[sweep].values(), strict=True):
        df, meta = load_data(out / f"{stem}.csv")
        assert len(df) > 0, stem
        if column is not None:  # finite where recorded (a step-0 row has no train loss), at the end
            values = df[column].dropna()
            assert len(values) and values.map(math.isfinite).all(), (stem, df[column].tolist())
            assert math.isfinite(df[column].iloc[-1]), (stem, df[column].tolist())
        recorded = meta["settings"]
        recorded = recorded.get("settings", recorded)  # a typed record, or the job's settings
        for key, value in fam.TINY[sweep].items():
            assert recorded[key] == value, (stem, key)
    assert not Path(run["checkpoint"]).exists()  # the job dropped its resume state
