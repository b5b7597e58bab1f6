"""Metrics shared by all papers: alignment, soft-sparsity, trend statistics."""

from .core import cosine, soft_sparsity, spearman

__all__ = ["cosine", "soft_sparsity", "spearman"]
