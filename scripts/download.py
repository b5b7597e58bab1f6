"""Download rule entry point: run attnbias.<func>(**settings), which fetches a hub dataset or model
into the Hugging Face cache (or prepares files from it in the folder beside the marker), and write
its manifest as the marker.

Offline mode (any of HF_HUB_OFFLINE, HF_DATASETS_OFFLINE, TRANSFORMERS_OFFLINE set) is made whole
for this process before any Hugging Face library is imported, and the hub artefacts the rule needs
(``params.hub``) are checked against the cache first: one that is not cached fails at once with the
clear message, never after network attempts (the rule has no retries offline)."""

import os
from pathlib import Path

from attnbias.data.hub import OFFLINE_VARS, offline_vars, require_cached

if offline_vars():  # one offline variable means offline for every Hugging Face library
    os.environ.update({v: "1" for v in OFFLINE_VARS})

from attnbias.io import save_data  # noqa: E402
from attnbias.workflow import resolve, rule_logging  # noqa: E402

with rule_logging(snakemake) as log:  # noqa: F821 (injected by Snakemake)
    p = snakemake.params  # noqa: F821
    log.info("fetching with %s %s", p.func, dict(p.settings))
    require_cached([tuple(a) for a in p.hub], rule=snakemake.rule)  # noqa: F821
    out = snakemake.output  # noqa: F821
    extra = {"out_dir": str(Path(out.csv).with_suffix(""))} if p.prepares else {}
    df, meta = resolve("attnbias", p.func)(**dict(p.settings), **extra)
    meta.setdefault("settings", dict(p.settings))
    save_data(df, meta, out.csv, preset=p.preset)
    log.info("fetched: %s", df.to_dict("records"))
