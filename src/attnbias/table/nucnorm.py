"""The nucnorm entries of the figure table (Sheen et al. 2024; docs/papers/nucnorm.md).

The paper has no figures; p1-p5 are the project's demonstrations of its theorems (synthetic
float64 runs on CPU, about two minutes in all), each a staged group (:mod:`attnbias.table.stages`):
instance -> svm -> compute.  p1-p3 select their instances (data/nucnorm.py ``select_instance``:
SVM checks and, for p1 and p2, a GD premise), so every setting the selection reads is a data
setting, the premise's GD ones (p1: init_scale, init_seed, lr; p2: xi0, lr) included: changing one
may change the chosen instances.  Their svm stage solves the stored instances' SVMs again (p1:
W*_nuc, W*_F; p2: beta*_l1, beta*_l2; p3: beta*_l1), and compute runs the GD trajectories.
"""

from __future__ import annotations

from attnbias.table.registry import Table
from attnbias.table.stages import register_staged_groups


def register(table: Table) -> None:
    """Register the nucnorm demonstrations in ``table``."""
    register_staged_groups(table, "nucnorm")
