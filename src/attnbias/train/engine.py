"""One training loop for classification and language modelling.

``fit`` trains ``model`` on tensors kept on the device, with

* the device chosen automatically (CUDA when present, else CPU) or forced;
* bf16 autocast on GPU (metrics stay float32), PyTorch SDPA attention inside the model,
  optional ``torch.compile``;
* a seeded CPU ``torch.Generator`` for shuffling and augmentation, so a run is deterministic on
  CPU and its state can be checkpointed;
* a run counted in epochs (passes over the data) or in steps (updates: language models,
  fine-tuning, online data), with metrics (``on_row``) after every epoch, or every
  ``eval_every`` steps and after the last, appended to a JSONL log and shown with tqdm;
* periodic **atomic checkpoints** (model, optimiser, generator, history) to a path the workflow does
  not declare as an output: a killed job rerun resumes where it stopped and ends with the same
  final metrics as an uninterrupted run (Snakemake deletes declared outputs before a job, which is
  why the checkpoint must live elsewhere).  When they are written is the run's
  :class:`~attnbias.train.rows.RowPlan`; ``before_checkpoint`` is called before each one.

The task is given by ``loss_fn(model, batch) -> (loss, {name: float})`` over a dict of equally long
tensors, so the same loop serves images (``{"x", "y"}``) and token windows (``{"ids"}``).

Two data sources:

* **static** ``data`` (a dict of tensors, kept on the device): each row's updates (an epoch, or
  ``eval_every`` steps) walk through a permutation drawn from the seeded generator, wrapping
  around when they are more than one pass;
* **online** ``batch_fn(step, generator) -> dict of tensors``: the batch of update ``step`` (0-based
  count of the updates done before it) is produced on demand, e.g. fresh associative-recall samples
  or windows of a token stream.  ``step`` continues across rows.  For exact resume the batch must
  be a function of (seed, step) or of the engine's generator, whose state is checkpointed.

Optional per-run refinements (``TrainConfig``): learning-rate warm-up and cosine or linear decay,
global-norm gradient clipping and gradient accumulation over micro-batches.  They are computed from
the global step, so a resumed run continues its schedule exactly.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from tqdm.auto import tqdm

from .augment import random_crop_flip
from .rows import RowPlan

log = logging.getLogger("attnbias.train")


@dataclass
class TrainConfig:
    """Settings of one training run (every field is part of the checkpoint fingerprint).

    A run is counted in ``epochs`` or in ``steps``, exactly one of them.  In epochs, a metrics
    row ends each epoch (``steps_per_epoch`` updates, default one pass over the data) and
    ``ckpt_every`` counts epochs.  In steps, a row ends every ``eval_every`` updates (default:
    once, at the end) and after the last update, which may come sooner, and ``ckpt_every``
    counts updates: a checkpoint is written at the first row end at or after each multiple
    (:class:`~attnbias.train.rows.RowPlan`).
    """

    epochs: int | None = field(default=None, kw_only=True)  # or ``steps`` (below)
    batch_size: int
    lr: float
    optimizer: str = "adam"  # a key of OPTIMIZERS: adam | adamw | sgd | sngd | sps
    momentum: float = 0.0
    weight_decay: float = 0.0
    seed: int = 0
    steps_per_epoch: int | None = None  # None: one pass over the data
    augment_pad: int = 0  # random-crop padding for images (0 = off)
    augment_flip: bool = False
    bf16: bool = True  # autocast on CUDA only
    compile: bool = False
    ckpt_every: int = 1  # epochs (steps in a run counted in steps) between checkpoints
    extra: dict = field(default_factory=dict)  # optimiser-specific settings, e.g. SPS cap
    # refinements added later; at their defaults they leave the fingerprint of older runs unchanged
    # constant | cosine | linear (decay to final_lr_frac · lr after warm-up)
    schedule: str = "constant"
    warmup_steps: int = 0  # linear warm-up from lr/warmup_steps to lr
    # lr at the last step of the cosine/linear decay, as a fraction of lr
    final_lr_frac: float = 0.0
    grad_clip: float | None = None  # global gradient-norm clipping (None: off)
    grad_accum: int = 1  # micro-batches per update (each batch is split into this many chunks)
    # the runs one model holds side by side, e.g. their (decay, seed) (optimizer adamw_runs): part
    # of the fingerprint, so a checkpoint of other runs is never resumed (None: one run)
    runs: list | None = None
    steps: int | None = None  # updates in all, for a run counted in steps (not epochs)
    eval_every: int | None = None  # updates between metric rows there (None: only at the end)

    def fingerprint(self) -> str:
        d = asdict(self)
        for name, default in _LATER_DEFAULTS.items():
            if d[name] == default:
                d.pop(name)
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def lr_factor(self, step: int, total: int) -> float:
        """Multiplier of the base learning rate for update ``step`` (0-based) of ``total``."""
        if self.warmup_steps and step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        if self.schedule == "constant":
            return 1.0
        progress = min(1.0, (step - self.warmup_steps) / max(1, total - self.warmup_steps))
        if self.schedule == "cosine":
            shape = 0.5 * (1.0 + math.cos(math.pi * progress))
        elif self.schedule == "linear":
            shape = 1.0 - progress
        else:
            raise ValueError(f"unknown schedule {self.schedule!r}; known: constant, cosine, linear")
        return self.final_lr_frac + (1.0 - self.final_lr_frac) * shape


_LATER_DEFAULTS = {
    "schedule": "constant",
    "warmup_steps": 0,
    "final_lr_frac": 0.0,
    "grad_clip": None,
    "grad_accum": 1,
    "runs": None,
    "steps": None,
    "eval_every": None,
}


def resolve_device(accelerator: str = "auto") -> torch.device:
    """"auto": CUDA when available, else CPU; "cuda" fails clearly without a GPU."""
    if accelerator == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "accelerator=cuda requested but no CUDA device is available (use auto or cpu)"
        )
    if accelerator in ("auto", "cuda") and torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")


def _sngd(params, c):
    from ..optim.stochastic import SNGD

    return SNGD(params, lr=c.lr, **c.extra)


def _sps(params, c):
    from ..optim.stochastic import SPS

    return SPS(params, lr=c.lr, **c.extra)  # lr is the cap γ_b; extra may set c and f_star


def _multi_tensor(extra: dict) -> dict:
    """``foreach=True`` unless the run asks for an implementation: torch's CPU default is the
    per-tensor Python loop, whose overhead was 5-10 % of a small model's step on one core; the
    multi-tensor update does the same float operations (bit for bit on CPU, tested)."""
    return {} if "fused" in extra or "foreach" in extra else {"foreach": True}


def _adam(params, c):
    return torch.optim.Adam(
        params, lr=c.lr, weight_decay=c.weight_decay, **c.extra, **_multi_tensor(c.extra)
    )


def _adamw(params, c):
    """AdamW; global-norm clipping and a linear decay (the BERT fine-tuning recipe) are the
    engine's ``grad_clip`` and ``schedule="linear"``, not part of the optimiser."""
    return torch.optim.AdamW(
        params, lr=c.lr, weight_decay=c.weight_decay, **c.extra, **_multi_tensor(c.extra)
    )


def _adamw_runs(params, c):
    """AdamW over runs stacked along a leading axis, each its own decoupled decay (the groups'
    ``run_decay``): :class:`attnbias.train.runs.RunsAdamW`."""
    from .runs import RunsAdamW

    return RunsAdamW(params, lr=c.lr, **c.extra, **_multi_tensor(c.extra))


def _sgd(params, c):
    return torch.optim.SGD(params, lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay)


# Optimiser factories: name -> f(param_groups, cfg).  A static table: every optimiser a run may
# name is listed here (nothing is registered at run time), so a run's settings say what it ran.
OPTIMIZERS: dict[str, Callable] = {
    "adam": _adam,
    "adamw": _adamw,
    "adamw_runs": _adamw_runs,
    "sgd": _sgd,
    "sngd": _sngd,
    "sps": _sps,
}


def make_optimizer(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    if cfg.optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {cfg.optimizer!r}; known: {sorted(OPTIMIZERS)}")
    return OPTIMIZERS[cfg.optimizer](params, cfg)


def _atomic_save(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _write_log(path: Path | None, history: list[dict]) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in history))
    os.replace(tmp, path)


def fit(
    model: torch.nn.Module,
    data: dict[str, torch.Tensor] | None,
    loss_fn: Callable,
    cfg: TrainConfig,
    device: torch.device,
    checkpoint: str | os.PathLike | None = None,
    metrics_log: str | os.PathLike | None = None,
    on_row: Callable[[torch.nn.Module, int], dict] | None = None,
    param_groups=None,
    image_key: str | None = "x",
    progress: bool = True,
    batch_fn: Callable[[int, torch.Generator], dict[str, torch.Tensor]] | None = None,
    after_backward: Callable[[torch.nn.Module, int, torch.Tensor], None] | None = None,
    stop: Callable[[int], bool] | None = None,
    before_checkpoint: Callable[[int], None] | None = None,
) -> list[dict]:
    """Train and return the history: one row per epoch, or per ``cfg.eval_every`` steps in a run
    counted in steps (:class:`TrainConfig`), each row keyed by its count (``"epoch"`` or
    ``"step"``: the updates done); row 0 is before training, when ``on_row`` is given.

    ``data``: dict of tensors with a common first dimension; moved to ``device`` once (datasets
    are kept on the GPU).  ``batch_fn``: an online source used instead of ``data`` (pass
    ``data=None``; in a run counted in epochs ``cfg.steps_per_epoch`` is then required):
    ``batch_fn(step, generator)`` returns
    the batch of update ``step`` (global, 0-based), on any device.  ``param_groups``: optional
    optimiser parameter groups (e.g. separate weight decay for attention and MLP).  ``checkpoint``:
    resume file (undeclared in Snakemake).  ``after_backward(model, step, loss)``: called once
    per update, after the gradients of update ``step`` (global, 0-based) and its minibatch
    ``loss`` (a detached scalar tensor) are computed and before they are clipped and applied, e.g.
    to record gradient norms and losses (:mod:`attnbias.train.probe`).
    ``on_row(model, count)`` returns the metrics of a row, merged into it; it and ``stop(count)``
    receive the row's count (the epoch, or the updates done).  ``stop`` is asked after each row
    (also the last: it may time them); True before the last ends training there early (a time
    budget), after saving the checkpoint, so the same call later resumes; the history then ends
    before the run's end.  Checkpoints follow the rows of :meth:`RowPlan.checkpoint_due` (and a
    stop); ``before_checkpoint(count)`` is called just before each is written (only with a
    ``checkpoint``), after ``stop``, e.g. to finish metrics the history's rows still wait for.
    """
    if batch_fn is None and data is None:
        raise ValueError("fit needs static `data` or an online `batch_fn`")
    in_steps = cfg.steps is not None
    if (cfg.epochs is None) != in_steps:
        raise ValueError("a TrainConfig counts the run in epochs or in steps: give exactly one")
    if batch_fn is not None and not in_steps and not cfg.steps_per_epoch:
        raise ValueError(
            "an online batch_fn needs cfg.steps_per_epoch (updates between epoch ends) or a run "
            "counted in steps"
        )
    if cfg.grad_accum < 1:
        raise ValueError(f"grad_accum must be >= 1, got {cfg.grad_accum}")
    torch.manual_seed(cfg.seed)
    model.to(device)
    if batch_fn is None:
        data = {k: v.to(device) for k, v in data.items()}
        n = len(next(iter(data.values())))
    opt = make_optimizer(param_groups if param_groups is not None else model.parameters(), cfg)
    base_lrs = [g["lr"] for g in opt.param_groups]  # before a resumed state overwrites them
    scheduled = cfg.schedule != "constant" or cfg.warmup_steps > 0
    takes_loss = "loss" in inspect.signature(opt.step).parameters
    gen = torch.Generator().manual_seed(cfg.seed)
    history: list[dict] = []
    start = 1
    ckpt = Path(checkpoint) if checkpoint else None
    if ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        # same settings and same shapes (e.g. not a vocabulary cut to other rows)
        same_shapes = _shapes(state["model"]) == _shapes(model.state_dict())
        if state.get("fingerprint") == cfg.fingerprint() and same_shapes:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            # RNG states are CPU byte tensors; map_location moved them to ``device`` (CUDA)
            gen.set_state(state["generator"].cpu())
            torch.set_rng_state(state["torch_rng"].cpu())
            history = state["history"]
            start = state.get("row", state.get("epoch")) + 1  # ("epoch" in older checkpoints)
            unit = "step" if "step" in history[-1] else "epoch"
            log.info("resumed from %s at %s %d", ckpt, unit, history[-1][unit])
        else:
            log.warning("ignoring checkpoint %s: it belongs to different settings or shapes", ckpt)
    metrics_path = Path(metrics_log) if metrics_log else None
    # compile the loss with the model: the bf16 -> fp32 upcast of the logits and the log-softmax
    # then fuse instead of materialising an fp32 copy of the logits (GPT-2 124M on an H100:
    # 33 % MFU against 25 % for the model compiled alone; benchmarks/mfu_levers.py)
    step_loss = torch.compile(loss_fn) if cfg.compile else loss_fn
    use_bf16 = cfg.bf16 and device.type == "cuda"
    # the updates of each row, their count (the history's key) and the checkpoints after them
    plan = RowPlan.of(cfg, None if batch_fn is not None else n)
    total, key, n_rows, count = plan.total, plan.unit, plan.n_rows, plan.count
    if start == 1 and on_row is not None:
        model.eval()
        history.append({key: 0, **on_row(model, 0)})
        _write_log(metrics_path, history)
    params = [p for g in opt.param_groups for p in g["params"]]
    rows = range(start, n_rows + 1)
    bar = tqdm(rows, initial=start - 1, total=n_rows, disable=not progress, desc=f"{key}s")
    for r in bar:
        model.train()
        t0 = time.perf_counter()
        if batch_fn is None:
            perm = torch.randperm(n, generator=gen).to(device)
        sums: dict[str, torch.Tensor] = {}
        first, size = plan.first(r), plan.size(r)  # updates done before this row's, its updates
        for s in range(size):
            step = first + s
            if batch_fn is None:
                idx = perm[(s * cfg.batch_size) % n : (s * cfg.batch_size) % n + cfg.batch_size]
                if len(idx) < cfg.batch_size:  # wrap around for steps_per_epoch > one pass
                    idx = torch.cat([idx, perm[: cfg.batch_size - len(idx)]])
                batch = {k: v[idx] for k, v in data.items()}
            else:
                batch = {k: v.to(device, non_blocking=True) for k, v in batch_fn(step, gen).items()}
            if image_key in batch and (cfg.augment_pad or cfg.augment_flip):
                batch[image_key] = random_crop_flip(
                    batch[image_key], cfg.augment_pad, cfg.augment_flip, gen
                )
            if scheduled:
                factor = cfg.lr_factor(step, total)
                for g, base in zip(opt.param_groups, base_lrs, strict=True):
                    g["lr"] = base * factor
            opt.zero_grad(set_to_none=True)
            if cfg.grad_accum == 1:
                loss, stats = _forward(step_loss, model, batch, use_bf16)
                loss.backward()
            else:
                loss, stats = _accumulate(step_loss, model, batch, use_bf16, cfg.grad_accum)
            if after_backward is not None:
                after_backward(model, step, loss.detach())
            if cfg.grad_clip:
                torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            if takes_loss:  # e.g. the stochastic Polyak step needs the minibatch loss
                opt.step(loss=loss.detach())
            else:
                opt.step()
            # accumulate on the device: no host synchronisation inside the row
            sums["train_loss"] = sums.get("train_loss", 0.0) + loss.detach().float()
            for k, v in stats.items():
                sums[k] = sums.get(k, 0.0) + torch.as_tensor(v, device=loss.device).detach().float()
        row = {key: count(r), **{k: float(v) / size for k, v in sums.items()}}
        if hasattr(opt, "own_step"):  # SNGD, SPS: how often the rule's own step was taken so far
            row["own_step"] = opt.own_step()
        if scheduled:
            row["lr"] = float(opt.param_groups[0]["lr"])
        row["seconds"] = time.perf_counter() - t0  # the row's wall time
        if on_row is not None:
            model.eval()
            row.update(on_row(model, count(r)))
        history.append(row)
        _write_log(metrics_path, history)
        bar.set_postfix(loss=f"{row['train_loss']:.4f}")
        stopping = stop is not None and stop(count(r)) and r < n_rows
        if ckpt is not None and (plan.checkpoint_due(r) or stopping):  # and before a stop
            if before_checkpoint is not None:
                before_checkpoint(count(r))
            _atomic_save(
                {
                    "fingerprint": cfg.fingerprint(),
                    "row": r,
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "generator": gen.get_state(),
                    "torch_rng": torch.get_rng_state(),
                    "history": history,
                },
                ckpt,
            )
        if stopping:
            log.info("stopped after %s %d of %d (stop)", key, count(r), count(n_rows))
            break
    return history


def _shapes(state: dict) -> dict:
    return {k: tuple(v.shape) for k, v in state.items()}


def _forward(loss_fn, model, batch, use_bf16: bool):
    ctx = torch.autocast("cuda", dtype=torch.bfloat16) if use_bf16 else contextlib.nullcontext()
    with ctx:
        return loss_fn(model, batch)


def _accumulate(loss_fn, model, batch, use_bf16: bool, parts: int):
    """Backward over ``parts`` equal micro-batches; returns the mean loss and mean statistics."""
    chunks = {k: torch.chunk(v, parts) for k, v in batch.items()}
    if any(len(c) != parts for c in chunks.values()):
        size = len(next(iter(batch.values())))
        raise ValueError(f"a batch of {size} does not split into grad_accum={parts} micro-batches")
    total, stats = 0.0, {}
    for i in range(parts):
        loss, st = _forward(loss_fn, model, {k: c[i] for k, c in chunks.items()}, use_bf16)
        (loss / parts).backward()
        total = total + loss.detach() / parts
        for k, v in st.items():
            stats[k] = stats.get(k, 0.0) + torch.as_tensor(v).detach().float() / parts
    return total, stats
