"""The device: its measured ceilings (the ``device_ceilings`` part), its datasheet peak, and the
peak memory every part reports."""

from __future__ import annotations

import math
import resource
import time
from pathlib import Path

from attnbias.models.flops import peak_bf16


def sync(device) -> None:
    """Wait for the device's queued work (CUDA); nothing on the CPU."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_flops(device) -> float | None:
    """The datasheet's dense bf16 peak of a CUDA ``device`` (:func:`attnbias.models.flops.
    peak_bf16`); None on the CPU or for a device not in the table."""
    import torch

    if device.type != "cuda":
        return None
    return peak_bf16(torch.cuda.get_device_name(device))


def memory(device) -> dict:
    """Peak memory of this process: GPU (allocator peak + CUDA context) or host RSS."""
    import torch

    out = {"host_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    if device.type != "cuda":
        out["peak_mem_mb"] = out["host_peak_rss_mb"]
        out["peak_mem_kind"] = "host peak RSS (CPU mode)"
        return out
    sync(device)
    free, total = torch.cuda.mem_get_info(device)
    used = (total - free) / 2**20
    reserved_now = torch.cuda.memory_reserved(device) / 2**20
    context = max(0.0, used - reserved_now)
    peak_reserved = torch.cuda.max_memory_reserved(device) / 2**20
    out.update(
        peak_allocated_mb=round(torch.cuda.max_memory_allocated(device) / 2**20),
        peak_reserved_mb=round(peak_reserved),
        context_mb=round(context),
        device_total_mb=round(total / 2**20),
        peak_mem_mb=round(peak_reserved + context),
        peak_mem_kind="max_memory_reserved + CUDA context",
    )
    out["gpu_mem_mb_suggested"] = int(1000 * math.ceil(1.25 * out["peak_mem_mb"] / 1000))
    return out


def part_device(cpu: bool, device, workdir: Path) -> dict:
    """Measured ceilings: a bf16 matrix product (random data) and a device-to-device copy."""
    import torch

    n = 1024 if cpu else 8192
    dtype = torch.float32 if cpu else torch.bfloat16
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    for _ in range(3):
        a @ b
    sync(device)
    reps = 3 if cpu else 20
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    mm = 2 * n**3 * reps / (time.perf_counter() - t0)
    x = torch.empty(256 * 2**20 // (4 if cpu else 1), dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    y.copy_(x)
    sync(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        y.copy_(x)
    sync(device)
    bw = 2 * x.numel() * reps / (time.perf_counter() - t0)
    out = {"matmul_tflops": mm / 1e12, "matmul_size": n, "copy_gb_s": bw / 1e9}
    if not cpu:
        peak = peak_flops(device)
        out["datasheet_peak_tflops"] = peak / 1e12 if peak else float("nan")
        out["matmul_fraction_of_peak"] = mm / peak if peak else float("nan")
    return out
