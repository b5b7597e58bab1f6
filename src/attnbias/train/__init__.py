"""Deep-learning training engine shared by every paper (classification and language modelling)."""

from .augment import random_crop_flip
from .engine import TrainConfig, fit, resolve_device
from .probe import sgd_probe
from .rows import RowPlan

__all__ = [
    "RowPlan",
    "TrainConfig",
    "fit",
    "random_crop_flip",
    "resolve_device",
    "sgd_probe",
]
