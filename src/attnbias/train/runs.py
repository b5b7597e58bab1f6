"""Optimising R independent runs stacked along the leading axis of every parameter (e.g.
:class:`attnbias.models.recall.RecallRuns`): Adam is elementwise, so one optimiser over the stacked
parameters keeps each run's own moments; only the decoupled weight decay differs between runs.
"""

from __future__ import annotations

import torch


class RunsAdamW(torch.optim.AdamW):
    """AdamW whose decoupled weight decay may differ between the runs stacked along the leading
    axis of a group's parameters: a group's ``run_decay`` (one λ_r per run) shrinks run r's
    slice θ_r ← (1 − lr·λ_r)·θ_r before the Adam update, as :class:`torch.optim.AdamW` does with
    its ``weight_decay`` (the same float32 multiplication, so one run's update is bit for bit
    AdamW's).  Every group's own ``weight_decay`` must be 0; a group without ``run_decay`` is
    plain Adam(W) without decay.
    """

    def __init__(self, params, **kwargs):
        super().__init__(params, weight_decay=0.0, **kwargs)
        for group in self.param_groups:
            if group["weight_decay"] != 0.0:
                raise ValueError("RunsAdamW: give the decay per run (run_decay), not weight_decay")
        self._factors: dict = {}

    def _factor(self, group, p: torch.Tensor) -> torch.Tensor:
        """(1 − lr·λ_r) per run, in the parameter's dtype, shaped to broadcast over run r's slice
        (computed in float64 from Python floats like AdamW's scalar, kept on the device)."""
        lr, decays = float(group["lr"]), tuple(group["run_decay"])
        key = (lr, decays, p.device, p.dtype, p.dim())
        if key not in self._factors:
            if len(decays) != p.shape[0]:
                raise ValueError(f"{len(decays)} run decays for a parameter of {p.shape[0]} runs")
            values = torch.tensor([1.0 - lr * lam for lam in decays], dtype=torch.float64)
            self._factors[key] = values.to(p.dtype).view(-1, *[1] * (p.dim() - 1)).to(p.device)
        return self._factors[key]

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            if group.get("run_decay") is None:
                continue
            for p in group["params"]:
                if p.grad is not None:
                    p.mul_(self._factor(group, p))
        return super().step(closure)
