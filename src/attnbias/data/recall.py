"""Online associative-recall batches (docs/papers/lowrank.md#lowrank_fig2).

A sequence is ``k_1 v_1 k_2 v_2 … k_N v_N q`` with N distinct keys drawn from ``n_keys`` key tokens
(ids 0 … n_keys − 1), values drawn uniformly (with repetition) from ``n_values`` value tokens (ids
n_keys … n_keys + n_values − 1), and a query q = k_j for a uniformly chosen pair j; the target is
v_j, predicted at the last position.  Length 2N + 1, vocabulary n_keys + n_values.

Every batch is generated from its own seed ``(seed, stream, step)``, so a training stream is
bit-identical on rerun and independent of how many batches were drawn before ("fully online").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TRAIN_STREAM, EVAL_STREAM = 0, 1


@dataclass(frozen=True)
class RecallTask:
    n_pairs: int = 8
    n_keys: int = 16
    n_values: int = 16

    def __post_init__(self):
        if self.n_pairs > self.n_keys:
            raise ValueError("keys are distinct: n_pairs must not exceed n_keys")

    @property
    def vocab(self) -> int:
        return self.n_keys + self.n_values

    @property
    def seq_len(self) -> int:
        return 2 * self.n_pairs + 1

    def batch(
        self, size: int, seed: int, step: int, stream: int = TRAIN_STREAM
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(tokens (size, 2N+1) int64, targets (size,) int64)`` for one batch."""
        rng = np.random.default_rng([int(seed), int(stream), int(step)])
        keys = np.argsort(rng.random((size, self.n_keys)), axis=1)[:, : self.n_pairs]
        values = self.n_keys + rng.integers(0, self.n_values, size=(size, self.n_pairs))
        j = rng.integers(0, self.n_pairs, size=size)
        rows = np.arange(size)
        tokens = np.empty((size, self.seq_len), dtype=np.int64)
        tokens[:, 0:-1:2] = keys
        tokens[:, 1:-1:2] = values
        tokens[:, -1] = keys[rows, j]
        return tokens, values[rows, j].astype(np.int64)


class RecallBatches:
    """The training batches of R runs trained side by side: update ``step`` of run r is
    ``task.batch(size, seeds[r], step)``, the one run's stream, stacked into (R, size, 2N+1)
    tokens and (R, size) targets.  With ``workers`` > 0 the batches of the next ``ahead`` updates
    are drawn in that many threads while the current one trains (numpy releases the GIL while it
    sorts and fills): the batches are functions of (seed, step) alone, so they are the same."""

    def __init__(self, task: RecallTask, size: int, seeds, workers: int = 0, ahead: int = 4):
        self.task, self.size, self.seeds = task, int(size), [int(s) for s in seeds]
        self.ahead = max(1, int(ahead))
        self._pool = None
        if workers > 0:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(int(workers), thread_name_prefix="recall-batches")
        self._pending: dict[int, list] = {}
        self._last: tuple = (None, None)  # a step asked twice (logged, then trained) is drawn once

    def _draw(self, seed: int, step: int):
        return self.task.batch(self.size, seed, step)

    def _submit(self, step: int) -> None:
        if step not in self._pending:
            self._pending[step] = [self._pool.submit(self._draw, s, step) for s in self.seeds]

    def __call__(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """``(tokens (R, size, 2N+1), targets (R, size))`` of update ``step``."""
        if self._last[0] == step:
            return self._last[1]
        if self._pool is None:
            parts = [self._draw(s, step) for s in self.seeds]
        else:
            for k in range(step, step + self.ahead + 1):
                self._submit(k)
            parts = [f.result() for f in self._pending.pop(step)]
            for k in [k for k in self._pending if k < step]:  # a step asked out of turn
                self._pending.pop(k)
        out = np.stack([x for x, _ in parts]), np.stack([y for _, y in parts])
        self._last = (step, out)
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool, self._pending = None, {}
