"""ImageNet-style image classification data from the Hugging Face hub (lowrank Fig 3, ViT).

* :func:`load_image_dataset`: the offline ``digits`` stand-in, or a hub image-classification
  dataset (ImageNet-1k: gated, token from ``HF_TOKEN``) as (train, test) splits;
* :class:`HubImageBatches`: the online training batches of such a dataset, a function of
  (seed, step) only, so a training stream is identical on rerun and after a resume;
* :func:`download_image_dataset`: the paper preset's download rule (fetch once into the cache).

Hub failures raise :class:`~attnbias.data.hub.DatasetUnavailable`
(:func:`~attnbias.data.hub.hub_error`).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd

from .hub import hub_error


class HubImageBatches:
    """Online ImageNet-style batches from a (memory-mapped) hub dataset with PIL decoding: random
    resized crop + horizontal flip (train) or resize + centre crop (eval), normalised, optional
    Mixup.  The batch of update ``step`` depends only on (seed, step): epoch e visits the images in
    the permutation ``default_rng([seed, e])``; each image's crop comes from ``default_rng([seed,
    step, i])``.  Decoding runs in a thread pool (PIL releases the GIL)."""

    MEAN = (0.485, 0.456, 0.406)
    STD = (0.229, 0.224, 0.225)

    def __init__(
        self,
        ds,
        image_size: int,
        batch: int,
        seed: int,
        steps_per_epoch: int,
        mixup: float = 0.0,
        workers: int = 8,
        image_key: str | None = None,
        label_key: str = "label",
    ):
        self.ds, self.size, self.batch, self.seed, self.spe, self.mixup = (
            ds,
            image_size,
            batch,
            seed,
            steps_per_epoch,
            mixup,
        )
        self.workers = workers
        self.image_key = image_key or next(k for k in ("image", "img") if k in ds.column_names)
        self.label_key = label_key
        self._perm_epoch, self._perm = None, None

    @staticmethod
    def random_resized_crop(img, size: int, rng, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
        """Inception-style crop of a PIL image (area fraction and log-uniform aspect ratio),
        resized."""
        from PIL import Image

        w, h = img.size
        area = w * h
        for _ in range(10):
            target = area * rng.uniform(*scale)
            ar = math.exp(rng.uniform(math.log(ratio[0]), math.log(ratio[1])))
            cw, ch = int(round(math.sqrt(target * ar))), int(round(math.sqrt(target / ar)))
            if 0 < cw <= w and 0 < ch <= h:
                x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
                return img.resize((size, size), Image.BILINEAR, box=(x0, y0, x0 + cw, y0 + ch))
        s = min(w, h)  # fallback: centre square
        return img.resize(
            (size, size),
            Image.BILINEAR,
            box=((w - s) // 2, (h - s) // 2, (w - s) // 2 + s, (h - s) // 2 + s),
        )

    @staticmethod
    def centre_crop(img, size: int, resize: float = 256 / 224):
        from PIL import Image

        w, h = img.size
        short = int(round(size * resize))
        img = img.resize(
            (max(short, round(w * short / h)), max(short, round(h * short / w))), Image.BILINEAR
        )
        w, h = img.size
        x0, y0 = (w - size) // 2, (h - size) // 2
        return img.crop((x0, y0, x0 + size, y0 + size))

    def _decode(self, idx: list[int], train: bool, step: int):
        from concurrent.futures import ThreadPoolExecutor

        rows = self.ds.select(idx) if hasattr(self.ds, "select") else [self.ds[i] for i in idx]
        images = (
            rows[self.image_key]
            if hasattr(rows, "column_names")
            else [r[self.image_key] for r in rows]
        )
        labels = (
            rows[self.label_key]
            if hasattr(rows, "column_names")
            else [r[self.label_key] for r in rows]
        )

        def one(i):
            img = images[i].convert("RGB")
            if train:
                rng = np.random.default_rng([self.seed, step, i])
                img = self.random_resized_crop(img, self.size, rng)
                if rng.random() < 0.5:
                    img = img.transpose(0)  # Image.FLIP_LEFT_RIGHT
            else:
                img = self.centre_crop(img, self.size)
            return np.asarray(img, dtype=np.uint8)

        with ThreadPoolExecutor(self.workers) as pool:
            arrs = list(pool.map(one, range(len(idx))))
        import torch
        from torchvision.transforms.v2.functional import normalize

        x = torch.from_numpy(np.stack(arrs)).permute(0, 3, 1, 2).float().div_(255.0)
        y = torch.tensor(labels, dtype=torch.int64)
        return normalize(x, list(self.MEAN), list(self.STD)), y

    def __call__(self, step: int, generator=None) -> dict:
        epoch, within = divmod(int(step), self.spe)
        if self._perm_epoch != epoch:
            self._perm = np.random.default_rng([self.seed, epoch]).permutation(len(self.ds))
            self._perm_epoch = epoch
        idx = [int(i) for i in self._perm[(within * self.batch) % len(self.ds) :][: self.batch]]
        if len(idx) < self.batch:
            idx += [int(i) for i in self._perm[: self.batch - len(idx)]]
        x, y = self._decode(idx, True, step)
        import torch

        out = {"x": x, "y": y, "y2": y.clone(), "mix": torch.ones(len(y))}
        if self.mixup > 0:  # Mixup with the reversed batch, one Beta(α, α) weight per batch
            lam = float(
                np.random.default_rng([self.seed, step, 1 << 20]).beta(self.mixup, self.mixup)
            )
            out["x"] = lam * x + (1 - lam) * x.flip(0)
            out["y2"] = y.flip(0)
            out["mix"] = torch.full((len(y),), lam)
        return out

    def eval_batches(self, limit: int | None = None, batch: int = 256):
        n = len(self.ds) if not limit else min(limit, len(self.ds))
        for i in range(0, n, batch):
            yield self._decode(list(range(i, min(n, i + batch))), False, 0)


def load_image_dataset(
    dataset: str,
    source: str | None,
    data_seed: int = 0,
    test_fraction: float = 0.2,
    upsample: int = 1,
):
    """``digits`` (offline, tensors) or a hub image-classification dataset (``imagenet``: splits
    train/validation, columns image + label), returned as (train, test) hub datasets."""
    if dataset == "digits":
        from .images import digits16

        return digits16(seed=data_seed, test_fraction=test_fraction, upsample=upsample)
    import datasets

    try:
        ds = datasets.load_dataset(source, token=os.environ.get("HF_TOKEN") or None)
    except Exception as exc:  # offline, not cached, gated without a token
        raise hub_error(source, exc) from exc
    test = "validation" if "validation" in ds else "test"
    return ds["train"], ds[test]


def download_image_dataset(source: str):
    """Fetch a hub image dataset (ImageNet-1k: gated, token from ``HF_TOKEN``) into the cache."""
    train, test = load_image_dataset("imagenet", source)
    df = pd.DataFrame([{"source": source, "train": len(train), "test": len(test)}])
    return df, {
        "columns": {
            "source": "hub dataset id",
            "train": "training images",
            "test": "evaluation images",
        }
    }
