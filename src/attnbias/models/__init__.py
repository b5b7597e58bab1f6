"""Attention models.

The softmax-selection core lives in :mod:`.attention`; every model reuses it.
"""

from .attention import (
    LOSSES,
    log_neg_dloss,
    log_softmax,
    logsumexp,
    loss_value,
    selection_logit_grad,
    softmax,
)
from .prompt import joint_grad_fn, keys, prompt_forward, prompt_grad_fn, token_scores

__all__ = [
    "LOSSES",
    "joint_grad_fn",
    "keys",
    "log_neg_dloss",
    "log_softmax",
    "logsumexp",
    "loss_value",
    "prompt_forward",
    "prompt_grad_fn",
    "selection_logit_grad",
    "softmax",
    "token_scores",
]
