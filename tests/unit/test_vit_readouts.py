"""attnbias.models.vit on timm's ViT: every read-out against a direct computation from the weights
(float64 by hand, or timm's own eager attention probabilities), the decay groups by name, and the
frozen q/k rows of the negative control under AdamW with weight decay."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbias.models.vit import (
    build_vit,
    cls_attention,
    cls_attention_pair,
    combined_qk_norm,
    freeze_qk,
    qk_weights,
    timm_architecture,
    vit_param_groups,
)

D, HEADS, LAYERS = 16, 2, 2
DH = D // HEADS


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def _trained(seed=0, scale=3.0):
    """A 16×16 one-channel ViT, patch 4 (16 patches + CLS), every weight scaled so the maps are
    far from uniform (a stand-in for training)."""
    model = build_vit(16, 4, 1, D, LAYERS, HEADS, 32, 10, seed).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(scale)
    return model


def _images(n=5, seed=1):
    return torch.randn(n, 1, 16, 16, generator=torch.Generator().manual_seed(seed))


def _last_block_input(model, x):
    seen = []
    h = model.blocks[-1].register_forward_pre_hook(lambda m, a: seen.append(a[0].detach()))
    with torch.no_grad():
        logits = model(x)
    h.remove()
    return seen[0], logits


def test_the_model_is_timms_vit_with_the_asked_shape():
    model = build_vit(32, 2, 3, 48, 4, 4, 96, 10, 0)
    assert type(model).__module__ == "timm.models.vision_transformer"
    assert model.patch_embed.proj.kernel_size == (2, 2) and model.pos_embed.shape == (1, 257, 48)
    assert model.cls_token.shape == (1, 1, 48) and model.global_pool == "token"
    assert len(model.blocks) == 4 and model.blocks[0].attn.num_heads == 4
    assert model.blocks[0].mlp.fc1.out_features == 96 and model.head.out_features == 10
    assert not any(m.p for m in model.modules() if isinstance(m, torch.nn.Dropout))
    drop = build_vit(32, 2, 3, 48, 4, 4, 96, 10, 0, dropout=0.1)
    assert drop.blocks[0].attn.attn_drop.p == drop.blocks[0].mlp.drop1.p == 0.1
    assert drop.pos_drop.p == 0.1 and drop.head_drop.p == 0.0
    assert timm_architecture(768, 12, 12) == "vit_base_patch16_224"
    assert timm_architecture(384, 12, 6) == "vit_small_patch16_224"
    a, b = build_vit(16, 4, 1, D, 2, 2, 32, 10, 5), build_vit(16, 4, 1, D, 2, 2, 32, 10, 5)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    with pytest.raises(ValueError, match="rounds"):
        build_vit(16, 4, 1, 11, 1, 1, 15, 10)  # int(11 · (15 / 11)) = 14


def test_cls_attention_is_the_softmax_of_the_last_layers_scores_by_hand():
    """softmax((z W_q + b_q)(z W_k + b_k)ᵀ/√d_h), z = LayerNorm of the last block's input, in
    float64 by hand: the [CLS] row over the patches, averaged over heads, renormalised."""
    model = _trained()
    x = _images()
    maps, logits = cls_attention(model, x)
    xin, ref_logits = _last_block_input(model, x)
    torch.testing.assert_close(logits, ref_logits)
    blk = model.blocks[-1]
    z = xin.double().numpy()
    mu, var = z.mean(-1, keepdims=True), z.var(-1, keepdims=True)
    g, b = (t.detach().double().numpy() for t in (blk.norm1.weight, blk.norm1.bias))
    z = (z - mu) / np.sqrt(var + blk.norm1.eps) * g + b
    W = blk.attn.qkv.weight.detach().double().numpy()
    c = blk.attn.qkv.bias.detach().double().numpy()
    q, k = z @ W[:D].T + c[:D], z @ W[D : 2 * D].T + c[D : 2 * D]
    rows = []
    for h in range(HEADS):
        hs = slice(h * DH, (h + 1) * DH)
        s = np.einsum("nd,ntd->nt", q[:, 0, hs], k[..., hs]) / np.sqrt(DH)  # CLS query's scores
        p = np.exp(s - s.max(-1, keepdims=True))
        rows.append(p / p.sum(-1, keepdims=True))
    row = np.mean(rows, axis=0)[:, 1:]
    row /= row.sum(-1, keepdims=True)
    np.testing.assert_allclose(maps.double().numpy(), row, atol=2e-6, rtol=0)
    assert maps.shape == (5, 16) and float(maps.max()) > 1.5 / 16  # far from uniform: a real test


def test_cls_attention_equals_timms_own_eager_probabilities():
    """With the fused path off, timm's last attention applies ``attn_drop`` (identity in eval) to
    its softmax probabilities: the hooked input of that module is the library's map."""
    model = _trained(seed=2)
    x = _images(seed=3)
    att = model.blocks[-1].attn
    att.fused_attn = False
    seen = []
    h = att.attn_drop.register_forward_hook(lambda m, a, out: seen.append(a[0].detach()))
    with torch.no_grad():
        eager_logits = model(x)
    h.remove()
    probs = seen[0]  # (N, H, T, T)
    ref = probs.mean(1)[:, 0, 1:]
    ref = ref / ref.sum(-1, keepdim=True)
    att.fused_attn = True
    maps, logits = cls_attention(model, x)
    torch.testing.assert_close(maps, ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(logits, eager_logits, atol=1e-5, rtol=1e-5)


def test_fused_attention_equals_the_eager_computation_in_float64():
    model = _trained(seed=4).double()
    x = _images(seed=5).double()
    with torch.no_grad():
        fused = model(x)
        for blk in model.blocks:
            blk.attn.fused_attn = False
        eager = model(x)
    torch.testing.assert_close(fused, eager, atol=1e-10, rtol=1e-10)
    assert fused.std() > 0.1


def test_the_pair_swaps_only_the_last_layers_qk():
    model = _trained(seed=6)
    other = build_vit(16, 4, 1, D, LAYERS, HEADS, 32, 10, 9)
    alt = [t.clone() for t in qk_weights(other, last_only=True)]
    x = _images()
    live, swapped, _ = cls_attention_pair(model, x, alt)
    torch.testing.assert_close(live, cls_attention(model, x)[0], atol=0, rtol=0)
    with torch.no_grad():  # put the other model's last q/k rows into this one
        for view, v in zip(qk_weights(model, last_only=True), alt, strict=True):
            view.copy_(v)
    torch.testing.assert_close(swapped, cls_attention(model, x)[0], atol=1e-6, rtol=0)
    assert (live - swapped).abs().max() > 1e-3


def test_qk_weights_and_combined_norm_are_the_qkv_rows():
    model = _trained(seed=7)
    for blk, (wq, bq, wk, bk) in zip(model.blocks, np.split(np.arange(4 * LAYERS), LAYERS),
                                     strict=True):  # fmt: skip
        tensors = qk_weights(model)
        W, c = blk.attn.qkv.weight, blk.attn.qkv.bias
        assert torch.equal(tensors[wq], W[:D]) and torch.equal(tensors[bq], c[:D])
        assert torch.equal(tensors[wk], W[D : 2 * D]) and torch.equal(tensors[bk], c[D : 2 * D])
    W = model.blocks[-1].attn.qkv.weight.detach().double().numpy()
    ref = np.linalg.norm(W[:D].T @ W[D : 2 * D], "fro")
    assert combined_qk_norm(model) == pytest.approx(ref, rel=1e-12)


def test_decay_groups_hold_exactly_the_named_parameters():
    model = build_vit(16, 4, 1, D, LAYERS, HEADS, 32, 10, 0)
    groups = {g["name"]: g for g in vit_param_groups(model, 3.0, 0.1)}
    attn = {f"blocks.{i}.attn.{m}.weight" for i in range(LAYERS) for m in ("qkv", "proj")}
    other = {f"blocks.{i}.mlp.fc{j}.weight" for i in range(LAYERS) for j in (1, 2)}
    assert set(groups["attn"]["names"]) == attn and groups["attn"]["weight_decay"] == 3.0
    assert set(groups["other"]["names"]) == other | {"head.weight"}
    assert groups["other"]["weight_decay"] == 0.1 and groups["none"]["weight_decay"] == 0.0
    none = set(groups["none"]["names"])
    assert {"cls_token", "pos_embed", "patch_embed.proj.weight", "norm.weight"} <= none
    assert all(n.endswith(".bias") or n in ("cls_token", "pos_embed", "patch_embed.proj.weight")
               or ".norm" in n or n.startswith("norm.") for n in none)  # fmt: skip
    assert none | attn | other | {"head.weight"} == {n for n, _ in model.named_parameters()}
    by_id = {id(p) for g in groups.values() for p in g["params"]}
    assert len(by_id) == sum(1 for _ in model.parameters())


def test_frozen_qk_rows_stay_under_adamw_with_decay_while_v_and_proj_move():
    model = build_vit(16, 4, 1, D, LAYERS, HEADS, 32, 10, 0)
    x = _images(32, seed=8)
    y = torch.randint(0, 10, (32,), generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        before_logits = model(x)
    qkv0 = [(b.attn.qkv.weight.detach().clone(), b.attn.qkv.bias.detach().clone())
            for b in model.blocks]  # fmt: skip
    proj0 = [b.attn.proj.weight.detach().clone() for b in model.blocks]
    freeze_qk(model)
    with torch.no_grad():  # the parametrized layer computes what the plain one did
        torch.testing.assert_close(model(x), before_logits, atol=0, rtol=0)
    groups = vit_param_groups(model, 0.5, 0.5)
    attn = {g["name"]: g for g in groups}["attn"]["names"]
    assert f"blocks.{LAYERS - 1}.attn.qkv.parametrizations.weight.original" in attn
    opt = torch.optim.AdamW(groups, lr=1e-2)
    for _ in range(5):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    for b, (w0, c0), p0 in zip(model.blocks, qkv0, proj0, strict=True):
        w, c = b.attn.qkv.weight.detach(), b.attn.qkv.bias.detach()
        assert torch.equal(w[: 2 * D], w0[: 2 * D]) and torch.equal(c[: 2 * D], c0[: 2 * D])
        assert (w[2 * D :] - w0[2 * D :]).abs().max() > 1e-3  # v moves
        assert (c[2 * D :] - c0[2 * D :]).abs().max() > 1e-3
        assert (b.attn.proj.weight.detach() - p0).abs().max() > 1e-3  # and the output projection
    # decay alone (no gradient) does not reach the frozen rows either
    frozen = [b.attn.qkv.weight.detach()[: 2 * D].clone() for b in model.blocks]
    opt.zero_grad(set_to_none=False)
    opt.step()
    assert all(torch.equal(b.attn.qkv.weight.detach()[: 2 * D], f)
               for b, f in zip(model.blocks, frozen, strict=True))  # fmt: skip


def test_a_frozen_model_checkpoints_and_reloads():
    a = build_vit(16, 4, 1, D, LAYERS, HEADS, 32, 10, 0)
    b = build_vit(16, 4, 1, D, LAYERS, HEADS, 32, 10, 1)
    freeze_qk(a)
    freeze_qk(b)
    b.load_state_dict(a.state_dict())
    x = _images()
    with torch.no_grad():
        torch.testing.assert_close(b(x), a(x), atol=0, rtol=0)


def test_the_flop_count_is_the_models_own_matrix_products():
    """vit_forward_flops against torch's FLOP counter on the timm model's forward pass (matrix
    products and the patch convolution, 2 FLOPs per multiply-add; the eager attention path, as
    the counter does not see the CPU's SDPA kernel)."""
    from torch.utils.flop_counter import FlopCounterMode

    from attnbias.models.flops import vit_forward_flops

    model = build_vit(16, 4, 3, 32, 2, 2, 64, 10).eval()
    for blk in model.blocks:
        blk.attn.fused_attn = False
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(torch.randn(3, 3, 16, 16))
    per_image = counter.get_total_flops() / 3
    assert per_image == vit_forward_flops(16, 4, 3, 32, 2, 64, 10)


def test_the_models_input_is_the_per_channel_standardisation():
    """ImageSplits.normalise (torchvision's normalize): uint8 / 255, then (x − mean) / std per
    channel, bit for bit the hand formula."""
    from attnbias.data.images import CIFAR10_MEAN, CIFAR10_STD, ImageSplits

    x = torch.randint(0, 256, (4, 3, 5, 5), generator=torch.Generator().manual_seed(0))
    x = x.to(torch.uint8)
    sp = ImageSplits(x, x, x, x, CIFAR10_MEAN, CIFAR10_STD, "cifar10")
    mean = torch.tensor(CIFAR10_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR10_STD).view(1, 3, 1, 1)
    assert torch.equal(sp.normalise(x), (x.float() / 255.0 - mean) / std)
