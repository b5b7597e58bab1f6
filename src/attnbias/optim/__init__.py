"""Optimisers: full-batch GD / NGD / Polyak runner (:mod:`.fullbatch`)."""

from .fullbatch import METHODS, run, step_sizes

__all__ = ["METHODS", "run", "step_sizes"]
