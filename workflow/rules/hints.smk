# What the user reads beside the rules: an unknown target answered with the targets meant, the
# labels of `snakemake --list-target-rules`, the cluster notes of a dry run, and the end of a run.


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


def finish_targets():
    """Called at the end of the Snakefile, once every rule exists: label the named targets for
    `snakemake --list-target-rules` (attnbias.hints.target_labels), and, in a dry run with cluster
    resources, say which jobs would be submitted (Snakemake's dry run prints every job as a
    plain rule)."""
    for name, text in hints.target_labels(RUN).items():
        if name in workflow._rules:
            workflow.get_rule(name).docstring = text
    if CLUSTER and DRY_RUN and MAIN_PROCESS:
        local = getattr(workflow, "_localrules", set())
        submitted = [r.name for r in workflow.rules if not (r.norun or r.name in local)]
        print(hints.cluster_dry_run_note(submitted), file=sys.stderr)


# Let Snakemake exit as soon as its run is over (hints.cancel_rescheduling_timers); not in cluster
# jobs, which run with --no-hooks.
onsuccess:
    hints.cancel_rescheduling_timers()


onerror:
    hints.cancel_rescheduling_timers()
