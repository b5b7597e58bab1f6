"""Vision transformers from transformers (no torchvision/timm), and what the papers measure on them."""

from __future__ import annotations

import contextlib

import torch


def build_vit(image_size: int, patch_size: int, channels: int, hidden: int, layers: int, heads: int, mlp: int, num_labels: int, seed: int = 0):
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
    model.set_attn_implementation("sdpa")
    return model


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
    return [m for name, m in model.named_modules() if name.endswith("attention") and hasattr(m, "q_proj")]


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
def cls_attention(model, pixel_values: torch.Tensor, batch_size: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """Head-averaged last-layer attention of the [CLS] query over the patch keys (CLS key dropped),
    renormalised to sum to one, (N, num_patches), and the logits (N, classes) of the same pass."""
    rows, logits = [], []
    with eager_attention(model):
        for i in range(0, len(pixel_values), batch_size):
            out = model(pixel_values=pixel_values[i : i + batch_size], output_attentions=True)
            row = out.attentions[-1].float().mean(dim=1)[:, 0, 1:]  # heads averaged; CLS query; patches
            rows.append(row / row.sum(dim=-1, keepdim=True))
            logits.append(out.logits.float())
    return torch.cat(rows), torch.cat(logits)
