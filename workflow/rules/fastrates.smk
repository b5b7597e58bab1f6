# fastrates: figures are registered here (see workflow/rules/maxmargin.smk for the pattern).


rule fastrates:
    input:
        paper_targets("fastrates"),
