# lowrank: figures are registered here (see workflow/rules/maxmargin.smk for the pattern).


rule lowrank:
    input:
        paper_targets("lowrank"),
