"""The fake hub (tests/rehearsal/fake_hub.py) is read by the project's own paper-preset loaders,
unchanged, when the ``source`` / ``model`` / ``tokenizer`` setting is its local folder: every
artefact, with the properties the paper preset relies on (shapes, label sets, split names, token
ids, checkpoint layouts)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.slow  # writing the fake hub takes about 10 s

_spec = importlib.util.spec_from_file_location("fake_hub", Path(__file__).with_name("fake_hub.py"))
fake_hub = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_hub)

EXPECTED_FILES = {
    "uoft-cs/cifar10": ["README.md", "plain_text/train-00000-of-00001.parquet",
                        "plain_text/test-00000-of-00001.parquet"],
    "ylecun/mnist": ["README.md", "mnist/train-00000-of-00001.parquet",
                     "mnist/test-00000-of-00001.parquet"],
    "nyu-mll/glue": ["README.md",
                     *(f"mnli/{s}-00000-of-00001.parquet" for s in fake_hub.MNLI_SPLITS),
                     *(f"mnli_{w}/{s}-00000-of-00001.parquet" for w in ("matched", "mismatched")
                       for s in ("validation", "test"))],
    "google/civil_comments": ["README.md", "data/train-00000-of-00002.parquet",
                              "data/train-00001-of-00002.parquet",
                              "data/validation-00000-of-00001.parquet",
                              "data/test-00000-of-00001.parquet"],
    "monology/pile-uncopyrighted": ["README.md", "train/00.jsonl.zst", "train/01.jsonl.zst",
                                    "train/02.jsonl.zst", "val.jsonl.zst", "test.jsonl.zst"],
    "ILSVRC/imagenet-1k": ["README.md", "data/train-00000-of-00002.parquet",
                           "data/train-00001-of-00002.parquet",
                           "data/validation-00000-of-00001.parquet",
                           "data/test-00000-of-00001.parquet"],
    "openai-community/gpt2": ["config.json", "merges.txt", "tokenizer.json",
                              "tokenizer_config.json", "vocab.json"],
    "google-bert/bert-base-uncased": ["config.json", "model.safetensors", "tokenizer.json",
                                      "tokenizer_config.json", "vocab.txt"],
    "meta-llama/Llama-2-7b-hf": ["config.json", "generation_config.json",
                                 "model-00001-of-00002.safetensors",
                                 "model-00002-of-00002.safetensors",
                                 "model.safetensors.index.json"],
    "meta-llama/Llama-2-13b-hf": ["config.json", "generation_config.json",
                                  *(f"model-0000{k}-of-00003.safetensors" for k in (1, 2, 3)),
                                  "model.safetensors.index.json"],
}  # fmt: skip


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> dict[str, str]:
    paths = fake_hub.write_fake_hub(tmp_path_factory.mktemp("fake_hub"))
    return {k: str(v) for k, v in paths.items()}


def _digest(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}  # fmt: skip


def test_every_artefact_in_the_hub_layout_small_and_deterministic(hub, tmp_path):
    assert set(hub) == set(EXPECTED_FILES) == set(fake_hub.HUB_IDS.values())
    total = 0
    for hub_id, d in hub.items():
        assert d.endswith(hub_id)
        files = sorted(str(p.relative_to(d)) for p in Path(d).rglob("*") if p.is_file())
        assert files == sorted(EXPECTED_FILES[hub_id]), hub_id
        total += sum(p.stat().st_size for p in Path(d).rglob("*") if p.is_file())
    assert total < 10e6
    manifest = json.loads((Path(hub["ylecun/mnist"]).parents[1] / "fake_hub.json").read_text())
    assert set(manifest) == set(hub)
    # fixed seeds: a second write is byte-identical (the writers with random content)
    for key in ("mnli", "civil_comments", "pile", "gpt2", "bert", "llama7b"):
        d = tmp_path / key
        d.mkdir()
        fake_hub.WRITERS[key](d)
        assert _digest(d) == _digest(Path(hub[fake_hub.HUB_IDS[key]])), key


def test_cifar10(hub):
    import datasets

    from attnbias.data.images import load_cifar10

    src = hub["uoft-cs/cifar10"]
    sp = load_cifar10(src)
    assert sp.x_train.shape == (100, 3, 32, 32) and sp.x_train.dtype == torch.uint8
    assert sp.x_test.shape == (50, 3, 32, 32)
    assert torch.bincount(sp.y_train).tolist() == [10] * 10
    assert torch.bincount(sp.y_test).tolist() == [5] * 10
    assert 20 < float(sp.x_train.float().std()) < 120  # not constant, not pure noise
    feats = datasets.load_dataset(src)["train"].features
    assert list(feats) == ["img", "label"] and tuple(feats["label"].names) == fake_hub.CIFAR10_NAMES


def test_mnist_digits_zero_and_one(hub):
    from attnbias.data.digits import digit01_images, patch_tokens

    x_tr, y_tr, x_te, y_te, stand_in = digit01_images("mnist", hub["ylecun/mnist"], 0, 0.2)
    assert stand_in is None
    assert x_tr.shape == (20, 28, 28) and x_te.shape == (10, 28, 28)
    assert set(y_tr.tolist()) == {-1.0, 1.0} and y_tr.sum() == 0
    assert 0.0 <= x_tr.min() and x_tr.max() <= 1.0 and x_tr.max() > 0.9  # the drawn digit
    E = np.random.default_rng(0).normal(size=(49, 8))
    assert patch_tokens(x_tr, 7, E).shape == (20, 17, 8)  # the paper's 7×7 patches
    from attnbias.experiments.fastrates.mnist import MnistSettings, compute_fig6

    settings = MnistSettings(
        dataset="mnist", source=hub["ylecun/mnist"], patch=7, embed_dim=64, pos_scale=1.0, lr=0.1,
        polyak_lr=1.0, polyak_cap=None, steps=20, per_decade=40, proj_seed=0, data_seed=0,
        test_fraction=0.2,
    )  # fmt: skip
    df, meta = compute_fig6(settings)
    assert (meta["n_train"], meta["n_test"], meta["T"], meta["d"]) == (20, 10, 17, 64)


def test_mnli(hub):
    import datasets

    from attnbias.data.text import MNLI_LABELS, load_hub, load_text_dataset

    src = hub["nyu-mll/glue"]
    with pytest.raises(ValueError, match="[Cc]onfig"):  # several configs, none the default
        datasets.load_dataset(src)
    assert datasets.load_dataset(src, "mnli_matched")["validation"].num_rows == 60
    ds = load_hub(src, "mnli", None)
    assert set(ds) == set(fake_hub.MNLI_SPLITS)
    assert ds["train"].column_names == ["premise", "hypothesis", "label", "idx"]
    assert set(ds["test_matched"]["label"]) == {-1}
    sp = load_text_dataset("mnli", src, n_train=None, n_val=50, n_test=None, seed=0)
    assert sp.label_names == MNLI_LABELS and sp.num_labels == 3
    assert sp.sizes() == {"train": 250, "val": 50, "test": 60}
    assert set(sp.train.label.tolist()) == {0, 1, 2} and len(sp.train.text_pair) == 250


def test_civil_comments(hub):
    from attnbias.data.text import load_text_dataset

    src = hub["google/civil_comments"]
    # the paper preset's sizes ask for more rows than the fake has: every row is used
    sp = load_text_dataset("civil_comments", src, n_train=269038, n_val=5000, n_test=10000)
    assert sp.sizes() == {"train": 400, "val": 100, "test": 120}
    frac = sp.train.label.mean()
    assert sp.label_names == ("non-toxic", "toxic") and 0.1 < frac < 0.35
    small = load_text_dataset("civil_comments", src, n_train=50, n_val=20, n_test=30)
    assert small.sizes() == {"train": 50, "val": 20, "test": 30, "final_test": 120}


def test_gpt2_tokenizer_is_gpt2_shaped(hub):
    from attnbias.data.text_lm import EOS, hub_tokenizer

    src = Path(hub["openai-community/gpt2"])
    tok = hub_tokenizer(str(src))
    assert tok.vocab_size == fake_hub.GPT2_VOCAB and tok.eos_id == tok.vocab_size - 1
    vocab = json.loads((src / "vocab.json").read_text())
    assert vocab["!"] == 0 and vocab["Ġ"] == 220 and vocab[EOS] == tok.eos_id  # as in GPT-2
    assert (src / "merges.txt").read_text().startswith("#version: 0.2\n")
    assert tok.encode(EOS) == [tok.eos_id]
    text = fake_hub.pile_documents()["test"][3]["text"] + " Zürich – 東京\n\tdef f(x):"
    ids = tok.encode(text)
    assert max(ids) < tok.eos_id and tok.decode(ids) == text
    assert len(ids) < 0.6 * len(text.encode())  # merges learnt from the fake Pile


def test_pile_tokens_through_the_download_rule(hub, tmp_path):
    from attnbias.data import text_lm

    src, tok_dir = hub["monology/pile-uncopyrighted"], hub["openai-community/gpt2"]
    docs = fake_hub.pile_documents()
    train_texts = [r["text"] for s in ("train/00", "train/01", "train/02") for r in docs[s]]
    assert list(text_lm.iter_hub_texts(src, "train")) == train_texts
    assert list(text_lm.iter_hub_texts(src, "val.jsonl.zst")) == [r["text"] for r in docs["val"]]
    import zstandard

    raw = zstandard.ZstdDecompressor().decompress(
        (Path(src) / "test.jsonl.zst").read_bytes(), max_output_size=1 << 24
    )
    first = json.loads(raw.decode().splitlines()[0])
    assert set(first) == {"text", "meta"} and first["meta"]["pile_set_name"] in fake_hub.PILE_SETS
    df, meta = text_lm.download_pile(src, tok_dir, str(tmp_path / "tok"), 5000, 10**9)
    corpus = text_lm.load_token_dir(tmp_path / "tok")
    assert meta["prepared"]["splits"]["val"] == "test.jsonl.zst" and meta["prepared"]["dtype"] == (
        "uint16"
    )
    assert len(corpus.train) == 5000 and corpus.vocab_size == fake_hub.GPT2_VOCAB
    tok = text_lm.hub_tokenizer(tok_dir)
    expected = text_lm.encode_documents(tok, [r["text"] for r in docs["test"]])
    np.testing.assert_array_equal(np.asarray(corpus.val), expected)
    assert int((np.asarray(corpus.val) == corpus.eos_id).sum()) == len(docs["test"])
    assert len(corpus.val) > 8 * 1024  # several GPT-2 context windows to validate on
    assert text_lm.eval_windows(corpus.val, 1024).shape[1] == 1024
    assert int(df.val_tokens.iloc[0]) == len(expected)


def test_bert_tokenizer_and_classifier(hub):
    from safetensors import safe_open

    from attnbias.data.hub import fetch_assets
    from attnbias.data.text import encode, load_text_dataset
    from attnbias.models.sequence import forward_logits, load_classifier, load_tokenizer

    src = hub["google-bert/bert-base-uncased"]
    tok = load_tokenizer(src)
    assert len(tok) == 30522 and (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id) == (
        101, 102, 0,
    )  # fmt: skip
    assert tok.tokenize("Hello WORLD") == ["hello", "world"]
    net = load_classifier(src, 3, seed=0)
    # every encoder weight comes from the file, the legacy LayerNorm gamma/beta names included
    params = net.state_dict()
    with safe_open(str(Path(src) / "model.safetensors"), "pt") as f:
        keys = [k for k in f.keys() if k.startswith("bert.")]
        assert any(k.endswith("LayerNorm.gamma") for k in keys)
        for k in keys:
            name = k.replace("LayerNorm.gamma", "LayerNorm.weight")
            torch.testing.assert_close(
                params[name.replace("LayerNorm.beta", "LayerNorm.bias")], f.get_tensor(k)
            )
    assert net.config.max_position_embeddings == 512
    mnli = load_text_dataset("mnli", hub["nyu-mll/glue"], n_val=10)
    batch = encode(tok, mnli.train.subset(range(4)), 128)
    assert int(batch["token_type_ids"].sum()) > 0  # pairs: segment B present
    logits = forward_logits(net, batch)
    assert logits.shape == (4, 3) and torch.isfinite(logits).all()
    civil = load_text_dataset("civil_comments", hub["google/civil_comments"], 10, 10, 10)
    batch = encode(tok, civil.train.subset(range(2)), 300)  # the paper's max_length
    assert forward_logits(load_classifier(src, 2), batch, trim=False).shape == (2, 2)
    df, _ = fetch_assets("model", [src])
    assert df.part.tolist() == ["weights"] and 10**6 < int(df.rows.iloc[0]) < 2 * 10**6


def test_imagenet(hub):
    from attnbias.data.imagenet import HubImageBatches, download_image_dataset, load_image_dataset

    src = hub["ILSVRC/imagenet-1k"]
    train, test = load_image_dataset("imagenet", src)
    assert (len(train), len(test)) == (48, 16)
    assert train.features["label"].num_classes == 1000
    assert set(train["label"]) == set(test["label"]) == set(fake_hub.IMAGENET_CLASSES)
    images = train["image"]
    assert {im.format for im in images} == {"JPEG"}
    assert {im.mode for im in images} == {"RGB", "L", "CMYK"}
    assert len({im.size for im in images}) > 10 and max(max(im.size) for im in images) <= 192
    b = HubImageBatches(train, 224, 8, seed=0, steps_per_epoch=6, mixup=0.2, workers=2)
    out, again = b(0), b(0)
    assert out["x"].shape == (8, 3, 224, 224) and torch.equal(out["x"], again["x"])
    assert set(out["y"].tolist()) <= set(fake_hub.IMAGENET_CLASSES)
    ev = HubImageBatches(test, 224, 8, seed=0, steps_per_epoch=1, workers=2)
    assert [x.shape[0] for x, _ in ev.eval_batches(batch=8)] == [8, 8]
    df, _ = download_image_dataset(src)
    assert (int(df.train.iloc[0]), int(df.test.iloc[0])) == (48, 16)


@pytest.mark.parametrize(
    "hub_id, layers, heads, d",
    [("meta-llama/Llama-2-7b-hf", 2, 4, 64), ("meta-llama/Llama-2-13b-hf", 3, 5, 80)],
)
def test_llama_factors_and_balance(hub, hub_id, layers, heads, d):
    from transformers import LlamaForCausalLM

    from attnbias.data.pretrained import (
        download_models,
        resolve_model_dir,
        safetensors_layer_factors,
    )
    from attnbias.experiments.lowrank.balance import pretrained_balance
    from attnbias.metrics.rank import model_factors

    src = hub[hub_id]
    assert resolve_model_dir(src) == src
    index = json.loads((Path(src) / "model.safetensors.index.json").read_text())["weight_map"]
    layer0 = {index[f"model.layers.0.self_attn.{p}_proj.weight"] for p in "qkvo"}
    assert len(layer0) == 2  # one layer's projections span two shards, as in the real ones
    factors = list(safetensors_layer_factors(src))
    assert len(factors) == layers
    for f in factors:
        for product in ("kq", "pv"):
            assert [x.shape for x in f[product]] == [(heads, d, d // heads)] * 2
    # the same factors as transformers' own loading of the sharded checkpoint
    model = LlamaForCausalLM.from_pretrained(src, dtype=torch.float16)
    ref = model_factors(model)
    np.testing.assert_allclose(factors[-1]["kq"][0], ref[-1]["kq"][0], rtol=1e-6)
    df, meta = pretrained_balance(src, "paper")
    assert len(df) == layers * heads * 2 and meta["architecture"]["layers"] == layers
    assert ((df.ratio > 0) & (df.ratio <= 1 + 1e-9)).all()
    out, _ = download_models([src])
    assert out.path.tolist() == [src]


@pytest.mark.parametrize(
    "hub_id, config, splits",
    [
        ("uoft-cs/cifar10", None, {"train": 100, "test": 50}),
        ("ylecun/mnist", None, {"train": 100, "test": 50}),
        ("nyu-mll/glue", "mnli", fake_hub.SIZES["mnli"]),
        ("google/civil_comments", None, fake_hub.SIZES["civil_comments"]),
    ],
)
def test_dataset_download_rules(hub, hub_id, config, splits):
    """The paper preset's download rules for hub datasets (fetch_assets with the workflow's
    config per dataset) accept the local folders."""
    from attnbias.data.hub import fetch_assets

    df, meta = fetch_assets("dataset", [hub[hub_id]], config)
    assert dict(zip(df.part, df.rows, strict=True)) == splits and meta["config"] == config
