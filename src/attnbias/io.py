"""Plot-ready data files: a tidy CSV plus a JSON sidecar (metadata, column docs, provenance)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd


def jsonable(x):
    """``x`` with numpy values turned into Python ones and non-finite floats into strings, so
    that ``json.dumps`` writes strict JSON."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if hasattr(x, "tolist"):
        return jsonable(x.tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


_PACKAGES = (
    "numpy",
    "scipy",
    "torch",
    "cvxopt",
    "pandas",
    "matplotlib",
    "transformers",
    "attnbias",
)


# The repository this module runs from (src/attnbias/io.py) and the lock of its environment
# (requirements/lock.txt, written by requirements/refresh.sh); a copy installed elsewhere has none.
_ROOT = Path(__file__).resolve().parents[2]
LOCK = "requirements/lock.txt"


def lock_provenance(root: Path | str = _ROOT) -> dict:
    """The lock the README's install reads: ``lock``, its path under the repository ``root``, and
    ``lock_sha256``, the sha256 of its bytes; both None where there is no lock (a copy of the
    package installed outside the repository).  It names the lock of the checkout the code runs
    from, which the environment was installed from by the README's commands; it does not check
    that the environment still matches it (``packages`` records the main versions)."""
    try:
        digest = hashlib.sha256((Path(root) / LOCK).read_bytes()).hexdigest()
    except OSError:
        return {"lock": None, "lock_sha256": None}
    return {"lock": LOCK, "lock_sha256": digest}


def provenance(preset: str | None = None) -> dict:
    """Package versions, the lock they were installed from (:func:`lock_provenance`), git commit
    and preset of the run that produced a file."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return {
        "preset": preset,
        "python": platform.python_version(),
        "packages": versions,
        **lock_provenance(),
        "git_sha": sha or None,
    }


class NotMeasurable(ValueError):
    """A computation that cannot make its data at these settings, for a reason of the data rather
    than of the code: no drawn instance meets the premises, say.  The stage that raises it writes
    an empty product recording the reason (:func:`not_measurable_reason` finds it), the later
    stages pass it on, and the figure's claims and plot record the figure as not measurable, with
    the reason, instead of failing (``scripts/compute.py``, ``check.py``, ``plot.py``)."""


def not_measurable_reason(doc: dict | None) -> str | None:
    """The reason recorded by a product of :class:`NotMeasurable` (the ``__doc__`` of a stage's
    arrays, or a plot-ready file's sidecar), or None for a product with data."""
    return (doc or {}).get("not_measurable")


def sidecar(csv_path) -> Path:
    return Path(csv_path).with_suffix(".json")


def save_data(df: pd.DataFrame, meta: dict, csv_path, preset: str | None = None) -> None:
    """Write ``df`` to ``csv_path`` and ``meta`` (+ provenance) to the ``.json`` next to it.

    ``meta["columns"]`` should document every column of ``df``; missing docs are an error so the
    plot-ready files stay self-describing.
    """
    cols = meta.get("columns", {})
    missing = [c for c in df.columns if c not in cols]
    if missing:
        raise ValueError(f"undocumented columns {missing} for {csv_path}")
    csv_path = Path(csv_path)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = csv_path.with_suffix(".csv.tmp")
    df.to_csv(tmp, index=False, float_format="%.17g")
    os.replace(tmp, csv_path)
    doc = dict(meta)
    doc["provenance"] = provenance(preset)
    sidecar(csv_path).write_text(json.dumps(jsonable(doc), indent=2) + "\n")


CONTROLS = ("none", "null")


def check_control(control: str) -> str:
    """``control`` validated: "none" (the experiment as specified) or "null" (the negative control,
    ``--config control=null``: the paper's mechanism removed)."""
    if control not in CONTROLS:
        raise ValueError(f"unknown control {control!r}; expected one of {CONTROLS}")
    return control


def control_of(meta: dict) -> str:
    """The negative control a plot-ready file was made under (``--config control=null``): the
    ``control`` its experiment recorded, else the one in its settings, else ``"none"``."""
    return check_control(
        meta.get("control") or (meta.get("settings") or {}).get("control") or "none"
    )


def gathered_control(control: str, metas: list[dict]) -> str:
    """The control of a gathered table: ``control`` (the gather's setting), checked against the
    ``control`` every run recorded (a run from before the switch existed counts as "none")."""
    check_control(control)
    seen = sorted({m.get("control") or "none" for m in metas})
    if seen != [control]:
        raise ValueError(
            f"made with control={control!r}, but its runs were trained with control {seen}"
        )
    return control


def load_data(csv_path) -> tuple[pd.DataFrame, dict]:
    """A plot-ready file and its sidecar (an empty table where its sidecar records it as not
    measurable: :class:`NotMeasurable`)."""
    meta = json.loads(sidecar(csv_path).read_text())
    df = pd.DataFrame() if not_measurable_reason(meta) else pd.read_csv(csv_path)
    return df, meta


def arr(x) -> np.ndarray:
    """Metadata vectors come back from JSON as lists."""
    return np.asarray(x, dtype=np.float64)


def write_table(
    cells: pd.DataFrame, csv_table: pd.DataFrame, csv_path, md_path, title: str, notes=()
) -> None:
    """Write a derived table twice: the numbers (``csv_table``) as CSV, and ``cells`` (already
    formatted strings, one column per table column) as a Markdown pipe table under ``title``,
    followed by the lines of ``notes``."""
    csv_table.to_csv(csv_path, index=False, float_format="%.6g")
    header = "| " + " | ".join(map(str, cells.columns)) + " |"
    rule = "|" + "---|" * len(cells.columns)
    rows = ["| " + " | ".join(map(str, r)) + " |" for r in cells.itertuples(index=False)]
    lines = [f"# {title}", "", header, rule, *rows]
    if notes:
        lines += ["", *notes]
    Path(md_path).write_text("\n".join(lines) + "\n")


def _documented(key: str, doc: dict) -> bool:
    return key in doc or any(fnmatch.fnmatchcase(key, pattern) for pattern in doc)


def save_arrays(path, arrays: dict, doc: dict) -> None:
    """Write a stage's product (a problem instance, SVM solutions) as an ``.npz``.

    ``arrays`` maps names to arrays or scalars (stored as numpy arrays, bit for bit); ``doc`` maps
    every name, or a glob pattern such as ``"X_d*"``, to a description, stored in the file under
    ``"__doc__"``.  An undocumented name is an error, as in :func:`save_data`.
    """
    missing = [k for k in arrays if not _documented(k, doc)]
    if missing or "__doc__" in arrays:
        raise ValueError(f"undocumented arrays {missing} for {path}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    stored = {k: np.asarray(v) for k, v in arrays.items()}
    np.savez(tmp, __doc__=np.array(json.dumps(doc)), **stored)
    os.replace(tmp, path)


def load_arrays(path) -> dict:
    """The arrays of a file written by :func:`save_arrays` (0-d arrays as Python scalars; the
    descriptions under ``"__doc__"``)."""
    with np.load(path, allow_pickle=False) as f:
        out = {k: f[k] for k in f.files}
    out = {k: (v.item() if v.ndim == 0 else v) for k, v in out.items()}
    out["__doc__"] = json.loads(out["__doc__"])
    return out


def natural_key(name: str) -> tuple:
    """Sort key of a figure id in reading order: runs of digits compare as numbers, so fig1a, fig1b,
    fig2, …, fig9b, fig10; figA after fig4; p2 before p10.  Letters compare case-blind."""
    parts = re.split(r"(\d+)", str(name))
    return tuple(int(x) if i % 2 else x.casefold() for i, x in enumerate(parts))


def short_number(v: float, against: float | None = None, digits: int = 4) -> str:
    """``v`` to ``digits`` significant digits, or more where fewer would move it onto or across
    ``against`` (its threshold's number): 0.99977 → "0.9998", 0.99899 against 0.999 → "0.99899".
    A rounded value keeps its trailing zeros (0.999967 → "1.000"), an exact one has none (0.5).
    How every page (captions, the claims page, ``compare``) writes a number; the CSV files keep
    full precision."""
    v = float(v)
    if not math.isfinite(v):
        return str(v)
    text = f"{v:.{digits}g}"
    while against is not None and digits < 17 and (
        (float(text) > against) != (v > against) or (float(text) < against) != (v < against)
    ):
        digits += 1
        text = f"{v:.{digits}g}"
    # a rounded value keeps its trailing zeros (0.999967 → "1.000", not "1"); an exact one not
    return f"{v:#.{digits}g}".rstrip(".") if float(text) != v else text
