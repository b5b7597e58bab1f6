# Sheen et al. 2024, "Implicit Regularization of Gradient Flow on One-Layer Softmax Attention"
# (arXiv 2403.08699).  Spec: ../shared/specs/nucnorm.md.  The paper has no figures; p1-p5 are the
# project's demonstrations of its theorems (synthetic float64 runs on CPU, about two minutes in
# all).  Settings live under `nucnorm:` in config.yaml, schema workflow/schemas/nucnorm.schema.yaml.

_NN_SOLVERS = [
    "data/nucnorm.py",
    "data/synthetic.py",
    "svm/nuclear.py",
    "svm/qp.py",
    "metrics/core.py",
    "metrics/rank.py",
]
_NN_DYNAMICS = _NN_SOLVERS + [
    "models/kq.py",
    "models/attention.py",
    "optim/fullbatch.py",
]

_NN_MEASURES = ["experiments/nucnorm/measures.py"]

register_compute(
    "nucnorm",
    "p1",
    ["p1"],
    "nucnorm.compute_p1",
    ["experiments/nucnorm/full.py"] + _NN_MEASURES + _NN_DYNAMICS,
)
register_compute(
    "nucnorm",
    "p2",
    ["p2"],
    "nucnorm.compute_p2",
    ["experiments/nucnorm/diagonal.py"] + _NN_MEASURES + _NN_DYNAMICS,
)
register_compute(
    "nucnorm",
    "p3",
    ["p3"],
    "nucnorm.compute_p3",
    ["experiments/nucnorm/diagonal.py"] + _NN_MEASURES + _NN_DYNAMICS,
)
register_compute(
    "nucnorm",
    "p4",
    ["p4"],
    "nucnorm.compute_p4",
    ["experiments/nucnorm/alignment.py"] + _NN_MEASURES + _NN_DYNAMICS,
)
register_compute(
    "nucnorm",
    "p5",
    ["p5"],
    "nucnorm.compute_p5",
    ["experiments/nucnorm/convex.py"] + _NN_SOLVERS,
)


rule nucnorm:
    input:
        paper_targets("nucnorm"),
