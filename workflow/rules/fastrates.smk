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


# Table 1 (proposal) is also written as CSV + Markdown next to its rendered figure.
rule fastrates_table1_files:
    input:
        data=data_files("fastrates", "fig2"),
        code="src/attnbias/experiments/fastrates.py",
    output:
        csv="results/figures/fastrates/table1.csv",
        md="results/figures/fastrates/table1.md",
    log:
        "results/logs/fastrates_table1_files.log",
    localrule: True
    run:
        from attnbias.io import load_data
        from attnbias.experiments.fastrates import write_rate_table

        write_rate_table(load_data(input.data[0])[0], output.csv, output.md)


rule fastrates:
    input:
        paper_targets("fastrates"),
        rules.fastrates_table1_files.output,
