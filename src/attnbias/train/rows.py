"""The rows of a training run and the checkpoints among them, as the engine counts them.

:func:`attnbias.train.fit` cuts a run into *rows*: the updates between two metric rows of its
history (an epoch, or ``eval_every`` updates of a run counted in steps).  :class:`RowPlan` is the
one place that says how many updates each row holds, what the row is called in the history, and
after which rows a checkpoint is written.  The engine follows it, and so can a training loop
around the engine that must know when a checkpoint comes (rather than work the rule out again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import TrainConfig


@dataclass(frozen=True)
class RowPlan:
    """Which updates each row of a run makes, and the rows a checkpoint follows.

    Rows are numbered from 1 (row 0 is the metrics before training).  A row's *count* is its key
    in the history: the epoch in a run counted in epochs, the updates done in a run counted in
    steps.

    Parameters
    ----------
    per : int
        Updates per row; the last row of a run counted in steps may have fewer.
    total : int
        Updates in the whole run.
    unit : {"epoch", "step"}
        What a row's count counts, and the key of the history's rows.
    ckpt_every : int
        Distance between checkpoints: rows in a run counted in epochs, updates in a run counted in
        steps.

    Examples
    --------
    A run of 14 steps, a row every 4 and a checkpoint every 6 updates: rows end after 4, 8, 12
    and 14 updates, and a checkpoint follows the first row end at or after each multiple of 6
    (8, 12) and the last row (14).

    >>> plan = RowPlan(per=4, total=14, unit="step", ckpt_every=6)
    >>> [plan.count(r) for r in range(1, plan.n_rows + 1)]
    [4, 8, 12, 14]
    >>> plan.checkpoint_counts()
    [8, 12, 14]
    """

    per: int
    total: int
    unit: str
    ckpt_every: int

    @classmethod
    def of(cls, cfg: TrainConfig, n: int | None = None) -> RowPlan:
        """The plan of a run's settings.

        Parameters
        ----------
        cfg : TrainConfig
            The run's settings (counted in ``epochs`` or in ``steps``).
        n : int, optional
            Examples in the static data; needed only for a run counted in epochs without
            ``steps_per_epoch`` (one pass over the data per epoch).

        Returns
        -------
        RowPlan
        """
        if cfg.steps is not None:
            return cls(cfg.eval_every or cfg.steps, cfg.steps, "step", cfg.ckpt_every)
        per = cfg.steps_per_epoch or max(1, n // cfg.batch_size)
        return cls(per, per * cfg.epochs, "epoch", cfg.ckpt_every)

    @property
    def n_rows(self) -> int:
        """Rows in the whole run (not counting row 0)."""
        return -(-self.total // self.per)

    def count(self, row: int) -> int:
        """The history's key of ``row``: its epoch, or the updates done by its end."""
        return min(row * self.per, self.total) if self.unit == "step" else row

    def first(self, row: int) -> int:
        """Updates done before ``row`` (the global, 0-based step of its first update)."""
        return (row - 1) * self.per

    def size(self, row: int) -> int:
        """Updates in ``row``."""
        return min(self.per, self.total - self.first(row))

    def checkpoint_due(self, row: int) -> bool:
        """Whether a checkpoint is written after ``row``.

        In a run counted in epochs, after every ``ckpt_every``-th row; in a run counted in steps,
        after the first row that ends at or after each multiple of ``ckpt_every`` updates; in both,
        after the last row.  (A run the engine's ``stop`` ends early also writes one after its
        last row.)
        """
        if row == self.n_rows:
            return True
        if self.unit == "step":
            done = self.first(row) + self.size(row)
            return done // self.ckpt_every > self.first(row) // self.ckpt_every
        return row % self.ckpt_every == 0

    def checkpoint_counts(self) -> list[int]:
        """The counts of the rows a checkpoint follows, in order (without a ``stop``)."""
        return [self.count(r) for r in range(1, self.n_rows + 1) if self.checkpoint_due(r)]
