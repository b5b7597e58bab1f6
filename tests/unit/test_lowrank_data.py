"""lowrank data for Fig 3 / Table 1 / Fig 4: tokenizers and LM text, deterministic token windows,
hub-format loaders on tiny local files (the Pile layout, ImageNet parquet) and their offline
errors, one ViT run on ImageNet-format data, and the LLaMA safetensors reader
(:mod:`attnbias.data.text_lm`, :mod:`attnbias.data.imagenet`, :mod:`attnbias.data.pretrained`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from attnbias.claims import lowrank as lowrank_claims
from attnbias.data import text_lm
from attnbias.data.hub import DatasetUnavailable
from attnbias.data.imagenet import HubImageBatches, load_image_dataset
from attnbias.data.pretrained import resolve_model_dir, safetensors_layer_factors
from attnbias.experiments import lowrank as lr
from attnbias.metrics import rank as rk

# ---------------------------------------------------------------------------------------------
# tokenizers and text


def test_char_tokenizer_roundtrip_unknowns_and_json():
    tok = text_lm.CharTokenizer.fit(["abba", "cab", "zz"], min_count=2)
    # counts a:3, b:3, c:1, z:2 → kept a, b, z (most frequent first, ties by code point)
    assert tok.chars == ["a", "b", "z"]
    assert (tok.eos_id, tok.unk_id, tok.vocab_size) == (0, 1, 5)
    assert tok.encode("abzc") == [2, 3, 4, 1]
    assert tok.decode([2, 3, 0]) == "ab" + text_lm.EOS
    again = text_lm.CharTokenizer.from_json(tok.to_json())
    assert again.encode("zab") == tok.encode("zab") == [4, 2, 3]
    with pytest.raises(ValueError):
        text_lm.CharTokenizer(["a", "a"])


def test_bpe_trained_locally_roundtrips_and_reserves_eos():
    texts = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"] * 20
    tok = text_lm.train_bpe(texts, vocab_size=300)
    assert tok.eos_id == 0 and 256 < tok.vocab_size <= 300
    for t in ("the cat sat", "dogs and logs!", "ünïcödé"):
        assert tok.decode(tok.encode(t)) == t
    assert len(tok.encode("the cat sat on the mat")) < len(
        "the cat sat on the mat"
    )  # merges learned
    ids = text_lm.encode_documents(tok, ["the cat", "a dog"])
    assert ids.tolist().count(0) == 2 and ids[-1] == 0


def test_tweet_corpus_is_deduplicated_and_split_contiguously():
    c = text_lm.tweet_corpus("char", min_count=50, val_fraction=0.1)
    texts = text_lm.load_tweet_texts()
    assert len(texts) == len(set(texts)) == c.info["documents"]
    assert 36000 < len(texts) < 38158  # 38,158 rows, many duplicate retweets
    assert all("\n" not in t and "\r" not in t and t == t.strip() for t in texts[:2000])
    assert c.info["val_documents"] == round(0.1 * len(texts))
    # every document ends with the end-of-text id; the tokenizer was fitted on the training part
    # only
    assert int(np.sum(c.train == c.eos_id)) == c.info["train_documents"]
    assert int(np.sum(c.val == c.eos_id)) == c.info["val_documents"]
    assert (
        c.tokenizer["kind"] == "char" and 80 < c.vocab_size < 200 and c.train.max() < c.vocab_size
    )
    tok = text_lm.CharTokenizer(list(c.tokenizer["chars"]))
    first = tok.decode(c.train[: int(np.argmax(c.train == 0))])
    assert first == "".join(ch if ch in tok.index else "\ufffd" for ch in texts[0])
    assert c.stand_in and "tweet" in c.stand_in


def test_window_sampler_is_a_function_of_seed_and_step():
    tokens = np.arange(1000, dtype=np.int64)
    s = text_lm.WindowSampler(tokens, ctx=16, batch=8, seed=3)
    a, b = s.windows(5), text_lm.WindowSampler(tokens, 16, 8, seed=3).windows(5)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (8, 16)
    np.testing.assert_array_equal(a[:, 1:] - a[:, :-1], 1)  # contiguous slices of the stream
    assert not np.array_equal(a, s.windows(6))
    assert not np.array_equal(a, text_lm.WindowSampler(tokens, 16, 8, seed=4).windows(5))
    assert s(5)["ids"].dtype == torch.int64
    one = text_lm.WindowSampler(tokens, ctx=10, batch=20, seed=0, single_pass=True)
    starts = np.concatenate([one.starts(t) for t in range(5)])  # 100 windows of 10 = one pass
    assert sorted(starts.tolist()) == list(range(0, 1000, 10))
    np.testing.assert_array_equal(one.starts(5), one.starts(0))  # then it wraps around
    with pytest.raises(ValueError):
        text_lm.WindowSampler(tokens[:10], ctx=16, batch=1, seed=0)


def test_eval_windows_are_non_overlapping_and_evenly_spaced():
    tokens = np.arange(105)
    w = text_lm.eval_windows(tokens, 10)
    assert w.shape == (10, 10) and w[3, 0] == 30
    w3 = text_lm.eval_windows(tokens, 10, max_windows=3)
    assert w3[:, 0].tolist() == [0, 40, 90]  # linspace(0, 9, 3) = 0, 4.5, 9, rounded half to even


# ---------------------------------------------------------------------------------------------
# hub-format loaders on tiny local files, and their offline errors


def _pile_dir(root):
    (root / "train").mkdir(parents=True)
    docs = {
        "train/00.jsonl": [f"training document number {i}" for i in range(30)],
        "train/01.jsonl": [f"more training text {i}" for i in range(20)],
        "val.jsonl": ["validation text"] * 3,
        "test.jsonl": [f"test document {i}" for i in range(12)],
    }
    for name, texts in docs.items():
        with open(root / name, "w") as f:
            for t in texts:
                f.write(json.dumps({"text": t, "meta": {"pile_set_name": "Pile-CC"}}) + "\n")
    return docs


def _tokenizer_dir(root):
    """A hub-format tokenizer directory (tokenizer.json + config), loadable by AutoTokenizer
    offline."""
    from transformers import PreTrainedTokenizerFast

    bpe = text_lm.train_bpe(
        ["training document number more text test validation"] * 10, vocab_size=280
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=bpe.tok, eos_token=text_lm.EOS)
    fast.save_pretrained(root)
    return root


def test_hub_text_and_token_files_from_local_hub_layout(tmp_path):
    docs = _pile_dir(tmp_path / "pile")
    assert (
        list(text_lm.iter_hub_texts(str(tmp_path / "pile"), "train"))
        == docs["train/00.jsonl"] + docs["train/01.jsonl"]
    )
    assert list(text_lm.iter_hub_texts(str(tmp_path / "pile"), "test.jsonl")) == docs["test.jsonl"]
    tokdir = _tokenizer_dir(tmp_path / "tok")
    tok = text_lm.hub_tokenizer(str(tokdir))
    desc = text_lm.prepare_hub_tokens(
        str(tmp_path / "pile"),
        str(tokdir),
        tmp_path / "out",
        train_tokens=200,
        val_tokens=10**6,
        val_split="test.jsonl",
        batch_docs=7,
    )
    assert desc["dtype"] == "uint16" and desc["tokens"]["train"] == 200
    corpus = text_lm.load_token_dir(tmp_path / "out")
    expected_val = text_lm.encode_documents(tok, docs["test.jsonl"])
    assert desc["tokens"]["val"] == len(expected_val)
    np.testing.assert_array_equal(np.asarray(corpus.val), expected_val)
    expected_train = text_lm.encode_documents(tok, docs["train/00.jsonl"] + docs["train/01.jsonl"])[
        :200
    ]
    np.testing.assert_array_equal(np.asarray(corpus.train), expected_train)
    assert corpus.eos_id == tok.eos_id and corpus.vocab_size == tok.vocab_size
    w = text_lm.WindowSampler(corpus.train, 16, 4, seed=0, single_pass=True).windows(0)
    assert w.dtype == np.int64 and w.shape == (4, 16)


def test_hub_loaders_fail_offline_with_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    for call, name in (
        (lambda: list(text_lm.iter_hub_texts(text_lm.PILE_HUB, "train")), text_lm.PILE_HUB),
        (lambda: text_lm.hub_tokenizer(text_lm.GPT2_TOKENIZER_HUB), text_lm.GPT2_TOKENIZER_HUB),
        (lambda: resolve_model_dir("meta-llama/Llama-2-7b-hf"), "meta-llama/Llama-2-7b-hf"),
        (lambda: load_image_dataset("imagenet", "ILSVRC/imagenet-1k"), "ILSVRC/imagenet-1k"),
    ):
        with pytest.raises(DatasetUnavailable) as err:
            call()
        msg = str(err.value)
        assert name in msg and "quick" in msg and "scale=paper" in msg
    with pytest.raises(DatasetUnavailable, match="lowrank_download_pile"):
        text_lm.load_token_dir(tmp_path / "nothing")


def _imagenet_dir(root, n_train=12, n_val=6):
    """A tiny image-classification dataset in the hub layout of ILSVRC/imagenet-1k (parquet;
    columns image, label; splits train/validation), images of varying size."""
    import datasets
    from PIL import Image

    feats = datasets.Features(
        {"image": datasets.Image(), "label": datasets.ClassLabel(names=["a", "b", "c"])}
    )
    rng = np.random.default_rng(0)
    (root / "data").mkdir(parents=True)
    for split, n in (("train", n_train), ("validation", n_val)):
        imgs = [
            Image.fromarray(rng.integers(0, 256, (20 + 3 * i, 28 - i, 3), dtype=np.uint8))
            for i in range(n)
        ]
        ds = datasets.Dataset.from_dict(
            {"image": imgs, "label": [i % 3 for i in range(n)]}, features=feats
        )
        ds.to_parquet(str(root / "data" / f"{split}-00000-of-00001.parquet"))
    return root


def test_imagenet_format_batches_are_deterministic_and_normalised(tmp_path):
    root = _imagenet_dir(tmp_path / "imnet")
    train, val = load_image_dataset("imagenet", str(root))
    assert (len(train), len(val)) == (12, 6)
    b = HubImageBatches(train, image_size=16, batch=4, seed=0, steps_per_epoch=3, workers=2)
    x1, x2 = b(1), HubImageBatches(train, 16, 4, seed=0, steps_per_epoch=3, workers=2)(1)
    assert (
        x1["x"].shape == (4, 3, 16, 16)
        and torch.equal(x1["x"], x2["x"])
        and torch.equal(x1["y"], x2["y"])
    )
    assert not torch.equal(b(0)["x"], x1["x"])
    # one epoch (3 steps of 4) visits every training image once
    seen = torch.cat([b(t)["y"] for t in range(3)])
    assert sorted(seen.tolist()) == sorted([i % 3 for i in range(12)])
    # uniform noise images: after normalisation, the channel means are near (0.5 − mean)/std
    assert abs(float(x1["x"][:, 0].mean()) - (0.5 - 0.485) / 0.229) < 0.2
    m = HubImageBatches(train, 16, 4, seed=0, steps_per_epoch=3, mixup=0.2, workers=2)(1)
    lam = float(m["mix"][0])
    assert 0 <= lam <= 1 and torch.allclose(
        m["x"], lam * x1["x"] + (1 - lam) * x1["x"].flip(0), atol=1e-6
    )
    assert torch.equal(m["y2"], x1["y"].flip(0))
    ev = list(
        HubImageBatches(val, 16, 4, seed=0, steps_per_epoch=1, workers=2).eval_batches(batch=4)
    )
    assert [len(y) for _, y in ev] == [4, 2]


def test_vit_run_on_imagenet_format_data(tmp_path):
    torch.set_num_threads(1)
    root = _imagenet_dir(tmp_path / "imnet")
    settings = lr.VitSettings(
        dataset="imagenet",
        source=str(root),
        image_size=16,
        patch_size=8,
        hidden=16,
        layers=2,
        heads=2,
        mlp=32,
        batch_size=4,
        grad_accum=1,
        epochs=2,
        lr=1e-3,
        betas=[0.9, 0.999],
        eps=1e-8,
        schedule="constant",
        warmup_steps=0,
        final_lr_frac=0.0,
        grad_clip=None,
        mixup=0.2,
        lam_other=0.1,
        data_seed=0,
        test_fraction=0.2,
        eval_limit=None,
        workers=2,
        compile=False,
    )
    out = lr.train_vit_wd(settings, attn=0.5, seed=0, accelerator="cpu")
    df, meta = out["run"]
    assert len(df) == 2 * 2 * 2 and meta["n_test"] == 6 and 0 <= meta["test_acc"] <= 1
    # row 0 (before training: the rank trace) and one per epoch
    assert len(meta["history"]) == 3 and np.isfinite(meta["history"][-1]["train_loss"])
    assert [r["count"] for r in meta["rank_trace"]] == [e for e in (0, 1, 2) for _ in range(4)]


# ---------------------------------------------------------------------------------------------
# pretrained weights from safetensors shards (LLaMA layout)


def test_llama_safetensors_layers_match_the_model(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    m = LlamaForCausalLM(cfg)
    m.save_pretrained(tmp_path, max_shard_size="20KB")
    assert (tmp_path / "model.safetensors.index.json").exists()
    streamed = list(safetensors_layer_factors(str(tmp_path)))
    direct = rk.model_factors(m)
    assert len(streamed) == 3
    for s, d in zip(streamed, direct, strict=True):
        for product in ("kq", "pv"):
            for x, y in zip(s[product], d[product], strict=True):
                np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)
    df, meta = lr.pretrained_balance(str(tmp_path), preset="paper")
    assert len(df) == 3 * 4 * 2 and meta["architecture"]["kv_heads"] == 2
    assert (df.nuclear <= df.frob_bound * (1 + 1e-9)).all()
    claims = {c.id: c for c in lowrank_claims.fig4((df, meta))}
    assert claims["kq_bound"].passed and claims["pv_bound"].passed
    # paper preset: median threshold asserted (random init may fail it)
    assert "kq_median_balanced" in claims
