"""Hard-margin SVMs: the generic min-norm QP and the attention SVMs built on it."""

from .attention_svm import (
    att_svm,
    classify_selection,
    head_svm,
    selection_constraints,
    support_inputs,
    svm_neighbours,
)
from .frobenius import FrobeniusSVM, frobenius_svm, selection_features, w_mm
from .nuclear import NormSVM, l1_svm, l1_unique, l2_svm, margin, margins, nuclear_svm
from .qp import InfeasibleSVM, QPResult, min_norm_qp

__all__ = [
    "FrobeniusSVM",
    "NormSVM",
    "frobenius_svm",
    "selection_features",
    "l1_svm",
    "l1_unique",
    "l2_svm",
    "margin",
    "margins",
    "nuclear_svm",
    "w_mm",
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
