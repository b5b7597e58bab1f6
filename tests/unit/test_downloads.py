"""Download steps of the paper preset: local sources, offline mode failing at once, and the Pile
token files resumable per split (tiny local files in the hub layout, no network)."""

import importlib.util
import json

import numpy as np
import pytest

from attnbias.data import hub, text_lm
from attnbias.data.hub import DatasetUnavailable


def _pile(root):
    """A tiny Pile copy in the hub layout: train shards in train/, the test set in one file."""
    (root / "train").mkdir(parents=True)
    docs = {
        "train/00.jsonl": [f"training document number {i}" for i in range(40)],
        "test.jsonl": [f"test document {i}" for i in range(15)],
    }
    for name, texts in docs.items():
        with open(root / name, "w") as f:
            f.writelines(json.dumps({"text": t}) + "\n" for t in texts)
    return docs


def _tokenizer(root):
    """A hub-layout tokenizer directory with an end-of-text token (loads offline)."""
    from transformers import PreTrainedTokenizerFast

    bpe = text_lm.train_bpe(["training document number test"] * 10, vocab_size=270)
    PreTrainedTokenizerFast(tokenizer_object=bpe.tok, eos_token=text_lm.EOS).save_pretrained(root)
    return str(root)


@pytest.fixture
def pile(tmp_path):
    _pile(tmp_path / "pile")
    return dict(
        source=str(tmp_path / "pile"),
        tokenizer=_tokenizer(tmp_path / "tok"),
        train_tokens=150,
        val_tokens=10**6,
        train_split="train",
        val_split="test.jsonl",
    )


ITER_HUB_TEXTS = text_lm.iter_hub_texts


def _recording(monkeypatch, fail_on=None):
    """Record the splits streamed; ``fail_on``: the stream of that split breaks after 5 texts."""
    calls, real = [], ITER_HUB_TEXTS

    def fake(source, split, text_key="text"):
        calls.append(split)
        for i, text in enumerate(real(source, split, text_key)):
            if split == fail_on and i == 5:
                raise ConnectionError("stream broke")
            yield text

    monkeypatch.setattr(text_lm, "iter_hub_texts", fake)
    return calls


def test_pile_tokens_resume_after_a_failure_during_val(pile, tmp_path, monkeypatch):
    ref = text_lm.download_pile(out_dir=str(tmp_path / "ref"), **pile)[1]["prepared"]
    out = tmp_path / "out"
    calls = _recording(monkeypatch, fail_on="test.jsonl")
    with pytest.raises(ConnectionError):
        text_lm.prepare_hub_tokens(out_dir=out, batch_docs=2, **pile)
    assert calls == ["train", "test.jsonl"]
    assert (out / "train.bin").exists() and (out / "train.json").exists()
    assert (out / "val.bin.tmp").exists()  # the partial file of the failed split
    assert not (out / "val.bin").exists() and not (out / "tokens.json").exists()
    train_stat = (out / "train.bin").stat()

    calls = _recording(monkeypatch)
    desc = text_lm.download_pile(out_dir=str(out), **pile)[1]["prepared"]
    assert calls == ["test.jsonl"]  # the finished train.bin is kept, only val is produced
    assert (out / "train.bin").stat().st_mtime_ns == train_stat.st_mtime_ns
    assert not list(out.glob("*.tmp"))
    assert desc == ref
    for name in ("train.bin", "val.bin"):
        assert (out / name).read_bytes() == (tmp_path / "ref" / name).read_bytes()
    corpus = text_lm.load_token_dir(out)
    assert len(corpus.train) == 150 and len(corpus.val) == desc["tokens"]["val"]

    # other settings for the training split: it is made again; the finished val.bin is kept
    calls = _recording(monkeypatch)
    desc = text_lm.download_pile(out_dir=str(out), **dict(pile, train_tokens=100))[1]["prepared"]
    assert calls == ["train"] and desc["tokens"]["train"] == 100
    assert len(text_lm.load_token_dir(out).train) == 100


def test_pile_without_zstandard_says_to_install_the_paper_extra(pile, tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "zstandard" else real(n, *a)
    )
    with pytest.raises(DatasetUnavailable) as err:
        text_lm.download_pile(
            out_dir=str(tmp_path / "out"), **dict(pile, val_split="test.jsonl.zst")
        )
    msg = str(err.value)
    assert "zstandard" in msg and "pip install -e '.[paper]'" in msg
    assert "network" not in msg


@pytest.mark.parametrize(
    "value,local",
    [
        ("/data/pile", True),
        ("./pile", True),
        ("../pile", True),
        ("~/pile", True),
        ("monology/pile-uncopyrighted", False),
        ("gpt2", False),
        ("minilm", False),
        (None, False),
    ],
)
def test_local_source_rule(value, local):
    assert hub.is_local(value) is local


def test_an_existing_directory_is_local(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "name").mkdir(parents=True)
    assert hub.is_local("org/name") and not hub.is_local("org/other")


def test_offline_uncached_fails_at_once_and_cached_or_local_passes(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    for var in hub.OFFLINE_VARS:
        monkeypatch.delenv(var, raising=False)
    assets = [("dataset", "uoft-cs/cifar10"), ("model", "google-bert/bert-base-uncased")]
    hub.require_cached(assets)  # online: the loaders do the work
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    assert hub.offline_vars() == ["TRANSFORMERS_OFFLINE"]
    with pytest.raises(DatasetUnavailable) as err:
        hub.require_cached(assets, rule="maxmargin_download_cifar10")
    msg = str(err.value)
    assert "uoft-cs/cifar10" in msg and "maxmargin_download_cifar10" in msg
    assert "Offline mode is on (TRANSFORMERS_OFFLINE)" in msg and "local directory" in msg
    (tmp_path / "hub" / "datasets--uoft-cs--cifar10").mkdir(parents=True)
    with pytest.raises(DatasetUnavailable, match="bert-base-uncased"):
        hub.require_cached(assets)
    (tmp_path / "hub" / "models--google-bert--bert-base-uncased").mkdir(parents=True)
    hub.require_cached(assets)  # both cached: the loaders read the cache
    hub.require_cached([("dataset", str(tmp_path / "local"))])  # local: never a hub artefact
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    assert hub.offline_vars() == []


def test_pile_tokens_record_their_settings(pile, tmp_path):
    out = tmp_path / "out"
    text_lm.prepare_hub_tokens(out_dir=out, **pile)
    record = json.loads((out / "train.json").read_text())
    assert record["split"] == "train" and record["limit"] == 150 and record["tokens"] == 150
    assert np.fromfile(out / "train.bin", dtype=record["dtype"]).size == 150


def test_hub_unreachable_probe(monkeypatch):
    for var in hub.PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    reason = hub.hub_unreachable(timeout=2)
    assert reason and reason.startswith("http://127.0.0.1:9: ")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert hub.hub_unreachable(timeout=2) is None  # behind a proxy the libraries decide
