"""Vision transformers from timm, their weight-decay parameter groups, and what the papers measure
on them.

The model (:func:`build_vit`) is timm's ``VisionTransformer`` made by ``timm.create_model`` from
its ViT family, randomly initialised (``pretrained=False``): a class token, learned position
embeddings, pre-norm blocks, the classifier on the final-normed class token
(``global_pool="token"``), no dropout unless asked.  The family's named sizes keep their timm
names (hidden 384, 12 layers, 6 heads is ``vit_small_patch16_224``, the lowrank paper preset's
ViT-S/16; hidden 768, 12 layers, 12 heads ``vit_base_patch16_224``, maxmargin's ViT-B, at patch 2
on 32 × 32 images); every other shape is ``vit_base_patch16_224`` with the size arguments
overridden (:func:`timm_architecture`).  ``model(x)`` returns the logits.

timm's module names, which everything below reads (``N`` the block):

* ``blocks.N.norm1`` then ``blocks.N.attn.qkv``, one ``Linear`` (d → 3·H·d_h) whose output rows
  are [W_Q; W_K; W_V], each H heads of d_h contiguous rows (timm reshapes the output to
  (3, H, d_h)); ``blocks.N.attn.proj`` (H·d_h → d), its input columns head by head;
* ``blocks.N.mlp.fc1``, ``blocks.N.mlp.fc2``; ``norm``, ``head`` (the classifier);
* ``cls_token``, ``pos_embed``, ``patch_embed.proj`` (the patch convolution).

Weight decay (docs/papers/lowrank.md#what-gets-weight-decay, Fig 3 right): λ_attn on the attention
matrices (``attn.qkv`` and ``attn.proj`` weights: q, k, v and the output projection), λ_other on
the other matrices (``mlp.fc1``, ``mlp.fc2``, ``head``); biases, LayerNorms, patch and position
embeddings and the class token get none.

**The frozen q/k rows** (:func:`freeze_qk`, maxmargin's negative control: W_q, W_k and their
biases stay at initialisation).  q, k and v share one weight, so freezing cannot be a flag on a
parameter.  Each block's ``qkv.weight`` and ``qkv.bias`` get a ``torch.nn.utils.parametrize``
parametrization :class:`FrozenRows`: the first 2·H·d_h rows (q and k) become a buffer, the
trainable parameter is the v rows alone, and the layer's weight is their concatenation.  The
frozen rows are then no parameter at all: no gradient, no optimiser state, and neither an
optimiser's step nor AdamW's decoupled decay θ ← θ − ηλθ can reach them (a mask on the gradient
would leave the decay, and a hook restoring the rows would fight the optimiser).  The forward pass
is the same product x [W_Q; W_K; W_V]ᵀ + b.

**The [CLS] attention** (:func:`cls_attention`, :func:`cls_attention_pair`).  timm's attention
runs SDPA and returns no probabilities, so the maps are recomputed from the last block's input x
(captured by a forward pre-hook in the same pass that gives the logits): with z = norm1(x),
q = z W_Qᵀ + b_Q and k = z W_Kᵀ + b_K split into heads, the last layer's probabilities are
softmax(q_h k_hᵀ / √d_h) (timm's own formula; its ``q_norm``/``k_norm`` are applied, identities
here), whose [CLS] row over the patch keys is averaged over the heads and renormalised.
"""

from __future__ import annotations

import torch
from torch.nn.utils import parametrize

from .gpt2 import decay_groups

# timm names: the attention matrices (fused q/k/v and the output projection; a frozen control's
# qkv weight is the parametrized v rows), then the other matrices (MLP and classifier)
VIT_DECAY_GROUPS = (
    ("attn", r"^blocks\.\d+\.attn\.(qkv|proj)\.(weight|parametrizations\.weight\.original)$"),
    ("other", r"^(blocks\.\d+\.mlp\.fc[12]|head)\.weight$"),
)

# (hidden, layers, heads) -> timm's name of that ViT size (patch and image size are arguments)
TIMM_SIZES = {
    (192, 12, 3): "vit_tiny_patch16_224",
    (384, 12, 6): "vit_small_patch16_224",
    (768, 12, 12): "vit_base_patch16_224",
    (1024, 24, 16): "vit_large_patch16_224",
}


def timm_architecture(hidden: int, layers: int, heads: int) -> str:
    """timm's name of a ViT of this width, depth and head count, else ``vit_base_patch16_224``
    (whose size arguments :func:`build_vit` overrides: the same ``VisionTransformer`` class).

    Parameters
    ----------
    hidden, layers, heads : int
        Width, depth and heads of the encoder.

    Returns
    -------
    str
        The architecture passed to ``timm.create_model``.
    """
    return TIMM_SIZES.get((hidden, layers, heads), "vit_base_patch16_224")


def build_vit(image_size: int, patch_size: int, channels: int, hidden: int, layers: int, heads: int,
              mlp: int, num_labels: int, seed: int = 0, dropout: float = 0.0):
    """A randomly initialised timm ViT (class token, learned positions, token pooling).

    Parameters
    ----------
    image_size, patch_size, channels : int
        Square input side, patch side (dividing it) and colour channels.
    hidden, layers, heads, mlp : int
        Width, depth, heads and MLP width (``mlp_ratio = mlp / hidden``).
    num_labels : int
        Classes of the classifier ``head``.
    seed : int
        Seed of the initialisation (``torch.manual_seed``; timm initialises from torch's RNG).
    dropout : float
        Dropout on the embeddings, the attention probabilities and the outputs of the attention
        and MLP (timm's ``pos_drop_rate``, ``attn_drop_rate``, ``proj_drop_rate``; none before
        the classifier, no stochastic depth).

    Returns
    -------
    timm.models.VisionTransformer
        ``model(pixels)`` gives the (N, num_labels) logits; attention through PyTorch SDPA.
    """
    import timm

    torch.manual_seed(seed)
    model = timm.create_model(
        timm_architecture(hidden, layers, heads),
        pretrained=False,
        img_size=image_size,
        patch_size=patch_size,
        in_chans=channels,
        num_classes=num_labels,
        embed_dim=hidden,
        depth=layers,
        num_heads=heads,
        mlp_ratio=mlp / hidden,
        qkv_bias=True,
        class_token=True,
        global_pool="token",
        pos_embed="learn",
        drop_rate=0.0,
        pos_drop_rate=dropout,
        attn_drop_rate=dropout,
        proj_drop_rate=dropout,
        drop_path_rate=0.0,
    )
    if model.blocks[0].mlp.fc1.out_features != mlp:
        raise ValueError(f"timm rounds mlp_ratio {mlp}/{hidden} to another width")
    return model


def vit_param_groups(model, lam_attn: float, lam_other: float) -> list[dict]:
    """AdamW groups (:func:`attnbias.models.gpt2.decay_groups`) of a timm ViT.

    Parameters
    ----------
    model : timm.models.VisionTransformer
        From :func:`build_vit` (frozen q/k rows, if any, are not parameters).
    lam_attn, lam_other : float
        λ on the ``attn.qkv``/``attn.proj`` weights; on the ``mlp.fc1``/``fc2`` and ``head``
        weights.

    Returns
    -------
    list of dict
        Groups ``attn``, ``other`` and ``none`` (biases, norms, embeddings, class token; λ = 0).
    """
    return decay_groups(model, VIT_DECAY_GROUPS, {"attn": lam_attn, "other": lam_other})


def attention_layers(model) -> list:
    """The timm ``Attention`` modules of the blocks, in order."""
    return [block.attn for block in model.blocks]


def _split_qkv(att) -> tuple[torch.Tensor, ...]:
    """(W_q, b_q, W_k, b_k) of a timm attention: row thirds of ``qkv`` (views, not copies)."""
    w, b, n = att.qkv.weight, att.qkv.bias, att.attn_dim
    return w[:n], b[:n], w[n : 2 * n], b[n : 2 * n]


def last_layer_qk(model) -> tuple[torch.Tensor, torch.Tensor]:
    """(W_q, W_k) of the last attention layer, each (H·d_h × d), detached."""
    wq, _, wk, _ = _split_qkv(attention_layers(model)[-1])
    return wq.detach(), wk.detach()


def combined_qk_norm(model) -> float:
    """‖W_qᵀ W_k‖_F of the last layer: the combined key-query matrix x ↦ xᵀ(W_qᵀW_k)x′ (summed over
    heads; biases and the 1/√d_h scale excluded)."""
    wq, wk = last_layer_qk(model)
    return float(torch.linalg.matrix_norm((wq.T.double() @ wk.double()), "fro"))


def qk_weights(model, last_only: bool = False) -> list[torch.Tensor]:
    """(W_q, b_q, W_k, b_k) of every attention layer, or of the last one only, flattened in that
    order: detached views of the rows of ``qkv`` (clone to keep a copy; writing into one under
    ``torch.no_grad`` writes the model's weight unless its rows are frozen)."""
    layers = attention_layers(model)
    return [t.detach() for att in (layers[-1:] if last_only else layers)
            for t in _split_qkv(att)]  # fmt: skip


class FrozenRows(torch.nn.Module):
    """A parametrization keeping the first ``n`` rows of a tensor fixed: the trainable original is
    the remaining rows, and the tensor is [frozen; live] (the derivation: the module docstring)."""

    def __init__(self, full: torch.Tensor, n: int):
        super().__init__()
        self.n = n
        self.register_buffer("frozen", full[:n].detach().clone())

    def forward(self, live: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.frozen, live], dim=0)

    def right_inverse(self, full: torch.Tensor) -> torch.Tensor:
        return full[self.n :]


def freeze_qk(model) -> int:
    """Freeze W_q, W_k and their biases of every attention layer at their current values.

    Parameters
    ----------
    model : timm.models.VisionTransformer
        Changed in place: each ``attn.qkv`` weight and bias is parametrized by
        :class:`FrozenRows` (q/k rows a buffer, the v rows the parameter).

    Returns
    -------
    int
        The number of frozen scalars.
    """
    frozen = 0
    for att in attention_layers(model):
        n = 2 * att.attn_dim
        for name in ("weight", "bias"):
            full = getattr(att.qkv, name)
            frozen += full[:n].numel()  # before: registering re-sets the parameter to the v rows
            parametrize.register_parametrization(att.qkv, name, FrozenRows(full, n))
    return frozen


def _cls_row(att, z: torch.Tensor, wq, bq, wk, bk) -> torch.Tensor:
    """Head-averaged [CLS] attention over the patch keys (CLS key dropped, renormalised) of one
    timm attention layer on its normed input ``z`` (N, T, d), with the given q/k weights."""
    n, t, _ = z.shape
    heads, dh = att.num_heads, att.head_dim
    q = torch.nn.functional.linear(z[:, :1], wq, bq).reshape(n, 1, heads, dh).transpose(1, 2)
    k = torch.nn.functional.linear(z, wk, bk).reshape(n, t, heads, dh).transpose(1, 2)
    q, k = att.q_norm(q), att.k_norm(k)
    s = torch.softmax((q @ k.transpose(-1, -2)) * att.scale, dim=-1)
    row = s.float().mean(dim=1)[:, 0, 1:]  # heads averaged; CLS query; patches
    return row / row.sum(dim=-1, keepdim=True)


def _last_block_passes(model, pixel_values: torch.Tensor, batch_size: int):
    """Yield (normed input of the last block's attention, logits) batch by batch, one forward
    pass each (the input captured by a forward pre-hook)."""
    block = model.blocks[-1]
    seen = []
    hook = block.register_forward_pre_hook(lambda mod, args: seen.append(args[0]))
    try:
        for i in range(0, len(pixel_values), batch_size):
            logits = model(pixel_values[i : i + batch_size]).float()
            yield block.norm1(seen.pop()), logits
    finally:
        hook.remove()


@torch.no_grad()
def cls_attention(model, pixel_values: torch.Tensor,
                  batch_size: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """Head-averaged last-layer attention of the [CLS] query over the patch keys (CLS key dropped),
    renormalised to sum to one, (N, num_patches), and the logits (N, classes) of the same pass."""
    att = attention_layers(model)[-1]
    live = qk_weights(model, last_only=True)
    rows, logits = [], []
    for z, out in _last_block_passes(model, pixel_values, batch_size):
        rows.append(_cls_row(att, z, *live))
        logits.append(out)
    return torch.cat(rows), torch.cat(logits)


@torch.no_grad()
def cls_attention_pair(model, pixel_values: torch.Tensor, qk_alt: list[torch.Tensor],
                       batch_size: int = 256) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One forward pass: the last layer's [CLS] attention as in :func:`cls_attention`, the same
    with that layer's (W_q, b_q, W_k, b_k) replaced by ``qk_alt`` (same input to the layer), and
    the logits.  Both maps come from one code path, so equal weights give bit-equal maps."""
    att = attention_layers(model)[-1]
    live = qk_weights(model, last_only=True)
    rows, alts, logits = [], [], []
    for z, out in _last_block_passes(model, pixel_values, batch_size):
        rows.append(_cls_row(att, z, *live))
        alts.append(_cls_row(att, z, *qk_alt))
        logits.append(out)
    return torch.cat(rows), torch.cat(alts), torch.cat(logits)
