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
