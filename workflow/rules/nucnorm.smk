# Sheen et al. 2024, "Implicit Regularization of Gradient Flow on One-Layer Softmax Attention"
# (arXiv 2403.08699).  Spec: ../shared/specs/nucnorm.md.  The paper has no figures; p1-p5 are the
# project's demonstrations of its theorems (synthetic float64 runs on CPU, about two minutes in
# all).  Settings live under `nucnorm:` in config.yaml, schema workflow/schemas/nucnorm.schema.yaml.

register_compute(
    "nucnorm",
    "p1",
    ["p1"],
    "nucnorm.compute_p1",
)
register_compute(
    "nucnorm",
    "p2",
    ["p2"],
    "nucnorm.compute_p2",
)
register_compute(
    "nucnorm",
    "p3",
    ["p3"],
    "nucnorm.compute_p3",
)
# p4, p5: three stages (stages.smk): instance -> svm (W*_nuc, W*_F) -> compute (p4: the (K, Q)
# dynamics; p5 has none: it tabulates the solutions).  p1-p3 select their instances by SVM checks
# and a GD premise in one step, so they stay one `compute` job each.
_NN = dict(problems="nucnorm.problems", svm=[])
register_stages(
    "nucnorm",
    "p4",
    ["p4"],
    family="nucnorm.alignment",
    data=["n", "L", "d", "seed"],
    gd=[
        "sigma_low",
        "sigma_high",
        "control_scale",
        "init_seed",
        "lr",
        "steps",
        "n_records",
    ],
    **_NN,
)
register_stages(
    "nucnorm",
    "p5",
    ["p5"],
    family="nucnorm.convex",
    data=["n_values", "L_values", "d_values", "instances", "seed0", "self_attention"],
    gd=["rank_tol"],
    **_NN,
)
