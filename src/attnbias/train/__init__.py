"""Deep-learning training engine shared by every paper (classification and language modelling)."""

from .engine import TrainConfig, fit, resolve_device
from .augment import random_crop_flip

__all__ = ["TrainConfig", "fit", "random_crop_flip", "resolve_device"]
