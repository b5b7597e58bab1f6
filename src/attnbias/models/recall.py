"""A small attention-only transformer for associative recall (spec lowrank §2.2), in torch.

Layout [project choice]: token embedding + learned positional embedding (width d); ``n_layers``
blocks of pre-LayerNorm (no gain, no bias) causal multi-head attention with residual connections
and **no MLP**; a final gain-free LayerNorm; a linear unembedding.  Every matrix is initialised
N(0, 1/d); the output projection P gets an extra factor 1/√H.

Per-head weights follow the torch ``nn.Linear`` (out × in) layout: head h of W_Q/W_K/W_V is rows
h·d_h … (h+1)·d_h of ``q/k/v.weight`` (W_Q^h ∈ ℝ^{d_h×d}) and P^h is columns h·d_h … (h+1)·d_h of
``o.weight`` (ℝ^{d×d_h}).  :meth:`RecallTransformer.attention_factors` returns them as the factor
pairs of :mod:`attnbias.metrics.rank`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..metrics.rank import head_factors


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention without biases (fused ``scaled_dot_product_attention``)."""

    def __init__(self, d: int, n_heads: int):
        super().__init__()
        if d % n_heads:
            raise ValueError(f"d = {d} is not divisible by n_heads = {n_heads}")
        self.d, self.n_heads, self.d_head = d, n_heads, d // n_heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)  # P = [P^1 … P^H]

    def _split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.d_head).transpose(1, 2)  # (b, H, t, d_h)

    def forward(self, x, return_scores: bool = False, last_only: bool = False):
        """Attention output (b, t, d); with ``last_only`` only the last position's (b, 1, d)."""
        xq = x[:, -1:] if last_only else x
        q, k, v = self._split(self.q(xq)), self._split(self.k(x)), self._split(self.v(x))
        # the last position attends to every position, so it needs no mask
        y = F.scaled_dot_product_attention(q, k, v, is_causal=not last_only)
        y = self.o(y.transpose(1, 2).reshape(xq.shape))
        if return_scores:  # pre-softmax logits q_iᵀk_j / √d_h (for tests)
            return y, (q @ k.transpose(-1, -2)) / math.sqrt(self.d_head)
        return y


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

    def _ln(self, x):
        return F.layer_norm(x, (self.d,))

    def forward(self, tokens, last_only: bool = False):
        """Logits (b, t, vocab) for integer tokens (b, t).

        ``last_only``: logits (b, vocab) of the last position only, computing the last layer's
        attention for that query alone (identical values, about a fifth less work).
        """
        x = self.tok(tokens) + self.pos[: tokens.shape[1]]
        n = len(self.layers)
        for i, layer in enumerate(self.layers):
            if last_only and i == n - 1:
                x = x[:, -1:] + layer(self._ln(x), last_only=True)
            else:
                x = x + layer(self._ln(x))
        logits = self.unembed(self._ln(x))
        return logits[:, -1] if last_only else logits

    def attention_weights(self) -> list[nn.Parameter]:
        """The matrices that get weight decay: W_Q, W_K, W_V and P of every layer."""
        return [
            w
            for layer in self.layers
            for w in (layer.q.weight, layer.k.weight, layer.v.weight, layer.o.weight)
        ]

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
        return [
            head_factors(
                layer.q.weight, layer.k.weight, layer.v.weight, layer.o.weight, self.n_heads
            )
            for layer in self.layers
        ]
