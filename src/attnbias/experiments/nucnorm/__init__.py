"""Figure data for Sheen et al. 2024, *Implicit Regularization of Gradient Flow on One-Layer
Softmax Attention* (arXiv 2403.08699).

The paper has no figures; p1–p5 are the project's demonstrations of its theorems (spec
``nucnorm.md`` §3).  Gradient flow is approximated by jointly normalised GD in float64
(:func:`attnbias.optim.fullbatch.run`, ``normalize="joint"``) on the models of
:mod:`attnbias.models.kq`; the SVM targets come from :mod:`attnbias.svm.nuclear`.  Each figure
runs in three stages (the workflow's rules `instance`, `svm`, `compute`): ``instance_<fig>`` draws
or selects its instances, ``svm_<fig>`` solves their SVMs, ``trajectories_<fig>`` returns a tidy
DataFrame and a ``meta`` dict whose ``"columns"`` documents it; ``compute_<fig>`` runs the three in
one call.  Iterate t is the point after t updates (t = 0 is the initialisation).

Modules, one concept each:

- :mod:`.measures`: recording grid and check step, SVM objective ratios, support size, excess
  risk (shared);
- :mod:`.problems`: the data and SVM stages of p4 and p5, and the stage files' layout (shared);
- :mod:`.full`: p1, (K, Q) trained separately vs the merged W (its three stages);
- :mod:`.diagonal`: p2 and p3, the diagonal model and its initialisation condition (their stages);
- :mod:`.alignment`: p4, data alignment of K and Q preserved along the flow;
- :mod:`.convex`: p5, the convex SVM solutions alone.
"""

from .alignment import P4_COLUMNS, compute_p4, offdiag_mass
from .convex import P5_COLUMNS, compute_p5
from .diagonal import P2_COLUMNS, P3_COLUMNS, compute_p2, compute_p3
from .full import P1_COLUMNS, compute_p1
from .measures import (
    log10_excess,
    norm_margin_ratio,
    objective_ratio,
    record_points,
    support_size,
)

__all__ = [
    "P1_COLUMNS",
    "P2_COLUMNS",
    "P3_COLUMNS",
    "P4_COLUMNS",
    "P5_COLUMNS",
    "compute_p1",
    "compute_p2",
    "compute_p3",
    "compute_p4",
    "compute_p5",
    "log10_excess",
    "norm_margin_ratio",
    "objective_ratio",
    "offdiag_mass",
    "record_points",
    "support_size",
]
