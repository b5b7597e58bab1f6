"""The stand-ins of the GPU check's training families, and the tiny sizes of its CPU mode: synthetic
data of the paper's shapes put in place of the hub loaders (nothing is downloaded), and the model,
batch and evaluation sizes that shrink each GPU training sweep of the paper preset to a few seconds
on a CPU.  tests/unit/test_gpu_entry_points.py runs the workflow's own job script with the same
stand-ins and sizes."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np

TINY_VIT = dict(hidden=32, layers=2, heads=2, mlp=64)

# The CPU mode's model, batch and evaluation sizes of each GPU training sweep (workflow name
# <paper>/<sweep>), put over the paper preset's block.
TINY = {
    "maxmargin/vit": dict(TINY_VIT, patch_size=8, batch_size=8, probe_size=32),
    "fastrates/fig1": dict(batch_size=4, max_length=32),
    "fastrates/fig4": dict(batch_size=4, max_length=32),
    "fastrates/fig7": dict(TINY_VIT, patch_size=8, batch_size=8),
    "lowrank/lm": dict(
        n_layer=2, n_head=2, n_embd=32, ctx=64, batch_size=8, grad_accum=2, val_windows=16
    ),
    "lowrank/vit": dict(TINY_VIT, image_size=32, patch_size=8, batch_size=16, grad_accum=2),
    "lowrank/fig2": dict(
        n_pairs=4, n_keys=16, n_values=16, d_model=32, n_heads=2, batch=16, eval_samples=256
    ),
}

# a randomly initialised BERT of the CPU mode (transformers.BertConfig keywords)
TINY_BERT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


@contextlib.contextmanager
def patched(obj, name: str, value):
    """``obj.<name>`` set to ``value`` while the block runs, restored after."""
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def synthetic_cifar(n_train: int, n_test: int, size: int = 32):
    """Random CIFAR-10-shaped images (uint8) and labels, as ``attnbias.data.images.load_cifar10``
    returns them; every class has a test image."""
    import torch

    from attnbias.data.images import CIFAR10_MEAN, CIFAR10_STD, ImageSplits

    g = torch.Generator().manual_seed(0)
    y_test = torch.randint(0, 10, (n_test,), generator=g)
    y_test[:10] = torch.arange(10)  # every class has a first test image (the maps)
    return ImageSplits(
        torch.randint(0, 256, (n_train, 3, size, size), generator=g, dtype=torch.uint8),
        torch.randint(0, 10, (n_train,), generator=g),
        torch.randint(0, 256, (n_test, 3, size, size), generator=g, dtype=torch.uint8),
        y_test,
        CIFAR10_MEAN,
        CIFAR10_STD,
        "cifar10",
        stand_in="synthetic (gpu_check)",
    )


class SyntheticTokenizer:
    """Stands in for a WordPiece tokenizer: random ids at full length (the worst case), segment
    ids 1 on the second half of pairs."""

    pad_token_id = 0  # BERT's [PAD], as the real tokenizer reports it

    def __init__(self, vocab: int):
        self.vocab = vocab

    def __call__(self, text, text_pair=None, max_length=128, **_):
        import torch

        g = torch.Generator().manual_seed(len(text))
        n = len(text)
        types = torch.zeros(n, max_length, dtype=torch.int64)
        if text_pair is not None:
            types[:, max_length // 2 :] = 1
        return {
            "input_ids": torch.randint(1000, self.vocab, (n, max_length), generator=g),
            "attention_mask": torch.ones(n, max_length, dtype=torch.int64),
            "token_type_ids": types,
        }


def synthetic_text_splits(n_train: int, n_eval: int, labels: int, pairs: bool):
    """Text splits as ``attnbias.data.text.load_text_dataset`` returns them: placeholder texts
    (with a second segment where ``pairs``; :class:`SyntheticTokenizer` draws the tokens) and
    random labels among ``labels``."""
    from attnbias.data.text import TextSet, TextSplits

    rng = np.random.default_rng(0)

    def one(n):
        return TextSet(
            ["synthetic"] * n, rng.integers(0, labels, n), ["pair"] * n if pairs else None
        )

    return TextSplits(
        one(n_train),
        one(n_eval),
        one(n_eval),
        tuple(range(labels)),
        "synthetic",
        stand_in="synthetic (gpu_check)",
    )


def synthetic_token_dir(path: Path, n_train: int, n_val: int, vocab: int = 50257) -> Path:
    """Token files in the layout of ``attnbias.data.text_lm.load_token_dir`` (random tokens)."""
    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    rng.integers(0, vocab, n_train, dtype=np.uint16).tofile(path / "train.bin")
    rng.integers(0, vocab, n_val, dtype=np.uint16).tofile(path / "val.bin")
    (path / "tokens.json").write_text(
        json.dumps(
            {
                "dtype": "uint16",
                "vocab_size": vocab,
                "eos_id": vocab - 1,
                "tokenizer": "synthetic (gpu_check)",
                "source": "synthetic",
                "tokens": {},
                "splits": {"train": n_train, "val": n_val},
            }
        )
    )
    return path


class SyntheticImageNet:
    """Stands in for a hub ImageNet split: its length and its number of classes."""

    def __init__(self, n: int, classes: int):
        self.n = n
        self.features = {"label": SimpleNamespace(num_classes=classes)}

    def __len__(self):
        return self.n


class SyntheticImageBatches:
    """Stands in for ``HubImageBatches``: one pre-made normalised batch (CPU, as the decoder
    yields it), with the Mixup of the real source; ``eval_batches`` as there."""

    def __init__(self, ds, size, batch_size, seed, spe, mixup=0.0, workers=0):
        import torch

        g = torch.Generator().manual_seed(seed)
        self.ds, self.mixup = ds, mixup
        self.x = torch.randn(batch_size, 3, size, size, generator=g)
        self.y = torch.randint(0, ds.features["label"].num_classes, (batch_size,), generator=g)

    def __call__(self, step, generator=None):
        import torch

        lam = 0.7 if self.mixup > 0 else 1.0
        return {
            "x": lam * self.x + (1 - lam) * self.x.flip(0),
            "y": self.y,
            "y2": self.y.flip(0),
            "mix": torch.full((len(self.y),), lam),
        }

    def eval_batches(self, limit=None, batch=256):
        n = len(self.ds) if not limit else min(limit, len(self.ds))
        for i in range(0, n, batch):
            k = min(batch, n - i, len(self.y))
            yield self.x[:k], self.y[:k]
