# nucnorm: figures are registered here (see workflow/rules/maxmargin.smk for the pattern).


rule nucnorm:
    input:
        paper_targets("nucnorm"),
