# Config loading and validation, the figure registry, and shared helpers.
import os
import re
import sys
from pathlib import Path

import yaml

from attnbias.closure import ClosureCache
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


def run_settings(paper, block):
    """A training run's ``settings``: ``config[paper][block]`` without the keys that span the
    sweep (``x-sweep: true`` in the schema), whose value a run gets as its point instead; so
    adding a seed or a grid value reruns no finished run."""
    drop = sweep_keys(load_schema(_SCHEMAS / f"{paper}.schema.yaml"), block)
    return {k: v for k, v in config[paper][block].items() if k not in drop}


# `--config control=null` arrives as YAML null: both spell the negative control.
CONTROL = "null" if config["control"] is None else config["control"]
config["control"] = CONTROL


def with_control(settings):
    """The settings of a deep-learning job (training run, gather, deep-learning compute) with
    ``control="null"`` added under the negative control.  Only then: default runs keep their
    params, so turning the feature on reruns nothing, and turning the control off reruns exactly the
    controlled jobs (the params trigger)."""
    return settings if CONTROL == "none" else dict(settings, control=CONTROL)


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
# (register_sweep's ``control_shares``), trained there once.
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

# The figure table, filled by the paper files (workflow/rules/<paper>.smk): their entries, never
# rules.  The rules of figures.smk are written once, with wildcards, and read these tables.
# (paper, figure id) -> {data: the plot-ready files feeding it, gpu}: rules `check` and `plot`.
FIGURES = {}
# (paper, group) -> computation: rule `compute` (results/data/<paper>/<group>.{csv,json}).
COMPUTES = {}


# (paper, table) -> a table also written as CSV + Markdown next to its figure: rule `table_files`.
TABLE_FILES = {}


def register_table_files(paper, table, group, modules, write):
    """<results>/figures/<paper>/<table>.{csv,md} from the plot-ready data of ``group``:
    ``write(data_csv, csv_path, md_path)``; ``modules`` (dotted, under attnbias) are what it runs.
    """
    TABLE_FILES[(paper, table)] = dict(
        group=group, code=module_code(*modules), write=write
    )


def data_files(paper, group):
    """The plot-ready data of a compute group: a tidy CSV and its JSON sidecar."""
    return [
        f"{RESULTS}/data/{paper}/{group}.csv",
        f"{RESULTS}/data/{paper}/{group}.json",
    ]


# The import closures below, kept between Snakemake processes for one state of the sources (every
# run, dry run and cluster job parses the workflow); the user's process saves them (Snakefile).
CLOSURES = ClosureCache(
    workflow.basedir, Path(".snakemake") / "attnbias" / "closures.json"
)


def experiment_code(func, script="scripts/compute.py"):
    """A computation's ``code=`` input, whose edits rerun it: its entry ``script``, the package
    modules ``attnbias.experiments.<func>`` runs (its import closure, computed from the sources by
    attnbias.closure) and those of ``attnbias.io``, which writes its tables.  The rerun triggers
    leave out Snakemake's ``code`` trigger (profiles/), so the script is tracked here, by checksum.
    ``attnbias.workflow`` (logging, threads, resume bookkeeping) is left out: it does not change
    what a job computes."""
    return sorted(
        {
            script,
            *CLOSURES.code(f"experiments.{func}"),
            *module_code("io"),
        }
    )


def module_code(*modules):
    """The package modules that ``modules`` (dotted, under attnbias: ``"io"``) run, sorted."""
    return sorted({f for m in modules for f in CLOSURES.code(m)})


def script_code(script, *modules):
    """The script itself and the package modules its own ``attnbias`` imports and ``modules`` run,
    sorted."""
    return sorted({script, *CLOSURES.script(script), *module_code(*modules)})


def register_compute(
    paper,
    group,
    figures,
    func,
    settings=None,
    inputs=None,
    threads=1,
    mem_mb=2000,
    runtime="30m",
    gpu=False,
):
    """Register a computation: one job of the `compute` rule running
    ``attnbias.experiments.<func>(**settings, **inputs)`` and writing
    results/data/<paper>/<group>.{csv,json}, the plot-ready data of ``figures``.

    ``settings``: default ``config[paper][group]``.  ``inputs``: extra named inputs (download
    markers, other tables) passed to ``func`` by name.  ``mem_mb``/``runtime``: a value, or a
    function of the attempt (:func:`grows_with_attempt`).  Its ``code=`` input is the import
    closure of ``func`` (:func:`experiment_code`).
    """
    COMPUTES[(paper, group)] = dict(
        figures=list(figures),
        func=func,
        settings=config[paper][group] if settings is None else settings,
        inputs=dict(inputs or {}),
        code=experiment_code(func),
        threads=threads,
        mem_mb=mem_mb,
        runtime=runtime,
        gpu=gpu,
    )
    for fig in figures:
        register_figure(paper, fig, data_files(paper, group), gpu=gpu)


def grows_with_attempt(base):
    """A resource (mem_mb, runtime) that grows with the attempt: base × attempt."""
    return lambda wildcards, attempt: base * attempt


def register_figure(paper, fig, data, gpu=False):
    """Register a figure whose plot and claim rules read the plot-ready files ``data``."""
    FIGURES[(paper, fig)] = dict(data=list(data), gpu=gpu)


def figure_outputs(paper, fig):
    return [
        f"{RESULTS}/figures/{paper}/{fig}.pdf",
        f"{RESULTS}/figures/{paper}/{fig}.png",
    ]


def claim_file(paper, fig):
    return f"{RESULTS}/claims/{paper}/{fig}.json"


# --- wildcard constraints and input/param/resource functions of the rules in figures.smk ---------


def one_of(choices):
    """A wildcard constraint allowing, after each prefix, only its values: ``{"maxmargin/":
    ["fig1", "fig2"], ...}``.  Each branch is a fixed-width lookbehind on the text just before the
    wildcard (e.g. the paper folder), so that `compute`, `gather` and `precomputed`, which write
    the same kind of path, never claim each other's files.  No choice: matches nothing.
    """
    branches = [
        f"(?<={re.escape(prefix)})(?:{'|'.join(re.escape(v) for v in sorted(values, key=len, reverse=True))})"
        for prefix, values in sorted(choices.items())
        if values
    ]
    return "|".join(branches) or "(?!)"


def by_paper(keys, prefix="{paper}/"):
    """``{(paper, x), ...}`` as :func:`one_of` choices keyed by ``prefix`` (formatted)."""
    out = {}
    for paper, x, *rest in keys:
        out.setdefault(prefix.format(paper=paper, rest=rest), []).append(x)
    return out


def attempt_value(value):
    """A resource value or a function of the attempt (grows_with_attempt) at this attempt."""
    return lambda wildcards, attempt: (
        value(wildcards, attempt) if callable(value) else value
    )


def _compute(wildcards):
    return COMPUTES[(wildcards.paper, wildcards.group)]


def _sweep(wildcards):
    return SWEEPS[(wildcards.paper, wildcards.sweep)]


def _gather(wildcards):
    return GATHERS[(wildcards.paper, wildcards.group)]


def figure_data(wildcards):
    """The plot-ready files of a figure (its entry in the figure table)."""
    return FIGURES[(wildcards.paper, wildcards.fig)]["data"]
