"""Vision transformers from transformers (no torchvision/timm), their weight-decay parameter
groups, and what the papers measure on them.

Weight decay (docs/papers/lowrank.md#what-gets-weight-decay, Fig 3 right): λ_attn on the attention
matrices (q, k, v and the output projection), λ_other on the other matrices (MLP and classifier);
biases, LayerNorms, patch/position embeddings and the CLS token get none.
"""

from __future__ import annotations

import contextlib

import torch

from .gpt2 import decay_groups

# transformers ViT (v5 layout ``attention.{q,k,v,o}_proj``; v4
# ``attention.attention.{query,key,value}`` + ``attention.output.dense``): attention matrices, then
# the other matrices (MLP and classifier)
VIT_DECAY_GROUPS = (
    ("attn", r"\.attention\.((q|k|v|o)_proj|attention\.(query|key|value)|output\.dense)\.weight$"),
    ("other", r"(\.mlp\.fc[12]|\.intermediate\.dense|\.output\.dense|^classifier)\.weight$"),
)


def build_vit(image_size: int, patch_size: int, channels: int, hidden: int, layers: int, heads: int,
              mlp: int, num_labels: int, seed: int = 0):
    """A randomly initialised ``ViTForImageClassification`` (CLS token, learned positions, no
    dropout), using PyTorch SDPA attention for training."""
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(
        image_size=image_size,
        patch_size=patch_size,
        num_channels=channels,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=mlp,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=num_labels,
    )
    torch.manual_seed(seed)
    model = ViTForImageClassification(cfg)
    skip_full_sdpa_masks()
    model.set_attn_implementation("sdpa")
    return model


def skip_full_sdpa_masks() -> None:
    """Let transformers' SDPA attention skip an all-true mask under ``torch.compile`` too.

    Without a padding mask, with no cache offset and as many queries as keys, transformers builds
    no mask in eager mode (bidirectional attention runs without one, causal as ``is_causal``), so
    SDPA takes its flash kernel.  Versions before about 5.20 refused that shortcut while Dynamo
    traces: a compiled ViT materialised a (b, 1, n, n) all-true mask and SDPA fell back to its
    masked kernel (on an H100 the compiled ViT-B/2 step was slower than the eager one).  This wraps
    the ``"sdpa"`` mask function (process-wide, idempotent) to return ``None`` in exactly that
    case, unless exporting; every other case (a padding mask, offsets, sliding windows, packed or
    custom mask functions) goes to the library's function unchanged, and no numbers change."""
    from transformers.masking_utils import (
        ALL_MASK_ATTENTION_FUNCTIONS,
        AttentionMaskInterface,
        bidirectional_mask_function,
        causal_mask_function,
    )

    inner = ALL_MASK_ATTENTION_FUNCTIONS["sdpa"]
    if getattr(inner, "skips_full_masks", False):
        return

    def sdpa_mask_unless_full(*args, **kwargs):
        if not args and _full_attention(kwargs, causal_mask_function, bidirectional_mask_function):
            return None
        return inner(*args, **kwargs)

    sdpa_mask_unless_full.skips_full_masks = True
    AttentionMaskInterface.register("sdpa", sdpa_mask_unless_full)


def _full_attention(kw: dict, causal_fn, bidirectional_fn) -> bool:
    """Whether the keyword arguments of transformers' ``sdpa_mask`` describe the plain causal or
    all-true bidirectional pattern of unpadded, self-contained sequences (no mask needed)."""
    if kw.get("attention_mask") is not None or kw.get("local_size") is not None:
        return False
    if torch.compiler.is_exporting():
        return False
    q, kv = kw.get("q_length"), kw.get("kv_length")
    offsets = (kw.get("q_offset", 0), kw.get("kv_offset", 0))
    if type(q) is not int or q != kv or any(type(o) is not int or o != 0 for o in offsets):
        return False
    fn = kw.get("mask_function", causal_fn)
    if fn is causal_fn:
        return bool(kw.get("allow_is_causal_skip", True))
    if fn is bidirectional_fn:
        return bool(kw.get("allow_is_bidirectional_skip", False))
    return False


def vit_param_groups(model, lam_attn: float, lam_other: float) -> list[dict]:
    """AdamW groups (:func:`attnbias.models.gpt2.decay_groups`): λ_attn on the q, k, v and
    output-projection matrices, λ_other on the MLP and classifier matrices; biases, LayerNorms,
    patch/position embeddings and the CLS token undecayed."""
    return decay_groups(model, VIT_DECAY_GROUPS, {"attn": lam_attn, "other": lam_other})


@contextlib.contextmanager
def eager_attention(model):
    """Temporarily switch to eager attention, which returns attention probabilities."""
    previous = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        yield model
    finally:
        model.set_attn_implementation(previous)


def attention_layers(model) -> list:
    """The self-attention modules of a transformers ViT/BERT-style encoder, in order."""
    return [m for name, m in model.named_modules() if name.endswith("attention")
            and hasattr(m, "q_proj")]


def last_layer_qk(model) -> tuple[torch.Tensor, torch.Tensor]:
    """(W_q, W_k) of the last attention layer in the library's (out × in) layout."""
    att = attention_layers(model)[-1]
    return att.q_proj.weight.detach(), att.k_proj.weight.detach()


def combined_qk_norm(model) -> float:
    """‖W_qᵀ W_k‖_F of the last layer: the combined key-query matrix x ↦ xᵀ(W_qᵀW_k)x′ (summed over
    heads; biases and the 1/√d_h scale excluded)."""
    wq, wk = last_layer_qk(model)
    return float(torch.linalg.matrix_norm((wq.T.double() @ wk.double()), "fro"))


@torch.no_grad()
def cls_attention(model, pixel_values: torch.Tensor,
                  batch_size: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """Head-averaged last-layer attention of the [CLS] query over the patch keys (CLS key dropped),
    renormalised to sum to one, (N, num_patches), and the logits (N, classes) of the same pass."""
    rows, logits = [], []
    with eager_attention(model):
        for i in range(0, len(pixel_values), batch_size):
            out = model(pixel_values=pixel_values[i : i + batch_size], output_attentions=True)
            # heads averaged; CLS query; patches
            row = out.attentions[-1].float().mean(dim=1)[:, 0, 1:]
            rows.append(row / row.sum(dim=-1, keepdim=True))
            logits.append(out.logits.float())
    return torch.cat(rows), torch.cat(logits)


def qk_parameters(model, last_only: bool = False) -> list[torch.nn.Parameter]:
    """The query and key projections (weights and biases) of every attention layer, or of the last
    one only."""
    layers = attention_layers(model)
    return [p for att in (layers[-1:] if last_only else layers)
            for lin in (att.q_proj, att.k_proj) for p in lin.parameters()]


def freeze_qk(model) -> int:
    """Freeze W_q, W_k (and their biases) of every attention layer at their current values; returns
    the number of frozen scalars."""
    frozen = qk_parameters(model)
    for p in frozen:
        p.requires_grad_(False)
    return sum(p.numel() for p in frozen)


@torch.no_grad()
def cls_attention_pair(model, pixel_values: torch.Tensor, qk_alt: list[torch.Tensor],
                       batch_size: int = 256) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One forward pass: the last layer's [CLS] attention as in :func:`cls_attention`, the same
    with that layer's (W_q, b_q, W_k, b_k) replaced by ``qk_alt`` (same input to the layer), and
    the logits.  Both maps are recomputed by one code path from the last layer's input, so equal
    weights give bit-equal maps."""
    att_mod = attention_layers(model)[-1]
    name = next(n for n, m in model.named_modules() if m is att_mod).rsplit(".", 1)[0]
    layer = model.get_submodule(name)
    heads = model.config.num_attention_heads
    live = [p.detach() for p in qk_parameters(model, last_only=True)]

    def cls_row(x, wq, bq, wk, bk):
        n, t, _ = x.shape
        q = torch.nn.functional.linear(x[:, :1], wq, bq).reshape(n, 1, heads, -1).transpose(1, 2)
        k = torch.nn.functional.linear(x, wk, bk).reshape(n, t, heads, -1).transpose(1, 2)
        s = torch.softmax((q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5, dim=-1)
        row = s.float().mean(dim=1)[:, 0, 1:]  # heads averaged; CLS query; patches
        return row / row.sum(dim=-1, keepdim=True)

    rows, alts, logits = [], [], []
    for i in range(0, len(pixel_values), batch_size):
        out = model(pixel_values=pixel_values[i : i + batch_size], output_hidden_states=True)
        x = layer.layernorm_before(out.hidden_states[-2])
        rows.append(cls_row(x, *live))
        alts.append(cls_row(x, *qk_alt))
        logits.append(out.logits.float())
    return torch.cat(rows), torch.cat(alts), torch.cat(logits)
