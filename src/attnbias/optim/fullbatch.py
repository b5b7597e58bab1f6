"""Full-batch update rules (GD, normalised GD, Polyak step), batched over initialisations/trials.

One runner, :func:`run`, advances a whole batch of independent problems at once.  A *grad_fn*
maps the current parameters (a dict of arrays whose leading axes are the batch) to

    {"loss": (B...,), "grads": {name: (G, log_scale)}, optional "excess": (B...,), ...}

where the true gradient of block ``name`` is ``exp(log_scale) · G`` (see
:mod:`attnbias.models.attention`).  Update rules, with g = ∇L:

* ``gd``      θ ← θ − η g
* ``ngd``     θ ← θ − η g / ‖g‖   (``normalize="joint"``: one norm over all blocks;
  ``"block"``: each block divided by its own norm)
* ``polyak``  θ ← θ − η · min((L − L*) / ‖g‖², cap) · g   (L − L* from ``log_excess`` or
  ``excess`` when the grad_fn returns them, else ``loss − loss_star``)

A batch element whose gradient is exactly zero (or not finite), or whose update would leave the
finite numbers, is frozen: it keeps its last iterate for all later steps and ``stopped_at``
records when.  No NaN is ever produced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

METHODS = ("gd", "ngd", "polyak")


def _sqnorm(G: np.ndarray, batch_ndim: int) -> np.ndarray:
    axes = tuple(range(batch_ndim, G.ndim))
    return np.sum(G * G, axis=axes) if axes else G * G


def _expand(x: np.ndarray, like: np.ndarray) -> np.ndarray:
    return x.reshape(x.shape + (1,) * (like.ndim - x.ndim))


def step_sizes(out: dict, method: str, lr: float, normalize: str, loss_star, polyak_cap):
    """Per-block update Δ_b (to be added to θ_b) and a mask of batch elements that can move."""
    grads = out["grads"]
    names = list(grads)
    ls = {k: np.asarray(grads[k][1], dtype=np.float64) for k in names}
    bshape = np.shape(out["loss"])
    bnd = len(bshape)
    ls = {k: np.broadcast_to(v, bshape) for k, v in ls.items()}
    finite = np.zeros(bshape, dtype=bool)
    for k in names:
        finite |= np.isfinite(ls[k])
    m = np.max(np.stack([np.where(np.isfinite(ls[k]), ls[k], -np.inf) for k in names]), axis=0)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    rel = {}
    for k in names:
        with np.errstate(under="ignore"):
            w = np.where(np.isfinite(ls[k]), np.exp(ls[k] - m_safe), 0.0)
        rel[k] = _expand(w, grads[k][0]) * grads[k][0]  # g_b / exp(m)
    sq = {k: _sqnorm(rel[k], bnd) for k in names}
    total = np.sqrt(sum(sq.values()))
    ok = finite & np.isfinite(total) & (total > 0)
    for k in names:
        ok &= np.all(np.isfinite(rel[k]), axis=tuple(range(bnd, rel[k].ndim)))
    safe_total = np.where(ok, total, 1.0)
    delta = {}
    if method == "gd":
        with np.errstate(over="ignore", under="ignore"):
            scale = np.where(ok, np.exp(m_safe), 0.0)
        for k in names:
            delta[k] = -lr * _expand(scale, rel[k]) * rel[k]
    elif method == "ngd":
        for k in names:
            if normalize == "block":
                nb = np.sqrt(sq[k])
                okb = ok & (nb > 0)
                delta[k] = -lr * rel[k] / _expand(np.where(okb, nb, 1.0), rel[k])
                delta[k] = np.where(_expand(okb, rel[k]), delta[k], 0.0)
            elif normalize == "joint":
                delta[k] = -lr * rel[k] / _expand(safe_total, rel[k])
            else:
                raise ValueError(f"normalize must be 'joint' or 'block', got {normalize!r}")
    elif method == "polyak":
        with np.errstate(divide="ignore"):
            if "log_excess" in out:  # log(L − L*): no underflow even when L − L* < 1e-308
                log_excess = np.asarray(out["log_excess"], dtype=np.float64)
            elif "excess" in out:
                log_excess = np.log(np.maximum(np.asarray(out["excess"], dtype=np.float64), 0.0))
            elif loss_star is not None:
                log_excess = np.log(
                    np.maximum(np.asarray(out["loss"]) - np.asarray(loss_star), 0.0)
                )
            else:
                raise ValueError(
                    "polyak needs loss_star or an 'excess'/'log_excess' entry from grad_fn"
                )
        with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
            log_eta = log_excess - 2 * m_safe - 2 * np.log(safe_total)
            if polyak_cap is not None:
                log_eta = np.minimum(log_eta, np.log(polyak_cap))
            coef = np.where(ok, np.exp(log_eta + m_safe), 0.0)  # η · exp(m)
        for k in names:
            delta[k] = -lr * _expand(coef, rel[k]) * rel[k]
    else:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    for k in names:
        delta[k] = np.where(_expand(ok, delta[k]), delta[k], 0.0)
    return delta, ok


def run(
    grad_fn: Callable[[dict], dict],
    params0: dict,
    steps: int,
    method: str = "ngd",
    lr: float = 0.1,
    normalize: str = "joint",
    record_at: Sequence[int] | None = None,
    observe: Callable[[dict, dict], dict] | None = None,
    loss_star=None,
    polyak_cap: float | None = None,
) -> dict:
    """Run ``steps`` updates of ``method`` from ``params0`` (dict of float64 arrays, batch-leading).

    ``record_at``: iterations t (after t updates; 0 = the initial point) at which parameters,
    the loss and ``observe(params, out)`` are stored (default: every step).

    Returns {"t": (R,), "params": {name: (R, ...)}, "loss": (R, B...), "stopped_at": (B...,)
    (−1 if never stopped), plus every key returned by ``observe`` stacked to (R, ...)}.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    params = {k: np.array(v, dtype=np.float64, copy=True) for k, v in params0.items()}
    record = sorted(set(range(steps + 1) if record_at is None else (int(t) for t in record_at)))
    if record and (record[0] < 0 or record[-1] > steps):
        raise ValueError("record_at must lie in [0, steps]")
    rec = {"params": {k: [] for k in params}, "loss": []}
    extra: dict[str, list] = {}
    stopped = None
    r = 0
    for t in range(steps + 1):
        out = grad_fn(params)
        if stopped is None:
            stopped = np.full(np.shape(out["loss"]), -1, dtype=np.int64)
        if r < len(record) and record[r] == t:
            for k, v in params.items():
                rec["params"][k].append(v.copy())
            rec["loss"].append(np.array(out["loss"], copy=True))
            if observe is not None:
                for k, v in observe(params, out).items():
                    extra.setdefault(k, []).append(np.asarray(v))
            r += 1
        if t == steps:
            break
        delta, ok = step_sizes(out, method, lr, normalize, loss_star, polyak_cap)
        for k in params:  # an update that would leave the finite numbers freezes the element
            new = params[k] + delta[k]
            ok &= np.all(np.isfinite(new), axis=tuple(range(ok.ndim, new.ndim)))
        newly = (~ok) & (stopped < 0)
        stopped = np.where(newly, t, stopped)
        frozen = stopped >= 0
        for k in params:
            params[k] = params[k] + np.where(_expand(frozen, delta[k]), 0.0, delta[k])
    result = {
        "t": np.asarray(record),
        "params": {k: np.stack(v) for k, v in rec["params"].items()},
        "loss": np.stack(rec["loss"]),
        "stopped_at": stopped,
    }
    for k, v in extra.items():
        result[k] = np.stack(v)
    return result
