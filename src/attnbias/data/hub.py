"""Access to the Hugging Face hub: the one error type and message for an artefact that cannot be
loaded (typically: offline and not cached), shared by every dataset, tokenizer and model loader,
the one loader of hub datasets (:func:`load_hub`, used by the text and digit loaders), and the
download step of the paper preset (:func:`fetch_assets`).

**Local sources.**  Every dataset, model and tokenizer setting takes a hub id or a local directory
laid out like the hub repository (what ``hf download <id> --local-dir DIR`` writes).  The rule,
shared by the workflow and the loaders (:func:`is_local`): a value is local when it starts with
``/``, ``./``, ``../`` or ``~``, or names an existing directory; anything else is a hub id.

**Offline mode.**  With ``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` set
(:func:`offline_vars`), a download step loads only from the Hugging Face cache; an artefact that is
not cached fails at once (:func:`require_cached`), without a network attempt or a retry.  When
the hub cannot be reached at all (:func:`hub_unreachable`: no route, no DNS), a download step works
the same way, from the cache only, instead of letting each library retry for tens of seconds.
Either way the download rule is not retried: a download that cannot succeed fails once."""

from __future__ import annotations

import os
from pathlib import Path

OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
LOCAL_PREFIXES = ("/", "./", "../", "~")


def offline_vars(environ=None) -> list[str]:
    """The Hugging Face offline variables set to a true value (``1``, ``true``, ``yes``, ``on``)."""
    env = os.environ if environ is None else environ
    return [v for v in OFFLINE_VARS if env.get(v, "").strip().lower() in ("1", "true", "yes", "on")]


UNREACHABLE_VAR = "ATTNBIAS_HUB_UNREACHABLE"  # set by scripts/download.py: why, for the message
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def hub_unreachable(timeout: float = 5.0) -> str | None:
    """Why the hub endpoint (``HF_ENDPOINT``, default https://huggingface.co) cannot be reached
    from this machine -- a TCP connection fails within ``timeout`` seconds -- or None when it can,
    or when a proxy is configured (then the libraries' own attempts decide)."""
    import socket
    from urllib.parse import urlsplit

    if any(os.environ.get(v) for v in PROXY_VARS):
        return None
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{url.scheme}://{url.netloc}: {exc}"


def is_local(source) -> bool:
    """True when a dataset/model/tokenizer setting names a local directory rather than a hub id:
    it starts with ``/``, ``./``, ``../`` or ``~``, or it is an existing directory (relative to the
    working directory, as the Hugging Face libraries resolve it)."""
    if not isinstance(source, str) or not source:
        return False
    return source.startswith(LOCAL_PREFIXES) or Path(source).is_dir()


def local_path(source: str) -> str:
    """A local source with ``~`` expanded (the Hugging Face loaders do not expand it)."""
    return os.path.expanduser(source)


def _cache_dirs(kind: str, name: str) -> list[Path]:
    """Where the Hugging Face libraries cache a hub repository (``kind``: dataset or model)."""
    from huggingface_hub import constants

    hub = Path(constants.HF_HUB_CACHE)
    repo = name.replace("/", "--")
    if kind != "dataset":
        return [hub / f"models--{repo}"]
    home = Path(os.environ.get("HF_HOME") or Path(constants.HF_HOME))
    datasets_cache = Path(os.environ.get("HF_DATASETS_CACHE") or home / "datasets")
    return [hub / f"datasets--{repo}", datasets_cache / name.replace("/", "___")]


def require_cached(assets, rule: str | None = None) -> None:
    """In offline mode (:func:`offline_vars`), fail at once with :func:`hub_error` when a hub
    artefact ``(kind, name, *keys)`` of ``assets`` has nothing in the Hugging Face cache: no
    network attempt, no retry.  ``keys``: the settings that name it
    (``maxmargin.vit.cifar_source``), which the message offers to point at a local directory.
    Local sources and online mode pass (the loaders then do the work)."""
    off = offline_vars()
    if not off:
        return
    for kind, name, *keys in assets:
        if is_local(name) or any(d.exists() for d in _cache_dirs(kind, name)):
            continue
        why = "the hub cannot be reached" if os.environ.get(UNREACHABLE_VAR) else f"{off[0]} is set"
        exc = FileNotFoundError(f"{why} and it is not in the cache")
        raise hub_error(name, exc, what=kind, rule=rule, keys=keys)


class DatasetUnavailable(RuntimeError):
    """A hub dataset, tokenizer or model could not be loaded (typically: offline and not cached)."""


def hub_error(
    name: str,
    exc: Exception,
    what: str = "dataset",
    config: str | None = None,
    rule: str | None = None,
    keys=(),
) -> DatasetUnavailable:
    """The one message for a hub artefact that cannot be loaded: what failed and the ways on --
    fetch it once (the download rule ``rule`` when there is one), point its setting (``keys``, the
    key paths naming it, when known) at a local copy, or run the offline quick preset."""
    label = name + (f" (config {config!r})" if config else "")
    setting = " / ".join(keys) if keys else f"the {what}'s setting"
    if is_local(name):  # a local source: nothing to fetch, the directory is wrong
        return DatasetUnavailable(
            f"Could not load the {what} {label} from the local directory "
            f"{local_path(name)} ({type(exc).__name__}: {exc}).\n"
            f"A local source ({setting}) must be laid out like the hub repository (what "
            "`hf download <id> --local-dir DIR`\nwrites; docs/cluster.md, \"Local sources\"), or "
            "give the hub id instead."
        )
    if what == "dataset":
        args = f"'{name}'" + (f", '{config}'" if config else "")
        fetch = f"python -c \"import datasets; datasets.load_dataset({args})\""
    else:
        fetch = f"hf download {name}"
    if rule:
        fetch = f"snakemake --cores 1 {rule} --config scale=paper\n    (or: {fetch})"
    else:
        fetch += "\n    (the workflow's download rules do it: snakemake ... --config scale=paper)"
    off, unreachable = offline_vars(), os.environ.get(UNREACHABLE_VAR)
    offline = ""
    if unreachable:
        offline = (
            f"The hub cannot be reached from this machine ({unreachable}), so only the cache was "
            "read.\n"
        )
    elif off:
        offline = f"Offline mode is on ({', '.join(off)}): nothing was downloaded.\n"
    return DatasetUnavailable(
        f"Could not load the {what} {label} from the Hugging Face hub "
        f"({type(exc).__name__}: {exc}).\n{offline}"
        "The paper preset needs it.  Either\n"
        "  - fetch it once on a machine that reaches the hub (it is cached under $HF_HOME,\n"
        f"    which you can copy to an offline machine):\n    {fetch}\n"
        f"  - or set {setting} to a local directory in the hub layout\n"
        "    (docs/cluster.md, \"Local sources\")\n"
        "  - or run the offline quick preset instead:  snakemake --cores 2 all --config scale=quick"
    )


def load_hub(source: str, config: str | None, rule: str | None):
    """The hub dataset ``source`` (a hub id or a local directory in the hub's layout) with the
    dataset ``config`` (None: the default one), as ``datasets.load_dataset`` returns it.  Any
    failure (offline and not cached, a wrong id, a malformed local copy) is raised as the one
    :func:`hub_error` message, naming ``rule``, the download rule that fetches it (None: none)."""
    import datasets

    try:
        return datasets.load_dataset(source, config) if config else datasets.load_dataset(source)
    except Exception as exc:  # offline, not cached, bad id: all end the same way for the user
        raise hub_error(source, exc, config=config, rule=rule) from exc


def fetch_assets(kind: str, names: list[str], config: str | None = None, attempts: int = 3):
    """Fetch hub datasets (``kind="dataset"``, with the dataset ``config``) or models with their
    tokenizers (``kind="model"``) into the Hugging Face cache: the job of the paper preset's
    download rules, so that training jobs never download.  Returns ``(manifest, meta)``: one row
    per dataset split (its rows) or model (its parameters with a 2-way head).

    Online, a failed fetch is tried again, ``attempts`` times in all (a dropped connection; the
    cache keeps what was downloaded); offline (:func:`offline_vars`, which the download step also
    sets when the hub cannot be reached) it fails at once: it cannot succeed.  The download rule
    itself has no retries, so such a failure is reported once."""
    import pandas as pd

    rows = []
    for name in names:
        rows += _retried(lambda name=name: _fetch_one(kind, name, config), attempts)
    cols = {
        "asset": "hub id",
        "part": "split (datasets) or weights (models)",
        "rows": "rows of the split, or parameters of the model with a 2-way head",
    }
    return pd.DataFrame(rows, columns=list(cols)), {"kind": kind, "config": config, "columns": cols}


def _fetch_one(kind: str, name: str, config: str | None) -> list[dict]:
    if kind == "dataset":
        ds = load_hub(name, config, None)
        return [{"asset": name, "part": split, "rows": len(ds[split])} for split in ds]
    if kind == "model":
        from ..models.sequence import load_classifier, load_tokenizer

        load_tokenizer(name)
        n_params = sum(p.numel() for p in load_classifier(name, 2).parameters())
        return [{"asset": name, "part": "weights", "rows": n_params}]
    raise ValueError(f"unknown asset kind {kind!r}")


def _retried(fetch, attempts: int, wait_s: float = 20.0):
    """``fetch()``, tried up to ``attempts`` times while online, once offline."""
    import logging
    import time

    for attempt in range(1, attempts + 1):
        try:
            return fetch()
        except Exception as exc:
            if offline_vars() or attempt == attempts or isinstance(exc, ValueError):
                raise
            logging.getLogger("attnbias").warning(
                "fetch failed (%s: %s); attempt %d of %d in %.0f s",
                type(exc).__name__, exc, attempt + 1, attempts, wait_s * attempt,
            )  # fmt: skip
            time.sleep(wait_s * attempt)
