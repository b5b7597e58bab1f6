"""Figure data for Sheen et al. 2024, *Implicit Regularization of Gradient Flow on One-Layer
Softmax Attention* (arXiv 2403.08699).

The paper has no figures; p1–p5 are the project's demonstrations of its theorems
(docs/papers/nucnorm.md).  Gradient flow is approximated by jointly normalised GD in float64
(:func:`attnbias.optim.fullbatch.run`, ``normalize="joint"``) on the models of
:mod:`attnbias.models.kq`; the SVM targets come from :mod:`attnbias.svm.nuclear`.  Each figure
runs in three stages (the workflow's rules `instance`, `svm`, `compute`): ``instance_<fig>`` draws
or selects its instances, ``svm_<fig>`` solves their SVMs, ``trajectories_<fig>`` returns a tidy
DataFrame and a ``meta`` dict whose ``"columns"`` documents it;
:func:`attnbias.table.stages.run_stages` runs the three in one call.  Iterate t is the point
after t updates (t = 0 is the initialisation).

Modules, one concept each:

- :mod:`.measures`: recording grid and check step, SVM objective ratios, support size, excess
  risk (shared);
- :mod:`.problems`: the data and SVM stages of p4 and p5, and the stage files' layout (shared);
- :mod:`.full`: p1, (K, Q) trained separately vs the merged W (its three stages);
- :mod:`.diagonal`: p2 and p3, the diagonal model and its initialisation condition (their stages);
- :mod:`.alignment`: p4, data alignment of K and Q preserved along the flow;
- :mod:`.convex`: p5, the convex SVM solutions alone.

The names below are re-exported lazily (PEP 562): importing the package loads only the module
of the name used, so a job imports its own module's dependencies and no other's.
"""

from __future__ import annotations

from ...lazy import lazy_exports

# public name -> module that defines it (relative to this package, or absolute)
_EXPORTS = {
    "P4_COLUMNS": ".alignment",
    "offdiag_mass": ".alignment",
    "P5_COLUMNS": ".convex",
    "P2_COLUMNS": ".diagonal",
    "P3_COLUMNS": ".diagonal",
    "P1_COLUMNS": ".full",
    "log10_excess": ".measures",
    "norm_margin_ratio": ".measures",
    "objective_ratio": ".measures",
    "record_points": ".measures",
    "support_size": ".measures",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
