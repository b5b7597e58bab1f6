"""Training throughput and model-FLOPs utilisation of the maxmargin ViT (paper configuration).

    python benchmarks/bench_vit.py [--steps 300] [--batch 128] [--compile] [--preset paper|quick]

Runs the engine's own training step (``attnbias.train.fit``: bf16 autocast on GPU, SDPA attention,
data resident on the device, GPU-side crop/flip) on random CIFAR-shaped data, and prints images/s
and MFU.  Model FLOPs count the matmuls of the forward pass (patch embedding, QKV/O projections,
attention scores and values, MLP, head) ×3 for forward+backward.  On a CPU-only machine it prints
the CPU throughput with a few steps (MFU is not meaningful there).
"""

from __future__ import annotations

import argparse
import time

import torch

from attnbias.workflow import load_config

PEAK_BF16 = {
    "H100 80GB HBM3": 989e12,
    "H100 PCIe": 756e12,
    "H100": 989e12,
    "H200": 989e12,
    "A100": 312e12,
}


def vit_forward_flops(
    image: int, patch: int, channels: int, hidden: int, layers: int, mlp: int, classes: int
) -> float:
    n = (image // patch) ** 2 + 1
    embed = 2 * (image // patch) ** 2 * (patch * patch * channels) * hidden
    per_layer = 2 * n * hidden * 4 * hidden + 2 * 2 * n * n * hidden + 2 * 2 * n * hidden * mlp
    return embed + layers * per_layer + 2 * hidden * classes


def peak_flops(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for key, val in PEAK_BF16.items():
        if key in name:
            return val
    return None


def main():
    from attnbias.models.vit import build_vit
    from attnbias.train import TrainConfig, fit, resolve_device

    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="paper", choices=["paper", "quick"])
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()
    s = load_config(".", scale=args.preset)["maxmargin"]["vit"]
    device = resolve_device("auto")
    gpu = device.type == "cuda"
    steps = args.steps or (300 if gpu else 3)
    batch = args.batch or (s["batch_size"] if gpu else 8)
    channels = 3 if s["dataset"] == "cifar10" else 1
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = True
    model = build_vit(
        s["image_size"],
        s["patch_size"],
        channels,
        s["hidden"],
        s["layers"],
        s["heads"],
        s["mlp"],
        10,
    )
    n_data = batch * steps
    x = torch.randn(min(n_data, 50_000), channels, s["image_size"], s["image_size"])
    y = torch.randint(0, 10, (len(x),))

    def loss_fn(m, b):
        return torch.nn.functional.cross_entropy(m(pixel_values=b["x"]).logits.float(), b["y"]), {}

    cfg = TrainConfig(
        epochs=2,
        batch_size=batch,
        lr=s["lr"],
        optimizer=s["optimizer"],
        momentum=s["momentum"],
        steps_per_epoch=steps,
        augment_pad=s["augment_pad"],
        augment_flip=s["augment_flip"],
        compile=args.compile,
    )
    t0 = time.perf_counter()
    hist = fit(model, {"x": x, "y": y}, loss_fn, cfg, device, progress=False)
    if gpu:
        torch.cuda.synchronize()
    sec = hist[-1]["epoch_seconds"]  # epoch 2: after warm-up / compilation
    ips = steps * batch / sec
    flops = 3 * vit_forward_flops(
        s["image_size"], s["patch_size"], channels, s["hidden"], s["layers"], s["mlp"], 10
    )
    peak = peak_flops(device)
    name = torch.cuda.get_device_name(device) if gpu else f"CPU ({torch.get_num_threads()} threads)"
    print(
        f"device: {name}   preset: {args.preset}   batch {batch}   steps/epoch {steps}   compile "
        f"{args.compile}"
    )
    print(
        f"throughput: {ips:.1f} images/s   ({flops / 1e9:.1f} GFLOP per training image, "
        f"{flops * ips / 1e12:.2f} TFLOP/s)"
    )
    if peak:
        mfu = flops * ips / peak
        epoch_h = 50_000 / ips / 3600
        print(
            f"MFU: {100 * mfu:.1f} % of {peak / 1e12:.0f} TFLOP/s bf16   -> 400 epochs of "
            f"CIFAR-10: {400 * epoch_h:.2f} h"
        )
    print(f"(total wall incl. warm-up {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
