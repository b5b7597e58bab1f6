"""Pretrained attention weights from safetensors checkpoints (lowrank Fig 4, App. Fig. B).

* :func:`resolve_model_dir`: a local model directory, or the cached hub snapshot of a model id
  (never downloads);
* :func:`safetensors_layer_factors`: the per-head factor pairs (W_K^h, W_Q^h) and (P^h, W_V^h) of a
  LLaMA-layout checkpoint, read one layer at a time in float64 (no model is instantiated, so a
  13B model fits in a few GB);
* :func:`download_models`: the paper preset's download rule (config + safetensors into the cache).

Hub failures raise :class:`~attnbias.data.hub.DatasetUnavailable`
(:func:`~attnbias.data.hub.hub_error`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ..metrics import rank as rk
from .hub import hub_error, is_local, local_path


def resolve_model_dir(source: str) -> str:
    """A local model directory, or the Hugging Face cache snapshot of a hub id (never downloads);
    a missing snapshot raises :class:`~attnbias.data.hub.DatasetUnavailable` with instructions."""
    if is_local(source):  # a local directory (or a path-like value: then a clear error)
        path = local_path(source)
        if not Path(path).is_dir():
            raise hub_error(source, FileNotFoundError(f"{path} is not a directory"), what="model")
        return path
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(
            source, local_files_only=True, allow_patterns=["*.json", "*.safetensors"]
        )
    except Exception as exc:
        raise hub_error(source, exc, what="model") from exc


def safetensors_layer_factors(model_dir: str):
    """Yield per-layer head factors of a LLaMA-layout checkpoint (``model.layers.<i>.self_attn.
    {q,k,v,o}_proj.weight`` in safetensors shards), one layer at a time, in float64.  Grouped-query
    attention pairs each query head with its shared key/value head."""
    from safetensors import safe_open

    d = Path(model_dir)
    cfg = json.loads((d / "config.json").read_text())
    H = int(cfg["num_attention_heads"])
    Hkv = int(cfg.get("num_key_value_heads") or H)
    index = d / "model.safetensors.index.json"
    if index.exists():
        weight_map = json.loads(index.read_text())["weight_map"]
    else:
        with safe_open(str(d / "model.safetensors"), "pt") as f:
            weight_map = {k: "model.safetensors" for k in f.keys()}
    prefix = next(
        p for p in ("model.layers.", "layers.") if any(k.startswith(p) for k in weight_map)
    )
    n_layers = int(cfg["num_hidden_layers"])
    handles: dict = {}
    try:
        for i in range(n_layers):
            ws = []
            for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
                key = f"{prefix}{i}.self_attn.{proj}.weight"
                shard = weight_map[key]
                if shard not in handles:
                    handles[shard] = safe_open(str(d / shard), "pt")
                ws.append(handles[shard].get_tensor(key))
            yield rk.head_factors(*ws, n_heads=H, n_kv_heads=Hkv)
    finally:
        handles.clear()


def download_models(names: list[str]):
    """Fetch the config and safetensors weights of hub models into the Hugging Face cache.  Gated
    models (LLaMA-2) need an accepted licence and a token in the environment (``HF_TOKEN``, or a
    ``huggingface-cli login``), never in the config.  A local model directory (in the hub layout)
    is used as it is: nothing to fetch."""
    from huggingface_hub import snapshot_download

    rows = []
    for name in names:
        if Path(name).is_dir():
            rows.append({"model": name, "path": name})
            continue
        try:
            path = snapshot_download(
                name,
                allow_patterns=["*.json", "*.safetensors"],
                token=os.environ.get("HF_TOKEN") or None,
            )
        except Exception as exc:
            raise hub_error(
                name, exc, what="model (gated: accept the licence on the hub and export HF_TOKEN)"
            ) from exc
        rows.append({"model": name, "path": path})
    return pd.DataFrame(rows), {"columns": {"model": "hub id", "path": "local snapshot directory"}}
