"""Rank and balance metrics of factorised products W = A Bᵀ, and per-head attention factors.

Conventions (docs/papers/lowrank.md#rank-and-balance-measures):

* A factorised product is given by its two factors ``A`` (…, p, r) and ``B`` (…, q, r), so that
  ``W = A Bᵀ`` is (…, p, q).  Leading axes are batch axes (heads, layers, λ values, …).
* Spectra are computed in float64 with the QR trick: with thin QR factorisations A = Q_A R_A and
  B = Q_B R_B, the singular values of A Bᵀ are those of the small matrix R_A R_Bᵀ.  No SVD of a
  d × d product is ever formed.
* Ranks use *relative* thresholds only: ``numerical_rank(s, tau) = #{σ_i > tau·σ_1}``.
* Effective rank (Roy & Vetterli 2007): exp(−Σ p_i log p_i) with p = σ / Σσ.
* Balance: the Frobenius bound ½(‖A‖² + ‖B‖²) is ≥ ‖A Bᵀ‖_*, with equality iff AᵀA = BᵀB; the
  *gap* is their difference and the *imbalance* is ‖AᵀA − BᵀB‖_F.

Per head h of an attention layer (paper notation, W_Q^h, W_K^h, W_V^h ∈ ℝ^{d_h×d}, P^h ∈ ℝ^{d×d_h}):

* key–query  ``kq``: W_K^{hT} W_Q^h = A Bᵀ with A = W_K^{hT}, B = W_Q^{hT};
* value–output ``pv``: P^h W_V^h     = A Bᵀ with A = P^h,      B = W_V^{hT}.

Both factors are returned as (H, d, d_h) float64 arrays by the ``*_heads`` extractors below, for
the project's recall model, Hugging Face GPT-2 (fused Conv1D ``c_attn``), BERT and LLaMA, and timm's
ViT (fused ``Linear`` ``qkv``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RANK_TAUS = (1e-2, 1e-3)  # primary and secondary relative thresholds


def _f64(x) -> np.ndarray:
    if hasattr(x, "detach"):  # torch tensor (any dtype, incl. bf16)
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# spectra and ranks


def singular_values(A, B=None) -> np.ndarray:
    """Singular values (descending, float64) of ``A Bᵀ`` (or of ``A`` itself when ``B`` is None).

    ``A`` (…, p, r), ``B`` (…, q, r); the result has shape (…, min(p, q, r)).
    """
    A = _f64(A)
    if B is None:
        return np.linalg.svd(A, compute_uv=False)
    B = _f64(B)
    if A.shape[-1] != B.shape[-1]:
        raise ValueError(f"inner dimensions differ: A {A.shape}, B {B.shape}")
    Ra = np.linalg.qr(A, mode="r")
    Rb = np.linalg.qr(B, mode="r")
    return np.linalg.svd(Ra @ np.swapaxes(Rb, -1, -2), compute_uv=False)


def numerical_rank(s, tau: float = 1e-2) -> np.ndarray:
    """#{σ_i > tau·σ_1} along the last axis of the spectra ``s`` (0 for a zero matrix)."""
    s = _f64(s)
    top = np.max(s, axis=-1, keepdims=True)
    return np.sum((s > tau * top) & (top > 0), axis=-1)


def effective_rank(s) -> np.ndarray:
    """Roy–Vetterli effective rank exp(H(σ/Σσ)) along the last axis (0 for a zero matrix)."""
    s = np.abs(_f64(s))
    tot = np.sum(s, axis=-1, keepdims=True)
    p = np.where(tot > 0, s / np.where(tot > 0, tot, 1.0), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0), axis=-1)
    return np.where(tot[..., 0] > 0, np.exp(ent), 0.0)


def nuclear_norm(A, B=None) -> np.ndarray:
    """‖A Bᵀ‖_* (or ‖A‖_* when ``B`` is None), batched over leading axes."""
    return np.sum(singular_values(A, B), axis=-1)


# ---------------------------------------------------------------------------------------------
# balance diagnostics


def frobenius_bound(A, B) -> np.ndarray:
    """½(‖A‖_F² + ‖B‖_F²), the variational upper bound of ‖A Bᵀ‖_*."""
    A, B = _f64(A), _f64(B)
    return 0.5 * (np.sum(A * A, axis=(-2, -1)) + np.sum(B * B, axis=(-2, -1)))


def gap(A, B) -> np.ndarray:
    """½(‖A‖² + ‖B‖²) − ‖A Bᵀ‖_* ≥ 0 (zero iff the factors are balanced)."""
    return frobenius_bound(A, B) - nuclear_norm(A, B)


def imbalance(A, B) -> np.ndarray:
    """‖AᵀA − BᵀB‖_F (r × r), batched."""
    A, B = _f64(A), _f64(B)
    D = np.swapaxes(A, -1, -2) @ A - np.swapaxes(B, -1, -2) @ B
    return np.sqrt(np.sum(D * D, axis=(-2, -1)))


def balance_ratio(A, B) -> np.ndarray:
    """‖A Bᵀ‖_* / (½‖A‖² + ½‖B‖²) ∈ [0, 1] (1 = balanced; 0 for zero factors)."""
    fb = frobenius_bound(A, B)
    nn = nuclear_norm(A, B)
    return np.where(fb > 0, nn / np.where(fb > 0, fb, 1.0), 0.0)


def product_metrics(A, B, taus: Sequence[float] = RANK_TAUS) -> dict[str, np.ndarray]:
    """Every metric of ``A Bᵀ`` at once (one QR/SVD), batched over leading axes.

    Keys: ``spectrum`` (…, k), ``rank@<tau>`` for each tau (e.g. ``rank@0.01``), ``eff_rank``,
    ``nuclear``, ``frob_bound``, ``gap``, ``imbalance``, ``ratio``.
    """
    s = singular_values(A, B)
    nuc = np.sum(s, axis=-1)
    fb = frobenius_bound(A, B)
    out = {"spectrum": s}
    for tau in taus:
        out[f"rank@{tau:g}"] = numerical_rank(s, tau)
    out["eff_rank"] = effective_rank(s)
    out["nuclear"] = nuc
    out["frob_bound"] = fb
    out["gap"] = fb - nuc
    out["imbalance"] = imbalance(A, B)
    out["ratio"] = np.where(fb > 0, nuc / np.where(fb > 0, fb, 1.0), 0.0)
    return out


# ---------------------------------------------------------------------------------------------
# per-head attention factors


def head_factors(Wq, Wk, Wv, Wo, n_heads: int, n_kv_heads: int | None = None) -> dict[str, tuple]:
    """Per-head factors from (out × in) projection weights.

    ``Wq`` (H·d_h, d), ``Wk``/``Wv`` (H_kv·d_h, d), ``Wo`` (d, H·d_h), all in the torch
    ``nn.Linear`` layout.  Query head h uses key/value head h // (H / H_kv) (grouped-query
    attention; H_kv = H by default).  Returns ``{"kq": (A, B), "pv": (A, B)}`` with every factor
    of shape (H, d, d_h): kq A = W_K^{hT}, B = W_Q^{hT}; pv A = P^h, B = W_V^{hT}.
    """
    Wq, Wk, Wv, Wo = (_f64(w) for w in (Wq, Wk, Wv, Wo))
    H = int(n_heads)
    Hkv = int(n_kv_heads or n_heads)
    dh = Wq.shape[0] // H
    kv = Hkv * dh
    if Wq.shape[0] != H * dh or Wk.shape[0] != kv or Wv.shape[0] != kv or Wo.shape[1] != H * dh:
        raise ValueError(f"shapes do not split into heads: {Wq.shape}, {Wk.shape}, {Wv.shape}, "
                         f"{Wo.shape}, H={H}, H_kv={Hkv}")
    group = H // Hkv
    kv = np.arange(H) // group
    q = Wq.reshape(H, dh, -1)  # W_Q^h (d_h × d)
    k = Wk.reshape(Hkv, dh, -1)[kv]
    v = Wv.reshape(Hkv, dh, -1)[kv]
    p = Wo.reshape(Wo.shape[0], H, dh).transpose(1, 0, 2)  # P^h (d × d_h)
    qT, kT, vT = (np.swapaxes(x, -1, -2) for x in (q, k, v))
    return {"kq": (kT, qT), "pv": (p, vT)}


def gpt2_layer_factors(attn, n_heads: int) -> dict[str, tuple]:
    """GPT-2 ``GPT2Attention``: Conv1D weights are (in × out); ``c_attn`` = [Q | K | V] columns.

    Pass the attention module (``block.attn``), never ``block.mlp``: both own a ``c_proj``.
    """
    W = _f64(attn.c_attn.weight)  # (d, 3d)
    d = W.shape[0]
    Wq, Wk, Wv = W[:, :d].T, W[:, d : 2 * d].T, W[:, 2 * d : 3 * d].T
    Wo = _f64(attn.c_proj.weight).T  # Conv1D (in × out) → (out × in)
    return head_factors(Wq, Wk, Wv, Wo, n_heads)


def qkvo_linears(layer):
    """(query, key, value, output) ``nn.Linear`` modules of an encoder layer, by module path.

    Layouts: BERT ``attention.self.{query,key,value}`` + ``attention.output.dense``; LLaMA
    ``self_attn.{q,k,v,o}_proj``.  The MLP output (``output.dense``) is never taken.  (timm's ViT
    fuses q, k, v into one ``qkv``: :func:`vit_layer_factors`.)
    """
    att = getattr(layer, "attention", None)
    sa = getattr(att, "self", None) if att is not None else None
    if sa is not None and hasattr(sa, "query"):
        return sa.query, sa.key, sa.value, att.output.dense
    a = getattr(layer, "self_attn", None)
    if a is not None and hasattr(a, "q_proj"):
        return a.q_proj, a.k_proj, a.v_proj, a.o_proj
    raise TypeError(f"no known attention layout in {type(layer).__name__}")


def bert_layer_factors(layer, n_heads: int) -> dict[str, tuple]:
    """BERT/MiniLM ``BertLayer``: ``attention.self.{query,key,value}``, ``attention.output.dense``.

    (``layer.output.dense`` is the MLP output, not the attention output.)
    """
    q, k, v, o = qkvo_linears(layer)
    return head_factors(q.weight, k.weight, v.weight, o.weight, n_heads)


def vit_layer_factors(block, n_heads: int | None = None) -> dict[str, tuple]:
    """timm ViT ``Block`` (or its ``attn``): ``attn.qkv`` (3·H·d_h × d) and ``attn.proj``.

    timm reshapes the ``qkv`` output to (3, H, d_h), so its rows are [W_Q; W_K; W_V], each H heads
    of d_h contiguous rows: the row thirds are the ``nn.Linear`` weights W_Q, W_K, W_V of
    :func:`head_factors`.  The attention output enters ``proj`` head by head (columns h·d_h …
    (h+1)·d_h − 1), which is ``head_factors``' split of W_O.  ``n_heads`` defaults to the
    module's ``num_heads``.
    """
    att = getattr(block, "attn", block)
    W = att.qkv.weight  # a frozen control's q/k rows are part of it (the parametrized weight)
    n = W.shape[0] // 3
    return head_factors(W[:n], W[n : 2 * n], W[2 * n :], att.proj.weight,
                        n_heads or att.num_heads)  # fmt: skip


def _timm_vit_blocks(model) -> list | None:
    """The blocks of a timm ``VisionTransformer`` (``blocks.N.attn.qkv``), else None."""
    blocks = getattr(model, "blocks", None)
    if blocks is not None and all(hasattr(getattr(b, "attn", None), "qkv") for b in blocks):
        return list(blocks)
    return None


def llama_layer_factors(layer, n_heads: int, n_kv_heads: int | None = None) -> dict[str, tuple]:
    """LLaMA ``LlamaDecoderLayer``: ``self_attn.{q,k,v,o}_proj`` (grouped-query aware)."""
    a = layer.self_attn
    return head_factors(a.q_proj.weight, a.k_proj.weight, a.v_proj.weight, a.o_proj.weight,
                        n_heads, n_kv_heads)


def model_factors(model) -> list[dict[str, tuple]]:
    """Per-layer head factors of a supported model: one ``{"kq": (A, B), "pv": (A, B)}`` per layer.

    Supported: :class:`attnbias.models.recall.RecallTransformer` (anything with
    ``attention_factors()``), timm's ViT, transformers GPT-2, BERT and LLaMA (bare or with a task
    head).
    """
    if hasattr(model, "attention_factors"):
        return [{k: tuple(_f64(x) for x in v) for k, v in layer.items()}
                for layer in model.attention_factors()]
    blocks = _timm_vit_blocks(model)
    if blocks is not None:
        return [vit_layer_factors(block) for block in blocks]
    cfg = getattr(model, "config", None)
    mtype = getattr(cfg, "model_type", "")
    if mtype == "gpt2":
        base = getattr(model, "transformer", model)
        return [gpt2_layer_factors(block.attn, cfg.n_head) for block in base.h]
    if mtype == "bert":
        base = getattr(model, mtype, model)
        return [bert_layer_factors(layer, cfg.num_attention_heads) for layer in base.encoder.layer]
    if mtype == "llama":
        base = getattr(model, "model", model)
        return [llama_layer_factors(layer, cfg.num_attention_heads, cfg.num_key_value_heads)
                for layer in base.layers]
    raise TypeError(f"no attention layout known for {type(model).__name__} (model_type {mtype!r})")


def model_head_metrics(model, taus: Sequence[float] = RANK_TAUS) -> dict[str,
                                                                         dict[str, np.ndarray]]:
    """``{"kq": metrics, "pv": metrics}``; every metric has leading axes (layer, head)."""
    layers = model_factors(model)
    out = {}
    for name in ("kq", "pv"):
        A = np.stack([f[name][0] for f in layers])
        B = np.stack([f[name][1] for f in layers])
        out[name] = product_metrics(A, B, taus)
    return out
