# Sheen et al. 2024, "Implicit Regularization of Gradient Flow on One-Layer Softmax Attention"
# (arXiv 2403.08699).  Methods: docs/papers/nucnorm.md.  The paper has no figures; p1-p5 are the
# project's demonstrations of its theorems (synthetic float64 runs on CPU, about two minutes in
# all).  Settings live under `nucnorm:` in config.yaml, schema workflow/schemas/nucnorm.schema.yaml.

# Every group runs in three stages (stages.smk): instance -> svm -> compute.  p1-p3 select their
# instances (data/nucnorm.py select_instance: SVM checks and, for p1 and p2, a GD premise), so
# every setting the selection reads is a data setting, the premise's GD ones (p1: init_scale,
# init_seed, lr; p2: xi0, lr) included: changing one may change the chosen instances.  Their svm
# stage solves the stored instances' SVMs again (p1: W*_nuc, W*_F; p2: beta*_l1, beta*_l2; p3:
# beta*_l1), and compute runs the GD trajectories.
register_stages(
    "nucnorm",
    "p1",
    ["p1"],
    family="nucnorm.full",
)
register_stages(
    "nucnorm",
    "p2",
    ["p2"],
    family="nucnorm.diagonal",
)
register_stages(
    "nucnorm",
    "p3",
    ["p3"],
    family="nucnorm.diagonal",
)
# p4, p5: instance -> svm (W*_nuc, W*_F) -> compute (p4: the (K, Q) dynamics; p5 has none: it
# tabulates the solutions); their data and SVM stages are in nucnorm/problems.py.
_NN = dict(problems="nucnorm.problems")
register_stages(
    "nucnorm",
    "p4",
    ["p4"],
    family="nucnorm.alignment",
    **_NN,
)
register_stages(
    "nucnorm",
    "p5",
    ["p5"],
    family="nucnorm.convex",
    **_NN,
)
