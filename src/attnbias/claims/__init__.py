"""Claim checks (one implementation shared by the workflow and the tests)."""

from .core import Claim, compare, holds, read_claims, within, write_claims

__all__ = ["Claim", "compare", "holds", "read_claims", "within", "write_claims"]
