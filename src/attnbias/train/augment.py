"""GPU-side image augmentation written with tensor ops (no torchvision)."""

from __future__ import annotations

import torch


def random_crop_flip(
    x: torch.Tensor, pad: int, flip: bool, generator: torch.Generator
) -> torch.Tensor:
    """Random crop with zero padding ``pad`` and random horizontal flip of a batch (B, C, H, W).

    Random numbers come from ``generator`` (a CPU generator, so runs are reproducible and
    resumable on any device); the indexing runs on ``x``'s device.
    """
    B, C, H, W = x.shape
    if pad > 0:
        padded = torch.nn.functional.pad(x, (pad, pad, pad, pad))
        oy = torch.randint(0, 2 * pad + 1, (B,), generator=generator).to(x.device)
        ox = torch.randint(0, 2 * pad + 1, (B,), generator=generator).to(x.device)
        rows = (oy[:, None] + torch.arange(H, device=x.device))[:, :, None]  # (B, H, 1)
        cols = (ox[:, None] + torch.arange(W, device=x.device))[:, None, :]  # (B, 1, W)
        b = torch.arange(B, device=x.device)[:, None, None]
        x = padded.permute(0, 2, 3, 1)[b, rows, cols].permute(0, 3, 1, 2)
    if flip:
        mask = (torch.rand(B, generator=generator) < 0.5).to(x.device)
        x = torch.where(mask[:, None, None, None], x.flip(-1), x)
    return x.contiguous()
