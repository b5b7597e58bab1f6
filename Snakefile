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
include: "workflow/rules/inputs.smk"
include: "workflow/rules/targets.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/summary.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/robustness_table.smk"
include: "workflow/rules/robustness.smk"
include: "workflow/rules/hooks.smk"
include: "workflow/rules/hints.smk"


# the import closures of the jobs' code (common.smk), for the next process; a cluster job's parse
# leaves the file to the process the user started
if workflow.is_main_process:
    CLOSURES.save()


rule all:
    default_target: True
    input:
        all_targets(),


# An unknown target, and what robustness or control=null costs: said first (attnbias.hints).
if MAIN_PROCESS:
    _named = [r.name for r in workflow.rules if not r.has_wildcards()]
    hints.say_first(sys.argv, [r.name for r in workflow.rules], ROBUST["seeds"], _named)


# Label the named targets (--list-target-rules), and the cluster notes of a dry run (targets.smk).
finish_targets()
