# Vasudeva, Deora, Thrampoulidis, "Implicit Bias and Fast Convergence Rates for Self-attention"
# (arXiv 2402.05738).  Spec: ../shared/specs/fastrates.md.  Synthetic figures (float64, CPU,
# seconds): Figs 2, 3, 5 and the spec's proposals Figs 8-10 and Table 1 (fitted from the Fig 2
# runs).  The BERT/ViT/MNIST figures (1, 4, 6, 7) are not registered yet.  Settings live under
# `fastrates:` in config.yaml, schema workflow/schemas/fastrates.schema.yaml.

_FR_CODE = [
    "experiments/fastrates.py",
    "models/attention.py",
    "models/prompt.py",
    "models/selfattn.py",
    "optim/fullbatch.py",
    "svm/qp.py",
    "svm/attention_svm.py",
    "svm/frobenius.py",
    "data/fastrates.py",
]

register_compute(
    "fastrates", "fig2", ["fig2", "table1"], "fastrates.compute_fig2", _FR_CODE
)
register_compute("fastrates", "fig3", ["fig3"], "fastrates.compute_fig3", _FR_CODE)
register_compute("fastrates", "fig5", ["fig5"], "fastrates.compute_fig5", _FR_CODE)
register_compute("fastrates", "fig8", ["fig8"], "fastrates.compute_fig8", _FR_CODE)
register_compute("fastrates", "fig9", ["fig9"], "fastrates.compute_fig9", _FR_CODE)
register_compute("fastrates", "fig10", ["fig10"], "fastrates.compute_fig10", _FR_CODE)


rule fastrates:
    input:
        paper_targets("fastrates"),
