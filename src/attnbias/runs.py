"""A training job's runs (the rules `train` and `extend`): the loop their scripts share, each
run's files in the job's folder, and the resume bookkeeping of a batch of runs (no science here:
what a run computes is ``attnbias.experiments.<func>``)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from .workflow import resolve


def train_runs(func: str, runs: list[dict], folder, inputs: dict, preset: str, accelerator: str,
               log, threads: int | None = None) -> None:  # fmt: skip
    """Run each of ``runs`` (:meth:`attnbias.table.registry.Table.run_params`) in turn and save its
    tables in ``folder``: ``attnbias.experiments.<func>(**settings, **inputs)`` with an undeclared
    resume checkpoint, ``<label>.csv`` for a run's one table (``"csv"``), ``<label>_<table>.csv``
    for each of several (:func:`run_file`).  A run the negative control trains as an uncontrolled
    run (its ``shared``: folder, file stem and relabelling function) is that run, relabelled (or,
    when that run's grid was not widened the same way, trained); a run finished before the job
    was killed is read back (:func:`finished_tables`).  torch is imported, with ``threads``
    threads (the rule's), only when a run trains: a job whose runs are all relabelled or read back
    (the negative control's) skips its 2–3 s of import."""
    from .io import load_data, save_data

    Path(folder).mkdir(parents=True, exist_ok=True)
    train = None
    for run in runs:
        settings = dict(run["settings"])
        shared = run.get("shared")
        source = run_file(shared["folder"], shared["label"], "csv") if shared else None
        if shared and not source.exists():  # (an extension's run its uncontrolled grid lacks)
            log.info("run %s: no uncontrolled run %s to relabel; training it", run["label"], source)
        if shared and source.exists():
            relabel = resolve("attnbias.experiments", shared["relabel"])
            tables = relabel({"csv": load_data(source)}, settings)
            log.info("run %s: the uncontrolled run %s, relabelled (%s)", run["label"], source,
                     shared["relabel"])  # fmt: skip
        elif (tables := finished_tables(run["finished"], settings)) is not None:
            log.info("%s: reused the finished run's tables in %s", settings, run["finished"])
        else:
            log.info("run %s: training %s with %s (preset %s), checkpoint %s", run["label"], func,
                     settings, preset, run["checkpoint"])  # fmt: skip
            if train is None:
                train = _training_function(func, threads)
            tables = train(
                **settings, **inputs, checkpoint=run["checkpoint"],
                metrics_log=run["metrics_log"], accelerator=accelerator,
            )  # fmt: skip
            for _, meta in tables.values():
                meta.setdefault("settings", settings)
            # kept until the whole job is done: a batched job killed later resumes after this run
            keep_finished_tables(run["finished"], settings, tables, preset)
        for name, (df, meta) in tables.items():
            target = run_file(folder, run["label"], name if len(tables) > 1 else "csv")
            save_data(df, meta, target, preset=preset)
            log.info("wrote %s (%d rows)", target, len(df))


def _training_function(func: str, threads: int | None):
    """``attnbias.experiments.<func>``, with torch's intra-op threads set to ``threads``."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    return resolve("attnbias.experiments", func)


def drop_runs_state(runs: list[dict], log) -> None:
    """Once a job's outputs are written, drop every run's resume state, so a later rerun (e.g.
    after a code change, which the checkpoint's settings fingerprint cannot see) trains afresh
    instead of "resuming" a finished run."""
    for run in runs:
        drop_run_state(run["checkpoint"], run["finished"])
        log.info("removed the finished run's checkpoint %s", run["checkpoint"])


def _fingerprint(settings: dict) -> str:
    from .io import jsonable

    return json.dumps(jsonable(settings), sort_keys=True)


def keep_finished_tables(folder, settings: dict, tables: dict, preset: str | None) -> None:
    """Keep a finished run's tables ({name: (df, meta)}) in the undeclared ``folder`` until its
    job is done, so that a batched job killed at a later run resumes after this one (Snakemake
    deletes a killed job's declared outputs).  Written to a temporary folder and renamed, the
    settings fingerprint last: a half-written folder is never read."""
    from .io import save_data

    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, (df, meta) in tables.items():
        save_data(df, meta, tmp / f"{name}.csv", preset=preset)
    (tmp / "settings.json").write_text(_fingerprint(settings))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)


def finished_tables(folder, settings: dict) -> dict | None:
    """The tables :func:`keep_finished_tables` kept for a run with these ``settings``, or None
    (nothing kept, or kept for other settings: the run trains again)."""
    from .io import load_data

    folder = Path(folder)
    mark = folder / "settings.json"
    if not mark.exists() or mark.read_text() != _fingerprint(settings):
        return None
    return {f.stem: load_data(f) for f in sorted(folder.glob("*.csv"))}


def run_file(folder, label: str, table: str = "csv") -> Path:
    """The CSV of a run's table in its `train` job's folder: ``<label>.csv`` for its one table
    (``"csv"``), ``<label>_<table>.csv`` for each of several."""
    return Path(folder) / (f"{label}.csv" if table == "csv" else f"{label}_{table}.csv")


def run_files(folders, stems) -> list[str]:
    """The CSVs named ``<stem>.csv`` in ``folders`` (the gathered `train` jobs' folders), in the
    order of ``stems``; each must be in exactly one folder."""
    out = []
    for stem in stems:
        found = [Path(f) / f"{stem}.csv" for f in folders if (Path(f) / f"{stem}.csv").exists()]
        if len(found) != 1:
            raise FileNotFoundError(f"run file {stem}.csv: found {found} in {list(folders)}")
        out.append(str(found[0]))
    return out


def drop_run_state(checkpoint, finished) -> None:
    """Remove a run's resume checkpoint and kept tables once its job's outputs are written."""
    Path(checkpoint).unlink(missing_ok=True)
    shutil.rmtree(finished, ignore_errors=True)


# --- grids widened at an edge (the rule `extend`) -----------------------------------------------
EXTENSION_RECORD = "extension.json"


def write_extension(folder, record: dict) -> None:
    """Record an `extend` job's decision in its folder: ``record`` holds the grid's ``group``, the
    ``side`` widened (``"down"``, ``"up"`` or None), the ``value`` added and the ``runs`` (stems)
    trained there, in order."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / EXTENSION_RECORD).write_text(json.dumps(record, indent=1) + "\n")


def extension_runs(folders) -> tuple[list[str], list[dict]]:
    """The run CSVs the `extend` jobs' ``folders`` trained (in their records' order) and their
    records (:func:`write_extension`)."""
    parts, records = [], []
    for folder in folders:
        record = json.loads((Path(folder) / EXTENSION_RECORD).read_text())
        records.append(record)
        parts += run_files([folder], record["runs"])
    return parts, records
