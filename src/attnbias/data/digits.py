"""Images of the digits 0 and 1 as ±1-labelled binary classification data, and their patch tokens:
the inputs of the fastrates proposal Fig 6 (the paper's one-layer attention model on digit images).

Two sources: the offline scikit-learn digits (8×8, a stratified split; the quick preset) and MNIST
from the Hugging Face hub (28×28, its own train/test splits; the paper preset).
"""

from __future__ import annotations

import numpy as np

MNIST_HUB = "ylecun/mnist"


def digit01_images(dataset: str, source: str | None, data_seed: int, test_fraction: float):
    """Images of the digits 0 and 1 scaled to [0, 1] and labels y = +1 (digit 1) / −1 (digit 0).

    Returns ``(x_train, y_train, x_test, y_test, stand_in)``: ``dataset="digits"`` gives the offline
    scikit-learn digits (8×8; ``test_fraction`` stratified split, seed ``data_seed``; ``stand_in``
    names them), ``"mnist"`` gives MNIST from the hub id or local hub-layout directory ``source``
    (default :data:`MNIST_HUB`; ``stand_in`` None).  An unreachable hub dataset raises
    :class:`attnbias.data.hub.DatasetUnavailable` naming the download rule."""
    if dataset == "digits":
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        d = load_digits()
        keep = np.isin(d.target, (0, 1))
        x, t = d.images[keep] / 16.0, d.target[keep]
        tr, te = train_test_split(
            np.arange(len(t)), test_size=test_fraction, random_state=data_seed, stratify=t
        )
        stand_in = "scikit-learn digits 0 vs 1 (8×8)"
        return x[tr], 2.0 * t[tr] - 1.0, x[te], 2.0 * t[te] - 1.0, stand_in
    if dataset == "mnist":
        from .hub import load_hub

        ds = load_hub(source or MNIST_HUB, None, "fastrates_download_mnist")
        out = []
        for split in ("train", "test"):
            part = ds[split]
            lab = np.asarray(part["label"])
            idx = np.flatnonzero(np.isin(lab, (0, 1)))
            rows = part.select(idx.tolist())
            x = np.stack(
                [np.asarray(im.convert("L"), dtype=np.float64) / 255.0 for im in rows["image"]]
            )
            out += [x, 2.0 * lab[idx] - 1.0]
        return (*out, None)
    raise ValueError(f"unknown Fig 6 dataset {dataset!r} (digits | mnist)")


def patch_tokens(
    images: np.ndarray, patch: int, E: np.ndarray, pos: np.ndarray | None = None
) -> np.ndarray:
    """Tokens (n, P + 1, d): the non-overlapping patch×patch patches of each image (row-major,
    flattened) mapped by E (patch² × d), plus the position embeddings ``pos`` (P, d) when given,
    preceded by the query token = the mean of the patch embeddings (before positions are added)."""
    n, H, W = images.shape
    if H % patch or W % patch:
        raise ValueError(f"{H}×{W} images do not split into {patch}×{patch} patches")
    p = images.reshape(n, H // patch, patch, W // patch, patch)
    p = p.transpose(0, 1, 3, 2, 4).reshape(n, -1, patch * patch)
    emb = p @ E
    query = emb.mean(axis=1, keepdims=True)
    if pos is not None:
        emb = emb + pos
    return np.concatenate([query, emb], axis=1)
