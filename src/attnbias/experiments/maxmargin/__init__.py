"""Figure data for Tarzanagh et al. 2023, *Max-Margin Token Selection in Attention Mechanism*.

- :mod:`.synthetic`, :mod:`.joint`, :mod:`.study`: Figs 1–5 and 8–10, float64 dynamics on the
  synthetic constructions (CPU), each group in stages (data, SVM, trajectories);
- :mod:`.vit`: Figs 6–7, ViT [CLS]-attention sparsification trained by the deep-learning engine.

The two are separate modules so that each computation's code tracking names only its own code.
"""

from .joint import compute_fig3
from .study import FIG9_COLUMNS, compute_fig9, fig9_trials
from .synthetic import (
    PATH_COLUMNS,
    compute_fig1,
    compute_fig2,
    compute_fig4,
    compute_fig5,
    compute_fig8,
    risk,
)
from .vit import VIT_FIG6_COLUMNS, VIT_FIG7_COLUMNS, train_vit

__all__ = [
    "FIG9_COLUMNS",
    "PATH_COLUMNS",
    "VIT_FIG6_COLUMNS",
    "VIT_FIG7_COLUMNS",
    "compute_fig1",
    "compute_fig2",
    "compute_fig3",
    "compute_fig4",
    "compute_fig5",
    "compute_fig8",
    "compute_fig9",
    "fig9_trials",
    "risk",
    "train_vit",
]
