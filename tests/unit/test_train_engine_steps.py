"""Runs counted in steps (TrainConfig(steps=..., eval_every=...)): the language models and the
fine-tuning runs count updates, as their papers do.  A row every ``eval_every`` updates and after
the last (which may come sooner), checkpoints every ``ckpt_every`` updates, resume."""

import pytest
import torch

from attnbias.train import TrainConfig, fit

CPU = torch.device("cpu")


def _task(n=96, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    return {"x": x, "y": (x[:, 0] + 0.5 * x[:, 1] > 0).long()}


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))


def _loss(m, batch):
    return torch.nn.functional.cross_entropy(m(batch["x"]), batch["y"]), {}


def _online(step, gen):
    return _task(n=8, seed=1000 + step)


def _strip(history, key):
    return [(r[key], r.get("train_loss"), r.get("w")) for r in history]


def _w(m, count):
    return {"w": float(m[0].weight.norm()), "count": count}


BASE = dict(batch_size=16, lr=0.05, optimizer="sgd", momentum=0.9, seed=3)


@pytest.mark.parametrize("online", [False, True], ids=["static data", "online batches"])
def test_counted_in_steps_trains_as_the_same_blocks_of_an_epoch_run(online):
    """12 steps, a row every 4: the very run of 3 'epochs' of 4 steps, its rows keyed by the
    updates done (4, 8, 12) and the callback told the step."""
    data, batch_fn = (None, _online) if online else (_task(), None)
    kw = dict(on_row=_w, progress=False, image_key=None, batch_fn=batch_fn)
    by_epoch = fit(
        _model(), data, _loss, TrainConfig(epochs=3, steps_per_epoch=4, **BASE), CPU, **kw
    )
    by_step = fit(_model(), data, _loss, TrainConfig(steps=12, eval_every=4, **BASE), CPU, **kw)
    assert [r["step"] for r in by_step] == [0, 4, 8, 12] == [r["count"] for r in by_step]
    assert [r["epoch"] for r in by_epoch] == [0, 1, 2, 3]
    assert [(r["train_loss"] if i else None, r["w"]) for i, r in enumerate(by_step)] == [
        (r["train_loss"] if i else None, r["w"]) for i, r in enumerate(by_epoch)
    ]


def test_the_last_row_comes_after_the_last_step():
    """10 steps, a row every 4: rows after 4, 8 and 10 updates; exactly 10 updates are made."""
    seen = []
    h = fit(
        _model(), _task(), _loss, TrainConfig(steps=10, eval_every=4, **BASE), CPU,
        on_row=_w, progress=False, image_key=None,
        after_backward=lambda m, step, loss: seen.append(step),
    )  # fmt: skip
    assert [r["step"] for r in h] == [0, 4, 8, 10]
    assert seen == list(range(10))
    # the cosine schedule runs over the 10 updates: it reaches its end at the last one
    cos = TrainConfig(steps=10, eval_every=4, schedule="cosine", **BASE)
    h = fit(_model(), _task(), _loss, cos, CPU, progress=False, image_key=None)
    assert h[-1]["lr"] == pytest.approx(0.05 * cos.lr_factor(9, 10))


def test_checkpoints_every_ckpt_every_steps(tmp_path):
    """ckpt_every counts updates: a checkpoint at the first row end at or after each multiple of
    6 (rows end at 4, 8, 12, 14), and at the end.  ``stop``, asked after each row and before that
    row's checkpoint, sees the checkpoints written so far."""
    ckpt = tmp_path / "c.pt"

    def latest():
        return torch.load(ckpt, weights_only=False)["row"] if ckpt.exists() else None

    seen = []
    cfg = TrainConfig(steps=14, eval_every=4, ckpt_every=6, **BASE)
    fit(_model(), _task(), _loss, cfg, CPU, checkpoint=ckpt, progress=False, image_key=None,
        stop=lambda step: seen.append((step, latest())) and False)  # fmt: skip
    seen.append(("end", latest()))
    # written after the rows ending at 8 (>= 6), 12 (>= 12) and 14 (the end)
    assert seen == [(4, None), (8, None), (12, 2), (14, 3), ("end", 4)]


def test_a_run_counted_in_steps_resumes_where_it_stopped(tmp_path):
    cfg = TrainConfig(steps=10, eval_every=4, **BASE)
    kw = dict(on_row=_w, progress=False, image_key=None)
    full = fit(_model(), _task(), _loss, cfg, CPU, **kw)
    ckpt = tmp_path / "c.pt"
    counts = []
    first = fit(_model(), _task(), _loss, cfg, CPU, checkpoint=ckpt,
                stop=lambda step: counts.append(step) or step == 4, **kw)  # fmt: skip
    assert [r["step"] for r in first] == [0, 4] and counts == [4]
    again = fit(_model(), _task(), _loss, cfg, CPU, checkpoint=ckpt, **kw)
    assert _strip(again, "step") == _strip(full, "step")


def test_a_run_is_counted_in_epochs_or_in_steps():
    for cfg in (TrainConfig(**BASE), TrainConfig(epochs=2, steps=8, **BASE)):
        with pytest.raises(ValueError, match="epochs or in steps: give exactly one"):
            fit(_model(), _task(), _loss, cfg, CPU, progress=False, image_key=None)


@pytest.mark.parametrize(
    "cfg, online, counts",
    [
        (TrainConfig(steps=14, eval_every=4, ckpt_every=6, **BASE), False, [8, 12, 14]),
        (TrainConfig(steps=13, eval_every=3, ckpt_every=5, **BASE), True, [6, 12, 13]),
        (TrainConfig(steps=12, eval_every=4, ckpt_every=1, **BASE), False, [4, 8, 12]),
        (TrainConfig(epochs=5, ckpt_every=2, **BASE), False, [2, 4, 5]),
        (TrainConfig(epochs=5, steps_per_epoch=3, ckpt_every=3, **BASE), True, [3, 5]),
    ],
    ids=["steps", "steps online", "every update", "epochs", "epochs online"],
)
def test_the_engine_checkpoints_where_its_row_plan_says(tmp_path, cfg, online, counts):
    """RowPlan is the engine's rule: the rows it names are the history's, a checkpoint follows
    exactly the rows of ``checkpoint_counts``, and ``before_checkpoint`` is called just before
    each one, after ``stop`` (which, like the hook, still sees the checkpoint before)."""
    from attnbias.train import RowPlan

    data, batch_fn = (None, _online) if online else (_task(), None)
    plan = RowPlan.of(cfg, None if online else 96)
    ckpt, events = tmp_path / "c.pt", []

    def latest():  # the count of the last checkpoint written
        if not ckpt.exists():
            return None
        return torch.load(ckpt, weights_only=False)["history"][-1][plan.unit]

    h = fit(
        _model(), data, _loss, cfg, CPU, checkpoint=ckpt, progress=False, image_key=None,
        batch_fn=batch_fn, on_row=_w,
        stop=lambda c: events.append(("stop", c, latest())) and False,
        before_checkpoint=lambda c: events.append(("hook", c, latest())),
    )  # fmt: skip
    assert [r[plan.unit] for r in h] == [plan.count(r) for r in range(plan.n_rows + 1)]
    assert plan.checkpoint_counts() == counts
    expected, last = [], None
    for r in range(1, plan.n_rows + 1):
        c = plan.count(r)
        expected.append(("stop", c, last))
        if c in counts:
            expected.append(("hook", c, last))
            last = c
    assert events == expected and latest() == counts[-1]


def test_a_stop_checkpoints_through_the_hook_and_no_checkpoint_no_hook(tmp_path):
    """A stop before the plan's next checkpoint writes one there too (the hook first); without a
    checkpoint file the hook is never called."""
    cfg = TrainConfig(steps=14, eval_every=4, ckpt_every=6, **BASE)
    seen = []
    kw = dict(progress=False, image_key=None, before_checkpoint=seen.append)
    h = fit(_model(), _task(), _loss, cfg, CPU, checkpoint=tmp_path / "c.pt",
            stop=lambda step: step == 4, **kw)  # fmt: skip
    assert [r["step"] for r in h] == [4] and seen == [4]
    assert torch.load(tmp_path / "c.pt", weights_only=False)["row"] == 1
    fit(_model(), _task(), _loss, cfg, CPU, **kw)
    assert seen == [4]


def test_row_plan_example_and_counts():
    import doctest

    from attnbias.train import rows

    assert doctest.testmod(rows).failed == 0
    from attnbias.train import RowPlan

    plan = RowPlan.of(TrainConfig(steps=10, eval_every=4, **BASE))
    assert (plan.n_rows, [plan.size(r) for r in (1, 2, 3)], plan.first(3)) == (3, [4, 4, 2], 8)
    assert RowPlan.of(TrainConfig(steps=10, **BASE)).checkpoint_counts() == [10]
    epochs = RowPlan.of(TrainConfig(epochs=3, **BASE), n=40)  # 40 // 16 = 2 updates an epoch
    assert (epochs.per, epochs.total, epochs.unit, epochs.count(2)) == (2, 6, "epoch", 2)
