"""Image datasets as tensors: the offline digits stand-in and CIFAR-10 from the Hugging Face hub."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .hub import hub_error

CIFAR10_HUB = "uoft-cs/cifar10"
# per-channel statistics of the CIFAR-10 training set
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)


@dataclass
class ImageSplits:
    """uint8 or float images (N, C, H, W) and int64 labels, plus the normalisation to apply."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    mean: tuple
    std: tuple
    name: str
    stand_in: str | None = None

    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        """Scaled to [0, 1] (uint8 / 255), then per channel (x − mean) / std (torchvision's
        ``normalize``, the field's transform)."""
        from torchvision.transforms.v2.functional import normalize

        x = x.float() / 255.0 if x.dtype == torch.uint8 else x.float()
        return normalize(x, list(self.mean), list(self.std))


def digits16(seed: int = 0, test_fraction: float = 0.2, upsample: int = 2) -> ImageSplits:
    """scikit-learn digits (8×8, 0–16) scaled to [0, 1], upsampled ×``upsample`` (nearest), with a
    stratified split (1,437 / 360 for the defaults)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)
    if upsample > 1:
        x = x.repeat(upsample, axis=1).repeat(upsample, axis=2)
    idx = np.arange(len(x))
    tr, te = train_test_split(idx, test_size=test_fraction, random_state=seed, stratify=d.target)
    xt = torch.from_numpy(x)[:, None]
    yt = torch.from_numpy(d.target.astype(np.int64))
    return ImageSplits(
        xt[tr],
        yt[tr],
        xt[te],
        yt[te],
        (0.5,),
        (0.5,),
        "digits",
        stand_in="scikit-learn digits 16×16",
    )


def load_cifar10(
    source: str = CIFAR10_HUB, limit_train: int | None = None, limit_test: int | None = None
) -> ImageSplits:
    """CIFAR-10 with the hub layout (splits train/test, columns ``img`` (PIL) and ``label``).

    ``source`` is a hub id or a local directory in the same format (used by the tests).
    Raises :class:`DatasetUnavailable` with instructions when it cannot be loaded.
    """
    import datasets

    try:
        ds = datasets.load_dataset(source)
    except Exception as exc:  # offline, not cached, bad id: all end the same way for the user
        raise hub_error(source, exc) from exc

    def to_tensors(split, limit):
        part = ds[split] if limit is None else ds[split].select(range(min(limit, len(ds[split]))))
        imgs = np.stack([np.asarray(im.convert("RGB"), dtype=np.uint8) for im in part["img"]])
        return torch.from_numpy(imgs).permute(0, 3, 1, 2).contiguous(), torch.tensor(
            part["label"], dtype=torch.int64
        )

    xtr, ytr = to_tensors("train", limit_train)
    xte, yte = to_tensors("test", limit_test)
    return ImageSplits(xtr, ytr, xte, yte, CIFAR10_MEAN, CIFAR10_STD, "cifar10")


def first_of_each_class(labels: torch.Tensor, classes) -> list[int]:
    """Index of the first example of each class in ``classes`` (the fixed images of the maps)."""
    out = []
    for c in classes:
        hits = torch.nonzero(labels == c)
        if len(hits):
            out.append(int(hits[0, 0]))
    return out
