"""Optimisers: full-batch GD / NGD / Polyak runner (:mod:`.fullbatch`) and batched numpy Adam
(:mod:`.adam`)."""

from .adam import adam_run
from .fullbatch import METHODS, run, step_sizes

__all__ = ["METHODS", "adam_run", "run", "step_sizes"]
