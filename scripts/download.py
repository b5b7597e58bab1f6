"""Download rule entry point: run attnbias.<func>(**settings), which fetches a hub dataset or model
into the Hugging Face cache (or prepares files from it in the folder beside the marker), and write
its manifest as the marker.

Offline mode (any of HF_HUB_OFFLINE, HF_DATASETS_OFFLINE, TRANSFORMERS_OFFLINE set) is made whole
for this process before any Hugging Face library is imported, and the hub artefacts the rule needs
(``params.hub``) are checked against the cache first: one that is not cached fails at once with the
clear message, never after network attempts.  Without an offline variable, a hub that cannot be
reached at all (a TCP connection to HF_ENDPOINT fails within 5 s) is treated the same way, so the
rule fails in seconds, not after the libraries' own retries (about 25 s each).  The rule has no
retries, and such a failure prints its message once, without a traceback (the log has both)."""

import os
import sys
from pathlib import Path

from attnbias.data.hub import (
    OFFLINE_VARS,
    UNREACHABLE_VAR,
    DatasetUnavailable,
    hub_unreachable,
    offline_vars,
    require_cached,
)

_hub = [tuple(a) for a in snakemake.params.hub]  # noqa: F821 (injected by Snakemake)
_unreachable = hub_unreachable() if _hub and not offline_vars() else None
if _unreachable:
    os.environ[UNREACHABLE_VAR] = _unreachable
if offline_vars() or _unreachable:  # offline for every Hugging Face library, cache only
    os.environ.update({v: "1" for v in OFFLINE_VARS})

from attnbias.io import save_data  # noqa: E402
from attnbias.workflow import resolve, rule_logging  # noqa: E402

try:
    with rule_logging(snakemake) as log:  # noqa: F821 (injected by Snakemake)
        p = snakemake.params  # noqa: F821
        log.info("fetching with %s %s", p.func, dict(p.settings))
        if _unreachable:
            log.warning("the hub cannot be reached (%s): reading the cache only", _unreachable)
        require_cached(_hub, rule=p.target)
        out = snakemake.output  # noqa: F821
        extra = {"out_dir": str(Path(out.csv).with_suffix(""))} if p.prepares else {}
        df, meta = resolve("attnbias", p.func)(**dict(p.settings), **extra)
        meta.setdefault("settings", dict(p.settings))
        save_data(df, meta, out.csv, preset=p.preset)
        log.info("fetched: %s", df.to_dict("records"))
except DatasetUnavailable as exc:  # cannot succeed here: the message alone, once
    sys.exit(str(exc))
