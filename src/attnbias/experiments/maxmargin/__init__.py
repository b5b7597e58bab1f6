"""Figure data for Tarzanagh et al. 2023, *Max-Margin Token Selection in Attention Mechanism*.

- :mod:`.synthetic`, :mod:`.joint`, :mod:`.study`: Figs 1–5 and 8–10, float64 dynamics on the
  synthetic constructions (CPU), each group in stages (data, SVM, trajectories);
- :mod:`.vit`: Figs 6–7, ViT [CLS]-attention sparsification trained by the deep-learning engine.

The two are separate modules so that each computation's code tracking names only its own code.

The names below are re-exported lazily (PEP 562): importing the package loads only the module
of the name used, so a job imports its own module's dependencies and no other's.
"""

from __future__ import annotations

from ...lazy import lazy_exports

# public name -> module that defines it (relative to this package, or absolute)
_EXPORTS = {
    "FIG9_COLUMNS": ".study",
    "fig9_trials": ".study",
    "PATH_COLUMNS": ".synthetic",
    "risk": ".synthetic",
    "VIT_FIG6_COLUMNS": ".vit",
    "VIT_FIG7_COLUMNS": ".vit",
    "train_vit": ".vit",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
