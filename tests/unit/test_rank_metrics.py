"""attnbias.metrics.rank: spectra, ranks, balance diagnostics and per-head attention factors.

The per-head tests build tiny random GPT-2, BERT, LLaMA (from configs, offline) and timm ViT models,
set weights by hand to known per-head ranks, and compare the attention logits and outputs rebuilt
from the sliced factors with the models' own (biases zeroed).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnbias.metrics import rank as rk


def _rng(seed=0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------
# spectra, ranks, balance


def test_qr_spectrum_matches_direct_svd():
    rng = _rng(1)
    for p, q, r in ((7, 6, 4), (5, 5, 5), (3, 8, 6), (10, 2, 3)):
        A = rng.standard_normal((3, p, r))
        B = rng.standard_normal((3, q, r))
        direct = np.linalg.svd(A @ np.swapaxes(B, -1, -2), compute_uv=False)
        s = rk.singular_values(A, B)
        k = min(p, q, r)
        assert s.shape == (3, k)
        np.testing.assert_allclose(s, direct[:, :k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(rk.nuclear_norm(A, B), direct.sum(-1), rtol=1e-12)


def test_nuclear_norm_below_frobenius_bound_with_equality_when_balanced():
    rng = _rng(2)
    A = rng.standard_normal((50, 9, 4))
    B = rng.standard_normal((50, 7, 4))
    gap = rk.gap(A, B)
    assert gap.min() > 0  # random factors are unbalanced
    assert np.all(rk.nuclear_norm(A, B) <= rk.frobenius_bound(A, B))
    # balanced: A = U Σ^{1/2}, B = V Σ^{1/2}
    U, _ = np.linalg.qr(rng.standard_normal((9, 4)))
    V, _ = np.linalg.qr(rng.standard_normal((7, 4)))
    sig = np.array([3.0, 1.5, 0.2, 0.01])
    Ab, Bb = U * np.sqrt(sig), V * np.sqrt(sig)
    assert abs(rk.gap(Ab, Bb)) < 1e-10
    assert rk.imbalance(Ab, Bb) < 1e-10
    assert abs(rk.balance_ratio(Ab, Bb) - 1.0) < 1e-10
    np.testing.assert_allclose(rk.singular_values(Ab, Bb), sig, atol=1e-12)
    assert abs(rk.nuclear_norm(Ab, Bb) - sig.sum()) < 1e-12


def test_rank_one_gap_and_imbalance_closed_forms():
    a = np.array([[3.0], [4.0]])  # |a| = 5
    b = np.array([[1.0], [0.0], [0.0]])  # |b| = 1
    assert rk.gap(a, b) == pytest.approx(0.5 * (5 - 1) ** 2, abs=1e-12)  # ½(|a| − |b|)²
    assert rk.imbalance(a, b) == pytest.approx(25 - 1, abs=1e-12)


def test_numerical_and_effective_rank():
    s = np.array([1.0, 0.05, 0.005, 0.0005, 0.0])
    assert rk.numerical_rank(s, 1e-2) == 2
    assert rk.numerical_rank(s, 1e-3) == 3
    assert rk.numerical_rank(1e-9 * s, 1e-2) == 2  # relative: scale invariant
    assert rk.numerical_rank(np.zeros(4)) == 0
    u = _rng(3).standard_normal((6, 1))
    assert rk.effective_rank(rk.singular_values(u @ u.T)) == pytest.approx(1.0, abs=1e-12)
    assert rk.effective_rank(rk.singular_values(np.eye(7))) == pytest.approx(7.0, abs=1e-12)
    assert rk.effective_rank(np.array([1.0, 1.0, 0.0])) == pytest.approx(2.0)
    assert rk.effective_rank(np.zeros(3)) == 0.0


def test_product_metrics_keys_and_batch_shapes():
    rng = _rng(4)
    m = rk.product_metrics(rng.standard_normal((2, 3, 8, 4)), rng.standard_normal((2, 3, 8, 4)))
    assert set(m) == {
        "spectrum",
        "rank@0.01",
        "rank@0.001",
        "eff_rank",
        "nuclear",
        "frob_bound",
        "gap",
        "imbalance",
        "ratio",
    }
    assert m["spectrum"].shape == (2, 3, 4)
    for k in ("eff_rank", "gap", "imbalance", "rank@0.01"):
        assert m[k].shape == (2, 3)
    assert np.all((m["ratio"] > 0) & (m["ratio"] <= 1))


def test_float32_and_torch_inputs_are_promoted():
    A = torch.randn(6, 3, dtype=torch.bfloat16)
    B = torch.randn(5, 3, dtype=torch.float32)
    s = rk.singular_values(A, B)
    assert s.dtype == np.float64
    ref = np.linalg.svd(A.double().numpy() @ B.double().numpy().T, compute_uv=False)[:3]
    np.testing.assert_allclose(s, ref, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# per-head factors: hand-built tiny models with known ranks

D_MODEL, N_HEADS, N_LAYERS, SEQ = 32, 4, 2, 6
D_HEAD = D_MODEL // N_HEADS
KQ_RANKS = np.array([[1, 2, 3, 8], [4, 5, 6, 7]])  # per (layer, head), known by construction
PV_RANKS = np.array([[8, 6, 2, 1], [3, 3, 7, 5]])


def _low_rank_rows(W_out_in: torch.Tensor, ranks, gen) -> None:
    """Give head h of an (H·d_h × d) projection exactly rank ``ranks[h]`` (in place)."""
    for h, r in enumerate(ranks):
        rows = W_out_in[h * D_HEAD : (h + 1) * D_HEAD]
        rows.zero_()
        rows[:r] = torch.randn(r, W_out_in.shape[1], generator=gen, dtype=W_out_in.dtype)


def _check_known_ranks(model):
    mets = rk.model_head_metrics(model)
    np.testing.assert_array_equal(mets["kq"]["rank@0.001"], KQ_RANKS)
    np.testing.assert_array_equal(mets["pv"]["rank@0.001"], PV_RANKS)
    assert mets["kq"]["spectrum"].shape == (N_LAYERS, N_HEADS, D_HEAD)


def _check_logits_and_outputs(model, tokens_or_pixels, attn_modules, q_module, out_module, causal):
    """Rebuild head logits and the attention-block output from the factors and compare."""
    captured = {}
    hooks = []
    for li, (qm, om) in enumerate(zip(q_module, out_module, strict=True)):
        hooks.append(
            qm.register_forward_pre_hook(
                lambda m, args, li=li: captured.__setitem__(("x", li), args[0].detach())
            )
        )
        hooks.append(
            om.register_forward_hook(
                lambda m, args, out, li=li: captured.__setitem__(("o", li), out.detach())
            )
        )
    with torch.no_grad():
        out = model(tokens_or_pixels, output_attentions=True)
    for h in hooks:
        h.remove()
    factors = rk.model_factors(model)
    assert len(factors) == N_LAYERS
    for li in range(N_LAYERS):
        x = captured[("x", li)][0].double().numpy()  # (T, d), first batch element
        probs = out.attentions[li][0].double().numpy()  # (H, T, T)
        Akq, Bkq = factors[li]["kq"]
        Apv, Bpv = factors[li]["pv"]
        T = x.shape[0]
        last = T - 1  # the last query sees every key, causal or not
        o_rebuilt = np.zeros((T, D_MODEL))
        for h in range(N_HEADS):
            M = Akq[h] @ Bkq[h].T  # W_K^{hT} W_Q^h (d × d)
            logits = (x[last] @ M.T @ x.T) / np.sqrt(D_HEAD)  # x_lastᵀ W_Q^{hT} W_K^h x_j
            logp = np.log(probs[h, last])
            np.testing.assert_allclose(logp - logp.mean(), logits - logits.mean(), atol=1e-4)
            PV = Apv[h] @ Bpv[h].T  # P^h W_V^h
            o_rebuilt += probs[h] @ x @ PV.T
        if causal:
            assert np.allclose(np.triu(probs[0], 1), 0)
        np.testing.assert_allclose(captured[("o", li)][0].double().numpy(), o_rebuilt, atol=1e-4)


def _zero_biases(modules):
    for m in modules:
        if getattr(m, "bias", None) is not None:
            torch.nn.init.zeros_(m.bias)


def test_gpt2_fused_c_attn_heads():
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(
        vocab_size=40,
        n_positions=SEQ,
        n_embd=D_MODEL,
        n_layer=N_LAYERS,
        n_head=N_HEADS,
        bos_token_id=0,
        eos_token_id=0,
    )
    cfg._attn_implementation = "eager"
    model = GPT2Model(cfg).eval()
    gen = torch.Generator().manual_seed(0)
    d = D_MODEL
    with torch.no_grad():
        for li, block in enumerate(model.h):
            W = block.attn.c_attn.weight  # Conv1D (in × out) = [Q | K | V]
            W.copy_(torch.randn(W.shape, generator=gen) * 0.3)
            Wq = W[:, :d].T.clone()  # (out × in)
            _low_rank_rows(Wq, KQ_RANKS[li], gen)
            W[:, :d] = Wq.T * 0.3
            Wv = W[:, 2 * d :].T.clone()
            _low_rank_rows(Wv, PV_RANKS[li], gen)
            W[:, 2 * d :] = Wv.T * 0.3
            _zero_biases([block.attn.c_attn, block.attn.c_proj])
    _check_known_ranks(model)
    tokens = torch.randint(0, 40, (2, SEQ), generator=gen)
    _check_logits_and_outputs(
        model,
        tokens,
        None,
        [b.attn.c_attn for b in model.h],
        [b.attn.c_proj for b in model.h],
        causal=True,
    )
    # the MLP's c_proj shares the name but is never read
    assert model.h[0].mlp.c_proj.weight.shape != model.h[0].attn.c_proj.weight.shape


def test_bert_heads_use_attention_output_not_mlp_output():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=40,
        hidden_size=D_MODEL,
        num_hidden_layers=N_LAYERS,
        num_attention_heads=N_HEADS,
        intermediate_size=48,
        max_position_embeddings=SEQ,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    cfg._attn_implementation = "eager"
    model = BertModel(cfg, add_pooling_layer=False).eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for li, layer in enumerate(model.encoder.layer):
            sa = layer.attention.self
            _low_rank_rows(sa.query.weight, KQ_RANKS[li], gen)
            _low_rank_rows(sa.value.weight, PV_RANKS[li], gen)
            _zero_biases([sa.query, sa.key, sa.value, layer.attention.output.dense])
    _check_known_ranks(model)
    tokens = torch.randint(0, 40, (2, SEQ), generator=gen)
    layers = model.encoder.layer
    _check_logits_and_outputs(
        model,
        tokens,
        None,
        [lay.attention.self.query for lay in layers],
        [lay.attention.output.dense for lay in layers],
        causal=False,
    )


def test_timm_vit_heads_split_the_fused_qkv_rows():
    """timm's ViT: the row thirds of ``attn.qkv`` are W_Q, W_K, W_V, each head d_h contiguous
    rows, and ``attn.proj`` takes the heads' outputs column block by column block.  Known ranks
    are set in the q and v thirds; the per-head logits and the attention output rebuilt from the
    factors equal timm's own eager probabilities and ``proj`` output (biases zeroed)."""
    from attnbias.models.vit import build_vit

    model = build_vit(8, 4, 1, D_MODEL, N_LAYERS, N_HEADS, 48, 10).eval()
    gen = torch.Generator().manual_seed(2)
    d = D_MODEL
    with torch.no_grad():
        for li, block in enumerate(model.blocks):
            W = block.attn.qkv.weight
            _low_rank_rows(W[:d], KQ_RANKS[li], gen)  # views: written into the fused weight
            _low_rank_rows(W[2 * d :], PV_RANKS[li], gen)
            _zero_biases([block.attn.qkv, block.attn.proj])
            block.attn.fused_attn = False  # the eager path, whose probabilities attn_drop sees
    _check_known_ranks(model)
    # the factors are the slices, head by head
    f0 = rk.vit_layer_factors(model.blocks[0])
    W0 = model.blocks[0].attn.qkv.weight.detach().double().numpy()
    P0 = model.blocks[0].attn.proj.weight.detach().double().numpy()
    h = 1
    np.testing.assert_array_equal(f0["kq"][0][h], W0[d + h * D_HEAD : d + (h + 1) * D_HEAD].T)
    np.testing.assert_array_equal(f0["kq"][1][h], W0[h * D_HEAD : (h + 1) * D_HEAD].T)
    np.testing.assert_array_equal(f0["pv"][0][h], P0[:, h * D_HEAD : (h + 1) * D_HEAD])
    v_rows = slice(2 * d + h * D_HEAD, 2 * d + (h + 1) * D_HEAD)
    np.testing.assert_array_equal(f0["pv"][1][h], W0[v_rows].T)
    captured, hooks = {}, []
    for li, block in enumerate(model.blocks):
        att = block.attn
        hooks += [
            att.qkv.register_forward_pre_hook(
                lambda m, a, li=li: captured.__setitem__(("x", li), a[0].detach())),
            att.attn_drop.register_forward_hook(
                lambda m, a, o, li=li: captured.__setitem__(("p", li), a[0].detach())),
            att.proj.register_forward_hook(
                lambda m, a, o, li=li: captured.__setitem__(("o", li), o.detach())),
        ]  # fmt: skip
    with torch.no_grad():
        model(torch.randn(2, 1, 8, 8, generator=gen))
    for hk in hooks:
        hk.remove()
    factors = rk.model_factors(model)
    assert len(factors) == N_LAYERS
    for li in range(N_LAYERS):
        x = captured[("x", li)][0].double().numpy()  # (T, d): 4 patches + CLS
        probs = captured[("p", li)][0].double().numpy()  # (H, T, T)
        (Akq, Bkq), (Apv, Bpv) = factors[li]["kq"], factors[li]["pv"]
        o_rebuilt = np.zeros_like(x)
        for hh in range(N_HEADS):
            logits = x @ (Akq[hh] @ Bkq[hh].T).T @ x.T / np.sqrt(D_HEAD)  # x_i W_Q^T W_K x_j
            logp = np.log(probs[hh])
            np.testing.assert_allclose(logp - logp.mean(-1, keepdims=True),
                                       logits - logits.mean(-1, keepdims=True), atol=1e-4)
            o_rebuilt += probs[hh] @ x @ (Apv[hh] @ Bpv[hh].T).T
        np.testing.assert_allclose(captured[("o", li)][0].double().numpy(), o_rebuilt, atol=1e-4)


def test_llama_grouped_query_heads():
    """LLaMA with 4 query heads sharing 2 key/value heads: head h pairs with kv head h // 2."""
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(
        vocab_size=40,
        hidden_size=D_MODEL,
        intermediate_size=48,
        num_hidden_layers=1,
        num_attention_heads=N_HEADS,
        num_key_value_heads=2,
        max_position_embeddings=SEQ,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    model = LlamaModel(cfg).eval()
    att = model.layers[0].self_attn
    captured = {}
    hooks = [
        att.q_proj.register_forward_hook(lambda m, a, o: captured.__setitem__("q", o.detach())),
        att.k_proj.register_forward_hook(lambda m, a, o: captured.__setitem__("k", o.detach())),
        att.q_proj.register_forward_pre_hook(lambda m, a: captured.__setitem__("x", a[0].detach())),
    ]
    with torch.no_grad():
        model(torch.randint(0, 40, (1, SEQ), generator=torch.Generator().manual_seed(3)))
    for hk in hooks:
        hk.remove()
    (f,) = rk.model_factors(model)
    x = captured["x"][0].double().numpy()
    q = captured["q"][0].double().numpy().reshape(SEQ, N_HEADS, D_HEAD)
    k = captured["k"][0].double().numpy().reshape(SEQ, 2, D_HEAD)
    A, B = f["kq"]
    assert A.shape == (N_HEADS, D_MODEL, D_HEAD)
    for h in range(N_HEADS):
        pre_rotary = q[:, h] @ k[:, h // 2].T  # q_iᵀ k_j before the rotary embedding
        np.testing.assert_allclose(x @ (A[h] @ B[h].T).T @ x.T, pre_rotary, atol=1e-4)
    np.testing.assert_array_equal(f["kq"][0][0], f["kq"][0][1])  # heads 0, 1 share W_K


def test_unknown_model_is_rejected():
    with pytest.raises(TypeError):
        rk.model_factors(torch.nn.Linear(3, 3))
