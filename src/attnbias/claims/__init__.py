"""Claim checks (one implementation shared by the workflow and the tests)."""

from .core import KINDS, Claim, compare, holds, read_claims, within, write_claims

__all__ = ["KINDS", "Claim", "compare", "holds", "read_claims", "within", "write_claims"]
