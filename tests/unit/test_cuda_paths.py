"""The GPU code paths of the engine and the models, each test run on two devices.

Every test takes the ``device`` fixture: ``cpu`` runs in every CI run, ``cuda`` only where CUDA
is (``pytest -m gpu``; the GPU check ``python -m attnbias.gpu_check`` runs those).  Both cases
make the same calls at the same sizes and check what does not depend on the device (finite,
falling losses, shapes, checkpoint resume, SDPA against eager attention, the augmentation against
a reference); only the CUDA case checks what is CUDA's own: bf16 autocast (the engine applies it
on CUDA only), ``torch.compile`` with code generation (on the CPU Dynamo traces the same step with
the ``eager`` backend: no C++ toolchain, seconds), fused AdamW, results equal to the CPU's, weights
on the GPU.  ``tests/unit/test_gpu_twins.py`` fails when a CUDA test has no CPU case.
"""

from __future__ import annotations

import functools
import math

import pytest
import torch

from attnbias.models.gpt2 import build_gpt2, eval_lm_loss, gpt2_param_groups, lm_loss
from attnbias.models.vit import build_vit, cls_attention, cls_attention_pair, qk_weights
from attnbias.train import TrainConfig, fit, random_crop_flip, sgd_probe

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda",
        id="cuda",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
        ],
    ),
]


@pytest.fixture(params=DEVICES)
def device(request) -> torch.device:
    """The device a test runs on: ``cpu`` (always) or ``cuda`` (marked ``gpu``)."""
    return torch.device(request.param)


def _cuda(device: torch.device) -> bool:
    return device.type == "cuda"


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().cpu(), b.double().cpu()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def _images(n=64, size=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {
        "x": torch.randn(n, 3, size, size, generator=g),
        "y": torch.randint(0, 10, (n,), generator=g),
    }


def _vit(seed=0):
    return build_vit(16, 4, 3, 64, 2, 4, 128, 10, seed)


def _vit_loss(m, b):
    logits = m(b["x"])
    return torch.nn.functional.cross_entropy(logits.float(), b["y"]), {
        "train_acc": (logits.argmax(-1) == b["y"]).float().mean().detach()
    }


def _cfg(**kw):
    base = dict(epochs=3, batch_size=16, lr=1e-3, optimizer="adam", steps_per_epoch=4)
    return TrainConfig(**{**base, **kw})


def _flat(model) -> torch.Tensor:
    return torch.cat([p.detach().cpu().reshape(-1) for p in model.parameters()])


def test_bf16_autocast_trains_and_keeps_fp32_weights(device):
    model = _vit()
    hist = fit(
        model, _images(), _vit_loss, _cfg(augment_pad=2, augment_flip=True), device, progress=False
    )
    losses = [h["train_loss"] for h in hist]
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0]
    params = list(model.parameters())
    assert all(p.dtype == torch.float32 and p.device.type == device.type for p in params)


def test_bf16_loss_close_to_float32_loss(device):
    data = _images()
    runs = [
        fit(_vit(), data, _vit_loss, _cfg(epochs=1, bf16=bf16), device, progress=False)
        for bf16 in (False, True)
    ]
    a, b = runs[0][-1]["train_loss"], runs[1][-1]["train_loss"]
    assert math.isfinite(a) and math.isfinite(b)
    if _cuda(device):
        assert a != b  # autocast ran: bf16 changes the numbers ...
        assert abs(a - b) / abs(a) < 0.05  # ... a little
    else:
        assert a == b  # bf16 is an autocast on CUDA only: the CPU run is float32 both times


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_vit_sdpa_matches_eager_attention(device, dtype):
    """timm's fused attention (SDPA) against its eager softmax(q kᵀ·scale) v path."""
    model = _vit().to(device).eval()
    x = torch.randn(8, 3, 16, 16, generator=torch.Generator().manual_seed(1)).to(device)
    with (
        torch.no_grad(),
        torch.autocast(device.type, dtype=torch.bfloat16, enabled=dtype != torch.float32),
    ):
        assert all(block.attn.fused_attn for block in model.blocks)
        sdpa = model(x).float()
        for block in model.blocks:
            block.attn.fused_attn = False
        eager = model(x).float()
    assert sdpa.shape == (8, 10)
    assert _rel(sdpa, eager) < (1e-4 if dtype == torch.float32 else 3e-2)


def test_gpt2_sdpa_matches_eager_attention_in_bf16(device):
    ids = torch.randint(0, 500, (4, 64), generator=torch.Generator().manual_seed(2)).to(device)
    out = []
    for attn in ("sdpa", "eager"):
        m = build_gpt2(500, 64, 64, 2, 4, eos_id=499, attn=attn).to(device).eval()
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
            out.append(m(input_ids=ids).logits.float())
    assert out[0].shape[:2] == (4, 64)
    assert _rel(out[0], out[1]) < 3e-2


def test_compiled_training_matches_eager(device, monkeypatch):
    if not _cuda(device):  # Dynamo traces the engine's compiled step; no code generation
        monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    data = _images()
    runs = [
        fit(_vit(), data, _vit_loss, _cfg(epochs=2, compile=c), device, progress=False)
        for c in (False, True)
    ]
    assert len(runs[0]) == len(runs[1]) == 2
    for a, b in zip(runs[0], runs[1], strict=True):
        assert math.isfinite(b["train_loss"])
        assert abs(a["train_loss"] - b["train_loss"]) / abs(a["train_loss"]) < 0.05


def test_checkpoint_resume_continues_the_run(device, tmp_path):
    data = _images()
    cfg = _cfg(epochs=4, augment_pad=2, augment_flip=True)

    def stop_at(epoch):
        def cb(model, e):
            if e == epoch:  # a job killed during epoch 3: the checkpoint holds epoch 2
                raise _Stop
            return {}

        return cb

    full = fit(_vit(), data, _vit_loss, cfg, device, progress=False, on_row=stop_at(-1))
    ckpt = tmp_path / "run.pt"
    with pytest.raises(_Stop):
        fit(
            _vit(),
            data,
            _vit_loss,
            cfg,
            device,
            checkpoint=ckpt,
            progress=False,
            on_row=stop_at(3),
        )
    resumed = fit(
        _vit(),
        data,
        _vit_loss,
        cfg,
        device,
        checkpoint=ckpt,
        progress=False,
        on_row=stop_at(-1),
    )
    assert [h["epoch"] for h in resumed] == [0, 1, 2, 3, 4]
    for a, b in zip(full[1:], resumed[1:], strict=True):
        assert abs(a["train_loss"] - b["train_loss"]) <= 1e-4 * abs(a["train_loss"])


class _Stop(Exception):
    pass


def test_augmentation_crops_and_flips_like_the_reference(device):
    """random_crop_flip on ``device`` equals a per-image crop/flip of the padded batch that draws
    the same offsets and flips from the same CPU generator, and (on CUDA) the CPU's result."""
    x = torch.randn(32, 3, 16, 16, generator=torch.Generator().manual_seed(5))
    pad = 4
    out = random_crop_flip(x.to(device), pad, True, torch.Generator().manual_seed(3)).cpu()
    g = torch.Generator().manual_seed(3)
    oy = torch.randint(0, 2 * pad + 1, (32,), generator=g)
    ox = torch.randint(0, 2 * pad + 1, (32,), generator=g)
    flip = torch.rand(32, generator=g) < 0.5
    padded = torch.nn.functional.pad(x, (pad,) * 4)
    ref = torch.stack(
        [
            (lambda c: c.flip(-1) if flip[i] else c)(
                padded[i, :, oy[i] : oy[i] + 16, ox[i] : ox[i] + 16]
            )
            for i in range(32)
        ]
    )
    assert 0 < int(flip.sum()) < 32 and len(set(oy.tolist())) > 1  # the draws vary
    assert out.shape == x.shape and torch.equal(out, ref)
    if _cuda(device):
        cpu = random_crop_flip(x, pad, True, torch.Generator().manual_seed(3))
        assert torch.equal(out, cpu)


def test_gpt2_fused_adamw_accumulation_clipping_and_eval(device):
    model = build_gpt2(512, 64, 64, 2, 4, eos_id=511, pad_vocab_to=64)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 512, (64, 64), generator=g)
    cfg = TrainConfig(
        epochs=2,
        batch_size=16,
        lr=3e-3,
        optimizer="adamw",
        steps_per_epoch=4,
        schedule="cosine",
        warmup_steps=2,
        final_lr_frac=0.1,
        grad_clip=1.0,
        grad_accum=4,
        # fused AdamW is the paper preset's on CUDA; the CPU case runs the engine's default
        extra={"betas": (0.9, 0.95), "eps": 1e-8, **({"fused": True} if _cuda(device) else {})},
    )
    hist = fit(
        model,
        {"ids": ids},
        lm_loss,
        cfg,
        device,
        image_key=None,
        progress=False,
        param_groups=gpt2_param_groups(model, 0.1, 0.1),
    )
    assert math.isfinite(hist[-1]["train_loss"]) and hist[-1]["train_loss"] < hist[0]["train_loss"]
    assert next(model.parameters()).device.type == device.type
    fp32 = eval_lm_loss(model, ids[:16], batch_size=8)
    bf16 = eval_lm_loss(model, ids[:16], batch_size=8, bf16=True)
    assert math.isfinite(fp32)
    if _cuda(device):
        assert abs(fp32 - bf16) / fp32 < 0.02
    else:
        assert bf16 == fp32  # eval_lm_loss's bf16 is an autocast on CUDA only


@pytest.mark.parametrize(
    "opt, extra", [("sngd", {"eps": 1e-8}), ("sps", {"c": 0.5, "f_star": 0.0})]
)
def test_stochastic_optimisers_train_and_match_the_cpu(device, opt, extra):
    data = _images(n=32)
    out = {}
    for dev in dict.fromkeys(("cpu", device.type)):
        cfg = _cfg(epochs=1, optimizer=opt, lr=0.01, bf16=False, extra=extra)
        model = _vit()
        hist = fit(model, data, _vit_loss, cfg, torch.device(dev), progress=False)
        assert all(math.isfinite(h["train_loss"]) for h in hist)
        out[dev] = _flat(model)
    start = _flat(_vit())
    assert torch.isfinite(out[device.type]).all()
    assert _rel(out[device.type], start) > 1e-4  # the optimiser moved the weights
    assert _rel(out[device.type], out["cpu"]) < 1e-3


def test_sgd_probe(device):
    probe = sgd_probe(_vit().to(device), _images(), _vit_loss, 16, 0.01, 3, 0, device, "x")
    for values in probe.values():
        assert len(values) == 3 and all(math.isfinite(n) and n > 0 for n in values)


def test_attention_maps_and_head_metrics_of_a_model_on_the_device(device):
    from attnbias.experiments.lowrank.common import head_rows

    model = _vit().to(device).eval()
    x = torch.randn(6, 3, 16, 16, generator=torch.Generator().manual_seed(4)).to(device)
    maps, logits = cls_attention(model, x)
    assert maps.device.type == device.type and logits.shape == (6, 10)
    assert torch.allclose(maps.sum(-1), torch.ones(6, device=device), atol=1e-5)
    live = [p.clone() for p in qk_weights(model, last_only=True)]
    rows, alt, _ = cls_attention_pair(model, x, live)
    assert torch.equal(rows, alt)
    assert all(block.attn.fused_attn for block in model.blocks)  # training's path: SDPA
    metrics = head_rows(model, 0, True)
    assert metrics and all(math.isfinite(r["eff_rank"]) for r in metrics)


def test_recall_model_trains(device):
    from attnbias.experiments.lowrank.recall import RecallSettings, train_recall

    settings = RecallSettings(
        n_pairs=4,
        n_keys=8,
        n_values=8,
        d_model=32,
        n_heads=2,
        n_layers=2,
        batch=32,
        steps=20,
        lr=1e-3,
        betas=[0.9, 0.999],
        eps=1e-8,
        log_every=10,
        eval_samples=256,
        spectra_at=[0],
    )
    df, meta = train_recall(settings, lam=0.1, seed=0, accelerator=device.type)
    assert meta["device"] == device.type and len(df) > 0
    assert sorted(df["step"].unique()) == [0, 10, 20]
    assert df["train_loss"].notna().all() and (df["train_loss"] > 0).all()
    assert 0.0 <= meta["accuracy"] <= 1.0
