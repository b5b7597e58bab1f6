"""The GPU code paths of the engine and the models on CUDA (``pytest -m gpu``; skipped without a
GPU): bf16 autocast, SDPA against eager attention, ``torch.compile``, checkpoint resume, GPU-side
augmentation, fused AdamW with accumulation and clipping, SNGD/SPS, and the metrics that read
weights of a model on the GPU.  Run by ``benchmarks/gpu_check.py``."""

from __future__ import annotations

import math

import pytest
import torch

from attnbias.models.gpt2 import build_gpt2, eval_lm_loss, gpt2_param_groups, lm_loss
from attnbias.models.vit import build_vit, cls_attention, cls_attention_pair, qk_parameters
from attnbias.train import TrainConfig, fit, random_crop_flip, sgd_probe_norms

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]
CUDA = torch.device("cuda")


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
    logits = m(pixel_values=b["x"]).logits
    return torch.nn.functional.cross_entropy(logits.float(), b["y"]), {
        "train_acc": (logits.argmax(-1) == b["y"]).float().mean().detach()
    }


def _cfg(**kw):
    base = dict(epochs=3, batch_size=16, lr=1e-3, optimizer="adam", steps_per_epoch=4)
    return TrainConfig(**{**base, **kw})


def test_bf16_autocast_trains_on_cuda_and_keeps_fp32_weights():
    model = _vit()
    hist = fit(
        model, _images(), _vit_loss, _cfg(augment_pad=2, augment_flip=True), CUDA, progress=False
    )
    losses = [h["train_loss"] for h in hist]
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < losses[0]
    assert all(p.dtype == torch.float32 and p.is_cuda for p in model.parameters())


def test_bf16_loss_close_to_float32_loss():
    data = _images()
    runs = [
        fit(_vit(), data, _vit_loss, _cfg(epochs=1, bf16=bf16), CUDA, progress=False)
        for bf16 in (False, True)
    ]
    a, b = runs[0][-1]["train_loss"], runs[1][-1]["train_loss"]
    assert abs(a - b) / abs(a) < 0.05


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_vit_sdpa_matches_eager_attention(dtype):
    model = _vit().to(CUDA).eval()
    x = torch.randn(8, 3, 16, 16, device=CUDA)
    with (
        torch.no_grad(),
        torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype != torch.float32),
    ):
        sdpa = model(pixel_values=x).logits.float()
        model.set_attn_implementation("eager")
        eager = model(pixel_values=x).logits.float()
    assert _rel(sdpa, eager) < (1e-4 if dtype == torch.float32 else 3e-2)


def test_gpt2_sdpa_matches_eager_attention_in_bf16():
    ids = torch.randint(0, 500, (4, 64), device=CUDA)
    out = []
    for attn in ("sdpa", "eager"):
        m = build_gpt2(500, 64, 64, 2, 4, eos_id=499, attn=attn).to(CUDA).eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            out.append(m(input_ids=ids).logits.float())
    assert _rel(out[0], out[1]) < 3e-2


def test_compiled_training_matches_eager_on_cuda():
    data = _images()
    runs = [
        fit(_vit(), data, _vit_loss, _cfg(epochs=2, compile=c), CUDA, progress=False)
        for c in (False, True)
    ]
    for a, b in zip(runs[0], runs[1], strict=True):
        assert abs(a["train_loss"] - b["train_loss"]) / abs(a["train_loss"]) < 0.05


def test_checkpoint_resume_on_cuda_continues_the_run(tmp_path):
    data = _images()
    cfg = _cfg(epochs=4, augment_pad=2, augment_flip=True)

    def stop_at(epoch):
        def cb(model, e):
            if e == epoch:  # a job killed during epoch 3: the checkpoint holds epoch 2
                raise _Stop
            return {}

        return cb

    full = fit(_vit(), data, _vit_loss, cfg, CUDA, progress=False, on_epoch_end=stop_at(-1))
    ckpt = tmp_path / "run.pt"
    with pytest.raises(_Stop):
        fit(
            _vit(),
            data,
            _vit_loss,
            cfg,
            CUDA,
            checkpoint=ckpt,
            progress=False,
            on_epoch_end=stop_at(3),
        )
    resumed = fit(
        _vit(),
        data,
        _vit_loss,
        cfg,
        CUDA,
        checkpoint=ckpt,
        progress=False,
        on_epoch_end=stop_at(-1),
    )
    assert [h["epoch"] for h in resumed] == [0, 1, 2, 3, 4]
    for a, b in zip(full[1:], resumed[1:], strict=True):
        assert abs(a["train_loss"] - b["train_loss"]) <= 1e-4 * abs(a["train_loss"])


class _Stop(Exception):
    pass


def test_gpu_augmentation_equals_cpu_augmentation():
    x = torch.randn(32, 3, 16, 16)
    outs = []
    for dev in ("cpu", "cuda"):
        g = torch.Generator().manual_seed(3)
        outs.append(random_crop_flip(x.to(dev), 4, True, g).cpu())
    assert torch.equal(outs[0], outs[1])


def test_gpt2_fused_adamw_accumulation_clipping_and_eval():
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
        extra={"betas": (0.9, 0.95), "eps": 1e-8, "fused": True},
    )
    hist = fit(
        model,
        {"ids": ids},
        lm_loss,
        cfg,
        CUDA,
        image_key=None,
        progress=False,
        param_groups=gpt2_param_groups(model, 0.1, 0.1),
    )
    assert math.isfinite(hist[-1]["train_loss"]) and hist[-1]["train_loss"] < hist[0]["train_loss"]
    fp32 = eval_lm_loss(model, ids[:16], batch_size=8)
    bf16 = eval_lm_loss(model, ids[:16], batch_size=8, bf16=True)
    assert abs(fp32 - bf16) / fp32 < 0.02


@pytest.mark.parametrize(
    "opt, extra", [("sngd", {"eps": 1e-8}), ("sps", {"c": 0.5, "f_star": 0.0})]
)
def test_stochastic_optimisers_on_cuda_match_cpu(opt, extra):
    data = _images(n=32)
    out = {}
    for dev in ("cpu", "cuda"):
        cfg = _cfg(epochs=1, optimizer=opt, lr=0.01, bf16=False, extra=extra)
        model = _vit()
        fit(model, data, _vit_loss, cfg, torch.device(dev), progress=False)
        out[dev] = torch.cat([p.detach().cpu().reshape(-1) for p in model.parameters()])
    assert _rel(out["cuda"], out["cpu"]) < 1e-3


def test_sgd_probe_on_cuda():
    norms = sgd_probe_norms(_vit().to(CUDA), _images(), _vit_loss, 16, 0.01, 3, 0, CUDA, "x")
    assert len(norms) == 3 and all(math.isfinite(n) and n > 0 for n in norms)


def test_attention_maps_and_head_metrics_of_a_model_on_cuda():
    from attnbias.experiments.lowrank.common import head_rows

    model = _vit().to(CUDA).eval()
    x = torch.randn(6, 3, 16, 16, device=CUDA)
    maps, logits = cls_attention(model, x)
    assert torch.allclose(maps.sum(-1), torch.ones(6, device=CUDA), atol=1e-5)
    live = [p.detach() for p in qk_parameters(model, last_only=True)]
    rows, alt, _ = cls_attention_pair(model, x, live)
    assert torch.equal(rows, alt)
    assert model.config._attn_implementation == "sdpa"
    metrics = head_rows(model, 0, True)
    assert metrics and all(math.isfinite(r["eff_rank"]) for r in metrics)


def test_recall_model_trains_on_cuda():
    from attnbias.experiments.lowrank.recall import train_recall

    df, meta = train_recall(
        0.1,
        0,
        4,
        8,
        8,
        32,
        2,
        2,
        32,
        20,
        1e-3,
        [0.9, 0.999],
        1e-8,
        10,
        256,
        [0],
        accelerator="cuda",
    )
    assert meta["device"] == "cuda" and len(df) > 0
