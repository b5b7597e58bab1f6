"""Hub downloads of the figure table, and the settings that may name a local directory instead.

Every dataset, model and tokenizer setting of :data:`LOCAL_SOURCE_KEYS` takes a hub id or a local
directory laid out like the hub repository (compute nodes without internet, data on shared
storage).  Local or not is decided by :func:`attnbias.data.hub.is_local`: a value is local when it
starts with ``/``, ``./``, ``../`` or ``~``, or names an existing directory; anything else is a hub
id.  A local value is checked (:func:`resolve_local_sources`: a clear error when it is not a
directory), ``~`` is expanded, and no download is registered for it: the loaders read the directory
directly.  A hub artefact gets one :class:`~attnbias.table.registry.Download` entry, shared by
every figure that needs it (:func:`register_download`), whose marker
``results/downloads/<paper>/<name>.csv`` is the input of the jobs that read it.
"""

from __future__ import annotations

from pathlib import Path

from attnbias.data.hub import LOCAL_PREFIXES, is_local, local_path
from attnbias.table.registry import Download, Table, TableError

# (paper, block) -> the keys of that settings block naming a hub artefact or a local directory
LOCAL_SOURCE_KEYS = {
    ("maxmargin", "vit"): ["cifar_source"],
    **{("fastrates", f): ["source", "model"] for f in ("fig1", "fig4", "fig6", "fig7")},
    ("lowrank", "lm"): ["source", "tokenizer"],
    ("lowrank", "vit"): ["source"],
    ("lowrank", "fig4"): ["source"],
    ("lowrank", "figB"): ["source"],
}


def resolve_local_sources(config: dict) -> None:
    """Check every local source of ``config`` and write it as an expanded path (in place)."""
    for (paper, block), keys in LOCAL_SOURCE_KEYS.items():
        for key in keys:
            value = config[paper][block].get(key)
            if is_local(value):
                path = local_path(value)
                if not Path(path).is_dir():
                    raise TableError(
                        f"{paper}.{block}.{key} = {value!r} is a local path (it starts with "
                        f"{', '.join(LOCAL_PREFIXES)}) but {path} is not a directory.  Give an "
                        "existing directory laid out like the hub repository, or a hub id."
                    )
                config[paper][block][key] = path


def source_keys(config: dict, paper: str, name: str) -> list[str]:
    """The key paths of ``paper``'s settings naming the hub artefact ``name``
    (``maxmargin.vit.cifar_source``): what an error offers to point at a local copy."""
    return [
        f"{p}.{b}.{k}"
        for (p, b), keys in LOCAL_SOURCE_KEYS.items()
        for k in keys
        if p == paper and config[p][b].get(k) == name
    ]


def hub_assets(*assets) -> list[list[str]]:
    """The ``(kind, name)`` hub artefacts among ``assets`` (local directories dropped): what a
    download checks against the cache first in offline mode."""
    return [[kind, name] for kind, name in assets if name and not is_local(name)]


def marker(paper: str, name: str) -> str:
    """The marker a download writes and its consumers read (shared by every results folder)."""
    return f"results/downloads/{paper}/{name}.csv"


def register_download(
    table: Table, paper, name, func, settings, hub, prepares=False, threads=1, mem_mb=8000,
    runtime=240,
) -> str:  # fmt: skip
    """Register a hub download running ``attnbias.<func>(**settings)``; returns its marker.

    ``hub``: the ``(kind, name)`` hub artefacts it fetches (:func:`hub_assets`).  ``prepares``:
    the function also writes files (e.g. tokens) into the folder beside the marker.  Registering
    the same download twice with other settings is an error.
    """
    entry = Download(
        func=func,
        settings=settings,
        hub=[[*a, *source_keys(table.config, paper, a[1])] for a in hub],
        prepares=prepares,
        threads=threads,
        mem_mb=mem_mb,
        runtime=runtime,
    )
    if table.downloads.get((paper, name), entry) != entry:
        raise TableError(f"download {paper}/{name} registered twice with different settings")
    table.downloads[(paper, name)] = entry
    return marker(paper, name)


def block_downloads(table: Table, paper, block, hub_datasets, shipped_models=("minilm",)):
    """The download markers of the hub artefacts a settings block names: its ``dataset`` when
    ``hub_datasets`` maps it to (default hub id, config) (``source`` overrides the id), and its
    ``model`` unless that ships in a package or is a local directory."""
    out = []
    if block.get("dataset") in hub_datasets:
        hub_id, hub_config = hub_datasets[block["dataset"]]
        source = block.get("source") or hub_id
        if not is_local(source):
            settings = {"kind": "dataset", "names": [source], "config": hub_config}
            out.append(
                register_download(
                    table, paper, block["dataset"], "data.hub.fetch_assets", settings,
                    hub=hub_assets(("dataset", source)), mem_mb=16000,
                )  # fmt: skip
            )
    model = block.get("model", shipped_models[0])
    if model not in shipped_models and not is_local(model):
        settings = {"kind": "model", "names": [model]}
        out.append(
            register_download(
                table, paper, model.rsplit("/", 1)[-1], "data.hub.fetch_assets", settings,
                hub=hub_assets(("model", model)),
            )  # fmt: skip
        )
    return out
