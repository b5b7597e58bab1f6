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
register_compute(
    "nucnorm",
    "p4",
    ["p4"],
    "nucnorm.compute_p4",
)
register_compute(
    "nucnorm",
    "p5",
    ["p5"],
    "nucnorm.compute_p5",
)
