"""The gather of a one-run sweep whose run returns its figures' plot-ready tables itself (e.g.
maxmargin Figs 6-7): each table, unchanged, becomes a plot-ready group."""

from __future__ import annotations

import pandas as pd

from ..io import gathered_control, load_data


def gather_run_table(parts: list[str], control: str = "none") -> tuple[pd.DataFrame, dict]:
    """The one run table in ``parts`` as it was written (pandas reads back the floats written
    with 17 digits exactly, so the saved group equals the run's file).

    Parameters
    ----------
    parts : list of str
        The run's CSV of this table (one path).
    control : str
        The negative control the workflow runs under ("none" or "null"); the run must have
        recorded the same.

    Returns
    -------
    tuple of (DataFrame, dict)
        The table and its meta (settings, columns) as the run recorded them.
    """
    if len(parts) != 1:
        raise ValueError(f"a run table is gathered from one run file, got {parts}")
    df, meta = load_data(parts[0])
    meta.pop("provenance", None)  # the saved group records its own
    gathered_control(control, [meta])
    return df, meta
