"""Hard-margin SVMs: the generic min-norm QP and the attention SVMs built on it."""

from .attention_svm import (
    att_svm,
    classify_selection,
    head_svm,
    selection_constraints,
    support_inputs,
    svm_neighbours,
)
from .qp import InfeasibleSVM, QPResult, min_norm_qp

__all__ = [
    "InfeasibleSVM",
    "QPResult",
    "att_svm",
    "classify_selection",
    "head_svm",
    "min_norm_qp",
    "selection_constraints",
    "support_inputs",
    "svm_neighbours",
]
