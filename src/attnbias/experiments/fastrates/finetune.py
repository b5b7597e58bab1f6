"""Figs 1 and 4 of fastrates (docs/papers/fastrates.md#fastrates_fig1): fine-tuning a pretrained
BERT-architecture classifier (BERT-base in the paper preset, MiniLM-L6 on the shipped tweets in the
quick preset) with one optimiser and one grid value per run, through the one training loop
:func:`attnbias.train.fit`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...io import check_control
from ..settings import Settings, sweep
from .runs import (
    DL_COLUMNS,
    GradNorms,
    curves,
    drop_checkpoint,
    evaluate,
    optimizer_config,
    run_meta,
)


def by_length(data: dict) -> dict:
    """An evaluation set reordered by text length, so that its batches, trimmed to their longest
    text, carry little padding (the mean loss and accuracy do not depend on the order)."""
    import torch

    order = torch.argsort(data["attention_mask"].sum(dim=1), stable=True)
    return {k: v[order] for k, v in data.items()}


@dataclass(frozen=True, kw_only=True)
class FinetuneSettings(Settings):
    """A ``fastrates: fig1`` / ``fig4`` block (``$defs/finetune`` in
    ``workflow/schemas/fastrates.schema.yaml``, which describes each key): data, model and schedule
    of the fine-tuning runs; ``optimizers`` and ``seeds`` span the sweep (a run gets its point
    ``opt``, ``lr``, ``seed`` and that optimiser's ``opt_settings``)."""

    dataset: str
    source: str | None
    model: str
    max_length: int
    layers: int | None
    pooling: str
    batch_size: int
    steps: int
    log_every: int
    eval_every: int
    select_at: int | None
    select_on: str
    n_train: int | None
    n_val: int | None
    n_test: int | None
    threshold: float
    full_final_test: bool
    data_seed: int
    seeds: list[int] | None = sweep()
    probe_steps: int
    ckpt_every: int
    optimizers: dict | None = sweep()


# (test loss, test accuracy) before training, by the evaluation's data settings and a digest of
# the weights: every run of a figure starts from the same pretrained model and seeded head, so in a
# quick-preset job (one optimiser's grid values in turn, one process) the later runs reuse the
# first run's step-0 evaluation, the same numbers computed once (a third of a run's evaluations)
_STEP0_TEST: dict = {}


def weights_digest(model) -> str:
    """SHA-256 of every parameter and buffer of ``model`` (names, dtypes, shapes and bytes)."""
    import hashlib

    import torch

    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        t = t.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def train_text(
    settings: FinetuneSettings | Mapping,
    opt: str,
    lr: float,
    opt_settings: dict,
    figure: str,
    seed: int = 0,
    eval_batch: int = 256,
    trim: bool = True,
    checkpoint=None,
    metrics_log=None,
    accelerator: str = "auto",
    control: str = "none",
) -> dict:
    """Fine-tune a pretrained BERT-architecture classifier (Figs 1, 4) with one optimiser and one
    grid value; train metrics every ``log_every`` steps, test metrics every ``eval_every`` steps,
    validation metrics at ``select_at`` (None: the last step) and at the end.  A killed run resumes
    from ``checkpoint``, which is deleted once the run has finished.

    ``settings``: :class:`FinetuneSettings`; ``opt``, ``lr``, ``seed``: the run's point (optimiser,
    grid value, training seed: classifier head, batches, dropout), ``opt_settings`` that
    optimiser's block without its grid; ``figure``: the figure id.
    ``layers`` (None: all) keeps the pretrained encoder's first ``layers`` layers, a cheaper
    model that is still pretrained.  ``pooling``: the classifier's input, [CLS] (``"cls"``) or the
    mean over tokens (``"mean"``; :func:`attnbias.models.sequence.forward_logits`).
    ``control="null"``: the negative control
    (:func:`.runs.optimizer_config`).

    Returns {"csv": (curves, meta)}.
    """
    check_control(control)
    s = FinetuneSettings.of(settings)
    optimizer = opt
    import torch

    from ... import train
    from ...data.text import encode, load_text_dataset
    from ...models.sequence import (
        count_parameters,
        forward_logits,
        keep_used_embedding_rows,
        load_classifier,
        load_tokenizer,
    )

    if s.steps % s.log_every or s.eval_every % s.log_every:
        raise ValueError("steps and eval_every must be multiples of log_every")
    select_at = s.steps if s.select_at is None else int(s.select_at)
    if select_at % s.log_every or not 0 < select_at <= s.steps:
        raise ValueError("select_at must be a multiple of log_every within the run")
    device = train.resolve_device(accelerator)
    splits = load_text_dataset(
        s.dataset,
        s.source,
        s.n_train,
        s.n_val,
        s.n_test,
        s.data_seed,
        s.threshold,
        s.full_final_test,
    )
    tok = load_tokenizer(s.model)
    train_data = encode(tok, splits.train, s.max_length)
    val = by_length(encode(tok, splits.val, s.max_length))
    test = by_length(encode(tok, splits.test, s.max_length))
    final = (
        by_length(encode(tok, splits.final_test, s.max_length))
        if splits.final_test is not None
        else None
    )
    net = load_classifier(s.model, splits.num_labels, seed, s.layers)
    parameters = count_parameters(net)
    # exact: the rows no text selects never change a loss or another weight (see the function)
    rows = keep_used_embedding_rows(net, [train_data, val, test, final], tok.pad_token_id)
    test = {k: v.to(device) for k, v in test.items()}

    def logits_fn(m, batch):
        return forward_logits(m, batch, trim, s.pooling)

    def loss_fn(m, batch):
        logits = logits_fn(m, batch).float()
        loss = torch.nn.functional.cross_entropy(logits, batch["y"])
        return loss, {"train_acc": (logits.argmax(-1) == batch["y"]).float().mean().detach()}

    def probe():
        return train.sgd_probe(
            net, train_data, loss_fn, s.batch_size, lr, s.probe_steps, seed, device
        )

    setup = optimizer_config(optimizer, lr, opt_settings, probe, control)

    def test_metrics(m, step):
        if step or device.type != "cpu":
            return evaluate(m, test, logits_fn, device, eval_batch)
        key = (s.dataset, s.source, s.n_train, s.n_val, s.n_test, s.data_seed, s.threshold,
               s.full_final_test, s.model, s.max_length, trim, s.pooling, eval_batch,
               weights_digest(m))  # fmt: skip
        if key not in _STEP0_TEST:
            _STEP0_TEST[key] = evaluate(m, test, logits_fn, device, eval_batch)
        return _STEP0_TEST[key]

    norms = GradNorms()

    def on_row(m, step):  # every log_every steps (the engine counts this run in steps)
        row = norms.row()
        if step % s.eval_every == 0 or step == s.steps:
            row["test_loss"], row["test_acc"] = test_metrics(m, step)
        if step in (select_at, s.steps):
            row["val_loss"], row["val_acc"] = evaluate(m, val, logits_fn, device, eval_batch)
            row["_select"] = step == select_at
        if step == s.steps and final is not None:
            loss, acc = evaluate(m, final, logits_fn, device, eval_batch)
            row["final_test_loss"], row["final_test_acc"] = loss, acc
        return row

    cfg = train.TrainConfig(
        steps=s.steps, eval_every=s.log_every, ckpt_every=s.ckpt_every, batch_size=s.batch_size,
        seed=seed, **setup.train_settings(),
    )  # fmt: skip
    history = train.fit(
        net, train_data, loss_fn, cfg, device, checkpoint=checkpoint, metrics_log=metrics_log,
        on_row=on_row, image_key=None, after_backward=norms.after_backward,
    )  # fmt: skip
    drop_checkpoint(checkpoint)
    df = curves(history, optimizer, lr)
    meta = run_meta(optimizer, lr, setup, history, select_at, control)
    last = history[-1]
    final_test = None
    if final is not None:
        final_test = {
            "loss": last.get("final_test_loss"),
            "acc": last.get("final_test_acc"),
            "n": splits.sizes().get("final_test"),
        }
    meta.update(
        {
            "figure": figure,
            "dataset": splits.name,
            "stand_in": splits.stand_in,
            "label_names": list(splits.label_names),
            "sizes": splits.sizes(),
            "data_info": splits.info,
            "layers": net.config.num_hidden_layers,
            "parameters": parameters,
            "embedding_rows": {"kept": rows[0], "total": rows[1]},
            "x_unit": "steps",
            "device": str(device),
            "final_test": final_test,
            "seed": seed,
            "settings": s.record(),
            "columns": dict(DL_COLUMNS),
        }
    )
    return {"csv": (df, meta)}
