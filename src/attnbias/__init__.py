"""attnbias: the science behind the implicit-bias-of-attention reproductions."""

__version__ = "0.1.0"
