"""Tiny fastrates deep-learning runs for the unit tests, stated as flat keywords.

The job functions take a typed settings object (the schema block) next to the run's point; these
helpers split a test's flat keywords into the two, filling the keys a test leaves out with small,
fixed values, so that each test states only what it is about.
"""

from __future__ import annotations

from dataclasses import fields

from attnbias.experiments.fastrates.finetune import FinetuneSettings, train_text
from attnbias.experiments.fastrates.image import ImageSettings, train_image
from attnbias.experiments.fastrates.mnist import MnistSettings, compute_fig6

# the keys a test may leave out, and their values
TEXT_FILL = dict(
    source=None, layers=None, pooling="cls", select_at=None, select_on="train_loss", n_train=None,
    n_val=None,
    n_test=None, threshold=0.5, full_final_test=False, data_seed=0, probe_steps=10,
    ckpt_every=50,
)  # fmt: skip
IMAGE_FILL = dict(
    source=None, dropout=0.0, n_train=None, select_at=None, select_on="train_loss", augment_pad=0,
    augment_flip=False, data_seed=0,
    probe_steps=10, compile=False,
)  # fmt: skip
FIG6_FILL = dict(
    source=None, pos_scale=0.0, polyak_lr=1.0, polyak_cap=None, per_decade=40, proj_seed=0,
    data_seed=0, test_fraction=0.2,
)  # fmt: skip


def _split(cls, fill, kw):
    names = {f.name for f in fields(cls)} - set(cls.sweep_fields())
    settings = cls(**{**fill, **{k: v for k, v in kw.items() if k in names}})
    return settings, {k: v for k, v in kw.items() if k not in names}


def text_run(**kw) -> dict:
    """:func:`~attnbias.experiments.fastrates.finetune.train_text` with flat keywords."""
    settings, run = _split(FinetuneSettings, TEXT_FILL, kw)
    return train_text(settings, **run)


def image_run(**kw) -> dict:
    """:func:`~attnbias.experiments.fastrates.image.train_image` with flat keywords."""
    settings, run = _split(ImageSettings, IMAGE_FILL, kw)
    return train_image(settings, **run)


def fig6_run(dataset, patch, embed_dim, lr, steps, **kw):
    """:func:`~attnbias.experiments.fastrates.mnist.compute_fig6` with flat keywords."""
    kw = dict(dataset=dataset, patch=patch, embed_dim=embed_dim, lr=lr, steps=steps, **kw)
    settings, run = _split(MnistSettings, FIG6_FILL, kw)
    return compute_fig6(settings, **run)
