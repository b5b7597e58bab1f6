"""Fig 3 (left), App. Fig. C and Table 1: GPT-2 language models (:mod:`attnbias.models.gpt2`)
over a (λ_SA, λ_MLP) grid, one AdamW run per (λ_SA, λ_MLP, seed), then the plot-ready tables.

λ_SA decays the attention matrices (c_attn = [W_Q|W_K|W_V], c_proj = P), λ_MLP the MLP matrices
(decoupled: θ ← θ − lr·λ·θ, the penalty (λ/2)‖θ‖²).  Each run records the per-head rank/balance
metrics of every layer at the end (:func:`~attnbias.experiments.lowrank.common.head_rows`) and the
validation perplexity.  Corpora: the offline tweets (quick) or prepared Pile tokens (paper), both
from :mod:`attnbias.data.text_lm`.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...io import gathered_control
from ..settings import Settings
from .common import (
    HEAD_COLUMNS,
    control_lambda,
    decay_sharing,
    head_rows,
    lr_sum,
    rank_means,
    rank_trace,
)

log = logging.getLogger("attnbias.lowrank")

LM_COLUMNS = {
    "lam_sa": (
        "AdamW weight decay λ_SA on the attention matrices (c_attn = [W_Q|W_K|W_V], c_proj = P)"
    ),
    "lam_mlp": "AdamW weight decay λ_MLP on the MLP matrices (c_fc, c_proj of the MLP)",
    "seed": "seed of the initialisation and of the window stream",
    "step": "optimiser step at which the metrics were taken (the last)",
    **HEAD_COLUMNS,
    "val_loss": (
        "validation next-token cross-entropy (nats per token) at the end of training (per run)"
    ),
    "val_ppl": "validation perplexity exp(val_loss) (per run)",
    "train_loss": "mean training cross-entropy over the last epoch of updates (per run)",
}

# the n-gram baselines recorded in each run's meta (not columns: they do not depend on the run's
# weights, only on its corpus and validation windows)
BASELINES = {
    "unigram_ppl": (
        "perplexity of the validation windows' predicted tokens under add-one smoothed unigram "
        "counts of the training tokens"
    ),
    "bigram_ppl": (
        "perplexity of the validation windows' predicted tokens given the previous token, under "
        "add-one smoothed bigram counts of the training tokens"
    ),
}


def ngram_baselines(
    train: np.ndarray, windows: np.ndarray, vocab_size: int, chunk: int = 1 << 24
) -> dict:
    """Unigram and bigram perplexities of the tokens a run is validated on (``windows[:, 1:]``,
    the positions :func:`~attnbias.models.gpt2.eval_lm_loss` scores; the bigram conditions on
    ``windows[:, :-1]``), with add-one smoothed counts from the training stream ``train``:
    p(b) = (c(b) + 1) / (N + V), p(b | a) = (c(a, b) + 1) / (c(a·) + V), c(a·) the count of a
    as the first token of a training bigram.  ``train`` is read in chunks of ``chunk`` tokens
    (a memory-mapped hub stream need not fit in memory); only the bigrams that occur in the
    windows are counted."""
    v = int(vocab_size)
    windows = np.asarray(windows, dtype=np.int64)
    prev, nxt = windows[:, :-1].ravel(), windows[:, 1:].ravel()
    want, inverse = np.unique(prev * v + nxt, return_inverse=True)
    uni = np.zeros(v, dtype=np.int64)
    first = np.zeros(v, dtype=np.int64)
    pair = np.zeros(len(want), dtype=np.int64)
    n = len(train)
    for start in range(0, n, chunk):
        x = np.asarray(train[start : min(n, start + chunk + 1)], dtype=np.int64)
        uni += np.bincount(x[:chunk], minlength=v)[:v]
        if len(x) < 2:
            continue
        codes = x[:-1] * v + x[1:]
        first += np.bincount(x[:-1], minlength=v)[:v]
        pos = np.searchsorted(want, codes).clip(max=len(want) - 1)
        hit = want[pos] == codes
        pair += np.bincount(pos[hit], minlength=len(want))
    log_uni = np.log(uni[nxt] + 1.0) - math.log(n + v)
    log_bi = np.log(pair[inverse.ravel()] + 1.0) - np.log(first[prev] + float(v))
    return {
        "unigram_ppl": float(np.exp(-log_uni.mean())),
        "bigram_ppl": float(np.exp(-log_bi.mean())),
    }


@functools.lru_cache(maxsize=2)
def _tweet_corpus(tokenizer: str, vocab_size: int, min_count: int, val_fraction: float):
    """The tweet corpus, tokenised once per process: a quick-preset job trains its seeds in turn
    on the same streams (re-tokenising them cost ≈ 1.2 CPU-s a run).  Its streams are read-only."""
    from ...data import text_lm

    data = text_lm.tweet_corpus(
        tokenizer, vocab_size=vocab_size, min_count=min_count, val_fraction=val_fraction
    )
    data.train.setflags(write=False)
    data.val.setflags(write=False)
    return data


def lm_corpus(
    corpus: str,
    tokenizer: str,
    vocab_size: int,
    min_count: int,
    val_fraction: float,
    token_dir: str | None,
):
    """The token streams of a run: the offline tweets (``tweets``) or prepared hub tokens
    (``hub``)."""
    from ...data import text_lm

    if corpus == "tweets":
        return _tweet_corpus(tokenizer, vocab_size, min_count, val_fraction)
    if corpus == "hub":
        return text_lm.load_token_dir(token_dir)
    raise ValueError(f"unknown corpus {corpus!r} (tweets or hub)")


@dataclass(frozen=True, kw_only=True)
class LMSettings(Settings):
    """The ``lowrank: lm`` block: corpus, model and AdamW settings shared by every GPT-2 run
    (descriptions in ``workflow/schemas/lowrank.schema.yaml``)."""

    corpus: str
    source: str | None
    tokenizer: str
    train_split: str
    val_split: str
    vocab_size: int
    min_count: int
    val_fraction: float
    train_tokens: int | None
    val_tokens: int | None
    n_layer: int
    n_head: int
    n_embd: int
    ctx: int
    batch_size: int
    grad_accum: int
    steps: int
    steps_per_epoch: int
    lr: float
    betas: list[float]
    eps: float
    warmup_steps: int
    final_lr_frac: float
    grad_clip: float | None
    val_windows: int
    single_pass: bool
    pad_vocab_to: int
    compile: bool


def train_lm(
    settings: LMSettings | Mapping,
    sa: float,
    mlp: float,
    seed: int,
    tokens: str | None = None,
    token_dir: str | None = None,
    checkpoint=None,
    metrics_log=None,
    accelerator: str = "auto",
    progress: bool = False,
    control: str = "none",
):
    """Train one GPT-2 LM with AdamW (λ_SA = ``sa`` on attention, λ_MLP = ``mlp`` on MLP
    matrices) on token windows from the engine's online source, then record per-head rank/balance
    metrics of every layer and the validation perplexity.  Returns ``{"run": (df, meta)}``; the
    meta records ``settings`` (:class:`LMSettings`) once.

    Hub tokens (``corpus="hub"``) are read from ``token_dir``, or from the folder beside the
    marker ``tokens`` written by the download rule (results/downloads/lowrank/pile.csv ->
    results/downloads/lowrank/pile/).

    ``control="null"`` (``--config control=null``) trains with λ_SA = 0 whatever ``lam_sa`` says
    (λ_MLP unchanged); ``sa`` stays the run's label and the meta records ``lam_sa_used``."""
    import torch

    from ...data.text_lm import WindowSampler, eval_windows
    from ...models.gpt2 import build_gpt2, eval_lm_loss, flops_per_token, gpt2_param_groups, lm_loss
    from ...train import TrainConfig, fit, resolve_device

    t0 = time.perf_counter()
    s = LMSettings.of(settings)
    lam_sa, lam_mlp = sa, mlp
    lam_sa_used = control_lambda(lam_sa, control)
    device = resolve_device(accelerator)
    if token_dir is None and tokens:
        token_dir = str(Path(tokens).with_suffix(""))
    data = lm_corpus(s.corpus, s.tokenizer, s.vocab_size, s.min_count, s.val_fraction, token_dir)
    model = build_gpt2(
        data.vocab_size,
        s.ctx,
        s.n_embd,
        s.n_layer,
        s.n_head,
        data.eos_id,
        seed=seed,
        pad_vocab_to=s.pad_vocab_to,
    )
    sampler = WindowSampler(data.train, s.ctx, s.batch_size, seed, single_pass=s.single_pass)
    val = torch.from_numpy(eval_windows(data.val, s.ctx, s.val_windows))
    use_bf16 = device.type == "cuda"

    def on_row(m, step):  # every steps_per_epoch steps and after the last
        vl = eval_lm_loss(
            m, val, batch_size=max(1, s.batch_size // s.grad_accum), device=device, bf16=use_bf16
        )
        log.info(
            "λ_SA=%g λ_MLP=%g seed=%d step %d: validation loss %.4f",
            lam_sa,
            lam_mlp,
            seed,
            step,
            vl,
        )
        # the rank trace: has a rank read at the end settled? (docs/papers/lowrank.md#regime-checks)
        return {"val_loss": vl, "ranks": rank_means(m)}

    cfg = TrainConfig(
        steps=s.steps,
        eval_every=s.steps_per_epoch,
        batch_size=s.batch_size,
        lr=s.lr,
        optimizer="adamw",
        seed=seed,
        compile=s.compile,
        schedule="cosine",
        warmup_steps=s.warmup_steps,
        final_lr_frac=s.final_lr_frac,
        grad_clip=s.grad_clip,
        grad_accum=s.grad_accum,
        extra={
            "betas": tuple(s.betas),
            "eps": s.eps,
            **({"fused": True} if device.type == "cuda" else {}),
        },
    )
    history = fit(
        model,
        None,
        lm_loss,
        cfg,
        device,
        checkpoint=checkpoint,
        metrics_log=metrics_log,
        on_row=on_row,
        param_groups=gpt2_param_groups(model, lam_sa_used, lam_mlp),
        image_key=None,
        progress=progress,
        batch_fn=sampler,
    )
    val_loss = float(history[-1]["val_loss"])
    baselines = ngram_baselines(data.train, val.numpy(), data.vocab_size)
    rows = head_rows(model, s.steps, True)
    df = pd.DataFrame(rows)
    for k, v in (("seed", seed), ("lam_mlp", float(lam_mlp)), ("lam_sa", float(lam_sa))):
        df.insert(0, k, v)
    df["val_loss"] = val_loss
    df["val_ppl"] = math.exp(val_loss)
    df["train_loss"] = float(history[-1]["train_loss"])
    train_s = sum(float(h.get("seconds", 0.0)) for h in history)
    tokens = s.steps * s.batch_size * s.ctx
    d_head = s.n_embd // s.n_head
    meta = {
        "lam_sa": lam_sa,
        "lam_sa_used": lam_sa_used,
        "control": control,
        "lam_mlp": lam_mlp,
        "seed": seed,
        "val_loss": val_loss,
        "val_ppl": math.exp(val_loss),
        **baselines,
        "baselines": dict(BASELINES),
        "device": str(device),
        "wall_s": time.perf_counter() - t0,
        "train_s": train_s,
        "tokens": tokens,
        "tokens_per_s": tokens / train_s if train_s > 0 else None,
        "flops_per_token": flops_per_token(model, s.ctx),
        "corpus": {
            "name": data.name,
            "stand_in": data.stand_in,
            "tokenizer": data.tokenizer,
            "vocab_size": data.vocab_size,
            "eos_id": data.eos_id,
            **data.info,
        },
        # what the settings imply; the settings themselves are recorded once, below
        "model": {
            "class": "transformers.GPT2LMHeadModel",
            "d_head": d_head,
            "parameters": sum(p.numel() for p in model.parameters()),
        },
        "optimizer": {
            "name": "AdamW",
            "schedule": "cosine",
            "decay": {
                "attn": "c_attn, c_proj weights",
                "mlp": "c_fc, c_proj weights",
                "none": "biases, LayerNorms, wte (tied), wpe",
            },
        },
        "settings": s.record(),
        # Σ_t η_t: the time the decoupled decay acts for (docs/papers/lowrank.md#regime-checks)
        "lr_sum": lr_sum(cfg),
        "rank_trace": rank_trace(history, cfg),
        "history": [{k: v for k, v in h.items() if k != "ranks"} for h in history],
        "columns": dict(
            LM_COLUMNS,
            **{f"s{i + 1}": f"singular value {i + 1} of the product" for i in range(d_head)},
        ),
    }
    log.info(
        "λ_SA=%g λ_MLP=%g seed=%d: validation perplexity %.3f (%.0f s)",
        lam_sa,
        lam_mlp,
        seed,
        math.exp(val_loss),
        meta["wall_s"],
    )
    return {"run": (df, meta)}


def gather_lm(
    parts: list[str],
    preset: str,
    layers_fig3: list[int],
    layers_figC: list[int],
    grid: dict | None = None,
    control: str = "none",
):
    """Concatenate per-run LM tables (one per (λ_SA, λ_MLP, seed)) into one plot-ready table;
    ``grid`` (Table 1: the λ_SA, λ_MLP and seed lists) is recorded for the completeness check and
    ``control`` checked against the runs' (:func:`attnbias.io.gathered_control`)."""
    from ...io import load_data

    frames, runs = [], []
    for path in parts:
        df, meta = load_data(path)
        frames.append(df)
        runs.append(
            {
                k: meta[k]
                for k in (
                    "lam_sa",
                    "lam_mlp",
                    "seed",
                    "val_loss",
                    "val_ppl",
                    "device",
                    "wall_s",
                    "tokens_per_s",
                )
            }
            # n-gram baselines (None for a run recorded before they were: its check fails)
            | {k: meta.get(k) for k in BASELINES}
            | {k: meta.get(k) for k in ("lam_sa_used", "control")}
            # the regime checks' inputs (None for a run recorded before them: the checks fail)
            | {k: meta.get(k) for k in ("lr_sum", "rank_trace")}
        )
    df = pd.concat(frames, ignore_index=True).sort_values(
        ["lam_mlp", "lam_sa", "seed", "product", "layer", "head"], kind="stable"
    )
    first = load_data(parts[0])[1]
    meta = {
        "preset": preset,
        "control": gathered_control(control, runs),
        # the corpus and tokenizer the runs read (hub ids or local directories)
        "sources": {k: first["settings"][k] for k in ("source", "tokenizer")},
        "layers_fig3": list(layers_fig3),
        "layers_figC": list(layers_figC),
        "grid": grid,
        "runs": runs,
        "corpus": first["corpus"],
        "model": first["model"],
        "optimizer": first["optimizer"],
        "settings": first["settings"],
        "columns": first["columns"],
    }
    return df.reset_index(drop=True), meta



# Under the negative control every λ_SA trains as λ_SA = 0: the workflow trains that run
# once and relabels it (attnbias.table: the sweep's control_shares; .common.decay_sharing).
control_trains, as_control_run = decay_sharing("sa", "lam_sa")
