"""Stochastic normalised GD (SNGD) and the stochastic Polyak step (SPS_max) as torch optimisers.

Both act on *all* parameters of the optimiser at once: the gradient norm is the global L2 norm
over every parameter (of every parameter group) that has a gradient, so the step depends on the
whole model, like the full-batch rules of :mod:`attnbias.optim.fullbatch` with
``normalize="joint"``.  Parameters without a gradient are skipped.  With a full batch, float64
and the same parameters, SNGD is NGD and SPS (c = 1, no cap in effect) is the Polyak step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch
from torch.optim import Optimizer


def _params_with_grad(groups) -> list[tuple[dict, torch.Tensor]]:
    return [(g, p) for g in groups for p in g["params"] if p.grad is not None]


def squared_norm(t: torch.Tensor, chunk: int = 4096) -> torch.Tensor:
    """‖t‖² as a float64 scalar, accurate and fast for tensors of any size and dtype.

    Rows of ``chunk`` entries are reduced in (at least) float32 and their squares summed in
    float64: the relative error is float32 rounding (≤ 2e-7, tested) at any size, where one
    float32 reduction over an 11.7M-entry embedding gradient is off by ≈ 4e-4 and a float64 copy
    of it costs 25× the time (100 ms a step on one core).
    """
    acc = torch.promote_types(t.dtype, torch.float32)
    flat = t.detach().reshape(-1)
    whole = flat.numel() // chunk * chunk
    rows = torch.linalg.vector_norm(flat[:whole].view(-1, chunk), dim=1, dtype=acc)
    total = rows.to(torch.float64).pow(2).sum()
    if whole < flat.numel():
        total = total + torch.linalg.vector_norm(flat[whole:], dtype=acc).to(torch.float64) ** 2
    return total


def global_grad_norm(params: Iterable[torch.Tensor], chunk: int = 4096) -> torch.Tensor:
    """‖g‖ over the gradients of ``params`` (those with one), a float64 scalar on their device;
    the one gradient-norm function of SNGD, SPS and the SGD norm probe."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return torch.zeros((), dtype=torch.float64)
    device = grads[0].device
    squares: list = [None] * len(grads)
    # the tensors shorter than a chunk (most of a model's): one fused norm per accumulation dtype,
    # the same float operations as squared_norm on each (bit for bit), without its per-tensor
    # Python work, which was 9 % of a small ViT's SNGD step on one CPU core
    short: dict = {}
    for i, g in enumerate(grads):
        if g.numel() < chunk:
            short.setdefault(torch.promote_types(g.dtype, torch.float32), []).append(i)
        else:
            squares[i] = squared_norm(g, chunk).to(device)
    for acc, idx in short.items():
        norms = torch._foreach_norm([grads[i].detach().reshape(-1) for i in idx], 2, dtype=acc)
        for i, sq in zip(idx, torch.stack(norms).to(torch.float64).pow(2).unbind(), strict=True):
            squares[i] = sq.to(device)
    return torch.stack(squares).sum().sqrt()


class SNGD(Optimizer):
    r"""Stochastic normalised gradient descent.

    Update, with g_B the minibatch gradient of all parameters and ‖·‖ the global L2 norm:

        θ ← θ − η · g_B / (‖g_B‖ + ε).

    ``lr`` is η (per parameter group; the norm is always global), ``eps`` is ε (default 1e-8, the
    project's value, docs/papers/fastrates.md#sngd; ε = 0 gives exact NGD, and a zero gradient then
    leaves θ unchanged).  ``step`` returns the closure's loss when a closure is given;
    ``self.last["grad_norm"]`` records ‖g_B‖ of the last step, and :meth:`own_step` how often
    normalising changed the step.
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, eps: float = 1e-8):
        if lr <= 0:
            raise ValueError(f"SNGD needs lr > 0, got {lr}")
        if eps < 0:
            raise ValueError(f"SNGD needs eps ≥ 0, got {eps}")
        super().__init__(params, {"lr": lr, "eps": eps})
        self.last: dict = {}

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        pairs = _params_with_grad(self.param_groups)
        norm = global_grad_norm(p for _, p in pairs)
        self.last = {"grad_norm": float(norm)}
        # kept in the first group, so a checkpoint (state_dict) carries them
        self.param_groups[0].setdefault("grad_norms", []).append(float(norm))
        if float(norm) == 0.0:
            return loss
        for g, p in pairs:
            scale = g["lr"] / (float(norm) + g["eps"])
            p.add_(p.grad, alpha=-scale)
        return loss


    # SNGD's step differs materially from a fixed-rate SGD step where ‖g_B‖ leaves this band
    # around its median over the run (the SGD rate that matches SNGD's typical step)
    BAND = (0.8, 1.25)

    def own_step(self) -> dict:
        """How often SNGD's own (normalised) step is not an SGD step: the share of the steps so
        far whose ‖g_B‖ lies outside :attr:`BAND` × its median over the run.  SNGD's step is
        η g_B/‖g_B‖, SGD's at the matching rate η/median‖g_B‖ is η g_B/median‖g_B‖: the two
        differ by the factor median/‖g_B‖, so with a steady gradient norm SNGD *is* SGD."""
        norms = np.asarray(self.param_groups[0].get("grad_norms", []), dtype=float)
        if not norms.size:
            return {"rule": "sngd", "steps": 0, "own_steps": 0, "fraction": float("nan")}
        ratio = norms / max(float(np.median(norms)), 1e-300)
        own = int(np.sum((ratio < self.BAND[0]) | (ratio > self.BAND[1])))
        return {
            "rule": "sngd",
            "steps": int(norms.size),
            "own_steps": own,
            "fraction": own / norms.size,
            "meaning": "steps whose ‖g_B‖ is outside [0.8, 1.25] × its median over the run "
            "(there SNGD's step differs by > 20 % from SGD's at the matching rate)",
        }


class SPS(Optimizer):
    r"""Stochastic Polyak step, the capped SPS_max form (Loizou et al. 2021).

    With ℓ_B(θ) the minibatch loss, ℓ_B^* a lower bound of it (0 for cross-entropy), g_B its
    gradient over all parameters and ‖·‖ the global L2 norm:

        γ = min{ (ℓ_B(θ) − ℓ_B^*) / (c · ‖g_B‖²),  γ_b },      θ ← θ − γ · g_B.

    ``lr`` is the cap γ_b (per parameter group, so learning-rate schedulers scale the cap; ``inf``
    removes it), ``c`` the constant (in the BERT and ViT runs matched to SGD's rate at the start
    and searched, docs/papers/fastrates.md#sps; 1 gives the full-batch Polyak step of
    :mod:`attnbias.optim.fullbatch`), ``f_star`` is ℓ_B^*.  The loss is passed as
    ``step(loss=...)`` or computed by a closure (which must call ``backward``).  A zero gradient,
    or ℓ_B ≤ ℓ_B^*, gives γ = 0.  ``self.last`` records the loss, ‖g_B‖ and the uncapped step of
    the last call; :meth:`own_step` how often the Polyak step, not the cap, was
    taken.
    """

    def __init__(self, params: Iterable, lr: float = 1.0, c: float = 0.5, f_star: float = 0.0):
        if not lr > 0:
            raise ValueError(f"SPS needs a cap lr > 0, got {lr}")
        if c <= 0:
            raise ValueError(f"SPS needs c > 0, got {c}")
        super().__init__(params, {"lr": lr, "c": c, "f_star": f_star})
        self.last: dict = {}

    @torch.no_grad()
    def step(
        self,
        closure: Callable[[], torch.Tensor] | None = None,
        loss: torch.Tensor | float | None = None,
    ):
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if loss is None:
            raise ValueError("SPS.step needs the minibatch loss: step(loss=...) or a closure")
        value = float(loss.detach()) if torch.is_tensor(loss) else float(loss)
        pairs = _params_with_grad(self.param_groups)
        sq = float(global_grad_norm(p for _, p in pairs)) ** 2
        self.last = {"loss": value, "grad_norm": sq**0.5, "polyak_step": None}
        if sq == 0.0:
            return loss
        first = self.param_groups[0]
        for g in self.param_groups:
            gap = max(value - g["f_star"], 0.0)
            raw = gap / (g["c"] * sq)
            self.last["polyak_step"] = raw
            gamma = min(raw, g["lr"])
            if g is first:  # kept in the group, so a checkpoint (state_dict) carries them
                first["steps_taken"] = first.get("steps_taken", 0) + 1
                first["own_steps"] = first.get("own_steps", 0) + int(raw < g["lr"])
            for p in g["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-gamma)
        return loss

    def own_step(self) -> dict:
        """How often SPS's own step was taken: the share of the steps so far on which the Polyak
        step (ℓ_B − ℓ_B^*)/(c‖g_B‖²) was below the cap γ_b (of the first parameter group).  On the
        other steps SPS takes γ_b g_B, an SGD step at learning rate γ_b: a run capped on every
        step is the SGD run at lr = γ_b, and comparing it with SGD says nothing about the rule."""
        g = self.param_groups[0]
        n, own = int(g.get("steps_taken", 0)), int(g.get("own_steps", 0))
        return {
            "rule": "sps",
            "steps": n,
            "own_steps": own,
            "fraction": own / n if n else float("nan"),
            "capped_fraction": (n - own) / n if n else float("nan"),
            "meaning": "steps on which the Polyak step was below the cap γ_b (elsewhere SPS "
            "takes SGD's step at lr = γ_b: capped_fraction)",
        }
