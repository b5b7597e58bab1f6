"""Glue between Snakemake ``script:`` entry points and the package (no science here)."""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import inspect
import logging
import os
import sys
from pathlib import Path

from .jobstats import log_startup, log_usage

# The four papers, in the order of the report, `all` and the figure table; each is a section of
# the configuration (validated by workflow/schemas/<paper>.schema.yaml), a module of each layer
# (attnbias.table.<paper>, claims.<paper>, plotting.<paper>) and a methods page
# (docs/papers/<paper>.md).  Their titles name the report's categories.  The one list of them.
PAPER_TITLES = {
    "maxmargin": "1 – Max-margin token selection (Tarzanagh et al. 2023)",
    "fastrates": "2 – Fast rates for self-attention (Vasudeva et al.)",
    "nucnorm": "3 – Nuclear-norm bias of softmax attention (Sheen et al.)",
    "lowrank": "4 – Weight decay induces low rank (Kobayashi et al.)",
}
PAPERS = tuple(PAPER_TITLES)


@contextlib.contextmanager
def rule_logging(snakemake):
    """Send stdout, stderr and ``logging`` of a script run to the rule's log file."""
    log = Path(snakemake.log[0]) if len(snakemake.log) else None
    if log is None:
        yield logging.getLogger("attnbias")
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            yield logging.getLogger("attnbias")
        except BaseException:
            logging.getLogger("attnbias").exception("rule failed")
            raise
        finally:
            log_usage(logging.getLogger("attnbias"))
            root.removeHandler(handler)


def limit_threads(n: int) -> None:
    """Cap BLAS/OpenMP threads to the rule's ``threads`` (call before heavy imports)."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


# Snakemake's default job-submission limit (`--max-jobs-per-timespan 100/1s`).
DEFAULT_JOB_RATE = (100, 1)


def drop_default_rate_limit(workflow) -> bool:
    """Switch off Snakemake's default job-submission limit in a local run; return whether it was.

    Snakemake 9's scheduler (``snakemake.scheduling.job_scheduler.JobScheduler.schedule``), in
    every round that had ready jobs, arms a timer that starts another round one timespan later
    whether or not the limit was reached.  So every finished job adds a chain of rounds, one a
    second, each of which re-reads the size of every ready job's inputs; in a run of 165 small
    jobs that was most of Snakemake's own CPU (docs/performance.md, "The test suite").  A local
    run is already bounded by ``--cores``, so the default limit only costs time there.  Kept: a
    limit the user set (any other value), and every non-local executor (SLURM's submissions).

    ``workflow`` is the Snakefile's ``workflow`` after its scheduler exists (an ``onstart``
    handler).  Where a Snakemake release no longer has these attributes nothing changes
    (tests/unit/test_rate_limit.py checks the pinned release still has them).
    """
    scheduler = getattr(workflow, "scheduler", None)
    limiter = getattr(scheduler, "job_rate_limiter", None)
    if limiter is None or not getattr(workflow, "local_exec", False):
        return False
    if (getattr(limiter, "max_jobs", None), getattr(limiter, "timespan", None)) != DEFAULT_JOB_RATE:
        return False
    scheduler.job_rate_limiter = None
    return True


def resolve(module_prefix: str, dotted: str):
    """``resolve("attnbias.experiments", "maxmargin.train_vit")`` → the function."""
    mod, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(f"{module_prefix}.{mod}"), name)


def entry_value(entry, key: str):
    """A rule's input, params, threads or resources function: the value ``key`` of the job's
    entry in a workflow table, ``entry(wildcards)`` (e.g. ``entry_value(_compute, "func")``)."""
    return lambda wildcards: getattr(entry(wildcards), key)


def figure_function(package: str, paper: str, figure: str):
    """``attnbias.<package>.<paper>.<figure>``: the one function that draws (``package``
    "plotting") or checks ("claims") a figure, found by name; a clear error when there is none."""
    module = importlib.import_module(f"attnbias.{package}.{paper}")
    fn = getattr(module, figure, None)
    if not callable(fn):
        raise LookupError(
            f"{paper} {figure}: no function attnbias.{package}.{paper}.{figure}; every registered "
            "figure needs one in plotting and one in claims (CONTRIBUTING, Adding a figure)"
        )
    return fn


def call_figure(package: str, paper: str, figure: str, data: dict):
    """Call :func:`figure_function` with ``data`` ({data group: (DataFrame, meta)}, the groups
    being the stems of the rule's data files) as keyword arguments.  Its parameters must be
    exactly the group names: a missing or an extra group is a TypeError naming both."""
    fn = figure_function(package, paper, figure)
    expected = list(inspect.signature(fn).parameters)
    if sorted(expected) != sorted(data):
        raise TypeError(
            f"{paper} {figure}: attnbias.{package}.{paper}.{figure} takes the data groups "
            f"{expected}, but the rule's data are {sorted(data)} (missing: "
            f"{sorted(set(expected) - set(data))}, extra: {sorted(set(data) - set(expected))})"
        )
    log_startup(f"attnbias.{package}.{paper}.{figure}")
    return fn(**data)


def figure_data(files) -> dict:
    """A plot or claim rule's plot-ready data: {file stem: (DataFrame, meta)} for each CSV of
    ``files`` (each with its JSON sidecar), in the rule's order."""
    from .io import load_data

    return {Path(f).stem: load_data(f) for f in files if str(f).endswith(".csv")}


def named_inputs(inputs) -> dict:
    """A rule's named inputs as keyword arguments (one path as a string, several as a list), except
    ``code`` (tracked source files), ``downloads`` (markers of hub downloads into the cache) and
    empty ones (an optional input left out)."""
    out = {}
    for name, value in inputs.items():
        if name in ("code", "downloads") or not len(value):
            continue
        out[name] = value if isinstance(value, str) else [str(v) for v in value]
    return out


def python_info() -> str:
    return sys.version.split()[0]


def deep_update(base: dict, extra: dict) -> dict:
    """``base`` updated recursively by ``extra`` (nested mappings merge, anything else replaces):
    how Snakemake layers config files."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_update(out[key], value)
        else:
            out[key] = value
    return out


def load_config(
    root, scale: str | None = None, configfiles=(), validate: bool | None = True, config=None
) -> dict:
    """The workflow's configuration outside Snakemake (tests, benchmarks): ``config.yaml`` (the
    quick preset), the paper overlay ``workflow/presets/paper.yaml`` when the preset is paper,
    then ``configfiles`` in order and ``config`` (a mapping, as ``--config`` values typed);
    validated against the schemas as the workflow does.  ``validate=None`` validates only where
    jsonschema is installed: the benchmarks run on GPU machines whose Python has torch and
    transformers but not Snakemake or jsonschema."""
    import importlib.util

    root = Path(root)
    extra = [parse_yaml(Path(f).read_text()) or {} for f in configfiles]
    extra += [dict(config)] if config else []
    if scale is not None:
        extra.append({"scale": scale})
    cfg = parse_yaml((root / "config.yaml").read_text())
    for e in extra:
        cfg = deep_update(cfg, e)
    if cfg["scale"] == "paper":
        cfg = deep_update(cfg, parse_yaml((root / "workflow/presets/paper.yaml").read_text()))
        for e in extra:  # command-line values go on top of the preset, as in the Snakefile
            cfg = deep_update(cfg, e)
    if validate is None:
        validate = importlib.util.find_spec("jsonschema") is not None
    if validate:
        schemas = root / "workflow" / "schemas"
        for name, section in [("config", cfg)] + [(p, cfg.setdefault(p, {})) for p in PAPERS]:
            validate_with_defaults(section, load_schema(schemas / f"{name}.schema.yaml"))
    return cfg


def load_schema(path) -> dict:
    """The JSON schema in the YAML file ``path``, read once per process (libyaml's loader where
    installed): the workflow reads each schema for typing, checking, defaults and sweep keys."""
    path = Path(path).resolve()
    return _read_yaml(path, path.stat().st_mtime_ns)


@functools.cache
def _read_yaml(path: Path, mtime_ns: int):
    return parse_yaml(path.read_text())


def parse_yaml(text: str):
    """``yaml.safe_load(text)`` through libyaml's loader where installed (the same documents, about
    ten times faster: every Snakemake start reads config.yaml, the schemas and examined.yaml).
    Raises ``yaml.YAMLError`` (with its ``problem_mark``) as ``safe_load`` does."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def validate_with_defaults(value, schema: dict) -> None:
    """Validate ``value`` against ``schema`` (Draft 2020-12; ``$ref`` within the schema) and fill
    in, in place, every missing key whose schema gives a ``default`` (a copy of it), as
    Snakemake's ``validate`` does, without its reading the schema file again on every call.
    Raises ``jsonschema.ValidationError``; :func:`schema_problem` gives the short message."""
    from jsonschema import Draft202012Validator, validators

    properties = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator, props, instance, sub):
        if isinstance(instance, dict):
            for key, subschema in props.items():
                if "default" in subschema:
                    instance.setdefault(key, copy.deepcopy(subschema["default"]))
        yield from properties(validator, props, instance, sub)

    validators.extend(Draft202012Validator, {"properties": set_defaults})(schema).validate(value)



def is_seed_key(key: str) -> bool:
    """Settings that are random seeds: ``seed``, ``seeds``, ``seed_base``, ``seed0``, ``*_seed``."""
    return key.startswith("seed") or key.endswith("_seed")


# How far `--config seed=N` moves every seed: N × SEED_STRIDE.  A figure's seeds span far fewer
# values (a list of data seeds, seed_base + trial index, seed0 + instance index), so the draws of
# seed N share no seed with the default run's or with another N's: each shift is a fresh draw of
# the whole figure, not the default's seeds [0, ..., 4] moved to [1, ..., 5], four of five reused.
SEED_STRIDE = 1_000_000


def shift_seeds(settings, shift: int):
    """``settings`` with every random seed (see :func:`is_seed_key`; integers or lists of
    integers, at any depth) increased by ``shift`` × :data:`SEED_STRIDE`: the ``--config seed=N``
    switch, which reruns every figure on other random draws, disjoint from the default ones,
    without touching anything else."""
    if isinstance(settings, list):
        return [shift_seeds(v, shift) for v in settings]
    if not isinstance(settings, dict):
        return settings
    step = shift * SEED_STRIDE
    out = {}
    for key, value in settings.items():
        if is_seed_key(key) and isinstance(value, int) and not isinstance(value, bool):
            out[key] = value + step
        elif is_seed_key(key) and isinstance(value, list) and all(
            isinstance(v, int) for v in value
        ):
            out[key] = [v + step for v in value]
        else:
            out[key] = shift_seeds(value, shift)
    return out


# --- command-line config values, typed by the schema -------------------------------------------

_JSON_TYPES = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


class ConfigTypeError(ValueError):
    """A command-line value that cannot be read as the type its schema declares."""


def _resolve_ref(schema: dict, root: dict) -> dict:
    while isinstance(schema, dict) and "$ref" in schema:
        node = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _declared_types(schema: dict, root: dict) -> set[str]:
    """Every JSON type a schema allows (``type``, and those of its anyOf/oneOf branches)."""
    schema = _resolve_ref(schema, root)
    declared = schema.get("type", [])
    types = {declared} if isinstance(declared, str) else set(declared)
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key, []):
            types |= _declared_types(branch, root)
    return types


def _parse_scalar(text: str):
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, str):  # YAML 1.1 reads 1e-3 as a string
        try:
            return float(value)
        except ValueError:
            pass
    return value


def coerce_to_schema(value, schema: dict, root: dict | None = None, path: str = ""):
    """``value`` with its string leaves typed as ``schema`` declares (integer, number, boolean,
    null, or a YAML list/mapping): ``--config key='{a: {b: 500}}'`` reaches the workflow with
    every nested leaf a string (Snakemake reads nested values with YAML's BaseLoader).  Values
    already typed (config files) are returned unchanged, and so are strings where the schema allows
    a string (except YAML's null where null is allowed too).  A string that reads as none of the
    declared types raises :class:`ConfigTypeError` naming the key path ``path``."""
    root = schema if root is None else root
    schema = _resolve_ref(schema, root)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        out = {}
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            where = f"{path}.{key}" if path else str(key)
            out[key] = item if sub is None else coerce_to_schema(item, sub, root, where)
        return out
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            branches = [_resolve_ref(b, root) for b in schema.get("oneOf", schema.get("anyOf", []))]
            items = next((b["items"] for b in branches if isinstance(b.get("items"), dict)), None)
        if items is None:
            return value
        return [coerce_to_schema(v, items, root, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value
    types = _declared_types(schema, root)
    if not types or ("enum" in schema and value in schema["enum"]):
        return value
    parsed = _parse_scalar(value)
    if "string" in types and not (parsed is None and "null" in types):
        return value
    if any(_JSON_TYPES[t](parsed) for t in types if t in _JSON_TYPES):
        return coerce_to_schema(parsed, schema, root, path) if parsed is not value else parsed
    wanted = " or ".join(sorted(types))
    head, *rest = path.split(".")
    example = f"<{wanted}>"
    for key in reversed(rest):
        example = f"{{{key}: {example}}}"
    raise ConfigTypeError(
        f"Config validation failed: {path} = {value!r} is not of type {wanted} "
        "(workflow/schemas).\n"
        f"On the command line, write nested values as YAML: --config {head}='{example}'\n"
        "or put them in a YAML file and pass it with --configfile FILE (merged key by key)."
    )


def order_like(value, reference):
    """``value`` with every mapping's keys in the order they have in ``reference``.

    Snakemake's params trigger compares ``repr(params)``, and a dict's repr follows its key
    order.  Layered configs (``--configfile``, ``--config``, the paper overlay) change that order
    without changing any value: Snakemake starts from the command-line values and merges
    ``config.yaml`` into them, so a restated setting moves to the front and its job looks changed.
    Ordering the merged config like ``config.yaml`` makes params compare by value.

    Parameters
    ----------
    value : object
        The merged configuration (or any part of it).  Mappings are reordered recursively;
        anything else, lists included, is returned as it is.
    reference : object
        The configuration whose key order is canonical (``config.yaml``, the quick preset, which
        holds every key the schemas require).  Keys of ``value`` that ``reference`` lacks follow
        in sorted order.

    Returns
    -------
    object
        A new mapping equal to ``value`` (``==``), with canonical key order at every depth.
    """
    if not isinstance(value, dict):
        return value
    ref = reference if isinstance(reference, dict) else {}
    keys = [k for k in ref if k in value] + sorted((k for k in value if k not in ref), key=str)
    return {k: order_like(value[k], ref.get(k)) for k in keys}


def schema_problem(value, schema: dict, path: str = "") -> str | None:
    """A short account of why ``value`` fails ``schema``, or None when it is valid.

    Snakemake's own validation message prints the whole schema (hundreds of lines) and names the
    key as ``instance['fig2']['n']`` without its paper.  This one is at most a few lines: the full
    key path (``fastrates.fig2.n``), what is allowed (the key's description and constraints, or
    the known keys), and the value given.

    Parameters
    ----------
    value : object
        The configuration section to check.
    schema : dict
        Its JSON schema (Draft 2020-12).
    path : str
        The dotted key path of ``value`` in the whole configuration ("" for the top level).
    """
    import jsonschema

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(value)
    )
    if error is None:
        return None
    keys = [path] if path else []
    keys += [f"[{k}]" if isinstance(k, int) else str(k) for k in error.absolute_path]
    where = ".".join(keys).replace(".[", "[") or "(top level)"
    sub = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        unknown = sorted(set(error.instance) - set(sub.get("properties", {})))
        known = ", ".join(sorted(sub.get("properties", {})))
        lines = [f"config error at {where}: unknown key(s) {', '.join(unknown)}",
                 f"  allowed keys: {known}"]  # fmt: skip
        glued = [k for k in unknown if ":" in str(k)]
        if glued:  # YAML reads `steps:500` (no space after the colon) as one word
            k, v = str(glued[0]).split(":", 1)
            lines.append(f"  YAML needs a space after each colon: {{{k}: {v}}}, not {{{glued[0]}}}")
    else:
        bounds = ("type", "enum", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum",
                  "minItems", "maxItems")  # fmt: skip
        limits = {k: sub[k] for k in bounds if k in sub}
        desc = str(sub.get("description", "")).strip()
        lines = [f"config error at {where}: {error.message[:200]}",
                 f"  allowed: {desc[:200]}{' ' if desc else ''}{limits}",
                 f"  given: {error.instance!r}"[:240]]  # fmt: skip
    return "\n".join(lines)


def sweep_keys(schema: dict, block: str) -> set[str]:
    """The keys of the settings block ``block`` of a paper's ``schema`` that span its training
    sweep (marked ``x-sweep: true``: a grid, the seeds, a gather's threshold).  A run is given its
    point instead, so they are left out of its settings (a ``$ref`` block is followed)."""
    sub = schema["properties"][block]
    if "$ref" in sub:
        sub = schema["$defs"][sub["$ref"].rsplit("/", 1)[-1]]
    return {k for k, v in sub["properties"].items() if v.get("x-sweep")}
