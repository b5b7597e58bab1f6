"""The engine's online data source (``batch_fn``), its resume semantics, the learning-rate schedule,
gradient clipping and accumulation, and the associative-recall run (lowrank Fig 2) on the engine."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from attnbias.train import TrainConfig, fit

DEV = torch.device("cpu")


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


def _loss(m, batch):
    logits = m(batch["x"])
    return torch.nn.functional.cross_entropy(logits, batch["y"]), {
        "acc": (logits.argmax(-1) == batch["y"]).float().mean()
    }


def _stream(seed=0, size=16):
    """A fresh batch per step, a function of (seed, step) only."""

    def batch_fn(step, generator):
        g = torch.Generator().manual_seed(1000 * seed + step)
        x = torch.randn(size, 6, generator=g)
        return {"x": x, "y": (x[:, 0] - x[:, 2] > 0).long()}

    return batch_fn


def _gen_stream(size=16):
    """Batches drawn from the engine's generator (its state is checkpointed)."""

    def batch_fn(step, generator):
        x = torch.randn(size, 6, generator=generator)
        return {"x": x, "y": (x[:, 1] > 0).long()}

    return batch_fn


def _params(m):
    return torch.cat([p.detach().flatten() for p in m.parameters()])


def _strip(h):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in h]


CFG = TrainConfig(
    epochs=5, batch_size=16, lr=0.05, optimizer="sgd", momentum=0.9, seed=2, steps_per_epoch=7
)


def test_batch_fn_sees_every_global_step_once_in_order():
    seen = []

    def batch_fn(step, generator):
        seen.append(step)
        return _stream()(step, generator)

    h = fit(_model(), None, _loss, CFG, DEV, batch_fn=batch_fn, progress=False, image_key=None)
    assert seen == list(range(35))
    assert [r["epoch"] for r in h] == [1, 2, 3, 4, 5]
    assert h[-1]["acc"] > 0.9 and h[-1]["train_loss"] < 0.5 * h[0]["train_loss"]


def test_online_training_equals_static_training_on_the_same_batches():
    """Feeding the same 35 batches through ``data`` (one pass, no shuffling possible) is the same
    computation: compare against a batch_fn that indexes a fixed tensor in order."""
    fn = _stream()
    xs = torch.cat([fn(s, None)["x"] for s in range(35)])
    ys = torch.cat([fn(s, None)["y"] for s in range(35)])
    m1, m2 = _model(), _model()
    fit(m1, None, _loss, CFG, DEV, batch_fn=fn, progress=False, image_key=None)
    fit(
        m2,
        None,
        _loss,
        CFG,
        DEV,
        batch_fn=lambda s, g: {"x": xs[16 * s : 16 * s + 16], "y": ys[16 * s : 16 * s + 16]},
        progress=False,
        image_key=None,
    )
    assert torch.equal(_params(m1), _params(m2))


@pytest.mark.parametrize("make_stream", [_stream, _gen_stream], ids=["seed_step", "generator"])
def test_online_resume_after_crash_matches_uninterrupted(tmp_path, make_stream):
    def ev(m, epoch):
        return {"w": float(_params(m).norm())}

    full_model = _model()
    full = fit(
        full_model,
        None,
        _loss,
        CFG,
        DEV,
        batch_fn=make_stream(),
        on_row=ev,
        progress=False,
        image_key=None,
    )
    ckpt, log = tmp_path / "ckpt.pt", tmp_path / "m.jsonl"

    def crash_at_3(m, epoch):
        if epoch == 3:
            raise KeyboardInterrupt("killed")
        return ev(m, epoch)

    with pytest.raises(KeyboardInterrupt):
        fit(
            _model(),
            None,
            _loss,
            CFG,
            DEV,
            checkpoint=ckpt,
            metrics_log=log,
            batch_fn=make_stream(),
            on_row=crash_at_3,
            progress=False,
            image_key=None,
        )
    assert torch.load(ckpt, weights_only=False)["row"] == 2
    resumed_model = _model()
    resumed = fit(
        resumed_model,
        None,
        _loss,
        CFG,
        DEV,
        checkpoint=ckpt,
        metrics_log=log,
        batch_fn=make_stream(),
        on_row=ev,
        progress=False,
        image_key=None,
    )
    assert _strip(resumed) == _strip(full)
    assert torch.equal(_params(resumed_model), _params(full_model))
    assert [json.loads(ln)["epoch"] for ln in log.read_text().splitlines()] == list(range(6))


def test_online_source_needs_steps_per_epoch_and_some_data():
    with pytest.raises(ValueError, match="steps_per_epoch"):
        fit(
            _model(),
            None,
            _loss,
            TrainConfig(epochs=1, batch_size=4, lr=0.1, optimizer="sgd"),
            DEV,
            batch_fn=_stream(),
            progress=False,
        )
    with pytest.raises(ValueError, match="batch_fn"):
        fit(
            _model(),
            None,
            _loss,
            TrainConfig(epochs=1, batch_size=4, lr=0.1, optimizer="sgd"),
            DEV,
            progress=False,
        )


def test_fingerprints_of_older_configs_are_unchanged():
    """New TrainConfig fields at their defaults leave the checkpoint fingerprint of older runs as it
    was (values computed with the engine before the fields existed)."""
    assert (
        TrainConfig(
            epochs=6, batch_size=16, lr=0.05, optimizer="sgd", momentum=0.9, seed=3
        ).fingerprint()
        == "1994589b38119b9f"
    )
    old = TrainConfig(
        epochs=2, batch_size=8, lr=1e-3, optimizer="adamw", extra={"betas": (0.9, 0.99)}
    )
    assert old.fingerprint() == "c4c7703c6c6cf715"
    assert (
        TrainConfig(
            epochs=2,
            batch_size=8,
            lr=1e-3,
            optimizer="adamw",
            extra={"betas": (0.9, 0.99)},
            grad_clip=1.0,
        ).fingerprint()
        != old.fingerprint()
    )


def test_warmup_cosine_schedule_values_and_history():
    c = TrainConfig(
        epochs=4, batch_size=8, lr=1.0, schedule="cosine", warmup_steps=10, final_lr_frac=0.1
    )
    assert c.lr_factor(0, 100) == pytest.approx(0.1)
    assert c.lr_factor(9, 100) == pytest.approx(1.0)
    assert c.lr_factor(10, 100) == pytest.approx(1.0)
    assert c.lr_factor(55, 100) == pytest.approx(0.1 + 0.9 * 0.5)  # half-way through the decay
    assert c.lr_factor(100, 100) == pytest.approx(0.1)
    lin = TrainConfig(epochs=1, batch_size=8, lr=1.0, schedule="linear")
    assert lin.lr_factor(25, 100) == pytest.approx(0.75)
    assert TrainConfig(epochs=1, batch_size=8, lr=1.0).lr_factor(50, 100) == 1.0
    with pytest.raises(ValueError, match="schedule"):
        TrainConfig(epochs=1, batch_size=8, lr=1.0, schedule="step").lr_factor(5, 10)
    cfg = TrainConfig(
        epochs=4,
        batch_size=16,
        lr=0.2,
        optimizer="sgd",
        steps_per_epoch=5,
        schedule="cosine",
        warmup_steps=4,
        final_lr_frac=0.1,
    )
    h = fit(_model(), None, _loss, cfg, DEV, batch_fn=_stream(), progress=False, image_key=None)
    # the lr of the last update of each epoch (updates 4, 9, 14, 19 of 20)
    expected = [
        0.2 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (t - 4) / 16))) for t in (4, 9, 14, 19)
    ]
    assert [r["lr"] for r in h] == pytest.approx(expected)


def test_grad_accumulation_equals_the_full_batch_step():
    """Mean-reduced loss: two micro-batches of 8 give the gradient of the batch of 16."""
    cfg1 = TrainConfig(epochs=2, batch_size=16, lr=0.1, optimizer="sgd", steps_per_epoch=4, seed=1)
    cfg2 = TrainConfig(
        epochs=2, batch_size=16, lr=0.1, optimizer="sgd", steps_per_epoch=4, seed=1, grad_accum=2
    )
    m1, m2 = _model(), _model()
    h1 = fit(m1, None, _loss, cfg1, DEV, batch_fn=_stream(), progress=False, image_key=None)
    h2 = fit(m2, None, _loss, cfg2, DEV, batch_fn=_stream(), progress=False, image_key=None)
    torch.testing.assert_close(_params(m1), _params(m2), atol=1e-6, rtol=1e-6)
    assert h2[-1]["train_loss"] == pytest.approx(h1[-1]["train_loss"], rel=1e-5)
    with pytest.raises(ValueError, match="micro-batches"):
        fit(
            _model(),
            None,
            _loss,
            TrainConfig(
                epochs=1, batch_size=16, lr=0.1, optimizer="sgd", steps_per_epoch=1, grad_accum=32
            ),
            DEV,
            batch_fn=_stream(size=16),
            progress=False,
            image_key=None,
        )


def test_gradient_clipping_bounds_each_sgd_step():
    cfg = TrainConfig(
        epochs=1, batch_size=16, lr=1.0, optimizer="sgd", steps_per_epoch=1, grad_clip=1e-3
    )
    m = _model()
    before = _params(m).clone()
    fit(m, None, _loss, cfg, DEV, batch_fn=_stream(), progress=False, image_key=None)
    step = float((_params(m) - before).norm())
    assert 0 < step <= 1e-3 * (1 + 1e-5)
    m = _model()
    fit(
        m,
        None,
        _loss,
        TrainConfig(epochs=1, batch_size=16, lr=1.0, optimizer="sgd", steps_per_epoch=1),
        DEV,
        batch_fn=_stream(),
        progress=False,
        image_key=None,
    )
    assert float((_params(m) - before).norm()) > 100 * step  # unclipped steps are much longer


# ---------------------------------------------------------------------------------------------
# lowrank Fig 2 on the engine

TINY = dict(
    n_pairs=4,
    n_keys=8,
    n_values=8,
    d_model=16,
    n_heads=2,
    n_layers=2,
    batch=32,
    steps=40,
    lr=1e-2,
    betas=[0.9, 0.999],
    eps=1e-8,
    log_every=10,
    eval_samples=256,
    spectra_at=[0],
)


def _reference_recall(
    lam,
    seed,
    n_pairs,
    n_keys,
    n_values,
    d_model,
    n_heads,
    n_layers,
    batch,
    steps,
    lr,
    betas,
    eps,
    log_every,
    **_,
):
    """The hand-written loop that Fig 2 used before it moved onto the engine: the final weights and
    the (step, loss) log must be the same."""
    import torch.nn.functional as F

    from attnbias.data.recall import RecallTask
    from attnbias.models.recall import RecallTransformer

    task = RecallTask(n_pairs, n_keys, n_values)
    torch.manual_seed(seed)
    model = RecallTransformer(task.vocab, task.seq_len, d_model, n_heads, n_layers)
    opt = torch.optim.AdamW(model.param_groups(lam), lr=lr, betas=tuple(betas), eps=eps)
    logged = []
    for step in range(steps + 1):
        x, y = (torch.from_numpy(a) for a in task.batch(batch, seed, step))
        loss = F.cross_entropy(model(x, last_only=True), y)
        if step % log_every == 0 or step == steps:
            logged.append((step, float(loss.detach())))
        if step == steps:
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return model, logged


def test_recall_on_the_engine_reproduces_the_reference_loop(tmp_path):
    from attnbias.experiments import lowrank as lr

    torch.set_num_threads(1)
    df, meta = lr.train_recall(TINY, lam=1.0, seed=0, weights_path=str(tmp_path / "w.pt"))
    ref, logged = _reference_recall(lam=1.0, seed=0, **TINY)
    state = torch.load(tmp_path / "w.pt")
    for k, v in ref.state_dict().items():
        assert torch.equal(state[k], v), k
    got = df.groupby("step").train_loss.first()
    assert list(got.index) == [s for s, _ in logged]
    np.testing.assert_allclose(got.to_numpy(), [v for _, v in logged], rtol=1e-6)
    assert meta["engine"]["eval_every"] == 10  # a row every log_every updates


def test_recall_logs_uneven_steps_and_resumes(tmp_path, monkeypatch):
    """steps = 45, log_every = 10: a run counted in steps, rows at 0, 10, …, 40 and at 45 (a last
    row of 5 updates).  A run killed half-way resumes from its checkpoint and ends with the same
    table."""
    from attnbias.experiments.lowrank import recall as lr
    from attnbias.experiments.lowrank import recall_loop

    torch.set_num_threads(1)
    cfg = dict(TINY, steps=45)
    full, _ = lr.train_recall(cfg, lam=0.5, seed=1)
    assert sorted(full.step.unique()) == [0, 10, 20, 30, 40, 45]
    real = recall_loop.head_rows
    calls = {"n": 0}

    def dying(model, step, with_spectra):
        if step == 30 and calls["n"] == 0:
            calls["n"] += 1
            raise KeyboardInterrupt("killed")
        return real(model, step, with_spectra)

    ckpt = tmp_path / "ckpt.pt"
    monkeypatch.setattr(recall_loop, "head_rows", dying)
    with pytest.raises(KeyboardInterrupt):
        lr.train_recall(cfg, lam=0.5, seed=1, checkpoint=ckpt)
    # killed while logging step 30 (row 3 of 5): the checkpoint of step 20 (row 2) stays
    assert torch.load(ckpt, weights_only=False)["row"] == 2
    resumed, meta = lr.train_recall(cfg, lam=0.5, seed=1, checkpoint=ckpt)
    pd.testing.assert_frame_equal(resumed, full)
