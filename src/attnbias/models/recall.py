"""A small attention-only transformer for associative recall (lowrank Fig 2), in torch.

Layout [project choice]: token embedding + learned positional embedding (width d); ``n_layers``
blocks of pre-LayerNorm (no gain, no bias) causal multi-head attention with residual connections
and **no MLP**; a final gain-free LayerNorm; a linear unembedding.  Every matrix is initialised
N(0, 1/d); the output projection P gets an extra factor 1/√H.

Per-head weights follow the torch ``nn.Linear`` (out × in) layout: head h of W_Q/W_K/W_V is rows
h·d_h … (h+1)·d_h of ``q/k/v.weight`` (W_Q^h ∈ ℝ^{d_h×d}) and P^h is columns h·d_h … (h+1)·d_h of
``o.weight`` (ℝ^{d×d_h}).  :meth:`RecallTransformer.attention_factors` returns them as the factor
pairs of :mod:`attnbias.metrics.rank`.

One forward pass, :func:`recall_logits`, serves one model and R independent models trained side
by side (:class:`RecallRuns`: every weight with a leading runs axis, each run its own weights):
the one model is the same computation without that axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..metrics.rank import head_factors


def _linear(x, w):
    """``x Wᵀ`` for x (*R, …, d_in) and w (*R, d_out, d_in), R the optional runs axis."""
    lead = w.shape[:-2]
    y = x.reshape(*lead, -1, x.shape[-1]) @ w.transpose(-1, -2)
    return y.reshape(*x.shape[:-1], w.shape[-2])


def _embed(table, tokens):
    """Rows of ``table`` (*R, V, d) for integer ``tokens`` (*R, …): each run its own table."""
    if table.dim() == 2:
        return F.embedding(tokens, table)
    runs, vocab, d = table.shape
    offset = torch.arange(runs, device=tokens.device) * vocab
    return F.embedding(tokens + offset.view(runs, *[1] * (tokens.dim() - 1)), table.view(-1, d))


def attend(x, wq, wk, wv, wo, n_heads: int, last_only: bool = False, return_scores: bool = False):
    """Causal multi-head self-attention without biases (fused ``scaled_dot_product_attention``)
    of x (*R, b, t, d) with the (*R, d, d) weights of one layer; with ``last_only`` only the
    last position's output (*R, b, 1, d).  ``return_scores``: also the pre-softmax logits
    q_iᵀk_j / √d_h, (R·b, H, t_q, t)."""
    d = x.shape[-1]
    d_head = d // n_heads
    xq = x[..., -1:, :] if last_only else x

    def split(y):  # (*R, b, t, d) -> (R·b, H, t, d_h)
        return y.reshape(-1, y.shape[-2], n_heads, d_head).transpose(1, 2)

    q, k, v = split(_linear(xq, wq)), split(_linear(x, wk)), split(_linear(x, wv))
    # the last position attends to every position, so it needs no mask
    y = F.scaled_dot_product_attention(q, k, v, is_causal=not last_only)
    y = _linear(y.transpose(1, 2).reshape(xq.shape), wo)
    if return_scores:
        return y, (q @ k.transpose(-1, -2)) / math.sqrt(d_head)
    return y


def recall_logits(tok, pos, layers, unembed, tokens, n_heads: int, last_only: bool = False):
    """Logits of the recall transformer with the given weights: tok (*R, V, d), pos (*R, T, d),
    ``layers`` a list of (W_Q, W_K, W_V, P) each (*R, d, d), unembed (*R, V, d); ``tokens``
    (*R, b, t) → (*R, b, t, V), or with ``last_only`` (*R, b, V), the last position's logits
    computing the last layer's attention for that query alone (identical values, about a fifth
    less work).  R is the optional runs axis (:class:`RecallRuns`)."""
    d = tok.shape[-1]
    x = _embed(tok, tokens) + pos[..., : tokens.shape[-1], :].unsqueeze(-3)
    n = len(layers)
    for i, w in enumerate(layers):
        h = F.layer_norm(x, (d,))
        if last_only and i == n - 1:
            x = x[..., -1:, :] + attend(h, *w, n_heads, last_only=True)
        else:
            x = x + attend(h, *w, n_heads)
    logits = _linear(F.layer_norm(x, (d,)), unembed)
    return logits[..., -1, :] if last_only else logits


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention without biases (:func:`attend`)."""

    def __init__(self, d: int, n_heads: int):
        super().__init__()
        if d % n_heads:
            raise ValueError(f"d = {d} is not divisible by n_heads = {n_heads}")
        self.d, self.n_heads, self.d_head = d, n_heads, d // n_heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)  # P = [P^1 … P^H]

    def weights(self) -> tuple:
        return self.q.weight, self.k.weight, self.v.weight, self.o.weight

    def forward(self, x, return_scores: bool = False, last_only: bool = False):
        """Attention output (b, t, d); with ``last_only`` only the last position's (b, 1, d);
        ``return_scores``: also the pre-softmax logits (b, H, t_q, t) (for tests)."""
        return attend(x, *self.weights(), self.n_heads, last_only, return_scores)


class RecallTransformer(nn.Module):
    """Attention-only transformer: embeddings → n_layers × [x + Attn(LN(x))] → LN → unembedding."""

    def __init__(self, vocab: int, seq_len: int, d: int = 64, n_heads: int = 4, n_layers: int = 2):
        super().__init__()
        self.vocab, self.seq_len, self.d, self.n_heads = vocab, seq_len, d, n_heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.empty(seq_len, d))
        self.layers = nn.ModuleList(CausalSelfAttention(d, n_heads) for _ in range(n_layers))
        self.unembed = nn.Linear(d, vocab, bias=False)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        std = 1.0 / math.sqrt(self.d)
        for p in self.parameters():
            nn.init.normal_(p, 0.0, std)
        for layer in self.layers:
            layer.o.weight.mul_(1.0 / math.sqrt(self.n_heads))

    def forward(self, tokens, last_only: bool = False):
        """Logits (b, t, vocab) for integer tokens (b, t); with ``last_only`` (b, vocab), the
        last position's (:func:`recall_logits`)."""
        layers = [layer.weights() for layer in self.layers]
        return recall_logits(
            self.tok.weight, self.pos, layers, self.unembed.weight, tokens, self.n_heads,
            last_only,
        )  # fmt: skip

    def attention_weights(self) -> list[nn.Parameter]:
        """The matrices that get weight decay: W_Q, W_K, W_V and P of every layer."""
        return [w for layer in self.layers for w in layer.weights()]

    def param_groups(self, weight_decay: float) -> list[dict]:
        """AdamW groups: decay on the attention matrices only; embeddings/unembedding undecayed."""
        decay = {id(p) for p in self.attention_weights()}
        rest = [p for p in self.parameters() if id(p) not in decay]
        return [
            {"params": self.attention_weights(), "weight_decay": weight_decay},
            {"params": rest, "weight_decay": 0.0},
        ]

    @torch.no_grad()
    def attention_factors(self) -> list[dict[str, tuple]]:
        """Per layer ``{"kq": (W_K^{hT}, W_Q^{hT}), "pv": (P^h, W_V^{hT})}``, each (H, d, d_h)
        float64."""
        return [head_factors(*layer.weights(), self.n_heads) for layer in self.layers]


class RecallRuns(nn.Module):
    """R independent :class:`RecallTransformer` runs trained side by side: each weight of the
    one model stacked along a leading runs axis (run r's slice is its own weights), the forward
    :func:`recall_logits` of tokens (R, b, t).  Nothing couples the runs: the gradient of a sum
    of per-run losses is, run by run, that run's own gradient.

    Built from the single models (``RecallRuns(models)``), e.g. each initialised under its own
    seed, so that run r starts exactly where the one model would; :meth:`run_state_dict` gives
    a run's weights back in the one model's layout.
    """

    def __init__(self, models: Sequence[RecallTransformer]):
        super().__init__()
        first = models[0]
        shape = (first.vocab, first.seq_len, first.d, first.n_heads, len(first.layers))
        for m in models:
            if (m.vocab, m.seq_len, m.d, m.n_heads, len(m.layers)) != shape:
                raise ValueError("the runs of a RecallRuns must share the model's shape")
        self.vocab, self.seq_len, self.d, self.n_heads = shape[:4]
        self.n_layers, self.n_runs = shape[4], len(models)

        def stack(get):
            return nn.Parameter(torch.stack([get(m).detach() for m in models]).clone())

        self.tok = stack(lambda m: m.tok.weight)
        self.pos = stack(lambda m: m.pos)
        self.unembed = stack(lambda m: m.unembed.weight)
        self.attn = nn.ParameterList(
            stack(lambda m, i=i, j=j: m.layers[i].weights()[j])
            for i in range(self.n_layers)
            for j in range(4)
        )

    def _layers(self) -> list[tuple]:
        return [tuple(self.attn[4 * i : 4 * i + 4]) for i in range(self.n_layers)]

    def forward(self, tokens, last_only: bool = False):
        """Logits (R, b, t, vocab) for integer tokens (R, b, t), run r's tokens through run r's
        weights; with ``last_only`` (R, b, vocab)."""
        return recall_logits(
            self.tok, self.pos, self._layers(), self.unembed, tokens, self.n_heads, last_only
        )

    def attention_weights(self) -> list[nn.Parameter]:
        """The stacked matrices that get weight decay: W_Q, W_K, W_V and P of every layer."""
        return list(self.attn)

    def param_groups(self, weight_decays: Sequence[float]) -> list[dict]:
        """Groups for :class:`attnbias.train.runs.RunsAdamW`: decoupled decay ``weight_decays[r]``
        on run r's attention matrices only (``run_decay``); embeddings/unembedding undecayed."""
        if len(weight_decays) != self.n_runs:
            raise ValueError(f"{len(weight_decays)} decays for {self.n_runs} runs")
        return [
            {"params": self.attention_weights(), "weight_decay": 0.0,
             "run_decay": [float(w) for w in weight_decays]},
            {"params": [self.tok, self.pos, self.unembed], "weight_decay": 0.0},
        ]  # fmt: skip

    @torch.no_grad()
    def run_state_dict(self, r: int) -> dict[str, torch.Tensor]:
        """Run r's weights as the state dict of the one :class:`RecallTransformer` (on the CPU)."""
        out = {"tok.weight": self.tok[r], "pos": self.pos[r]}
        for i, w in enumerate(self._layers()):
            for name, t in zip("qkvo", w, strict=True):
                out[f"layers.{i}.{name}.weight"] = t[r]
        out["unembed.weight"] = self.unembed[r]
        return {k: v.detach().cpu().clone() for k, v in out.items()}

    @torch.no_grad()
    def run_views(self, attn: Sequence[torch.Tensor] | None = None) -> list[RunFactors]:
        """One object per run with the one model's ``attention_factors()`` (for the rank
        metrics, :func:`attnbias.metrics.rank.model_head_metrics`), from a CPU copy of the
        attention weights taken now (one transfer for every run), or of ``attn``, a copy of
        them taken earlier (:meth:`attention_weights`, in order)."""
        cpu = [w.detach().to("cpu", torch.float64) for w in (self.attn if attn is None else attn)]
        layers = [cpu[4 * i : 4 * i + 4] for i in range(self.n_layers)]
        return [RunFactors([[w[r] for w in ws] for ws in layers], self.n_heads)
                for r in range(self.n_runs)]  # fmt: skip


class RunFactors:
    """One run's attention weights (per layer W_Q, W_K, W_V, P), as the rank metrics read a
    :class:`RecallTransformer` (``attention_factors``)."""

    def __init__(self, layers: list[list[torch.Tensor]], n_heads: int):
        self.layers, self.n_heads = layers, n_heads

    def attention_factors(self) -> list[dict[str, tuple]]:
        return [head_factors(*w, self.n_heads) for w in self.layers]
