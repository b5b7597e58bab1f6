"""The training loop of the Fig 2 recall runs (:func:`.recall.train_recall_runs`), in the order it
runs: the runs' models stacked in one (:func:`stacked_runs`), the engine's run counted in steps
with a metrics row every ``log_every`` updates (:func:`train_runs`, :class:`RowMetrics`), and each
run's final accuracy (:func:`correct_answers`).

When the engine checkpoints is the engine's (:class:`attnbias.train.RowPlan`): the loop learns of
each checkpoint through the engine's ``before_checkpoint`` hook, and there finishes the metrics
still computed in the background, so that every checkpoint holds complete rows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import numpy as np

from .common import head_rows

log = logging.getLogger("attnbias.lowrank")


def stacked_runs(s, seeds: Sequence[int], dev):
    """The task of settings ``s`` and the runs' models stacked in one
    (:class:`~attnbias.models.recall.RecallRuns`), each initialised as its one run draws it:
    ``RecallTransformer`` under ``torch.manual_seed(seed)``."""
    import torch

    from ...data.recall import RecallTask
    from ...models.recall import RecallRuns, RecallTransformer

    task = RecallTask(s.n_pairs, s.n_keys, s.n_values)
    models = []
    for seed in seeds:
        torch.manual_seed(seed)
        models.append(RecallTransformer(task.vocab, task.seq_len, s.d_model, s.n_heads,
                                        s.n_layers))  # fmt: skip
    return task, RecallRuns(models).to(dev)


def train_runs(
    model,
    task,
    s,
    seeds: Sequence[int],
    lams_used: Sequence[float],
    dev,
    *,
    checkpoint=None,
    metrics_log=None,
    checkpoint_every: int,
    stop: Callable[[int], bool] | None = None,
    data_workers: int = 0,
    metric_workers: int = 0,
    t0: float,
) -> list[dict]:
    """Train the stacked runs with the engine (:func:`attnbias.train.fit`) and return its history.

    A run counted in steps: update t uses the runs' batches of step t, the loss is the sum of the
    runs' cross-entropies, :class:`~attnbias.train.runs.RunsAdamW` decays run r's attention
    matrices by ``lams_used[r]``.  A row every ``log_every`` updates and after the last holds
    ``{"step", "rows"}``, the runs' metric rows (:class:`RowMetrics`); they are complete before
    each of the engine's checkpoints (its ``before_checkpoint``) and when this returns.
    ``t0``: the run's start, for the progress log.
    """
    from ...data.recall import RecallBatches
    from ...train import TrainConfig, fit

    cfg = TrainConfig(
        steps=int(s.steps),
        eval_every=int(s.log_every),
        batch_size=s.batch,
        lr=s.lr,
        optimizer="adamw_runs",
        weight_decay=0.0,
        seed=seeds[0],
        bf16=False,
        ckpt_every=checkpoint_every,
        extra={"betas": tuple(s.betas), "eps": s.eps},
        runs=[[lam, seed] for lam, seed in zip(lams_used, seeds, strict=True)],
    )
    batches = RecallBatches(task, s.batch, seeds, workers=data_workers)
    batch_fn = _batch_source(batches, dev)
    spectra = set(int(i) for i in s.spectra_at) | {s.steps}
    metrics = RowMetrics(model, batch_fn, spectra, dev, metric_workers, t0)
    try:
        history = fit(
            model,
            None,
            _loss,
            cfg,
            dev,
            checkpoint=checkpoint,
            metrics_log=metrics_log,
            on_row=metrics.on_row,
            param_groups=model.param_groups(lams_used),
            image_key=None,
            progress=False,
            batch_fn=batch_fn,
            stop=stop,
            before_checkpoint=metrics.before_checkpoint,
        )
        metrics.settle(everything=True)
    finally:
        batches.close()
        metrics.close()
    return history


def _batch_source(batches, dev):
    """The engine's online ``batch_fn``: the runs' batches of update ``step``, stacked."""
    import torch

    def batch_fn(step, generator=None):
        x, y = batches(step)
        out = {"x": torch.from_numpy(x), "y": torch.from_numpy(y)}
        # page-locked on a GPU, so the copy is asynchronous (the engine's non_blocking)
        return {k: v.pin_memory() for k, v in out.items()} if dev.type == "cuda" else out

    return batch_fn


def run_losses(m, batch):
    """Each run's mean cross-entropy at the query position on its part of ``batch``: shape (R,)."""
    import torch.nn.functional as F

    logits = m(batch["x"], last_only=True)  # (R, batch, vocab)
    flat = F.cross_entropy(logits.flatten(0, 1), batch["y"].flatten(), reduction="none")
    return flat.view(len(logits), -1).mean(1)


def _loss(m, batch):
    """The engine's loss: the sum of the runs' losses, so each run gets its own gradient."""
    return run_losses(m, batch).sum(), {}


class RowMetrics:
    """The engine's ``on_row`` for the recall runs: at a row's step, every run's head metrics
    (:func:`~attnbias.experiments.lowrank.common.head_rows`) with its loss on that step's batch
    under the current weights.

    With ``workers`` > 0 the metrics of a step's weights (a copy on the device) are computed in
    the background while training goes on: the row holds a list that :meth:`settle` fills, which
    happens before each checkpoint (:meth:`before_checkpoint`, the engine's hook) and at the end.
    """

    def __init__(self, model, batch_fn, spectra: set[int], dev, workers: int, t0: float):
        self.model, self.batch_fn, self.spectra = model, batch_fn, spectra
        self.dev, self.t0 = dev, t0
        self.pool = self.collector = None
        if workers > 0:
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(workers, thread_name_prefix="recall-metrics")
            self.collector = ThreadPoolExecutor(1, thread_name_prefix="recall-log")
        self.pending: list[tuple[list, object]] = []  # (a logged step's rows, filled when computed)

    def on_row(self, m, step: int) -> dict:
        """The engine's row at ``step``: ``{"step", "rows"}``, rows[r] the rows of run r."""
        import torch

        self.settle(everything=False)
        with torch.no_grad():
            losses = run_losses(m, {k: v.to(self.dev) for k, v in self.batch_fn(step).items()})
            if self.collector is None:
                return {"step": step, "rows": self.step_rows(step, losses, None)}
            attn = [w.detach().clone() for w in m.attention_weights()]
        rows: list = [None] * len(losses)
        self.pending.append((rows, self.collector.submit(self.step_rows, step, losses, attn)))
        return {"step": step, "rows": rows}

    def step_rows(self, step: int, losses, attn) -> list[list[dict]]:
        """Every run's rows at ``step``: its head metrics and its loss."""
        losses = losses.tolist()  # (waits for the device)
        views = self.model.run_views(attn)

        def run_rows(r):
            return [
                {k: _plain(v) for k, v in row.items()} | {"train_loss": losses[r]}
                for row in head_rows(views[r], step, step in self.spectra)
            ]

        runs = range(len(losses))
        rows = list(self.pool.map(run_rows, runs)) if self.pool else [run_rows(r) for r in runs]
        log.info("step %d loss %s (%.1f s)", step, " ".join(f"{v:.4f}" for v in losses),
                 time.perf_counter() - self.t0)  # fmt: skip
        return rows

    def settle(self, everything: bool) -> None:
        """Fill the rows of the logged steps computed in the background (all: wait for them)."""
        while self.pending and (everything or self.pending[0][1].done()):
            rows, future = self.pending.pop(0)
            rows[:] = future.result()

    def before_checkpoint(self, step: int) -> None:
        """The engine's hook before it writes a checkpoint: every logged step's rows, filled."""
        self.settle(everything=True)

    def close(self) -> None:
        """Stop the background threads (their unstarted work is dropped)."""
        for executor in (self.collector, self.pool):
            if executor is not None:
                executor.shutdown(cancel_futures=True)


def _plain(value):
    """numpy scalars as Python numbers (the rows are JSON-logged and pickled)."""
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def correct_answers(model, task, s, seeds: Sequence[int], dev) -> np.ndarray:
    """Each run's count of correct answers on ``s.eval_samples`` fresh samples of its seed's
    evaluation stream."""
    import torch

    from ...data.recall import EVAL_STREAM

    correct = np.zeros(len(seeds), dtype=np.int64)
    model.eval()
    with torch.no_grad():
        for start in range(0, s.eval_samples, 1024):
            n = min(1024, s.eval_samples - start)
            parts = [task.batch(n, seed, start // 1024, stream=EVAL_STREAM) for seed in seeds]
            x = torch.from_numpy(np.stack([x for x, _ in parts])).to(dev)
            pred = model(x, last_only=True).argmax(-1).cpu().numpy()
            correct += np.sum(pred == np.stack([y for _, y in parts]), axis=1)
    return correct
