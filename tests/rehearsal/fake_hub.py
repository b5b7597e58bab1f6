"""A fake Hugging Face hub: small, deterministic, format-faithful stand-ins for every artefact the
paper preset reads, so the paper preset can be rehearsed end to end before anything is downloaded.

    python tests/rehearsal/fake_hub.py DIR          # writes DIR/<owner>/<name>/ per artefact

or, from Python, ``write_fake_hub(root) -> {hub id: local directory}``.  Each artefact lies in the
folder ``DIR/<hub id>`` laid out like the real hub repository (file names, folders, parquet /
``.jsonl.zst`` / safetensors formats, column names, split names, label sets, image sizes, token
ids of the special tokens), so the project's own loaders read it unchanged when a preset's
``source`` / ``model`` / ``tokenizer`` setting is that folder.  Everything else is tiny (a few MB
in all, seconds to write) and the content is synthetic: fixed seeds, no real data.

Artefacts (hub id → what the fake holds):

* ``uoft-cs/cifar10``: ``plain_text/{train,test}-00000-of-00001.parquet``; ``img`` (32×32 RGB PNG)
  and ``label`` (the 10 CIFAR-10 class names); class-dependent colours and shapes plus noise.
* ``ylecun/mnist``: ``mnist/{train,test}-00000-of-00001.parquet``; ``image`` (28×28 grayscale PNG,
  the digit drawn with PIL's default font) and ``label`` ('0'…'9').
* ``nyu-mll/glue`` (config ``mnli``): ``mnli/<split>-00000-of-00001.parquet`` for train,
  validation_matched, validation_mismatched, test_matched, test_mismatched (test labels −1);
  premise, hypothesis, label (entailment / neutral / contradiction), idx.
* ``google/civil_comments``: ``data/train-0000{0,1}-of-00002.parquet``, ``data/validation-…``,
  ``data/test-…``; text and the seven float32 attribute columns (toxicity first).
* ``monology/pile-uncopyrighted``: ``train/{00,01,02}.jsonl.zst``, ``val.jsonl.zst``,
  ``test.jsonl.zst``; one ``{"text": …, "meta": {"pile_set_name": …}}`` per line.
* ``ILSVRC/imagenet-1k``: ``data/{train-0000{0,1}-of-00002,validation-00000-of-00001,
  test-00000-of-00001}.parquet``; ``image`` (JPEG bytes of varying size, some grayscale and CMYK
  like the real set) and ``label`` (a 1000-class ClassLabel; a few class ids used; test −1).
* ``openai-community/gpt2``: a byte-level BPE trained on the fake Pile text, in the GPT-2 files
  (``vocab.json``, ``merges.txt``, ``tokenizer.json``, ``tokenizer_config.json``, ``config.json``):
  ids 0–255 the byte alphabet in GPT-2's order, then the merges, ``<|endoftext|>`` the last id.
* ``google-bert/bert-base-uncased``: a 2-layer BERT (hidden 32) with random weights saved from
  ``BertForMaskedLM`` (safetensors), 512 positions, and the uncased WordPiece vocabulary of the
  shipped all-MiniLM-L6-v2 (the same 30,522 entries as bert-base-uncased).
* ``meta-llama/Llama-2-7b-hf`` / ``Llama-2-13b-hf``: tiny LLaMA checkpoints (2 layers × 4 heads,
  hidden 64; 3 layers × 5 heads, hidden 80) in float16, sharded like the real ones
  (``model-0000k-of-0000n.safetensors`` + ``model.safetensors.index.json``; one layer's
  projections are split across two shards); config.json and generation_config.json.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np

CIFAR10_NAMES = (
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
)  # fmt: skip
MNLI_NAMES = ("entailment", "neutral", "contradiction")
MNLI_SPLITS = (
    "train", "validation_matched", "validation_mismatched", "test_matched", "test_mismatched",
)  # fmt: skip
CIVIL_COLUMNS = (
    "toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack",
    "sexual_explicit",
)  # fmt: skip
PILE_SETS = (
    "Pile-CC", "PubMed Abstracts", "ArXiv", "Github", "FreeLaw", "StackExchange",
    "Wikipedia (en)", "USPTO Backgrounds", "DM Mathematics", "Enron Emails",
)  # fmt: skip
IMAGENET_CLASSES = (0, 1, 207, 404, 530, 817, 948, 999)  # the class ids the fake images use
EOS = "<|endoftext|>"

# split sizes (rows); tiny, but enough for a few batches and every class in every split
SIZES = {
    "cifar10": {"train": 100, "test": 50},
    "mnist": {"train": 100, "test": 50},
    "mnli": {"train": 300, "validation_matched": 60, "validation_mismatched": 60,
             "test_matched": 30, "test_mismatched": 30},
    "civil_comments": {"train": 400, "validation": 100, "test": 120},
    "pile": {"train/00": 150, "train/01": 150, "train/02": 150, "val": 80, "test": 80},
    "imagenet": {"train": 48, "validation": 16, "test": 8},
}  # fmt: skip
GPT2_VOCAB = 1024  # 256 bytes + 767 merges + <|endoftext|> (id 1023, like GPT-2's 50256)

HUB_IDS = {
    "cifar10": "uoft-cs/cifar10",
    "mnist": "ylecun/mnist",
    "mnli": "nyu-mll/glue",
    "civil_comments": "google/civil_comments",
    "pile": "monology/pile-uncopyrighted",
    "imagenet": "ILSVRC/imagenet-1k",
    "gpt2": "openai-community/gpt2",
    "bert": "google-bert/bert-base-uncased",
    "llama7b": "meta-llama/Llama-2-7b-hf",
    "llama13b": "meta-llama/Llama-2-13b-hf",
}


# ---------------------------------------------------------------------------------------------
# helpers


def _readme(path: Path, title: str, configs: list[tuple[str, list[tuple[str, str]]]],
            extra: list[str] = ()) -> None:  # fmt: skip
    """A dataset card with the hub's ``configs:`` block (config → split → file pattern); no block
    (the Pile copy) leaves the splits to the file names."""
    lines = ["---", *extra]
    if configs:
        lines.append("configs:")
        for k, (name, files) in enumerate(configs):
            lines += [f"- config_name: {name}", "  data_files:"]
            for split, pattern in files:
                lines += [f"  - split: {split}", f"    path: {pattern}"]
            if k == 0 and len(configs) == 1:
                lines.append("  default: true")
    lines += ["---", "", f"# {title} (fake)", "",
              "A small synthetic stand-in written by `tests/rehearsal/fake_hub.py` in the layout",
              "of the real hub repository.  It holds no real data.", ""]  # fmt: skip
    path.write_text("\n".join(lines))


def _parquet(ds, path: Path, shards: int = 1) -> list[Path]:
    """Write ``ds`` as ``<path>-0000k-of-0000n.parquet`` shards (the hub's naming)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(shards):
        part = ds.shard(shards, k, contiguous=True) if shards > 1 else ds
        f = path.parent / f"{path.name}-{k:05d}-of-{shards:05d}.parquet"
        part.to_parquet(str(f))
        out.append(f)
    return out


def _png(img) -> dict:
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return {"bytes": buf.getvalue(), "path": None}


def _words(rng, n: int) -> list[str]:
    """``n`` pseudo-words built from syllables (a fixed-seed vocabulary)."""
    syll = ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "zi", "pa", "qu", "ex", "an", "or",
            "el", "is", "un", "th", "re", "st", "ing", "ion", "al", "er"]  # fmt: skip
    out = set()
    while len(out) < n:
        out.add("".join(rng.choice(syll, size=int(rng.integers(1, 4)))))
    return sorted(out)


def _sentence(rng, words, lo=5, hi=14) -> str:
    s = " ".join(rng.choice(words, size=int(rng.integers(lo, hi))))
    return s[0].upper() + s[1:] + "."


# ---------------------------------------------------------------------------------------------
# image datasets


def write_cifar10(d: Path) -> None:
    import datasets
    from PIL import Image, ImageDraw

    feats = datasets.Features(
        {"img": datasets.Image(), "label": datasets.ClassLabel(names=list(CIFAR10_NAMES))}
    )
    rng = np.random.default_rng(10)
    palette = rng.integers(30, 226, (10, 2, 3))
    for split, n in SIZES["cifar10"].items():
        imgs, labels = [], []
        for i in range(n):
            c = i % 10
            bg, fg = (tuple(int(v) for v in palette[c, j]) for j in range(2))
            im = Image.new("RGB", (32, 32), bg)
            x0, y0 = (int(v) for v in rng.integers(2, 14, 2))
            box = (x0, y0, x0 + 10 + c, y0 + 10 + (9 - c))
            draw = ImageDraw.Draw(im)
            (draw.ellipse if c % 2 else draw.rectangle)(box, fill=fg)
            a = np.asarray(im, dtype=np.int16) + rng.integers(-20, 21, (32, 32, 3))
            imgs.append(_png(Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "RGB")))
            labels.append(c)
        ds = datasets.Dataset.from_dict({"img": imgs, "label": labels}, features=feats)
        _parquet(ds, d / "plain_text" / split)
    _readme(d / "README.md", "CIFAR-10",
            [("plain_text", [(s, f"plain_text/{s}-*") for s in SIZES["cifar10"]])])


def write_mnist(d: Path) -> None:
    import datasets
    from PIL import Image, ImageDraw, ImageFont

    feats = datasets.Features(
        {"image": datasets.Image(),
         "label": datasets.ClassLabel(names=[str(k) for k in range(10)])}
    )  # fmt: skip
    try:
        font = ImageFont.load_default(size=20)
    except TypeError:  # Pillow without FreeType sizes
        font = ImageFont.load_default()
    rng = np.random.default_rng(28)
    for split, n in SIZES["mnist"].items():
        imgs, labels = [], []
        for i in range(n):
            c = i % 10
            im = Image.new("L", (28, 28), 0)
            dx, dy = (int(v) for v in rng.integers(4, 12, 2))
            ImageDraw.Draw(im).text((dx, dy - 4), str(c), fill=255, font=font)
            a = np.asarray(im, dtype=np.int16) + rng.integers(0, 30, (28, 28))
            imgs.append(_png(Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "L")))
            labels.append(c)
        ds = datasets.Dataset.from_dict({"image": imgs, "label": labels}, features=feats)
        _parquet(ds, d / "mnist" / split)
    _readme(d / "README.md", "MNIST", [("mnist", [(s, f"mnist/{s}-*") for s in SIZES["mnist"]])])


def write_imagenet(d: Path) -> None:
    """JPEG images of varying size (a few grayscale and CMYK ones, as in ImageNet) over a few
    class ids of the 1000-class label space; the test split is unlabelled (−1)."""
    import datasets
    from PIL import Image

    feats = datasets.Features(
        {"image": datasets.Image(),
         "label": datasets.ClassLabel(names=[f"imagenet class {k}" for k in range(1000)])}
    )  # fmt: skip
    rng = np.random.default_rng(1000)
    colour = {c: rng.integers(40, 216, 3) for c in IMAGENET_CLASSES}
    for split, n in SIZES["imagenet"].items():
        imgs, labels = [], []
        for i in range(n):
            c = IMAGENET_CLASSES[i % len(IMAGENET_CLASSES)]
            w, h = int(rng.integers(64, 193)), int(rng.integers(64, 193))
            yy, xx = np.mgrid[0:h, 0:w]
            ramp = (xx / w if c % 2 else yy / h)[..., None]
            a = colour[c] * (0.5 + ramp) + rng.normal(0, 12, (h, w, 3))
            im = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "RGB")
            if split == "train" and i % 16 == 5:
                im = im.convert("L")
            elif split == "train" and i % 16 == 11:
                im = im.convert("CMYK")
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=75)
            imgs.append({"bytes": buf.getvalue(), "path": f"{split}_{i:05d}.JPEG"})
            labels.append(-1 if split == "test" else c)
        ds = datasets.Dataset.from_dict({"image": imgs, "label": labels}, features=feats)
        _parquet(ds, d / "data" / split, shards=2 if split == "train" else 1)
    _readme(d / "README.md", "ImageNet-1k",
            [("default", [(s, f"data/{s}-*") for s in SIZES["imagenet"]])])


# ---------------------------------------------------------------------------------------------
# text datasets


def write_mnli(d: Path) -> None:
    """Pairs whose label follows from the text (entailment: the premise repeated, contradiction:
    negated, neutral: another sentence), so a classifier can learn something.  Like the real
    repository, the card has several configs and none is the default: ``mnli`` and the
    ``mnli_matched`` / ``mnli_mismatched`` views (validation + test) of the same rows."""
    import datasets

    feats = datasets.Features(
        {"premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
         "label": datasets.ClassLabel(names=list(MNLI_NAMES)), "idx": datasets.Value("int32")}
    )  # fmt: skip
    rng = np.random.default_rng(3)
    words = _words(rng, 300)
    for split, n in SIZES["mnli"].items():
        rows = {"premise": [], "hypothesis": [], "label": [], "idx": []}
        for i in range(n):
            p = _sentence(rng, words)
            y = int(rng.integers(0, 3))
            h = {0: p, 1: _sentence(rng, words), 2: "It is not true that " + p.lower()}[y]
            rows["premise"].append(p)
            rows["hypothesis"].append(h)
            rows["label"].append(-1 if split.startswith("test") else y)
            rows["idx"].append(i)
        ds = datasets.Dataset.from_dict(rows, features=feats)
        _parquet(ds, d / "mnli" / split)
        if split != "train":  # validation_matched → mnli_matched/validation, …
            part, which = split.split("_")
            _parquet(ds, d / f"mnli_{which}" / part)
    views = [(f"mnli_{w}", [(p, f"mnli_{w}/{p}-*") for p in ("validation", "test")])
             for w in ("matched", "mismatched")]  # fmt: skip
    _readme(d / "README.md", "GLUE",
            [("mnli", [(s, f"mnli/{s}-*") for s in MNLI_SPLITS]), *views])


def write_civil_comments(d: Path) -> None:
    """About a fifth of the comments toxic (toxicity ≥ 0.5), marked by insulting words."""
    import datasets

    feats = datasets.Features(
        {"text": datasets.Value("string"), **{c: datasets.Value("float32") for c in CIVIL_COLUMNS}}
    )
    rng = np.random.default_rng(4)
    words = _words(rng, 300)
    rude = ["stupid", "idiot", "pathetic", "moron", "disgusting"]
    shards = {"train": 2, "validation": 1, "test": 1}
    for split, n in SIZES["civil_comments"].items():
        rows = {"text": [], **{c: [] for c in CIVIL_COLUMNS}}
        for _ in range(n):
            toxic = rng.random() < 0.2
            text = _sentence(rng, words, 4, 30)
            if toxic:
                text = f"{text} You are {rng.choice(rude)}, {rng.choice(rude)}."
            tox = float(rng.uniform(0.5, 1.0) if toxic else rng.uniform(0.0, 0.45))
            rows["text"].append(text)
            rows["toxicity"].append(round(tox, 6))
            for c in CIVIL_COLUMNS[1:]:
                rows[c].append(round(float(tox * rng.uniform(0.0, 0.6)), 6))
        ds = datasets.Dataset.from_dict(rows, features=feats)
        _parquet(ds, d / "data" / split, shards=shards[split])
    _readme(d / "README.md", "Civil Comments",
            [("default", [(s, f"data/{s}-*") for s in SIZES["civil_comments"]])])


def pile_documents() -> dict[str, list[dict]]:
    """The fake Pile: {file stem: rows}; prose, code-like, maths-like and non-ASCII documents."""
    rng = np.random.default_rng(2020)
    words = _words(rng, 1500)
    out = {}
    for stem, n in SIZES["pile"].items():
        rows = []
        for _ in range(n):
            kind = PILE_SETS[int(rng.integers(0, len(PILE_SETS)))]
            if kind == "Github":
                name = str(rng.choice(words))
                text = (f"def {name}(x, y):\n    \"\"\"{_sentence(rng, words)}\"\"\"\n"
                        f"    return x * {int(rng.integers(2, 99))} + y\n")  # fmt: skip
            elif kind == "DM Mathematics":
                a, b = (int(v) for v in rng.integers(-999, 999, 2))
                text = f"What is {a} + {b}?\n{a + b}\nSolve {a}*x = {a * 3} for x.\n3"
            else:
                paras = [" ".join(_sentence(rng, words) for _ in range(int(rng.integers(2, 7))))
                         for _ in range(int(rng.integers(1, 4)))]  # fmt: skip
                text = "\n\n".join(paras)
                if kind == "Wikipedia (en)":
                    text += " Zürich – naïve café, 東京, ½ ≈ 0.5."
            rows.append({"text": text, "meta": {"pile_set_name": kind}})
        out[stem] = rows
    return out


def write_pile(d: Path) -> None:
    import zstandard

    cctx = zstandard.ZstdCompressor(level=3)
    for stem, rows in pile_documents().items():
        f = d / f"{stem}.jsonl.zst"
        f.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
        f.write_bytes(cctx.compress(data))
    _readme(d / "README.md", "The Pile, uncopyrighted", [], ["pretty_name: Pile Uncopyrighted"])


# ---------------------------------------------------------------------------------------------
# tokenizers and models


def gpt2_byte_alphabet() -> list[str]:
    """The 256 byte-level symbols in GPT-2's id order: the printable bytes ('!'…'~', '¡'…'¬',
    '®'…'ÿ') map to themselves, the others to U+0100 onwards, in byte order."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    rest = [b for b in range(256) if b not in set(keep)]
    return [chr(b) for b in keep] + [chr(0x100 + k) for k in range(len(rest))]


def write_gpt2_tokenizer(d: Path) -> None:
    """A byte-level BPE trained on the fake Pile text, written in GPT-2's files."""
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )

    texts = [r["text"] for rows in pile_documents().values() for r in rows]
    alphabet = gpt2_byte_alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=GPT2_VOCAB - 1, min_frequency=2, special_tokens=[], show_progress=False,
        initial_alphabet=alphabet,
    )  # fmt: skip
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator(texts, trainer=trainer)
    merges = [tuple(m) for m in json.loads(bpe.to_str())["model"]["merges"]]
    vocab = {s: i for i, s in enumerate(alphabet)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab[EOS] = len(vocab)
    if len(vocab) != GPT2_VOCAB:
        raise RuntimeError(f"the fake GPT-2 vocabulary has {len(vocab)} entries, not {GPT2_VOCAB}")
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, continuing_subword_prefix="",
                               end_of_word_suffix="", fuse_unk=False))  # fmt: skip
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(EOS, special=True, normalized=True)])
    d.mkdir(parents=True, exist_ok=True)
    tok.save(str(d / "tokenizer.json"))
    (d / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    (d / "merges.txt").write_text(
        "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8"
    )
    (d / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 1024}) + "\n")
    from transformers import GPT2Config

    cfg = GPT2Config(vocab_size=GPT2_VOCAB, n_positions=1024, n_embd=64, n_layer=2, n_head=2,
                     bos_token_id=GPT2_VOCAB - 1, eos_token_id=GPT2_VOCAB - 1)  # fmt: skip
    cfg.architectures = ["GPT2LMHeadModel"]
    cfg.save_pretrained(d)


def write_bert(d: Path) -> None:
    """A tiny random BERT (2 layers, hidden 32; the real vocabulary size and 512 positions) in the
    layout of the original checkpoint: pre-training heads (``cls.*``, pooler) and the legacy
    ``LayerNorm.gamma`` / ``.beta`` names, no tied decoder weight; LayerNorm parameters random so
    that a loader dropping them shows.  The uncased WordPiece tokenizer is the shipped MiniLM's
    (same vocabulary as bert-base-uncased), without MiniLM's fixed padding / truncation to 128."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertForPreTraining

    from attnbias.data.offline import minilm_path

    cfg = BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=512, type_vocab_size=2, pad_token_id=0,
    )  # fmt: skip
    cfg.architectures = ["BertForMaskedLM"]
    torch.manual_seed(768)
    state = {}
    for k, v in BertForPreTraining(cfg).state_dict().items():
        if k.startswith("cls.predictions.decoder."):
            continue  # tied to the word embeddings / cls.predictions.bias
        if ".LayerNorm." in k:
            v = (1.0 if k.endswith("weight") else 0.0) + 0.1 * torch.randn_like(v)
            k = k.replace("LayerNorm.weight", "LayerNorm.gamma")
            k = k.replace("LayerNorm.bias", "LayerNorm.beta")
        state[k] = v.contiguous()
    d.mkdir(parents=True, exist_ok=True)
    save_file(state, str(d / "model.safetensors"), metadata={"format": "pt"})
    cfg.save_pretrained(d)
    src = minilm_path()
    shutil.copyfile(src / "vocab.txt", d / "vocab.txt")
    tj = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    tj["truncation"], tj["padding"] = None, None
    (d / "tokenizer.json").write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")
    (d / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": True, "model_max_length": 512}) + "\n"
    )


def write_llama(d: Path, layers: int, hidden: int, heads: int, shards: int, seed: int) -> None:
    """A tiny float16 LLaMA checkpoint in ``shards`` safetensors shards with the index file; the
    attention projections of one layer are split over two shards (the real 7B/13B also split a
    layer between shards)."""
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=512, hidden_size=hidden, intermediate_size=int(hidden * 2.6875),
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
        max_position_embeddings=4096, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2,
        tie_word_embeddings=False, torch_dtype="float16",
    )  # fmt: skip
    cfg.architectures = ["LlamaForCausalLM"]
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).to(torch.float16)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    keys = list(state)
    # keys in order: embeddings, layer 0, …, norm, lm_head; cut them into `shards` runs so that the
    # cut between shards 1 and 2 falls inside layer 0's attention (after q_proj, k_proj)
    cuts = [keys.index("model.layers.0.self_attn.v_proj.weight")]
    for k in range(2, shards):
        cuts.append(keys.index(f"model.layers.{min(k, layers - 1)}.self_attn.q_proj.weight"))
    bounds = [0, *cuts, len(keys)]
    d.mkdir(parents=True, exist_ok=True)
    weight_map, total = {}, 0
    for k in range(shards):
        name = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = {key: state[key] for key in keys[bounds[k] : bounds[k + 1]]}
        save_file(part, str(d / name), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(part, name))
        total += sum(v.numel() * v.element_size() for v in part.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (d / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    cfg.save_pretrained(d)
    model.generation_config.save_pretrained(d)


# ---------------------------------------------------------------------------------------------
# the whole hub


WRITERS = {
    "cifar10": write_cifar10,
    "mnist": write_mnist,
    "mnli": write_mnli,
    "civil_comments": write_civil_comments,
    "pile": write_pile,
    "imagenet": write_imagenet,
    "gpt2": write_gpt2_tokenizer,
    "bert": write_bert,
    "llama7b": lambda d: write_llama(d, layers=2, hidden=64, heads=4, shards=2, seed=7),
    "llama13b": lambda d: write_llama(d, layers=3, hidden=80, heads=5, shards=3, seed=13),
}


def write_fake_hub(root: Path) -> dict[str, Path]:
    """Write every artefact under ``root/<hub id>`` (existing folders are replaced) and a manifest
    ``root/fake_hub.json``; returns {hub id: local directory}."""
    root = Path(root).resolve()
    out, manifest = {}, {}
    for key, write in WRITERS.items():
        hub_id = HUB_IDS[key]
        d = root / hub_id
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        write(d)
        files = {str(p.relative_to(d)): p.stat().st_size for p in sorted(d.rglob("*"))
                 if p.is_file()}  # fmt: skip
        manifest[hub_id] = {"path": hub_id, "files": files}
        out[hub_id] = d
    (root / "fake_hub.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path, help="where to write the fake hub (one folder per hub id)")
    args = ap.parse_args(argv)
    import datasets
    from transformers.utils import logging as hf_logging

    datasets.disable_progress_bars()
    hf_logging.disable_progress_bar()
    paths = write_fake_hub(args.dir)
    for hub_id, d in paths.items():
        size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
        print(f"{hub_id:32s} {size / 1e6:6.2f} MB  {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
