"""Claim ids that carry no setting value, and the ids they replace.

A claim id names a quantity and its role, never a value of the run's settings: the claim at the
last iterate of a run is ``cos_gmm_final`` (its statement says ``t = 1000``), not
``cos_gmm_t1000``, so the claim files of two runs whose settings differ (the reference run and one
with ``maxmargin.fig1.steps: 500``) join by id.  Where one figure checks the same quantity at
several values of a list setting (Fastrates Fig 10's step sizes, App. Fig. C's layers), each claim
is named by the position of its value in that list (:func:`position_names`): ``first``,
``second``, ..., ``last``; the value is in the statement.

Seed tables of the robustness table written before this (``results/robustness/<paper>/seed-N.csv``)
carry the old ids; :func:`current_id` maps them, by :data:`OLD_IDS`, and
:func:`attnbias.claims.robustness.with_verdicts` reads every table under the present ids.  Ids
formatted from a step count map whatever the count was; ids formatted from a list setting (step
sizes, layers) map for the lists of the presets (``config.yaml`` and
``workflow/presets/paper.yaml``), the runs such tables came from.  Any other id is returned as
it is.
"""

from __future__ import annotations

import re

import pandas as pd

__all__ = ["OLD_IDS", "current_id", "current_ids", "position_names"]

_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth")


def position_names(n: int) -> list[str]:
    """Role names of the ``n`` values of a list setting, in the list's order: ``first``,
    ``second``, ... and ``last`` for the last of two or more.  The first and the last keep their
    names when values are added in between or the values change."""
    names = [_ORDINALS[i] if i < len(_ORDINALS) else f"no{i + 1}" for i in range(n)]
    if n > 1:
        names[-1] = "last"
    return names


_T = r"(?!200$)\d+"  # a last step; t = 200 is a fixed checkpoint of its own (e.g. cos_gmm_t200)

# (paper, figure) -> [(old id, a regular expression matched in full, new id)].  The claims a
# figure checks at a fixed iterate (``cos_gmm_t200``, ``ngd_norm_t1000``: the paper's
# checkpoints, written in the code) never carried a setting and are not renamed.
OLD_IDS: dict[tuple[str, str], list[tuple[str, str]]] = {
    ("maxmargin", "fig1a"): [(rf"cos_gmm_t{_T}", "cos_gmm_final")],
    ("maxmargin", "fig1b"): [(rf"gmm_split_t{_T}", "gmm_split_final"),
                             (rf"lmm_split_t{_T}", "lmm_split_final")],
    ("maxmargin", "fig1c"): [(rf"cos_gmm_t{_T}", "cos_gmm_final")],
    ("maxmargin", "fig2"): [(r"final_cos_t\d+", "cos_lmm_final")],
    ("maxmargin", "fig3a"): [(rf"cos_p_t{_T}", "cos_p_final")],
    ("maxmargin", "fig3b"): [(rf"cos_relax_t{_T}", "cos_relax_final")],
    # lrs [0.01, 0.1, 1, 10] in both presets
    ("fastrates", "fig10"): [(r"ngd_beats_gd_eta0\.01", "ngd_beats_gd_eta_first"),
                             (r"ngd_beats_gd_eta0\.1", "ngd_beats_gd_eta_second"),
                             (r"ngd_beats_gd_eta1", "ngd_beats_gd_eta_third"),
                             (r"ngd_beats_gd_eta10", "ngd_beats_gd_eta_last")],
    ("lowrank", "fig1"): [(r"gap_t\d+", "gap_final"),
                          (r"soft_threshold_t\d+", "soft_threshold_final")],
    # fig3.layers: one layer in both presets ([4] quick, [5] paper)
    ("lowrank", "fig3"): [(r"lm_layer\d+_(kq|pv)_median_nonincreasing",
                           r"lm_layer_first_\1_median_nonincreasing")],
    # figC.layers: [2, 3] quick, [7, 9] paper
    ("lowrank", "figC"): [(r"layer[27]_(\w+)", r"layer_first_\1"),
                          (r"layer[39]_(\w+)", r"layer_last_\1")],
}  # fmt: skip
_COMPILED = {k: [(re.compile(p), new) for p, new in v] for k, v in OLD_IDS.items()}


def current_id(paper: str, figure: str, old_id: str) -> str:
    """The present id of the claim ``old_id`` of ``paper``'s ``figure`` (:data:`OLD_IDS`);
    ``old_id`` itself when it is a present id or unknown."""
    for pattern, new in _COMPILED.get((paper, figure), ()):
        m = pattern.fullmatch(old_id)
        if m:
            return m.expand(new)
    return old_id


def current_ids(table: pd.DataFrame) -> pd.Series:
    """The ``claim`` column of a seed table (columns ``paper``, ``figure``, ``claim``) under the
    present ids (:func:`current_id`)."""
    return pd.Series(
        [current_id(p, f, c) for p, f, c in zip(table["paper"], table["figure"], table["claim"],
                                                  strict=True)],
        index=table.index, dtype=object,
    )  # fmt: skip
