# What the user reads beside the rules: an unknown target answered with the targets meant, and
# the end of a run (the target labels and cluster notes: finish_targets, common.smk).


# An unknown target that looks like one (a bare word: `snakemake maxmargin_fig1`, `fig1c`) is no
# file to build: its error names the targets meant.  Real targets are rules and never reach this
# rule; every file of the workflow has a folder in its path but the Snakefile (an input of the
# robustness runs), which this rule never claims.
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


# Let Snakemake exit as soon as its run is over (hints.cancel_rescheduling_timers); not in cluster
# jobs, which run with --no-hooks.
onsuccess:
    hints.cancel_rescheduling_timers()


onerror:
    hints.cancel_rescheduling_timers()
