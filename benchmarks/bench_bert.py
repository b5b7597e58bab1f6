"""Fine-tuning throughput and model-FLOPs utilisation of the fastrates BERT figures (Figs 1, 4).

    python benchmarks/bench_bert.py [--figure fig1|fig4] [--preset paper|quick] [--steps N]
                                    [--optimizer sgd|sngd|sps|adamw]

Runs the engine's own training step (``attnbias.train.fit``: bf16 autocast on GPU, SDPA attention,
data resident on the device) with the figure's optimiser settings
(:func:`attnbias.experiments.fastrates.runs.optimizer_config`) and prints sequences/s, tokens/s,
MFU and the projected time of one run and of the whole grid.

* On a GPU (default ``--preset paper``): a BERT-base-shaped ``BertForSequenceClassification``
  built from ``BertConfig()`` (the shape of ``bert-base-uncased``; random weights run at the same
  speed, so nothing is downloaded) on random tokens at the paper's length and batch (MNLI:
  128 × 32; CivilComments: 300 × 16), full length (no trimming: the worst case; real MNLI pairs
  are shorter).
* On a CPU-only machine it prints the CPU figure of the quick preset instead: a few steps of the
  shipped pretrained MiniLM on the shipped tweets, exactly as the quick jobs run them (batches
  trimmed to their longest tweet), and the projected CPU time of the quick Figs 1 and 4.

Model FLOPs per token (forward): 2·(4h² + 2h·mlp) per layer for the projections and the MLP, plus
2·2·n·h per layer for the attention scores and values (n = sequence length); ×3 for
forward+backward (:func:`attnbias.models.flops.bert_forward_flops_per_token`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from attnbias.models.flops import TRAIN_PER_FORWARD, bert_forward_flops_per_token, peak_bf16
from attnbias.workflow import load_config


def peak_flops(device: torch.device) -> float | None:
    return peak_bf16(torch.cuda.get_device_name(device)) if device.type == "cuda" else None


def main():
    from attnbias.experiments.fastrates.runs import optimizer_config
    from attnbias.models.sequence import forward_logits
    from attnbias.train import TrainConfig, fit, resolve_device

    ap = argparse.ArgumentParser()
    ap.add_argument("--figure", default="fig1", choices=["fig1", "fig4"])
    ap.add_argument(
        "--preset",
        default=None,
        choices=["paper", "quick"],
        help="default: paper on a GPU, quick on a CPU",
    )
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "sngd", "sps", "adamw"])
    ap.add_argument(
        "--steps", type=int, default=None, help="timed steps (default: 200 on a GPU, 8 on a CPU)"
    )
    args = ap.parse_args()
    device = resolve_device("auto")
    gpu = device.type == "cuda"
    preset = args.preset or ("paper" if gpu else "quick")
    s = load_config(".", scale=preset, validate=None)["fastrates"][args.figure]
    steps = args.steps or (200 if gpu else 8)
    batch, length = s["batch_size"], s["max_length"]
    num_labels = 3 if args.figure == "fig1" else 2
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = True
    if preset == "paper" or s["model"] != "minilm":
        from transformers import BertConfig, BertForSequenceClassification

        cfg_model = BertConfig(num_labels=num_labels)  # the bert-base-uncased shape
        torch.manual_seed(0)
        model = BertForSequenceClassification(cfg_model)
        model.set_attn_implementation("sdpa")
        n = batch * steps
        g = torch.Generator().manual_seed(0)
        data = {
            "input_ids": torch.randint(
                1000, cfg_model.vocab_size, (n, length), generator=g, dtype=torch.int32
            ),
            "attention_mask": torch.ones(n, length, dtype=torch.int8),
            "token_type_ids": torch.zeros(n, length, dtype=torch.int8),
            "y": torch.randint(0, num_labels, (n,), generator=g),
        }
        what = f"BERT-base shape (random weights), random tokens at full length {length}"
    else:
        from attnbias.data.text import encode, load_text_dataset
        from attnbias.models.sequence import load_classifier, load_tokenizer

        sp = load_text_dataset(
            s["dataset"],
            s["source"],
            s["n_train"],
            s["n_val"],
            s["n_test"],
            s["data_seed"],
            s["threshold"],
        )
        data = encode(load_tokenizer(s["model"]), sp.train, length)
        model = load_classifier(s["model"], sp.num_labels, 0)
        cfg_model = model.config
        what = f"pretrained MiniLM on the shipped tweets, length ≤ {length}, trimmed per batch"
    h, layers, mlp = cfg_model.hidden_size, cfg_model.num_hidden_layers, cfg_model.intermediate_size
    opt = s["optimizers"][args.optimizer]
    lr = opt["grid"][0]
    settings = {k: v for k, v in opt.items() if k != "grid"}
    settings["match_sgd"] = False  # the probe is not part of the timed step
    setup = optimizer_config(args.optimizer, lr, settings)

    def loss_fn(m, b):
        logits = forward_logits(m, b, trim=preset == "quick").float()
        return torch.nn.functional.cross_entropy(logits, b["y"]), {}

    cfg = TrainConfig(epochs=2, batch_size=batch, steps_per_epoch=steps, **setup.train_settings())
    t0 = time.perf_counter()
    hist = fit(model, data, loss_fn, cfg, device, progress=False, image_key=None)
    if gpu:
        torch.cuda.synchronize()
    sec = hist[-1]["seconds"]  # epoch 2: after warm-up
    sps = steps * batch / sec
    if preset == "quick":  # tokens actually processed: trimmed batches
        mean_width = float(
            np.mean(
                [
                    int(data["attention_mask"][i : i + batch].sum(1).max())
                    for i in range(0, len(data["y"]) - batch, batch)
                ]
            )
        )
    else:
        mean_width = float(length)
    per_token = bert_forward_flops_per_token(h, layers, mlp, int(mean_width))
    flops_seq = TRAIN_PER_FORWARD * per_token * mean_width
    peak = peak_flops(device)
    dev = torch.cuda.get_device_name(device) if gpu else f"CPU ({torch.get_num_threads()} threads)"
    print(
        f"device: {dev}   figure {args.figure}   preset {preset}   optimizer {args.optimizer}   "
        f"batch {batch}   timed steps {steps}"
    )
    print(f"model: {what}; {sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters")
    print(
        f"throughput: {sps:.1f} sequences/s, {sps * mean_width:.0f} tokens/s, "
        f"{sec / steps * 1e3:.1f} ms/step ({flops_seq / 1e9:.2f} GFLOP per training sequence, "
        f"{flops_seq * sps / 1e12:.3f} TFLOP/s)"
    )
    runs = sum(len(o["grid"]) for o in s["optimizers"].values())
    run_h = s["steps"] * sec / steps / 3600
    if peak:
        print(f"MFU: {100 * flops_seq * sps / peak:.1f} % of {peak / 1e12:.0f} TFLOP/s bf16")
    print(
        f"projected: one {s['steps']}-step run {run_h * 60:.1f} min (training only); {runs} runs "
        f"of the grid {runs * run_h:.2f} h"
    )
    print(f"(total wall incl. warm-up {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
