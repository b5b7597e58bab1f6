# Config loading and validation, the figure registry, and shared helpers.
import os
import re
import sys
from pathlib import Path

import yaml

from attnbias.closure import ClosureCache
from attnbias.table import TableError, build_table
from attnbias.workflow import ConfigTypeError, coerce_to_schema, load_schema
from attnbias.workflow import schema_problem, sweep_keys, validate_with_defaults

PAPERS = {
    "maxmargin": "1 – Max-margin token selection (Tarzanagh et al. 2023)",
    "fastrates": "2 – Fast rates for self-attention (Vasudeva et al.)",
    "nucnorm": "3 – Nuclear-norm bias of softmax attention (Sheen et al.)",
    "lowrank": "4 – Weight decay induces low rank (Kobayashi et al.)",
}

# `--config key=value` passes strings: accept the usual spellings for the boolean switches.
_BOOLEAN_WORDS = dict(true=True, yes=True, false=False, no=False)
_BOOLEAN_WORDS.update({"1": True, "0": False})
for _key in ("claims_strict",):
    if isinstance(config.get(_key), str) and config[_key].lower() in _BOOLEAN_WORDS:
        config[_key] = _BOOLEAN_WORDS[config[_key].lower()]


def typed_config(section, schema_path, path=""):
    """``section`` with the string leaves of `--config key='{a: {b: 500}}'` typed as its schema
    declares (Snakemake passes nested command-line values as strings), or a short error naming
    the key path and how to pass the value (attnbias.workflow.coerce_to_schema)."""
    try:
        return coerce_to_schema(section, load_schema(schema_path), path=path)
    except ConfigTypeError as e:
        raise WorkflowError(str(e)) from None


def checked(section, schema_path, path=""):
    """Validate ``section`` and fill in its defaults (attnbias.workflow.validate_with_defaults),
    first stopping with a short message naming the full key path, what is allowed and the value
    given (attnbias.workflow.schema_problem) instead of a dump of the whole schema."""
    schema = load_schema(schema_path)
    problem = schema_problem(section, schema, path)
    if problem:  # + where it was given (where_given: config_rules, via the Snakefile)
        raise WorkflowError(problem + where_given(problem, workflow))
    validate_with_defaults(section, schema)


_SCHEMAS = Path(workflow.basedir) / "workflow" / "schemas"
config.update(typed_config(config, _SCHEMAS / "config.schema.yaml"))
checked(config, _SCHEMAS / "config.schema.yaml")
# Each paper's settings have their own schema (every key required, additionalProperties: false).
for _paper in PAPERS:
    _schema = _SCHEMAS / f"{_paper}.schema.yaml"
    if _schema.exists():
        config[_paper] = typed_config(config.get(_paper, {}), _schema, _paper)
        checked(config[_paper], _schema, _paper)
# What one setting needs of another (attnbias.config_rules), so every accepted setting runs.
from attnbias.config_rules import cross_field_problems

_PROBLEMS = cross_field_problems(config)
if _PROBLEMS:
    raise WorkflowError("config error: " + "\nconfig error: ".join(_PROBLEMS))

SCALE = config["scale"]

# Paper settings that differ after --configfile/--config from the preset's reference run (config.yaml
# [+ presets/paper.yaml], read fresh) make an override, in its own folder (attnbias.layout).
from attnbias.layout import compare_with_reference, describe_overrides, results_root

try:
    OVERRIDES, OVERRIDE = compare_with_reference(config, workflow.basedir)
except ValueError as e:
    raise WorkflowError(f"{e}\n  (in the reference run's files)") from None
# What the claims summary's first line adds about the run it shows (nothing for the reference)
SHOWS_OVERRIDES = dict(overrides=describe_overrides(OVERRIDES)) if OVERRIDES else {}


# `--config control=null` arrives as YAML null: both spell the negative control.
CONTROL = "null" if config["control"] is None else config["control"]
config["control"] = CONTROL


# The settings as given, before the seed shift: every run of `snakemake robustness` gets them.
CONFIG_GIVEN = {k: v for k, v in config.items() if k not in ("seed", "robustness")}

# `--config seed=N` shifts every random seed of every figure by N (attnbias.workflow.shift_seeds):
# the paper claims should hold on any draw, not only the default one.
if config["seed"]:
    from attnbias.workflow import shift_seeds

    for _paper in PAPERS:
        config[_paper] = shift_seeds(config[_paper], config["seed"])

# Each preset, override, control and seed shift has its own results folder (the default run keeps
# results/), so switching and back recomputes nothing: every output path below starts with it.
RESULTS = results_root(SCALE, CONTROL, config["seed"], OVERRIDE)
# The same run without the control: the training runs the control does not change are its runs
# (Table.register_sweep's ``control_shares``), trained there once.
UNCONTROLLED = results_root(SCALE, "none", config["seed"], OVERRIDE)


onstart:  # an override's folder records its differences (overrides.yaml); real runs only
    from attnbias.layout import write_overrides

    write_overrides(SCALE, OVERRIDE, OVERRIDES)


# Params compare by value: Snakemake records repr(params), and layering --configfile/--config on
# config.yaml reorders keys without changing values.  Put every mapping in config.yaml's order.
from attnbias.workflow import order_like

with open(Path(workflow.basedir) / "config.yaml") as _f:
    _ORDER = yaml.load(_f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
config.update(order_like(config, _ORDER))
CONFIG_GIVEN = order_like(CONFIG_GIVEN, _ORDER)

# The import closures of the jobs' code (their `code` inputs), kept between Snakemake processes
# for one state of the sources (every run, dry run and cluster job parses the workflow); the
# user's process saves them (Snakefile).
CLOSURES = ClosureCache(
    workflow.basedir, Path(".snakemake") / "attnbias" / "closures.json"
)

# The figure table of this run (attnbias.table: one typed entry per figure, computation, training
# sweep and its gathers, download, stage): the rules, written once with wildcards, read their
# job's entry.  Its tables by kind, under the names the rules use:
try:
    TABLE = build_table(
        config,
        basedir=workflow.basedir,
        results=RESULTS,
        uncontrolled=UNCONTROLLED,
        closures=CLOSURES,
    )
except TableError as e:
    raise WorkflowError(str(e)) from None
FIGURES, COMPUTES, SWEEPS = TABLE.figures, TABLE.computes, TABLE.sweeps
DOWNLOADS, TABLE_FILES = TABLE.downloads, TABLE.table_files
STAGES, STAGE_OWNER = TABLE.stages, TABLE.stage_owner
# the rule making each plot-ready file of a sweep, `gather` (trained here) or `precomputed`
GATHERS, PRECOMPUTED_GROUPS = TABLE.gathers(), TABLE.precomputed_groups()
# (paper, sweep) -> {batch: points}: one `train` job per batch (a point, or a quick-preset group)
TRAIN_BATCHES = {k: s.batches for k, s in TABLE.trained_sweeps().items()}
# (paper, sweep, label) -> one `extend` job per grid widened at an edge (attnbias.table Extension)
EXTENSIONS = TABLE.extensions()
# the paths and code inputs the rules share
data_files, figure_outputs, claim_file = (
    TABLE.data_files,
    TABLE.figure_outputs,
    TABLE.claim_file,
)
script_code = TABLE.script_code
