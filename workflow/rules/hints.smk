# An unknown target that looks like one (a bare word: `snakemake maxmargin_fig1`, `fig1c`) is no
# file to build: its error names the targets meant (unknown_target_input, targets.smk).  Real
# targets are rules and never reach this rule; every file of the workflow has a folder in its path
# but the Snakefile (an input of the robustness runs), which this rule never claims.


rule unknown_target:
    input:
        unknown_target_input,
    output:
        "{target}",
    log:
        "results/logs/unknown_target/{target}.log",
    wildcard_constraints:
        target=r"(?!Snakefile$)[A-Za-z][\w-]*",
    localrule: True
    run:
        pass
