"""lowrank Fig 2's runs trained side by side (lowrank.recall.train_recall_runs):
each run of the batch is the one run of its (λ, seed) — its initialisation, data stream, Adam
moments and decoupled decay — so its table and weights agree with train_recall's and with a plain
torch AdamW loop over the one model; the batch resumes from its checkpoint and stops on a budget."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from attnbias.data.recall import RecallBatches, RecallTask
from attnbias.experiments.lowrank import recall, recall_loop
from attnbias.models.recall import RecallRuns, RecallTransformer
from attnbias.train.runs import RunsAdamW

SETTINGS = recall.RecallSettings(
    n_pairs=4,
    n_keys=8,
    n_values=8,
    d_model=16,
    n_heads=2,
    n_layers=2,
    batch=32,
    steps=30,
    lr=1e-2,
    betas=[0.9, 0.999],
    eps=1e-8,
    log_every=10,
    eval_samples=256,
    spectra_at=[0],
)
POINTS = [(0.0, 0), (0.5, 1), (3.0, 2)]  # different decays and seeds


def _adamw_loop(lam, seed, s=SETTINGS):
    """The one run as a plain loop: RecallTransformer under its seed, torch AdamW with decay on the
    attention matrices only, the batch of step t from RecallTask.batch(batch, seed, t)."""
    task = RecallTask(s.n_pairs, s.n_keys, s.n_values)
    torch.manual_seed(seed)
    model = RecallTransformer(task.vocab, task.seq_len, s.d_model, s.n_heads, s.n_layers)
    opt = torch.optim.AdamW(model.param_groups(lam), lr=s.lr, betas=tuple(s.betas), eps=s.eps)
    for step in range(s.steps):
        x, y = (torch.from_numpy(a) for a in task.batch(s.batch, seed, step))
        opt.zero_grad()
        F.cross_entropy(model(x, last_only=True), y).backward()
        opt.step()
    return model.state_dict()


@pytest.fixture(scope="module")
def batched(tmp_path_factory):
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("runs")
    paths = [str(folder / f"run{r}.pt") for r in range(len(POINTS))]
    return recall.train_recall_runs(SETTINGS, POINTS, weights_paths=paths), paths


def test_each_batched_run_is_its_single_run(batched, tmp_path):
    torch.set_num_threads(1)
    runs, paths = batched
    assert len(runs) == 3
    for (lam, seed), (df, meta), path in zip(POINTS, runs, paths, strict=True):
        single, smeta = recall.train_recall(SETTINGS, lam, seed, weights_path=str(tmp_path / "w"))
        assert list(df.columns) == list(single.columns) and len(df) == len(single)
        pd.testing.assert_frame_equal(df, single, check_exact=False, rtol=1e-5, atol=1e-6)
        assert meta["accuracy"] == pytest.approx(smeta["accuracy"], abs=2 / 256)
        assert (meta["lam"], meta["seed"], meta["lam_used"]) == (lam, seed, lam)
        assert meta["engine"]["runs_together"] == 3 and smeta["engine"]["runs_together"] == 1
        assert {k for k in meta if meta[k] != smeta[k]} <= {"wall_s", "engine", "accuracy"}
        mine, ref = torch.load(path), torch.load(tmp_path / "w")
        assert list(mine) == list(ref)
        for k in ref:
            torch.testing.assert_close(mine[k], ref[k], rtol=1e-5, atol=1e-6)
    # the runs differ from each other (decay and seed reach their own run only)
    assert not np.allclose(runs[0][0].eff_rank, runs[1][0].eff_rank)


def test_batched_runs_match_a_plain_torch_adamw_loop(batched):
    torch.set_num_threads(1)
    _, paths = batched
    for (lam, seed), path in zip(POINTS, paths, strict=True):
        ref, mine = _adamw_loop(lam, seed), torch.load(path)
        for k, v in ref.items():
            torch.testing.assert_close(mine[k], v, rtol=1e-5, atol=1e-6)


def test_stacked_model_forward_is_each_models_forward():
    torch.manual_seed(0)
    models = [RecallTransformer(16, 9, 16, 2, 2) for _ in range(3)]
    stacked = RecallRuns(models)
    x = torch.randint(0, 16, (3, 5, 9))
    with torch.no_grad():
        for last in (False, True):
            got = stacked(x, last_only=last)
            for r, m in enumerate(models):
                torch.testing.assert_close(got[r], m(x[r], last_only=last), rtol=1e-5, atol=1e-6)
    one = RecallTransformer(16, 9, 16, 2, 2)
    one.load_state_dict(stacked.run_state_dict(1))
    for a, b in zip(one.parameters(), models[1].parameters(), strict=True):
        assert torch.equal(a, b)
    factors = stacked.run_views()[2].attention_factors()
    for got, want in zip(factors, models[2].attention_factors(), strict=True):
        for key in ("kq", "pv"):
            for a, b in zip(got[key], want[key], strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="shape"):
        RecallRuns([models[0], RecallTransformer(16, 9, 32, 2, 2)])


def test_runs_adamw_is_adamw_run_by_run():
    """One stacked parameter, per-run decays 0, 0.5 and 3: run r's trajectory is torch AdamW's
    with weight_decay λ_r, bit for bit (the same float32 operations)."""
    torch.manual_seed(0)
    w0, grads = torch.randn(3, 4, 5), [torch.randn(3, 4, 5) for _ in range(5)]
    decays = [0.0, 0.5, 3.0]
    w = w0.clone().requires_grad_()
    opt = RunsAdamW([{"params": [w], "run_decay": decays}], lr=0.01, foreach=True)
    for g in grads:
        w.grad = g.clone()
        opt.step()
    for r, lam in enumerate(decays):
        v = w0[r].clone().requires_grad_()
        ref = torch.optim.AdamW([v], lr=0.01, weight_decay=lam, foreach=True)
        for g in grads:
            v.grad = g[r].clone()
            ref.step()
        assert torch.equal(w[r], v), r
    with pytest.raises(ValueError, match="run_decay"):
        RunsAdamW([{"params": [torch.zeros(2, requires_grad=True)], "weight_decay": 0.1}], lr=0.1)


def test_prefetched_batches_are_the_single_runs_batches():
    task = RecallTask(4, 8, 8)
    seeds = [3, 0, 3, 7]
    plain = RecallBatches(task, 16, seeds)
    ahead = RecallBatches(task, 16, seeds, workers=3, ahead=2)
    try:
        for step in [0, 1, 2, 2, 5, 6, 1]:  # in turn, repeated, skipping, back (a resume)
            x, y = ahead(step)
            assert x.shape == (4, 16, 9) and y.shape == (4, 16)
            for r, seed in enumerate(seeds):
                xs, ys = task.batch(16, seed, step)
                np.testing.assert_array_equal(x[r], xs)
                np.testing.assert_array_equal(y[r], ys)
            np.testing.assert_array_equal(plain(step)[0], x)
    finally:
        ahead.close()


def test_a_killed_or_stopped_batch_resumes_to_the_same_tables(batched, tmp_path, monkeypatch):
    torch.set_num_threads(1)
    full = [df for df, _ in batched[0]]
    ckpt = tmp_path / "ckpt.pt"
    # a budget: stop after the first row (10 updates); the checkpoint is saved there
    with pytest.raises(recall.Paused) as paused:
        recall.train_recall_runs(SETTINGS, POINTS, checkpoint=ckpt, stop=lambda step: step >= 10)
    assert paused.value.step == 10
    assert torch.load(ckpt, weights_only=False)["row"] == 1
    # killed at step 20 while logging: the checkpoint of step 10 stays
    real, calls = recall_loop.head_rows, {"n": 0}

    def dying(model, step, with_spectra):
        if step == 20 and calls["n"] == 0:
            calls["n"] += 1
            raise KeyboardInterrupt("killed")
        return real(model, step, with_spectra)

    monkeypatch.setattr(recall_loop, "head_rows", dying)
    with pytest.raises(KeyboardInterrupt):
        recall.train_recall_runs(SETTINGS, POINTS, checkpoint=ckpt, metric_workers=2)
    assert torch.load(ckpt, weights_only=False)["row"] == 1
    resumed = recall.train_recall_runs(SETTINGS, POINTS, checkpoint=ckpt, data_workers=2,
                                       metric_workers=2)  # fmt: skip
    for got, want in zip(resumed, full, strict=True):
        pd.testing.assert_frame_equal(got[0], want)
    # metrics computed in the background while training goes on: the same rows
    monkeypatch.setattr(recall_loop, "head_rows", real)
    ahead = recall.train_recall_runs(SETTINGS, POINTS, data_workers=2, metric_workers=3)
    for got, want in zip(ahead, full, strict=True):
        pd.testing.assert_frame_equal(got[0], want)
    # another set of runs never resumes this (finished) checkpoint: it trains from the start
    assert torch.load(ckpt, weights_only=False)["row"] == 3
    with pytest.raises(recall.Paused):
        recall.train_recall_runs(SETTINGS, [(0.0, 0), (0.5, 1), (3.0, 5)], checkpoint=ckpt,
                                 stop=lambda step: step >= 10)  # fmt: skip


@pytest.mark.parametrize("every", [15, 25])
def test_the_recall_loop_checkpoints_where_the_engine_plans(tmp_path, monkeypatch, every):
    """The recall runs' checkpoints are the engine's (the RowPlan of the run's TrainConfig): the
    loop finishes its background metrics through the engine's ``before_checkpoint`` hook, so
    each checkpoint holds complete rows; a run killed after a checkpoint resumes from it to the
    uninterrupted tables."""
    import attnbias.train as train_pkg
    from attnbias.train import RowPlan

    torch.set_num_threads(1)
    real_fit = train_pkg.fit
    seen = {"plan": [], "hook": [], "at_stop": []}

    def spying_fit(model, data, loss_fn, cfg, device, before_checkpoint=None, **kw):
        seen["plan"].append(RowPlan.of(cfg).checkpoint_counts())

        def hook(step):
            seen["hook"].append(step)
            before_checkpoint(step)

        return real_fit(model, data, loss_fn, cfg, device, before_checkpoint=hook, **kw)

    ckpt = tmp_path / "full.pt"

    def latest():  # the step of the last checkpoint written; its rows are complete
        if not ckpt.exists():
            return None
        history = torch.load(ckpt, weights_only=False)["history"]
        assert all(None not in row["rows"] for row in history), "unfinished rows saved"
        return history[-1]["step"]

    monkeypatch.setattr(train_pkg, "fit", spying_fit)
    points, kw = POINTS[:2], dict(checkpoint_every=every, metric_workers=2)
    full = recall.train_recall_runs(SETTINGS, points, checkpoint=ckpt,
                                    stop=lambda step: seen["at_stop"].append(latest()), **kw)
    counts = {15: [20, 30], 25: [30]}[every]  # rows end at 10, 20, 30
    # stop is asked before a row's checkpoint: at 30 it sees the one of 20 (every 15)
    at_stop = {15: [None, None, 20], 25: [None, None, None]}[every]
    assert seen == {"plan": [counts], "hook": counts, "at_stop": at_stop} and latest() == 30
    # killed while logging step 30: the checkpoint before it stays (step 20, or none)
    real, calls = recall_loop.head_rows, {"n": 0}

    def dying(model, step, with_spectra):
        if step == 30 and calls["n"] == 0:
            calls["n"] += 1
            raise KeyboardInterrupt("killed")
        return real(model, step, with_spectra)

    ckpt = tmp_path / "ckpt.pt"
    monkeypatch.setattr(recall_loop, "head_rows", dying)
    with pytest.raises(KeyboardInterrupt):
        recall.train_recall_runs(SETTINGS, points, checkpoint=ckpt, **kw)
    assert latest() == (20 if every == 15 else None)
    resumed = recall.train_recall_runs(SETTINGS, points, checkpoint=ckpt, **kw)
    for (got, _), (want, _) in zip(resumed, full, strict=True):
        pd.testing.assert_frame_equal(got, want)
