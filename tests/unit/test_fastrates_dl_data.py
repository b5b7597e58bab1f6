"""fastrates Figs 1/4/6: text loaders (shipped tweets, GLUE MNLI and CivilComments in the hub
layout), tokenization, and the clear offline errors of every hub asset."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_runs import fig6_run, image_run

from attnbias.data.hub import DatasetUnavailable
from attnbias.data.text import (
    encode,
    load_civil_comments,
    load_mnli,
    load_text_dataset,
    load_tweets,
    tweets_table,
)


def _write_glue_mnli(root, n_train=40, n_val=12):
    """A tiny GLUE MNLI in the hub layout of nyu-mll/glue: mnli/<split>-00000-of-00001.parquet and
    the README.md `configs:` block that maps the config's splits to files.  (``datasets`` caches a
    local directory by its name, so every test passes a directory of its own name.)"""
    import datasets

    feats = datasets.Features(
        {
            "premise": datasets.Value("string"),
            "hypothesis": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["entailment", "neutral", "contradiction"]),
            "idx": datasets.Value("int32"),
        }
    )
    (root / "mnli").mkdir(parents=True, exist_ok=True)
    for split, n in (
        ("train", n_train),
        ("validation_matched", n_val),
        ("validation_mismatched", n_val),
        ("test_matched", 5),
    ):
        labels = [-1] * n if split.startswith("test") else [i % 3 for i in range(n)]
        if split == "train":
            labels[0] = -1  # an unlabelled row, to be dropped
        ds = datasets.Dataset.from_dict(
            {
                "premise": [f"{split} premise {i}" for i in range(n)],
                "hypothesis": [f"{split} hypothesis {i}" for i in range(n)],
                "label": labels,
                "idx": list(range(n)),
            },
            features=feats,
        )
        ds.to_parquet(str(root / "mnli" / f"{split}-00000-of-00001.parquet"))
    splits = ("train", "validation_matched", "validation_mismatched", "test_matched")
    lines = ["---", "configs:", "- config_name: mnli", "  data_files:"]
    for split in splits:
        lines += [f"  - split: {split}", f"    path: mnli/{split}-*"]
    (root / "README.md").write_text("\n".join(lines + ["---", ""]))
    return root


def _write_civil_comments(root, n=(60, 20, 30)):
    """A tiny google/civil_comments in the hub layout: data/<split>-00000-of-00001.parquet, columns
    text and the float toxicity (plus another attribute column, ignored)."""
    import datasets

    (root / "data").mkdir(parents=True, exist_ok=True)
    for split, k in zip(("train", "validation", "test"), n, strict=True):
        tox = np.linspace(0.0, 1.0, k, dtype=np.float32)
        ds = datasets.Dataset.from_dict(
            {
                "text": [f"{split} comment {i}" for i in range(k)],
                "toxicity": tox.tolist(),
                "insult": [0.0] * k,
            }
        )
        ds.to_parquet(str(root / "data" / f"{split}-00000-of-00001.parquet"))
    return root


def test_tweets_are_deduplicated_stratified_and_disjoint():
    table = tweets_table()
    assert table.text.is_unique
    assert 36_000 < len(table) < 37_243  # 38,158 rows, 915 repeated texts, conflicting ones dropped
    sp = load_tweets("sentiment", 600, 150, 300, seed=0)
    assert sp.num_labels == 3 and sp.label_names == ("negative", "neutral", "positive")
    assert (len(sp.train), len(sp.val), len(sp.test)) == (600, 150, 300)
    assert not (set(sp.train.text) & set(sp.test.text)) and not (
        set(sp.train.text) & set(sp.val.text)
    )
    full = np.bincount(
        table.sentiment.map({"negative": 0, "neutral": 1, "positive": 2}), minlength=3
    ) / len(table)
    for part in (sp.train, sp.test):
        frac = np.bincount(part.label, minlength=3) / len(part)
        assert np.abs(frac - full).max() < 0.01  # stratified
    again = load_tweets("sentiment", 600, 150, 300, seed=0)
    assert again.train.text == sp.train.text  # fixed seed


def test_tweets_binary_task_is_negative_vs_rest():
    sp = load_text_dataset("tweets_negative", n_train=400, n_val=100, n_test=200, seed=1)
    assert sp.num_labels == 2 and sp.name == "tweets_negative" and "stand-in" not in sp.name
    assert set(np.unique(sp.train.label)) == {0, 1}
    table = tweets_table().set_index("text")
    truth = (table.loc[sp.train.text, "sentiment"] == "negative").to_numpy(np.int64)
    np.testing.assert_array_equal(sp.train.label, truth)
    assert 0.38 < sp.train.label.mean() < 0.48  # 43 % of the unique tweets are negative


def test_mnli_loader_on_local_hub_layout(tmp_path):
    root = _write_glue_mnli(tmp_path / "glue_full")
    sp = load_mnli(str(root), "mnli", n_train=None, n_val=9, n_test=None, seed=0)
    assert sp.label_names == ("entailment", "neutral", "contradiction")
    assert (len(sp.train), len(sp.val), len(sp.test)) == (30, 9, 12)  # 39 labelled train rows
    assert (
        sp.test.text[0] == "validation_matched premise 0"
        and sp.test.text_pair[0] == "validation_matched hypothesis 0"
    )
    assert not set(sp.train.text) & set(sp.val.text)
    assert "train premise 0" not in sp.train.text + sp.val.text  # label −1 dropped
    for part in (sp.train, sp.val, sp.test):  # the label follows its pair: row i has label i % 3
        idx = np.array([int(t.rsplit(" ", 1)[1]) for t in part.text])
        np.testing.assert_array_equal(part.label, idx % 3)
    sub = load_mnli(str(root), "mnli", n_train=10, n_val=5, n_test=6, seed=3)
    assert (len(sub.train), len(sub.val), len(sub.test)) == (10, 5, 6)
    # the paper preset's n_val = 5000 on a small copy would leave no training rows: an error
    with pytest.raises(ValueError, match="leaves no training rows"):
        load_mnli(str(root), "mnli", n_train=None, n_val=39, n_test=None, seed=0)


def test_civil_comments_loader_thresholds_toxicity(tmp_path):
    root = _write_civil_comments(tmp_path / "cc")
    sp = load_civil_comments(
        str(root), n_train=None, n_val=10, n_test=12, threshold=0.5, full_final_test=True, seed=0
    )
    assert (len(sp.train), len(sp.val), len(sp.test), len(sp.final_test)) == (60, 10, 12, 30)
    # train toxicity is linspace(0, 1, 60): rows 30..59 have toxicity ≥ 0.5
    idx = np.array([int(t.rsplit(" ", 1)[1]) for t in sp.train.text])
    np.testing.assert_array_equal(
        sp.train.label, (np.linspace(0, 1, 60, dtype=np.float32)[idx] >= 0.5).astype(int)
    )
    assert sp.train.label.sum() == 30 and sp.final_test.label.sum() == 15
    assert set(sp.test.text) <= set(sp.final_test.text)
    no_final = load_civil_comments(
        str(root), n_train=20, n_val=5, n_test=None, full_final_test=True
    )
    assert no_final.final_test is None and len(no_final.test) == 30 and len(no_final.train) == 20


@pytest.mark.parametrize(
    "call,names",
    [
        (lambda: load_mnli(), ["nyu-mll/glue", "mnli", "fastrates_download_mnli"]),
        (
            lambda: load_civil_comments(),
            ["google/civil_comments", "fastrates_download_civil_comments"],
        ),
    ],
)
def test_hub_datasets_fail_offline_with_instructions(monkeypatch, call, names):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DatasetUnavailable) as err:
        call()
    msg = str(err.value)
    for name in names + ["load_dataset", "scale=quick", "$HF_HOME"]:
        assert name in msg, (name, msg)


def test_mnist_fails_offline_with_instructions(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(
        DatasetUnavailable, match=r"(?s)ylecun/mnist.*fastrates_download_mnist.*scale=quick"
    ):
        fig6_run("mnist", 7, 64, 0.1, 10)


def test_hub_model_fails_offline_with_instructions(monkeypatch):
    from attnbias.models.sequence import ModelUnavailable, load_classifier, load_tokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    for call in (
        lambda: load_tokenizer("google-bert/bert-base-uncased"),
        lambda: load_classifier("google-bert/bert-base-uncased", 3),
    ):
        with pytest.raises(ModelUnavailable) as err:
            call()
        msg = str(err.value)
        assert (
            "google-bert/bert-base-uncased" in msg
            and "fastrates_download_bert-base-uncased" in msg
            and "scale=quick" in msg
        )


def test_encode_uses_the_model_tokenizer_for_single_texts_and_pairs(tmp_path):
    from attnbias.models.sequence import load_tokenizer

    tok = load_tokenizer("minilm")
    root = _write_glue_mnli(tmp_path / "glue_small", n_train=8, n_val=4)
    pairs = load_mnli(str(root), "mnli", n_val=2).test
    enc = encode(tok, pairs, max_length=16)
    assert enc["input_ids"].shape == (4, 16) and str(enc["input_ids"].dtype) == "torch.int32"
    assert str(enc["attention_mask"].dtype) == "torch.int8" and str(enc["y"].dtype) == "torch.int64"
    ids = enc["input_ids"][0].tolist()
    assert (
        ids[0] == tok.cls_token_id and ids.count(tok.sep_token_id) == 2
    )  # [CLS] premise [SEP] hypothesis [SEP]
    assert int(enc["token_type_ids"][0].sum()) > 0  # the hypothesis is segment 1
    assert (
        tok.decode(ids, skip_special_tokens=True)
        == "validation _ matched premise 0 validation _ matched hypothesis 0"
    )
    tweets = load_tweets("sentiment", 30, 10, 10, seed=0).train
    single = encode(tok, tweets, max_length=64)
    assert int(single["token_type_ids"].sum()) == 0
    lengths = single["attention_mask"].sum(1)
    assert int(lengths.min()) >= 3 and int(lengths.max()) <= 64


def _write_hub_images(root, split_sizes, size, mode, column, n_classes=10, seed=0):
    """Tiny image datasets in the hub layout (<config>/<split>-00000-of-00001.parquet; an Image
    column and a ClassLabel ``label``), like ylecun/mnist (config dir mnist, column image) and
    uoft-cs/cifar10 (plain_text, img)."""
    import datasets
    from PIL import Image

    feats = datasets.Features(
        {column: datasets.Image(), "label": datasets.ClassLabel(num_classes=n_classes)}
    )
    rng = np.random.default_rng(seed)
    shape = (size, size) if mode == "L" else (size, size, 3)
    for split, n in split_sizes.items():
        imgs = [
            Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode) for _ in range(n)
        ]
        ds = datasets.Dataset.from_dict(
            {column: imgs, "label": [i % n_classes for i in range(n)]}, features=feats
        )
        root.mkdir(parents=True, exist_ok=True)
        ds.to_parquet(str(root / f"{split}-00000-of-00001.parquet"))
    return root.parent


def test_fig6_reads_mnist_zeros_and_ones_from_the_hub_layout(tmp_path):
    src = _write_hub_images(
        tmp_path / "mnist_tiny" / "mnist", {"train": 40, "test": 20}, 28, "L", "image"
    )
    df, meta = fig6_run(
        "mnist", 7, 16, 0.1, 20, pos_scale=1.0, polyak_cap=100.0, source=str(src)
    )
    assert (meta["n_train"], meta["n_test"], meta["T"], meta["d"]) == (
        8,
        4,
        17,
        16,
    )  # labels i % 10 ∈ {0, 1}
    assert meta["stand_in"] is None and meta["dataset"] == "mnist"
    assert set(df.method) == {"gd", "ngd", "polyak"} and df.t.max() == 20


def test_fig7_trains_on_cifar10_in_the_hub_layout(tmp_path):
    src = _write_hub_images(
        tmp_path / "cifar_tiny" / "plain_text", {"train": 24, "test": 10}, 32, "RGB", "img"
    )
    df, meta = image_run(
        figure="fig7",
        dataset="cifar10",
        source=str(src),
        image_size=32,
        patch_size=8,
        hidden=16,
        layers=1,
        heads=2,
        mlp=32,
        dropout=0.1,
        batch_size=8,
        epochs=1,
        select_at=None,
        n_val=8,
        opt="sps",
        lr=0.1,
        opt_settings={"cap": 3.0},
        augment_pad=4,
        augment_flip=True,
        accelerator="cpu",
    )["csv"]
    assert meta["sizes"] == {"train": 16, "val": 8, "test": 10} and meta["model"]["tokens"] == 17
    assert sum(meta["data_info"]["class_counts"]) == 10  # the "trained" check's baseline
    assert meta["stand_in"] is None and meta["augment"] == {"pad": 4, "flip": True}
    assert df.step.tolist() == [0, 2] and df.test_acc.notna().all()


def test_image_training_subsample_keeps_every_class_share():
    """fastrates Fig 7's n_train: a fixed-seed subsample of the training images (after the
    validation split is held out), each class in its share; null keeps them all."""
    import numpy as np
    import torch

    from attnbias.experiments.fastrates.image import _image_splits

    _, full, val, _ = _image_splits("digits", None, 200, 0)
    _, sub, val2, _ = _image_splits("digits", None, 200, 0, n_train=250)
    assert len(sub["y"]) == 250 and torch.equal(val["y"], val2["y"])
    share = np.bincount(full["y"].numpy(), minlength=10) / len(full["y"])
    counts = np.bincount(sub["y"].numpy(), minlength=10)
    assert np.all(np.abs(counts - 250 * share) < 1.0)
    # the subsample is part of the full training split, and the same on every call
    rows = {tuple(x.flatten().tolist()) for x in full["x"]}
    assert all(tuple(x.flatten().tolist()) in rows for x in sub["x"])
    _, again, _, _ = _image_splits("digits", None, 200, 0, n_train=250)
    assert torch.equal(again["x"], sub["x"])
    with pytest.raises(ValueError, match="more than the"):
        _image_splits("digits", None, 200, 0, n_train=10_000)
