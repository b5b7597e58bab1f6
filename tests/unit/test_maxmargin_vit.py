"""maxmargin Figs 6/7 negative control (``control="null"``: W_q, W_k of every layer frozen at
initialisation): the training itself, on a tiny ViT (CPU, seconds), and the claims on
control-shaped training tables."""

import numpy as np
import pytest
import torch

from attnbias.claims import maxmargin as checks
from attnbias.experiments.maxmargin import train_vit
from attnbias.models.vit import (
    build_vit,
    cls_attention,
    cls_attention_pair,
    freeze_qk,
    qk_weights,
)

# the settings of a tiny run (the maxmargin `vit` block)
TINY = dict(
    cifar_source="uoft-cs/cifar10",
    dataset="digits",
    image_size=16,
    patch_size=4,
    hidden=16,
    layers=2,
    heads=2,
    mlp=16,
    optimizer="adam",
    lr=0.01,
    momentum=0.0,
    batch_size=128,
    train_size=0,
    epochs=2,
    augment_pad=0,
    augment_flip=False,
    probe_size=64,
    map_epochs=[0, 2],
    map_classes=[0, 1],
    seeds=[0],
    zeta_snapshots=3,
    compile=False,
)


def test_freeze_qk_freezes_exactly_the_query_and_key_rows():
    """timm fuses q, k, v into ``attn.qkv``: after freezing, its q/k rows are buffers and only the
    v rows (16 of 48) of each layer's weight and bias are parameters; nothing else changes."""
    model = build_vit(16, 4, 1, 16, 2, 2, 16, 10, 0)
    before = {n: p.shape for n, p in model.named_parameters()}
    n = freeze_qk(model)
    after = {n: p.shape for n, p in model.named_parameters()}
    qkv = {f"blocks.{i}.attn.qkv.{w}" for i in range(2) for w in ("weight", "bias")}
    assert set(before) - set(after) == qkv
    assert {k: v for k, v in after.items() if k not in before} == {
        f"blocks.{i}.attn.qkv.parametrizations.{w}.original": shape
        for i in range(2)
        for w, shape in (("weight", (16, 16)), ("bias", (16,)))
    }
    frozen = {k: b.shape for k, b in model.named_buffers() if k.endswith(".frozen")}
    assert frozen == {
        f"blocks.{i}.attn.qkv.parametrizations.{w}.0.frozen": shape
        for i in range(2)
        for w, shape in (("weight", (32, 16)), ("bias", (32,)))
    }
    assert n == 2 * 2 * (16 * 16 + 16) and len(qk_weights(model, last_only=True)) == 4


def test_one_pass_attention_matches_the_library_and_swaps_only_the_last_qk():
    """ζ, ζ₀ come from the last layer's input in one pass: the live map equals
    :func:`cls_attention`'s (the library's own probabilities: tests/unit/test_vit_readouts.py);
    with the initial W_q, W_k it is the map of a model whose last layer's W_q, W_k were put back
    (everything else trained)."""
    torch.manual_seed(1)
    trained = build_vit(16, 2, 1, 16, 2, 2, 16, 10, 0)
    with torch.no_grad():  # "training": scale every weight, so the map is far from uniform
        for p in trained.parameters():
            p.mul_(3.0)
    x = torch.randn(12, 1, 16, 16)
    init = [p.clone() for p in qk_weights(build_vit(16, 2, 1, 16, 2, 2, 16, 10, 0),
                                          last_only=True)]  # fmt: skip
    att, att0, logits = cls_attention_pair(trained.eval(), x, init)
    ref, ref_logits = cls_attention(trained, x)
    torch.testing.assert_close(att, ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(logits, ref_logits, atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        for p, v in zip(qk_weights(trained, last_only=True), init, strict=True):
            p.copy_(v)  # views of the qkv rows: writes the model's weights
    torch.testing.assert_close(att0, cls_attention(trained, x)[0], atol=1e-6, rtol=0)
    assert (att - att0).abs().max() > 1e-3  # the swap matters
    same = cls_attention_pair(trained, x, [p.clone() for p in qk_weights(trained, True)])
    assert torch.equal(same[0], same[1])  # equal weights: bit-equal maps


@pytest.fixture(scope="module")
def runs():
    torch.set_num_threads(1)
    return {c: train_vit(TINY, control=c) for c in ("none", "null")}


def test_control_keeps_wq_wk_at_init_and_trains_the_rest(runs):
    on, off = runs["null"], runs["none"]
    curves, meta = on["fig7"]
    assert meta["control"] == "null" and on["fig6"][1]["control"] == "null"
    assert meta["frozen_qk_scalars"] == 2 * 2 * (16 * 16 + 16)
    assert meta["settings"]["zeta_snapshots"] == 3
    # ‖W_qᵀW_k‖ bit-identical at every epoch; ζ with the initial W_q, W_k is ζ itself
    assert np.ptp(curves.wnorm.to_numpy()) == 0.0
    np.testing.assert_array_equal(curves.zeta.to_numpy(), curves.zeta_qk0.to_numpy())
    # the rest trains: the loss falls, and the default arm does move W_q, W_k
    assert curves.train_loss.iloc[-1] < curves.train_loss.iloc[1]
    d_curves, d_meta = off["fig7"]
    assert d_meta["control"] == "none" and d_meta["frozen_qk_scalars"] == 0
    assert np.ptp(d_curves.wnorm.to_numpy()) > 1e-3
    assert not np.array_equal(d_curves.zeta.to_numpy()[1:], d_curves.zeta_qk0.to_numpy()[1:])


def test_zeta_is_the_mean_over_the_epochs_snapshots(runs):
    """With one snapshot ζ is the end-of-epoch value; with three it differs (two are taken
    mid-epoch), while the end-of-epoch quantities (‖W‖, accuracy) are the same run's."""
    one = train_vit({**TINY, "zeta_snapshots": 1, "epochs": 1})["fig7"][0]
    three = runs["none"]["fig7"][0]
    assert one.zeta.iloc[0] == three.zeta.iloc[0]  # epoch 0: the untrained model, one value
    assert one.wnorm.iloc[1] == three.wnorm.iloc[1] and one.zeta.iloc[1] != three.zeta.iloc[1]


def test_the_maps_table_carries_the_epochs_training_accuracy(runs):
    """Fig 6's regime check reads the training accuracy of each drawn epoch from the maps table:
    Fig 7's `train_acc` of that epoch (NaN at the untrained epoch 0)."""
    maps, meta = runs["none"]["fig6"]
    curves = runs["none"]["fig7"][0]
    assert "train_acc" in meta["columns"]
    per_epoch = maps.groupby("epoch").train_acc
    assert (per_epoch.nunique(dropna=False) == 1).all()  # one value per drawn epoch
    assert np.isnan(per_epoch.first()[0]) and np.isnan(curves.train_acc.iloc[0])
    assert per_epoch.first()[2] == curves.train_acc.iloc[2] > 0


def test_train_size_trains_on_the_first_images_of_the_split(runs):
    """``train_size``: the first n training images (the quick stand-in's subset); 0 = all."""
    assert runs["none"]["fig7"][1]["train_images"] == 1437  # digits: 1,437 of 1,797
    small = train_vit({**TINY, "train_size": 200, "epochs": 1, "batch_size": 50})
    curves, meta = small["fig7"]
    assert meta["train_images"] == 200 and meta["settings"]["train_size"] == 200
    assert small["fig6"][1]["train_images"] == 200 and len(curves) == 2


def test_unknown_control_is_refused():
    with pytest.raises(ValueError, match="unknown control"):
        train_vit(TINY, control="shuffle")


def _table(zeta, zeta_qk0, wnorm, probe_acc=0.8):
    import pandas as pd

    ep = np.arange(len(zeta))
    return pd.DataFrame(
        {
            "epoch": ep,
            "zeta": zeta,
            "zeta_qk0": zeta_qk0,
            "wnorm": wnorm,
            "train_acc": np.r_[np.nan, np.full(len(ep) - 1, 1.0)],  # fit: in the regime
            "probe_acc": np.full(len(ep), probe_acc),
        }
    )


def _check(df):
    meta = {"provenance": {"preset": "quick"}}
    return {c.id: c for c in checks.fig7((df, meta))}


def test_claims_fail_on_control_shaped_data_and_pass_on_normal_data():
    ep = np.arange(31)
    rng = np.random.default_rng(0)
    # normal: ζ falls through the learned W_q, W_k (ζ₀ stays uniform) while ‖W‖ grows
    zeta = 64 * np.exp(-0.02 * ep) + rng.normal(0, 0.3, 31)
    c = _check(_table(zeta, np.full(31, 64.0), 0.2 + 0.1 * ep))
    assert all(x.passed for x in c.values()), [(x.id, x.value) for x in c.values()]
    # control: W_q, W_k frozen, so ‖W‖ is constant and ζ₀ = ζ, near uniform
    flat = 63.99 + rng.normal(0, 0.002, 31)
    c = _check(_table(flat, flat, np.full(31, 0.205)))
    paper = [x for x in c.values() if x.kind == "paper"]
    assert paper and not any(x.passed for x in paper), [(x.id, x.value) for x in paper]
    assert all(x.passed for x in c.values() if x.kind == "sanity")
    assert c["wnorm_late_trend"].value == 0.0
    # a control-like run whose ζ still fell through the representations (ζ₀ falls with ζ): the
    # raw size of the fall passes, the trend and the share made by W_q, W_k (0) do not
    c = _check(_table(zeta, zeta, np.full(31, 0.205)))
    assert c["zeta_late_drop"].passed and "late ρ(epoch, ζ) = -" in c["zeta_late_trend"].statement
    assert c["zeta_late_trend"].value == 0.0 and c["zeta_qk_share"].value == pytest.approx(0.0)
    assert not c["zeta_qk_share"].passed and not c["wnorm_late_trend"].passed


def test_sanity_fails_at_chance_accuracy():
    ep = np.arange(31)
    c = _check(_table(64 * np.exp(-0.02 * ep), np.full(31, 64.0), 0.2 + 0.1 * ep, 0.12))
    assert not c["probe_acc"].passed and c["curves_finite"].passed
    bad = _table(64 * np.exp(-0.02 * ep), np.full(31, 64.0), np.r_[0.2 + 0.1 * ep[:-1], np.nan])
    assert not _check(bad)["curves_finite"].passed


def test_control_never_resumes_from_the_default_arms_checkpoint(tmp_path):
    """The control trains from its own resume file (the default arm's, here unreadable, is left
    alone) and removes it when done."""
    ckpt = tmp_path / "checkpoint.pt"
    ckpt.write_bytes(b"not a checkpoint")
    out = train_vit({**TINY, "epochs": 1}, control="null", checkpoint=str(ckpt))
    assert out["fig7"][1]["control"] == "null" and len(out["fig7"][0]) == 2
    assert ckpt.read_bytes() == b"not a checkpoint"
    assert not (tmp_path / "checkpoint.pt.control-null").exists()
