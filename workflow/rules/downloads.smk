# Hub downloads (`register_download`, `block_downloads`) and local sources: which dataset, model
# and tokenizer settings name a local directory instead of a hub id, and offline mode.  Included
# by sweeps.smk; training.smk makes the download rules.
from pathlib import Path

from attnbias.data.hub import LOCAL_PREFIXES, is_local, local_path, offline_vars

# Local sources: every dataset/model/tokenizer setting below takes a hub id or a local directory
# laid out like the hub repository (compute nodes without internet, data on shared storage).
# Local or not is decided by attnbias.data.hub.is_local -- a value is local when it starts with
# /, ./, ../ or ~, or names an existing directory; anything else is a hub id.  A local value is
# checked here (a clear error when it is not a directory), ~ is expanded, and no download rule is
# registered for it: the loaders read the directory directly.
LOCAL_SOURCE_KEYS = {
    ("maxmargin", "vit"): ["cifar_source"],
    **{("fastrates", f): ["source", "model"] for f in ("fig1", "fig4", "fig6", "fig7")},
    ("lowrank", "lm"): ["source", "tokenizer"],
    ("lowrank", "vit"): ["source"],
    ("lowrank", "fig4"): ["source"],
    ("lowrank", "figB"): ["source"],
}
# Offline mode (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE or TRANSFORMERS_OFFLINE true, or a hub that
# cannot be reached): scripts/download.py fails at once on an uncached artefact.  Download rules
# are never retried by Snakemake (a download that cannot succeed fails once); online,
# attnbias.data.hub.fetch_assets tries a failed fetch again itself.
OFFLINE = offline_vars()


for (_paper, _block), _keys in LOCAL_SOURCE_KEYS.items():
    for _key in _keys:
        _value = config[_paper][_block].get(_key)
        if is_local(_value):
            _path = local_path(_value)
            if not Path(_path).is_dir():
                raise WorkflowError(
                    f"{_paper}.{_block}.{_key} = {_value!r} is a local path (it starts with "
                    f"{', '.join(LOCAL_PREFIXES)}) but {_path} is not a directory.  Give an "
                    "existing directory laid out like the hub repository, or a hub id."
                )
            config[_paper][_block][_key] = _path


def source_keys(paper, name):
    """The key paths of ``paper``'s settings that name the hub artefact ``name``
    (``maxmargin.vit.cifar_source``): what an error offers to point at a local copy."""
    return [
        f"{p}.{b}.{k}"
        for (p, b), keys in LOCAL_SOURCE_KEYS.items()
        for k in keys
        if p == paper and config[p][b].get(k) == name
    ]


def hub_assets(*assets):
    """The ``(kind, name)`` hub artefacts among ``assets`` (local directories dropped): what a
    download rule checks against the cache first in offline mode."""
    return [[kind, name] for kind, name in assets if name and not is_local(name)]


# Hub downloads: (paper, name) -> entry, the table of the rule `download` (training.smk; its alias
# target `<paper>_download_<name>`): a local rule (compute nodes often have no internet) running
# attnbias.<func>(**settings) through scripts/download.py, with retries (none in offline mode),
# writing the marker results/downloads/<paper>/<name>.{csv,json}.  Consumers depend on the marker
# through ancient(), so a re-download never retrains.  Local sources register no download (except
# the Pile, whose rule also tokenises).
DOWNLOADS = {}


def register_download(
    paper,
    name,
    func,
    settings,
    hub,
    prepares=False,
    threads=1,
    mem_mb=8000,
    runtime=240,
):
    """Register a hub download; returns its marker (the input a training rule depends on).

    ``hub``: the ``(kind, name)`` hub artefacts it fetches (:func:`hub_assets`), checked against
    the cache before anything else in offline mode.
    ``prepares``: the function also writes files (e.g. tokens) into ``out_dir``, the folder
    results/downloads/<paper>/<name>/ beside the marker; consumers find them from the marker.
    """
    entry = dict(
        func=func,
        settings=settings,
        # (kind, name, *the settings naming it): the artefacts checked against the cache offline
        hub=[[*a, *source_keys(paper, a[1])] for a in hub],
        prepares=prepares,
        threads=threads,
        mem_mb=mem_mb,
        runtime=runtime,
    )
    if DOWNLOADS.get((paper, name), entry) != entry:
        raise WorkflowError(
            f"download {paper}/{name} registered twice with different settings"
        )
    DOWNLOADS[(paper, name)] = entry
    return ancient(f"results/downloads/{paper}/{name}.csv")


def block_downloads(paper, block, hub_datasets, shipped_models=("minilm",)):
    """Download markers of the hub artefacts a settings block names: its ``dataset`` when
    ``hub_datasets`` maps it to (default hub id, config) (``source`` overrides the id), and its
    ``model`` unless that ships in a package.  One rule per artefact, shared by every figure.
    A local ``source`` or ``model`` directory needs no download.
    """
    out = []
    if block.get("dataset") in hub_datasets:
        hub_id, hub_config = hub_datasets[block["dataset"]]
        source = block.get("source") or hub_id
        if not is_local(source):
            settings = {"kind": "dataset", "names": [source], "config": hub_config}
            out.append(
                register_download(
                    paper,
                    block["dataset"],
                    "data.hub.fetch_assets",
                    settings,
                    hub=hub_assets(("dataset", source)),
                    mem_mb=16000,
                )
            )
    model = block.get("model", shipped_models[0])
    if model not in shipped_models and not is_local(model):
        settings = {"kind": "model", "names": [model]}
        name = model.rsplit("/", 1)[-1]
        out.append(
            register_download(
                paper,
                name,
                "data.hub.fetch_assets",
                settings,
                hub=hub_assets(("model", model)),
            )
        )
    return out


def _download(wildcards):
    """The table entry of a job of the rule `download`."""
    return DOWNLOADS[(wildcards.paper, wildcards.name)]
