"""The GPU speed paths of the GPT-2 and ViT models keep their numbers: a padded vocabulary trains
like the unpadded model (the padded columns are outside the softmax), the GPT-2's unpadded
attention and timm's ViT hand SDPA no mask under torch.compile (Dynamo traces with a
graph-capturing backend; no code generation), and padding masks are still refused or honoured."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attnbias.models.gpt2 import (
    ATTN_UNPADDED,
    build_gpt2,
    eval_lm_loss,
    lm_loss,
    next_token_ce,
)
from attnbias.train import TrainConfig, fit

VOCAB, ROWS, CTX = 100, 128, 16


def _pair(pad_scale: float = 3.0):
    """An unpadded GPT-2 and its padded twin with the same weights; the twin's 28 extra rows are
    large random vectors, so any leak of them into the loss shows."""
    plain = build_gpt2(VOCAB, CTX, 32, 2, 4, eos_id=0, seed=3)
    padded = build_gpt2(VOCAB, CTX, 32, 2, 4, eos_id=0, seed=4, pad_vocab_to=64)
    assert padded.config.vocab_size == ROWS and padded.config.real_vocab_size == VOCAB
    state = plain.state_dict()
    extra = pad_scale * torch.randn(ROWS - VOCAB, 32, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        for name, p in padded.named_parameters():
            src = state[name]
            if name.endswith("wte.weight"):
                src = torch.cat([src, extra])
            p.copy_(src)
    return plain, padded


def _ids(n=6, seed=0):
    return torch.randint(0, VOCAB, (n, CTX), generator=torch.Generator().manual_seed(seed))


def test_padded_vocabulary_gives_the_unpadded_loss_and_no_gradient_to_the_padding():
    plain, padded = _pair()
    ids = _ids()
    a, _ = lm_loss(plain, {"ids": ids})
    b, _ = lm_loss(padded, {"ids": ids})
    assert float(b.detach()) == pytest.approx(float(a.detach()), rel=1e-6)
    # the test has teeth: the same logits scored over all 128 rows give another number
    logits = padded(input_ids=ids).logits
    leaky = float(next_token_ce(logits, ids, ROWS).detach())
    assert abs(leaky - float(a.detach())) > 0.01 * float(a.detach())
    a.backward()
    b.backward()
    wte_plain = plain.transformer.wte.weight.grad
    wte_padded = padded.transformer.wte.weight.grad
    assert torch.equal(wte_padded[VOCAB:], torch.zeros_like(wte_padded[VOCAB:]))
    torch.testing.assert_close(wte_padded[:VOCAB], wte_plain, rtol=1e-5, atol=1e-7)
    # the same number as the loss over the t - 1 predicted positions written out by hand
    ref = F.cross_entropy(plain(input_ids=ids).logits[:, :-1].reshape(-1, VOCAB),
                          ids[:, 1:].reshape(-1))  # fmt: skip
    assert float(a.detach()) == pytest.approx(float(ref.detach()), rel=1e-6)
    assert eval_lm_loss(padded, ids, batch_size=4) == pytest.approx(float(ref.detach()), rel=1e-6)


def test_padded_vocabulary_trains_like_the_unpadded_model():
    """Three AdamW steps of the engine (clipping, warm-up, accumulation): the same losses up to
    float rounding, and the padded rows never move."""
    hist, models = [], []
    for model in _pair():
        before = model.transformer.wte.weight.detach().clone()
        cfg = TrainConfig(epochs=3, batch_size=8, lr=3e-3, optimizer="adamw", steps_per_epoch=1,
                          warmup_steps=2, grad_clip=1.0, grad_accum=2)  # fmt: skip
        h = fit(model, {"ids": _ids(16, seed=1)}, lm_loss, cfg, torch.device("cpu"),
                image_key=None, progress=False)  # fmt: skip
        hist.append([r["train_loss"] for r in h])
        models.append((model, before))
    assert hist[1] == pytest.approx(hist[0], rel=1e-5)
    assert hist[0][-1] < hist[0][0]  # it did train
    padded, before = models[1]
    assert torch.equal(padded.transformer.wte.weight.detach()[VOCAB:], before[VOCAB:])
    val = _ids(4, seed=2)
    assert eval_lm_loss(padded, val) == pytest.approx(eval_lm_loss(models[0][0], val), rel=1e-5)


def _sdpa_calls(fn, *args) -> list[dict]:
    """The keyword arguments of every SDPA call in the graph Dynamo captures of ``fn(*args)``."""
    calls = []

    def backend(gm, example_inputs):
        for node in gm.graph.nodes:
            if "scaled_dot_product_attention" in str(node.target):
                calls.append(dict(node.kwargs))
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=backend)(*args)
    torch._dynamo.reset()
    return calls


def test_compiled_gpt2_attention_is_causal_without_a_mask():
    model = build_gpt2(VOCAB, CTX, 32, 2, 4, eos_id=0)
    assert model.config._attn_implementation == ATTN_UNPADDED and model.config.use_cache is False
    calls = _sdpa_calls(lm_loss, model, {"ids": _ids()})
    assert len(calls) == 2
    assert all(c["attn_mask"] is None and c["is_causal"] is True for c in calls)
    # transformers' own "sdpa" materialises a mask under Dynamo (the reason for ATTN_UNPADDED)
    masked = _sdpa_calls(lm_loss, build_gpt2(VOCAB, CTX, 32, 2, 4, eos_id=0, attn="sdpa"),
                         {"ids": _ids()})  # fmt: skip
    assert masked and all(c["attn_mask"] is not None for c in masked)


def test_unpadded_attention_matches_eager_attention_and_refuses_masks():
    ids = _ids()
    out = {}
    for attn in (ATTN_UNPADDED, "eager"):
        model = build_gpt2(VOCAB, CTX, 32, 2, 4, eos_id=0, seed=7, attn=attn).eval()
        with torch.no_grad():
            out[attn] = model(input_ids=ids).logits
    torch.testing.assert_close(out[ATTN_UNPADDED], out["eager"], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="no attention mask"):
        model = build_gpt2(VOCAB, CTX, 32, 2, 4, eos_id=0)
        model(input_ids=ids, attention_mask=torch.ones_like(ids))


def test_compiled_vit_attention_has_no_mask():
    """timm's ViT hands SDPA no mask and no causal flag under Dynamo, one call per block (so SDPA
    may take its flash kernel; transformers' ViT needed a mask skip for this)."""
    from attnbias.models.vit import build_vit

    model = build_vit(16, 4, 3, 32, 2, 2, 64, 10).eval()
    assert all(block.attn.fused_attn for block in model.blocks)
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    calls = _sdpa_calls(lambda m, x: m(x), model, x)
    assert len(calls) == 2
    assert all(c.get("attn_mask") is None and not c.get("is_causal", False) for c in calls)


def test_next_token_ce_sums_and_means():
    logits = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(1))
    ids = torch.randint(0, 6, (3, 5), generator=torch.Generator().manual_seed(2))
    total = float(next_token_ce(logits, ids, 6, reduction="sum"))
    mean = float(next_token_ce(logits, ids, 6))
    assert total == pytest.approx(12 * mean, rel=1e-6)
    logp = torch.log_softmax(logits[:, :-1, :6], -1)
    ref = -logp.gather(-1, ids[:, 1:, None]).sum()
    assert total == pytest.approx(float(ref), rel=1e-6)
    assert math.isfinite(total)
