"""fastrates Figs 1/4/7: the optimiser steps on a tiny randomly initialised BERT, the engine runs,
the step-size-matching probe, and the per-run training functions end to end (tiny sizes, CPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from tiny_runs import image_run, text_run

from attnbias.experiments.fastrates.runs import optimizer_config
from attnbias.models.sequence import build_bert, forward_logits
from attnbias.train import TrainConfig, fit, sgd_probe
from attnbias.train.engine import make_optimizer

CPU = torch.device("cpu")


def _task(n=64, length=12, vocab=50, seed=0):
    """Token sequences (with right padding) labelled by whether token 7 occurs."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, vocab, (n, length), generator=g)
    y = (torch.rand(n, generator=g) < 0.5).long()
    pos = torch.randint(1, 6, (n,), generator=g)
    ids[torch.arange(n), pos] = torch.where(y.bool(), 7, ids[torch.arange(n), pos])
    lengths = torch.randint(6, length + 1, (n,), generator=g)
    mask = (torch.arange(length)[None] < lengths[:, None]).to(torch.int8)
    ids = torch.where(mask.bool(), ids, 0).to(torch.int32)
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "token_type_ids": torch.zeros_like(mask),
        "y": y,
    }


def _model(seed=0):
    return build_bert(
        num_labels=2,
        vocab_size=50,
        hidden=16,
        layers=2,
        heads=2,
        intermediate=32,
        max_position=32,
        seed=seed,
    )


def _loss(m, batch):
    logits = forward_logits(m, batch).float()
    return torch.nn.functional.cross_entropy(logits, batch["y"]), {}


def _grads_and_step(name, lr, extra, weight_decay=0.0):
    """One engine-style step of ``name`` on a fresh tiny BERT: (params before, grads, params "
    "after, loss)."""
    model = _model()
    data = _task()
    cfg = TrainConfig(
        epochs=1, batch_size=16, lr=lr, optimizer=name, weight_decay=weight_decay, extra=extra
    )
    opt = make_optimizer(model.parameters(), cfg)
    batch = {k: v[:16] for k, v in data.items()}
    loss, _ = _loss(model, batch)
    opt.zero_grad()
    loss.backward()
    before = [p.detach().clone() for p in model.parameters()]
    grads = [p.grad.detach().clone() for p in model.parameters()]
    opt.step(loss=loss.detach()) if name == "sps" else opt.step()
    after = [p.detach().clone() for p in model.parameters()]
    return before, grads, after, float(loss.detach()), opt


def _flat(ts):
    return torch.cat([t.reshape(-1).double() for t in ts])


def test_trimming_padding_columns_is_exact():
    model = _model().eval()
    data = _task(n=8)
    data["attention_mask"][:, 9:] = 0  # every row padded beyond column 9
    data["input_ids"][:, 9:] = 0
    with torch.no_grad():
        a = forward_logits(model, data, trim=True)
        b = forward_logits(model, data, trim=False)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_sgd_sngd_sps_steps_on_tiny_bert():
    b, g, a, _, _ = _grads_and_step("sgd", 0.1, {})
    torch.testing.assert_close(_flat(a) - _flat(b), -0.1 * _flat(g), rtol=1e-5, atol=1e-7)
    b, g, a, _, _ = _grads_and_step("sngd", 0.05, {"eps": 1e-8})
    delta, gf = _flat(a) - _flat(b), _flat(g)
    assert float(delta.norm()) == pytest.approx(0.05, rel=1e-5)  # a step of length η
    assert float(torch.nn.functional.cosine_similarity(delta, -gf, dim=0)) == pytest.approx(
        1.0, abs=1e-6
    )
    for cap in (1e3, 1e-3):  # uncapped Polyak step, and the cap in force
        b, g, a, loss, _ = _grads_and_step("sps", cap, {"c": 0.5, "f_star": 0.0})
        gf = _flat(g)
        gamma = min(loss / (0.5 * float(gf @ gf)), cap)
        torch.testing.assert_close(
            _flat(a) - _flat(b), -gamma * gf, rtol=1e-4, atol=1e-7
        )  # float32 parameters


def test_adamw_recipe_is_engine_clipping_and_linear_decay():
    """AdamW's BERT recipe (global-norm clipping, linear decay of the learning rate to 0) is set
    through the engine's TrainConfig, not by a special optimiser."""
    setup = optimizer_config(
        "adamw", 1e-3, {"eps": 1e-6, "weight_decay": 0.01, "clip": 1.0, "schedule": "linear"}
    )
    assert setup.name == "adamw" and setup.extra == {"eps": 1e-6}
    assert (setup.weight_decay, setup.grad_clip, setup.schedule) == (0.01, 1.0, "linear")
    assert optimizer_config("adamw", 1e-3, {})  # defaults: no clipping, constant lr
    assert optimizer_config("adamw", 1e-3, {}).train_settings()["grad_clip"] is None
    # clipping: one plain SGD step with lr 1 moves the parameters by exactly the clipped norm
    model, data = _model(), _task(n=8)
    before = _flat([p.detach().clone() for p in model.parameters()])
    cfg = TrainConfig(
        epochs=1, batch_size=8, lr=1.0, optimizer="sgd", steps_per_epoch=1, grad_clip=1e-3
    )
    fit(model, data, _loss, cfg, CPU, progress=False, image_key=None)
    moved = float((_flat([p.detach() for p in model.parameters()]) - before).norm())
    assert moved == pytest.approx(1e-3, rel=1e-4)
    # the linear schedule: lr at update k (0-based) of T is base·(1 − k/T), read from the global
    # step, so a resumed run continues it
    cfg = TrainConfig(
        epochs=4, batch_size=8, steps_per_epoch=1, ckpt_every=1, **setup.train_settings()
    )
    hist = fit(_model(), data, _loss, cfg, CPU, progress=False, image_key=None)
    assert [r["lr"] for r in hist] == pytest.approx([1e-3 * (1 - k / 4) for k in range(4)])


@pytest.mark.parametrize(
    "name,lr,settings",
    [
        ("sgd", 0.5, {}),
        ("sngd", 0.1, {"eps": 1e-8}),
        # SPS's Polyak step starts at its matched rate, then falls ≈ 10 × as ‖g_B‖ grows 3 × after
        # the first steps of this random-init toy: matched to 4 × SGD's rate
        ("sps", 2.0, {"cap": 3.0}),
        ("adamw", 3e-3, {"eps": 1e-8, "clip": 1.0}),
    ],
)
def test_engine_fits_a_batch_with_each_optimizer(name, lr, settings):
    """30 steps on one fixed batch of 16 (a randomly initialised BERT learns it with every rule;
    SPS's c matched to SGD's rate lr by the probe of the same model and batches)."""
    model, data = _model(), _task(n=16)
    setup = optimizer_config(
        name, lr, settings, lambda: sgd_probe(model, data, _loss, 16, lr, 5, 0, CPU)
    )
    cfg = TrainConfig(epochs=6, batch_size=16, seed=0, steps_per_epoch=5, **setup.train_settings())
    hist = fit(model, data, _loss, cfg, CPU, progress=False, image_key=None)
    first, last = hist[0]["train_loss"], hist[-1]["train_loss"]
    assert math.isfinite(last) and last < 0.25 * first, (name, first, last)


@pytest.mark.parametrize(
    "name,lr,settings",
    [
        ("sgd", 0.5, {}),
        ("sngd", 0.1, {"eps": 1e-8}),
        ("sps", 2.0, {"cap": 3.0}),
        # decoupled weight decay moves the unused rows of the full model, and nothing else
        ("adamw", 3e-3, {"eps": 1e-8, "clip": 1.0, "weight_decay": 0.1}),
    ],
)
def test_dropping_unused_embedding_rows_changes_no_loss_or_weight(name, lr, settings):
    """20 steps of each rule on a BERT with 200 rows of which the data select 42: the cut model's
    losses, every other weight and its kept rows equal the full model's (float32 tolerance: the
    gradient norm sums in another order), and its token ids point at the same rows."""
    from attnbias.models.sequence import keep_used_embedding_rows

    data = _task(n=32)
    runs = {}
    for cut in (False, True):
        model = build_bert(num_labels=2, vocab_size=200, hidden=16, layers=1, heads=2,
                           intermediate=32, max_position=32, seed=1)  # fmt: skip
        d = {k: v.clone() for k, v in data.items()}
        if cut:
            assert keep_used_embedding_rows(model, [d, None], pad_id=0) == (42, 200)
            assert model.get_input_embeddings().weight.shape == (42, 16)
            assert model.get_input_embeddings().padding_idx == 0
        setup = optimizer_config(
            name, lr, settings, lambda m=model, d=d: sgd_probe(m, d, _loss, 16, lr, 3, 0, CPU)
        )
        cfg = TrainConfig(epochs=4, batch_size=16, seed=0, steps_per_epoch=5,
                          **setup.train_settings())  # fmt: skip
        hist = fit(model, d, _loss, cfg, CPU, progress=False, image_key=None)
        runs[cut] = (model, d, [h["train_loss"] for h in hist])
    (full, d_full, loss_full), (cut, d_cut, loss_cut) = runs[False], runs[True]
    np.testing.assert_allclose(loss_cut, loss_full, rtol=1e-5)
    used = torch.unique(d_full["input_ids"].long())
    rows = full.get_input_embeddings().weight.detach()[used]
    np.testing.assert_allclose(cut.get_input_embeddings().weight.detach(), rows, atol=1e-6)
    assert torch.equal(used[d_cut["input_ids"].long()], d_full["input_ids"].long())
    named = dict(cut.named_parameters())
    for k, p in full.named_parameters():
        if "word_embeddings" not in k:
            np.testing.assert_allclose(named[k].detach(), p.detach(), atol=1e-6, err_msg=k)


def test_embedding_rows_are_not_dropped_under_a_tied_output_layer():
    from transformers import BertConfig, BertForMaskedLM

    from attnbias.models.sequence import keep_used_embedding_rows

    model = BertForMaskedLM(BertConfig(vocab_size=60, hidden_size=8, num_hidden_layers=1,
                                       num_attention_heads=2, intermediate_size=16))  # fmt: skip
    with pytest.raises(ValueError, match="tied to an output layer"):
        keep_used_embedding_rows(model, [_task(vocab=60)], pad_id=0)


def test_probe_sees_the_engine_batches_and_leaves_the_model_alone():
    """The matching probe's gradient norms and losses are those of plain SGD on the minibatches that
    ``fit`` draws with the same seed (its permutation of the data, wrapping around), computed here
    by hand, and the probed model is left unchanged."""
    data = _task(n=20)
    model = _model(seed=3)
    ref = [p.detach().clone() for p in model.parameters()]
    probe = sgd_probe(model, data, _loss, batch_size=8, lr=0.2, steps=4, seed=5, device=CPU)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), ref, strict=True))
    perm = torch.randperm(20, generator=torch.Generator().manual_seed(5))
    # batch s starts at (s · 8) mod 20 and, past the end, wraps to the start of the permutation
    idx = [perm[0:8], perm[8:16], torch.cat([perm[16:], perm[:4]]), perm[4:12]]
    torch.manual_seed(5)
    twin = _model(seed=3)
    opt = torch.optim.SGD(twin.parameters(), lr=0.2)
    expected, losses = [], []
    for ix in idx:
        loss, _ = _loss(twin, {k: v[ix] for k, v in data.items()})
        opt.zero_grad()
        loss.backward()
        expected.append(sum(float(p.grad.double().pow(2).sum()) for p in twin.parameters()) ** 0.5)
        losses.append(float(loss))
        opt.step()
    np.testing.assert_allclose(probe["grad_norms"], expected, rtol=1e-6)
    np.testing.assert_allclose(probe["losses"], losses, rtol=1e-6)


@pytest.fixture(scope="module")
def tiny_local_bert(tmp_path_factory):
    """A tiny randomly initialised BERT saved with the shipped MiniLM tokenizer (vocabulary 30,522),
    so train_text can load it by path like a pretrained model."""
    from attnbias.models.sequence import load_tokenizer

    path = tmp_path_factory.mktemp("tiny_bert")
    build_bert(
        num_labels=3,
        vocab_size=30522,
        hidden=16,
        layers=1,
        heads=2,
        intermediate=32,
        max_position=64,
        seed=0,
    ).save_pretrained(path)
    load_tokenizer("minilm").save_pretrained(path)
    return str(path)


def _text_run(model, tmp_path, **kw):
    args = dict(
        figure="fig1", dataset="tweets_sentiment", model=model, max_length=32, batch_size=8,
        steps=8, log_every=2, eval_every=4, select_at=4, n_train=64, n_val=16, n_test=24,
        opt="sngd", lr=0.05, opt_settings={"match_sgd": True, "eps": 1e-8}, probe_steps=3,
        ckpt_every=2, accelerator="cpu", checkpoint=tmp_path / "ckpt.pt",
        metrics_log=tmp_path / "metrics.jsonl",
    )  # fmt: skip
    args.update(kw)
    return text_run(**args)["csv"]


def test_train_text_end_to_end_and_resume(tiny_local_bert, tmp_path):
    df, meta = _text_run(tiny_local_bert, tmp_path)
    assert df.step.tolist() == [0, 2, 4, 6, 8]
    assert df.train_loss.isna().tolist() == [True, False, False, False, False]
    assert df.test_acc.notna().tolist() == [
        True,
        False,
        True,
        False,
        True,
    ]  # every eval_every steps
    assert df.val_loss.notna().tolist() == [
        False,
        False,
        True,
        False,
        True,
    ]  # select_at and the end
    assert meta["val_loss_at_select"] == pytest.approx(float(df.val_loss.iloc[2]))
    norms = meta["step_size_matching"]["probe_grad_norms"]
    assert len(norms) == 3 and meta["effective_lr"] == pytest.approx(0.05 * float(np.median(norms)))
    assert meta["sizes"] == {"train": 64, "val": 16, "test": 24} and meta["parameters"] > 400_000
    rows = meta["embedding_rows"]  # the full model's count above; the rows the tweets select
    assert rows["total"] == 30522 and 100 < rows["kept"] < 2000
    assert set(df.columns) == set(meta["columns"])
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 5
    assert not (tmp_path / "ckpt.pt").exists()  # a finished run leaves no checkpoint behind
    again, _ = _text_run(tiny_local_bert, tmp_path / "again")  # deterministic on the CPU
    np.testing.assert_allclose(
        again.test_loss.to_numpy(), df.test_loss.to_numpy(), rtol=1e-6, equal_nan=True
    )


def test_killed_text_run_resumes_to_the_uninterrupted_result(
    tiny_local_bert, tmp_path, monkeypatch, caplog
):
    import attnbias.train as train_pkg

    caplog.set_level("INFO", logger="attnbias.train")
    real_fit = train_pkg.fit

    def dying_fit(*args, on_row=None, **kw):
        def hook(m, step):
            if step == 6:  # killed after 6 of 8 steps; the last checkpoint is at step 4
                raise KeyboardInterrupt
            return on_row(m, step)

        return real_fit(*args, on_row=hook, **kw)

    monkeypatch.setattr(train_pkg, "fit", dying_fit)
    with pytest.raises(KeyboardInterrupt):
        _text_run(tiny_local_bert, tmp_path, opt="sps", lr=0.5, opt_settings={"cap": 3.0})
    assert (tmp_path / "ckpt.pt").exists()
    monkeypatch.setattr(train_pkg, "fit", real_fit)
    caplog.clear()
    resumed, _ = _text_run(
        tiny_local_bert, tmp_path, opt="sps", lr=0.5, opt_settings={"cap": 3.0}
    )
    assert "resumed from" in caplog.text and "at step 4" in caplog.text
    fresh, _ = _text_run(
        tiny_local_bert, tmp_path / "fresh", opt="sps", lr=0.5, opt_settings={"cap": 3.0}
    )
    for col in ("train_loss", "test_loss", "val_loss"):
        np.testing.assert_allclose(
            resumed[col].to_numpy(), fresh[col].to_numpy(), rtol=1e-6, equal_nan=True
        )
    assert not (tmp_path / "ckpt.pt").exists()


def test_train_text_rejects_misaligned_steps(tiny_local_bert, tmp_path):
    with pytest.raises(ValueError, match="multiple"):
        _text_run(tiny_local_bert, tmp_path, eval_every=3)
    with pytest.raises(ValueError, match="select_at"):
        _text_run(tiny_local_bert, tmp_path, select_at=9)


def test_train_image_digits_with_matched_sngd(tmp_path):
    df, meta = image_run(
        figure="fig7", dataset="digits", image_size=8, patch_size=4, hidden=16, layers=1, heads=2,
        mlp=32, dropout=0.0, batch_size=64, epochs=2, select_at=None, n_val=100, opt="sngd",
        lr=0.05, opt_settings={"match_sgd": True}, probe_steps=2, accelerator="cpu",
    )["csv"]  # fmt: skip
    assert df.epoch.tolist() == [0, 1, 2] and df.step.tolist() == [
        0,
        20,
        40,
    ]  # 1,337 / 64 = 20 steps per epoch
    assert df.test_acc.notna().all() and df.val_loss.notna().tolist() == [False, False, True]
    assert meta["sizes"] == {"train": 1337, "val": 100, "test": 360}
    assert meta["model"]["tokens"] == 5 and meta["effective_lr"] == pytest.approx(
        0.05 * meta["step_size_matching"]["probe_median_grad_norm"]
    )
    assert 2.0 < df.test_loss.iloc[0] < 2.6  # ≈ log 10 at initialisation


def test_grad_norms_are_averaged_per_row():
    """GradNorms: the mean ‖g_B‖ of the steps since the last row (the column grad_norm), computed
    by the same global norm SNGD uses."""
    import torch

    from attnbias.experiments.fastrates.runs import GradNorms

    lin = torch.nn.Linear(3, 1, bias=False)
    norms = GradNorms()
    assert norms.row() == {}
    seen = []
    for scale in (1.0, 2.0, 4.0):
        lin.zero_grad()
        (scale * lin(torch.ones(1, 3))).sum().backward()
        seen.append(float(lin.weight.grad.norm()))
        norms.after_backward(lin, 0, None)
    assert seen == pytest.approx([3**0.5, 2 * 3**0.5, 4 * 3**0.5])
    assert norms.row()["grad_norm"] == pytest.approx(np.mean(seen))
    assert norms.row() == {}  # reset after each row
