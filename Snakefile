# Snakemake workflow: regenerate every figure of four papers on the implicit bias of attention
# and check each paper's quantitative claims.  See README.md.
from snakemake.utils import min_version

min_version("9.19")


# The quick preset is config.yaml; `--config scale=paper` overlays workflow/presets/paper.yaml on
# it (only the values the paper preset changes).  Command-line --configfile/--config values are
# applied last, on top of either preset.  (Snakemake reads --configfile and --config before this
# file; the preset files are read here, so a broken one is reported with its line.)
from attnbias.config_rules import where_given, yaml_problem

for _preset in ("config.yaml", "workflow/presets/paper.yaml"):
    if yaml_problem(_preset):
        raise WorkflowError(yaml_problem(_preset))


configfile: "config.yaml"


if config.get("scale") == "paper":

    configfile: "workflow/presets/paper.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/summary.smk"
include: "workflow/rules/robustness.smk"
include: "workflow/rules/hints.smk"


# the import closures of the jobs' code, for the next process: saved by a real run of the process
# the user started (a dry run writes nothing; a cluster job leaves the file to that process)
if workflow.is_main_process and not DRY_RUN:
    RUN.figure_code  # (the check and plot jobs' closures, computed once, saved with the rest)
    CLOSURES.save()


rule all:
    default_target: True
    input:
        RUN.all_targets(),


# An unknown target, and what robustness, compare of a seed or control=null costs (measured:
# workflow/costs/, attnbias.estimates): said first (attnbias.hints).
if MAIN_PROCESS:
    _named = [r.name for r in workflow.rules if not r.has_wildcards()]
    from attnbias.estimates import RunEstimates

    hints.say_first(
        sys.argv,
        [r.name for r in workflow.rules],
        ROBUST.settings["seeds"],
        _named,
        estimates=RunEstimates(RUN),
    )


# Label the named targets (--list-target-rules) and the cluster notes of a dry run (hints.smk).
finish_targets()
