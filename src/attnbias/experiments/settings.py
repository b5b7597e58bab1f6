"""Typed settings of the deep-learning job families.

Each family (e.g. the GPT-2 runs of lowrank Fig 3, :class:`~attnbias.experiments.lowrank.lm.
LMSettings`) has one frozen dataclass whose fields are exactly the keys of its block in
``workflow/schemas/<paper>.schema.yaml``, with the same names and types
(``tests/unit/test_settings_types.py`` checks both ways).  The job function takes it as
``settings`` (a dataclass or the block as a mapping) next to its sweep point and file inputs,
and its sidecar records it once, as ``meta["settings"]``.

The keys that span a sweep (a grid, the seeds, a gather's threshold: ``x-sweep: true`` in the
schema) are fields declared with :func:`sweep`: a run is given its point instead, so they are
``None`` in a run's settings and adding a grid value reruns no finished run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypeVar

S = TypeVar("S", bound="Settings")


def sweep() -> Any:
    """A field that spans the sweep (``x-sweep: true`` in the schema): ``None`` in one run's
    settings, whose point carries its value."""
    return field(default=None, metadata={"sweep": True})


class Settings:
    """Mixin of the settings dataclasses: construction from a schema block and the record."""

    @classmethod
    def of(cls: type[S], settings: S | Mapping) -> S:
        """``settings`` itself, or the dataclass built from a mapping (a config block, or the
        ``settings`` params of a job); an unknown or missing key is a ``TypeError``."""
        return settings if isinstance(settings, cls) else cls(**dict(settings))

    @classmethod
    def sweep_fields(cls) -> list[str]:
        """The fields that span the sweep (declared with :func:`sweep`)."""
        return [f.name for f in fields(cls) if f.metadata.get("sweep")]  # type: ignore[arg-type]

    def record(self) -> dict:
        """The settings as the sidecar records them (``meta["settings"]``): a plain dict."""
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True, kw_only=True)
class ViTShape(Settings):
    """The architecture keys every ViT block shares (maxmargin ``vit``, fastrates ``fig7``,
    lowrank ``vit``), and the model they describe."""

    image_size: int
    patch_size: int
    hidden: int
    layers: int
    heads: int
    mlp: int

    def build_vit(self, channels: int, n_classes: int, seed: int, dropout: float = 0.0):
        """A randomly initialised timm ViT of this shape (:func:`attnbias.models.vit.build_vit`),
        with ``dropout`` (default none)."""
        from ..models.vit import build_vit

        return build_vit(
            self.image_size, self.patch_size, channels, self.hidden, self.layers, self.heads,
            self.mlp, n_classes, seed, dropout=dropout,
        )  # fmt: skip
