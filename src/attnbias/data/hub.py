"""Access to the Hugging Face hub: the one error type and message for an artefact that cannot be
loaded (typically: offline and not cached), shared by every dataset, tokenizer and model loader,
and the download step of the paper preset (:func:`fetch_assets`)."""

from __future__ import annotations


class DatasetUnavailable(RuntimeError):
    """A hub dataset, tokenizer or model could not be loaded (typically: offline and not cached)."""


def hub_error(
    name: str,
    exc: Exception,
    what: str = "dataset",
    config: str | None = None,
    rule: str | None = None,
) -> DatasetUnavailable:
    """The one message for a hub artefact that cannot be loaded: what failed, how to fetch it once
    (the download rule ``rule`` when there is one), and the offline quick preset."""
    label = name + (f" (config {config!r})" if config else "")
    if what == "dataset":
        args = f"'{name}'" + (f", '{config}'" if config else "")
        how = f"    python -c \"import datasets; datasets.load_dataset({args})\"\n"
    else:
        how = f"    hf download {name}\n"
    if rule:
        how = f"    snakemake --cores 1 {rule} --config scale=paper      (or, equivalently)\n" + how
    else:
        how += "(the paper preset's download rules do this: snakemake ... --config scale=paper)\n"
    return DatasetUnavailable(
        f"Could not load the {what} {label} from the Hugging Face hub "
        f"({type(exc).__name__}: {exc}).\n"
        f"The paper preset needs it.  Fetch it once on a machine with network access:\n{how}"
        "(it is cached under $HF_HOME, which you can copy to an offline machine), or run the\n"
        "offline quick preset instead:  snakemake --cores 2 all --config scale=quick"
    )


def fetch_assets(kind: str, names: list[str], config: str | None = None):
    """Fetch hub datasets (``kind="dataset"``, with the dataset ``config``) or models with their
    tokenizers (``kind="model"``) into the Hugging Face cache: the job of the paper preset's
    download rules, so that training jobs never download.  Returns ``(manifest, meta)``: one row
    per dataset split (its rows) or model (its parameters with a 2-way head)."""
    import pandas as pd

    rows = []
    if kind == "dataset":
        from .text import load_hub

        for name in names:
            ds = load_hub(name, config, None)
            rows += [{"asset": name, "part": split, "rows": len(ds[split])} for split in ds]
    elif kind == "model":
        from ..models.sequence import load_classifier, load_tokenizer

        for name in names:
            load_tokenizer(name)
            n_params = sum(p.numel() for p in load_classifier(name, 2).parameters())
            rows.append({"asset": name, "part": "weights", "rows": n_params})
    else:
        raise ValueError(f"unknown asset kind {kind!r}")
    cols = {
        "asset": "hub id",
        "part": "split (datasets) or weights (models)",
        "rows": "rows of the split, or parameters of the model with a 2-way head",
    }
    return pd.DataFrame(rows, columns=list(cols)), {"kind": kind, "config": config, "columns": cols}
