"""The family parts: a short paper-configuration training loop of every GPU training family.

Each family runs its own experiment function (``train_vit``, ``train_text``, ``train_image``,
``train_lm``, ``train_vit_wd``, ``train_recall``) with the paper preset's model, optimiser,
precision and compile settings, on synthetic data of the paper's shapes put in place of the hub
loaders (:mod:`attnbias.gpu_check.standins`; nothing is downloaded), for a few epochs of a few
steps.  :func:`recording_fit` wraps the engine's ``fit`` to time the training epochs and the
per-epoch evaluations; from them each family projects the paper run: paper steps × steady step
time + paper evaluations × their measured cost (data loading from the hub — JPEG decoding,
tokenisation — is not measured).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import statistics
import time
from pathlib import Path

from attnbias.gpu_check.device import sync
from attnbias.gpu_check.standins import (
    TINY,
    TINY_BERT,
    SyntheticImageBatches,
    SyntheticImageNet,
    SyntheticTokenizer,
    patched,
    synthetic_cifar,
    synthetic_text_splits,
    synthetic_token_dir,
)


@contextlib.contextmanager
def recording_fit(records: list):
    """Replace ``attnbias.train.fit`` (which every experiment looks up when it runs) by a wrapper
    that records, per call: epoch seconds, evaluation seconds (the engine's per-row callback
    ``on_row``, timed), steps per epoch, batch, loss."""
    import attnbias.train as engine

    real = engine.fit

    def fit(model, data, loss_fn, cfg, device, **kw):
        evals = []
        callback = kw.get("on_row")
        if callback is not None:

            def timed(m, epoch):
                t = time.perf_counter()
                row = callback(m, epoch)
                sync(device)
                evals.append(time.perf_counter() - t)
                return row

            kw["on_row"] = timed
        t0 = time.perf_counter()
        hist = real(model, data, loss_fn, cfg, device, **kw)
        sync(device)
        if cfg.steps is not None:  # a run counted in steps: a row every eval_every updates
            per_row = cfg.eval_every or cfg.steps
        else:
            n = None if data is None else len(next(iter(data.values())))
            per_row = cfg.steps_per_epoch or max(1, n // cfg.batch_size)
        records.append(
            {
                "epoch_seconds": [h["seconds"] for h in hist if "seconds" in h],
                "eval_seconds": evals,
                "steps_per_epoch": per_row,  # updates per row (an epoch, or eval_every steps)
                "batch_size": cfg.batch_size,
                "optimizer": cfg.optimizer,
                "compile": cfg.compile,
                "final_train_loss": float(hist[-1]["train_loss"]),
                "fit_wall_s": time.perf_counter() - t0,
            }
        )
        return hist

    engine.fit = fit
    try:
        yield records
    finally:
        engine.fit = real


def _steady(rec: dict) -> float:
    """Seconds per training step after the first (warm-up, compilation) epoch."""
    secs = rec["epoch_seconds"]
    return statistics.median(secs[1:] if len(secs) > 1 else secs) / rec["steps_per_epoch"]


def _eval_s(rec: dict) -> float:
    """Median seconds of one per-epoch evaluation (the one before training excluded)."""
    ev = rec["eval_seconds"][1:] or rec["eval_seconds"]
    return statistics.median(ev) if ev else 0.0


def _summarise(
    rec: dict, unit: str, items_per_step: float, paper_steps: int, paper_eval_s: float
) -> dict:
    step = _steady(rec)
    train_h = paper_steps * step / 3600
    out = {
        "steady_step_s": step,
        "items_per_s": items_per_step / step,
        "unit": unit,
        "warmup_epoch_s": rec["epoch_seconds"][0],
        "eval_s_median": _eval_s(rec),
        "final_train_loss": rec["final_train_loss"],
        "paper_steps": paper_steps,
        "projected_train_h": train_h,
        "projected_eval_h": paper_eval_s / 3600,
        "projected_total_h": train_h + paper_eval_s / 3600,
    }
    if not math.isfinite(rec["final_train_loss"]):
        out["_failure"] = f"training loss is {rec['final_train_loss']}"
    return out


def _accelerator(device) -> str:
    return device.type


def _call(fn, settings: dict, **overrides):
    """Call an experiment function with the settings it takes (config blocks hold more keys).  A
    job taking a typed ``settings`` object (attnbias.experiments.settings) gets it built from the
    block's fields, and its other parameters (the run's point, inputs) by name.  An override that
    is neither a parameter nor a settings field is an error: a renamed one fails here instead of
    being dropped unseen."""
    import dataclasses
    import typing

    from attnbias.experiments.settings import Settings

    params = inspect.signature(fn).parameters
    merged = {**settings, **overrides}
    kw = {k: v for k, v in merged.items() if k in params and k != "settings"}
    names: set[str] = set()
    if "settings" in params:
        hint = typing.get_type_hints(fn)["settings"]
        cls = next(c for c in typing.get_args(hint) or (hint,) if issubclass(c, Settings))
        names = {f.name for f in dataclasses.fields(cls)}
        kw["settings"] = cls.of({k: v for k, v in merged.items() if k in names})
    unknown = sorted(set(overrides) - set(params) - names)
    if unknown:
        raise TypeError(f"{fn.__name__} takes no {unknown} (neither a parameter nor a setting)")
    return fn(**kw)


def maxmargin_vit(cpu: bool, device, workdir: Path, cfg: dict) -> dict:
    """Figs 6-7: ``train_vit`` (ViT-B/2, SGD, crop/flip, compile, ζ probe of 1,000 images)."""
    import attnbias.data.images as images
    from attnbias.experiments.maxmargin import train_vit

    s = dict(cfg["maxmargin"]["vit"])
    steps = 2 if cpu else 20
    if cpu:
        s.update(TINY["maxmargin/vit"])
    n_test = max(s["probe_size"], 64)
    records: list = []
    data = synthetic_cifar(s["batch_size"] * steps, n_test)
    with patched(images, "load_cifar10", lambda *a, **k: data):
        with recording_fit(records):
            out = _call(
                train_vit,
                s,
                epochs=2,
                map_epochs=[1, 2],
                seed=0,
                accelerator=_accelerator(device),
                checkpoint=str(workdir / "vit.pt"),
            )
    curves = out["fig7"][0]
    paper = cfg["maxmargin"]["vit"]
    per_epoch = 50_000 // paper["batch_size"]
    rec = records[-1]
    res = _summarise(
        rec,
        "images/s",
        s["batch_size"],
        per_epoch * paper["epochs"],
        (paper["epochs"] + 1) * _eval_s(rec),
    )
    res.update(
        zeta_last=float(curves["zeta"].iloc[-1]),
        wnorm_last=float(curves["wnorm"].iloc[-1]),
        batch=s["batch_size"],
        compile=int(bool(s["compile"])),
        probe=s["probe_size"],
    )
    return res


# Evaluated examples of one paper run (what the projection multiplies the measured per-example
# evaluation cost by): Fig 1 — MNLI validation-matched (9,815) every eval_every steps, 5,000
# validation examples twice; Fig 4 — 10,000 test examples every eval_every, 5,000 twice, and the
# full CivilComments test split (97,320) once.
def _paper_eval_items(fig: str, s: dict) -> int:
    evals = s["steps"] // s["eval_every"]
    if fig == "fig1":
        return evals * 9_815 + 2 * s["n_val"]
    return evals * s["n_test"] + 2 * s["n_val"] + (97_320 if s.get("full_final_test") else 0)


def fastrates_bert(cpu: bool, device, workdir: Path, cfg: dict) -> dict:
    """Figs 1/4: ``train_text`` (BERT-base from a saved random checkpoint, SDPA, bf16) with each
    of Fig 1's four optimisers, and Fig 4 (300 tokens) with AdamW."""
    import torch
    from transformers import BertConfig, BertModel

    import attnbias.data.text as text
    import attnbias.models.sequence as sequence
    from attnbias.experiments.fastrates.finetune import train_text

    bcfg = BertConfig(**(TINY_BERT if cpu else {}))
    torch.manual_seed(0)
    model_dir = workdir / "bert-base-random"
    BertModel(bcfg).save_pretrained(model_dir)  # a hub checkpoint: no classifier head
    steps, log_every, n_eval = (4, 1, 8) if cpu else (40, 10, 512)
    res: dict = {}
    runs = [("fig1", o) for o in ("sgd", "sngd", "sps", "adamw")] + [("fig4", "adamw")]
    with patched(sequence, "load_tokenizer", lambda name: SyntheticTokenizer(bcfg.vocab_size)):
        for fig, opt in runs:
            s = dict(cfg["fastrates"][fig])
            if cpu:
                s.update(TINY[f"fastrates/{fig}"])
            labels = 3 if fig == "fig1" else 2
            splits = synthetic_text_splits(s["batch_size"] * steps, n_eval, labels, fig == "fig1")
            o = dict(s["optimizers"][opt])
            lr = o.pop("grid")[len(s["optimizers"][opt]["grid"]) // 2]
            records: list = []

            def load(*a, _splits=splits, **k):
                return _splits

            with patched(text, "load_text_dataset", load), recording_fit(records):
                _call(
                    train_text,
                    s,
                    figure=fig,
                    model=str(model_dir),
                    opt=opt,
                    lr=lr,
                    opt_settings=o,
                    steps=steps,
                    log_every=log_every,
                    eval_every=2 * log_every,
                    select_at=log_every,
                    ckpt_every=2 * log_every,
                    seed=0,
                    checkpoint=str(workdir / f"{fig}-{opt}.pt"),
                    accelerator=device.type,
                )
            rec = records[-1]
            # test at steps 0, 2·log_every and the end; validation at log_every and the end
            items = 5 * n_eval
            eval_item_s = sum(rec["eval_seconds"]) / items
            paper = cfg["fastrates"][fig]
            r = _summarise(
                rec,
                "sequences/s",
                s["batch_size"],
                paper["steps"],
                _paper_eval_items(fig, paper) * eval_item_s,
            )
            r["tokens_per_s"] = r["items_per_s"] * s["max_length"]
            res[f"{fig}_{opt}"] = r
    # headline: the slowest run (the projection a time limit must cover)
    worst = max(res.values(), key=lambda r: r["projected_total_h"])
    out = {k: v for k, v in worst.items()}
    out["runs"] = {
        k: {
            m: v[m]
            for m in ("steady_step_s", "items_per_s", "final_train_loss", "projected_total_h")
        }
        for k, v in res.items()
    }
    failed = [k for k, v in res.items() if "_failure" in v]
    if failed:
        out["_failure"] = f"non-finite training loss in {failed}"
    out["headline_run"] = next(k for k, v in res.items() if v is worst)
    return out


def fastrates_vit(cpu: bool, device, workdir: Path, cfg: dict) -> dict:
    """Fig 7: ``train_image`` (ViT-small, patch 4, dropout 0.1, crop/flip, compile) with SNGD."""
    import attnbias.data.images as images
    from attnbias.experiments.fastrates.image import train_image

    s = dict(cfg["fastrates"]["fig7"])
    steps = 2 if cpu else 20
    if cpu:
        s.update(TINY["fastrates/fig7"])
    n_val, n_test = (16, 32) if cpu else (512, 1000)
    o = dict(s["optimizers"]["sngd"])
    lr = o.pop("grid")[1]
    records: list = []
    data = synthetic_cifar(s["batch_size"] * steps + n_val, n_test)
    with patched(images, "load_cifar10", lambda *a, **k: data), recording_fit(records):
        _call(
            train_image,
            s,
            figure="fig7",
            epochs=2,
            select_at=1,
            n_val=n_val,
            opt="sngd",
            lr=lr,
            opt_settings=o,
            seed=0,
            accelerator=device.type,
            checkpoint=str(workdir / "fig7.pt"),
        )
    rec = records[-1]
    paper = cfg["fastrates"]["fig7"]
    per_epoch = (50_000 - paper["n_val"]) // paper["batch_size"]
    eval_item_s = _eval_s(rec) / n_test  # the test set every epoch (+ validation twice)
    paper_items = paper["epochs"] * 10_000 + 2 * paper["n_val"]
    res = _summarise(
        rec, "images/s", s["batch_size"], per_epoch * paper["epochs"], paper_items * eval_item_s
    )
    res.update(optimizer="sngd", compile=int(bool(s["compile"])), batch=s["batch_size"])
    return res


def lowrank_lm(cpu: bool, device, workdir: Path, cfg: dict) -> dict:
    """Fig 3 / App. C / Table 1: ``train_lm`` (GPT-2 124M, 512 × 1024 tokens per step in 16
    micro-batches, AdamW fused, cosine, clipping, compile), validation on 2,048 windows, the
    n-gram baselines and the per-head metrics."""
    from attnbias.experiments.lowrank.lm import train_lm

    s = dict(cfg["lowrank"]["lm"])
    if cpu:
        s.update(TINY["lowrank/lm"])
    steps, per_epoch = 4, 2
    tokens = synthetic_token_dir(
        workdir / "tokens",
        (steps * s["batch_size"] + 4) * s["ctx"],
        (s["val_windows"] + 4) * s["ctx"],
        vocab=512 if cpu else 50257,
    )
    records: list = []
    t0 = time.perf_counter()
    with recording_fit(records):
        df, meta = _call(
            train_lm,
            s,
            sa=0.1,
            mlp=0.1,
            seed=0,
            corpus="hub",
            token_dir=str(tokens),
            steps=steps,
            steps_per_epoch=per_epoch,
            accelerator=device.type,
            checkpoint=str(workdir / "lm.pt"),
        )["run"]
    rec = records[-1]
    paper = cfg["lowrank"]["lm"]
    evals = paper["steps"] // paper["steps_per_epoch"]
    res = _summarise(
        rec, "tokens/s", s["batch_size"] * s["ctx"], paper["steps"], evals * _eval_s(rec)
    )
    res.update(
        val_loss=float(df["val_loss"].iloc[0]),
        head_rows=len(df),
        after_fit_s=time.perf_counter() - t0 - rec["fit_wall_s"],
        micro_batch=s["batch_size"] // s["grad_accum"],
        grad_accum=s["grad_accum"],
        compile=int(bool(s["compile"])),
    )
    return res


def lowrank_vit(cpu: bool, device, workdir: Path, cfg: dict) -> dict:
    """Fig 3 (right): ``train_vit_wd``'s hub branch (ViT-S/16 at 224², batch 1,024 in 4
    micro-batches, Mixup loss, AdamW fused, cosine, clipping, compile, bf16 evaluation), with
    synthetic batches in place of the ImageNet decoder."""
    import attnbias.experiments.lowrank.vit as lvit

    s = dict(cfg["lowrank"]["vit"])
    if cpu:
        s.update(TINY["lowrank/vit"])
    n_test = 64 if cpu else 512
    records: list = []
    fake = {
        "train": SyntheticImageNet(3 * s["batch_size"], 1000),
        "test": SyntheticImageNet(n_test, 1000),
    }
    with (
        patched(lvit, "load_image_dataset", lambda *a, **k: (fake["train"], fake["test"])),
        patched(lvit, "HubImageBatches", SyntheticImageBatches),
        recording_fit(records),
    ):
        t0 = time.perf_counter()
        df, meta = _call(
            lvit.train_vit_wd,
            s,
            attn=0.1,
            seed=0,
            epochs=2,
            accelerator=device.type,
            checkpoint=str(workdir / "vit.pt"),
        )["run"]
    rec = records[-1]
    eval_s = time.perf_counter() - t0 - rec["fit_wall_s"]  # the test pass (+ head metrics)
    paper = cfg["lowrank"]["vit"]
    per_epoch = 1_281_167 // paper["batch_size"]
    res = _summarise(
        rec, "images/s", s["batch_size"], per_epoch * paper["epochs"], eval_s * 50_000 / n_test
    )
    res.update(
        test_acc=float(meta["test_acc"]),
        micro_batch=s["batch_size"] // s["grad_accum"],
        compile=int(bool(s["compile"])),
        note="ImageNet JPEG decoding not measured",
    )
    return res


def lowrank_recall(cpu: bool, device, workdir: Path, cfg: dict) -> dict:
    """Fig 2: ``train_recall`` at the paper's size (width 256, 8 heads, batch 256), float32."""
    from attnbias.experiments.lowrank.recall import train_recall

    s = dict(cfg["lowrank"]["fig2"])
    steps, log_every = (20, 10) if cpu else (200, 100)
    if cpu:
        s.update(TINY["lowrank/fig2"])
    records: list = []
    with recording_fit(records):
        df, meta = _call(
            train_recall,
            s,
            lam=s["lambdas"][2],
            seed=0,
            steps=steps,
            log_every=log_every,
            spectra_at=[0, log_every],
            accelerator=device.type,
            checkpoint=str(workdir / "recall.pt"),
        )
    rec = records[-1]
    paper = cfg["lowrank"]["fig2"]
    res = _summarise(
        rec,
        "sequences/s",
        s["batch"],
        paper["steps"],
        paper["steps"] // paper["log_every"] * _eval_s(rec),
    )
    res.update(accuracy=float(meta["accuracy"]), d_model=s["d_model"], batch=s["batch"])
    return res
