"""Where a run's files go: each preset, negative control, seed shift and set of overridden
settings in its own results folder, and products whose data is gone set aside so they are never
taken as current."""

import hashlib
import json
import math
import os
import re
from pathlib import Path

from .workflow import PAPERS

# The top-level sections of the configuration that hold scientific settings: what a figure
# computes.  A run whose values there differ from the reference run's (config.yaml, plus
# workflow/presets/paper.yaml for the paper preset) is an *override* and writes into its own folder
# (:func:`override_name`).  Every key of these sections counts, a data ``source`` given as a local
# directory included (nothing checks a local copy against the hub's).  The other top-level keys
# are not settings of what is computed: ``scale``, ``control`` and ``seed`` have folders of their
# own (:func:`results_root`); ``accelerator`` says where jobs run (``auto`` resolves per machine,
# and a CPU and a GPU run of the same settings are the same run, to rounding); ``claims_strict``
# only adds the strict gate; ``robustness`` chooses the seed runs `snakemake robustness` compares;
# ``gpu_results=precomputed`` changes where the GPU figures' plot-ready files come from (committed
# files in workflow/precomputed/, which record their own settings and provenance), not the settings
# anything is computed with.
SCIENTIFIC = PAPERS

# A readable override folder names at most this many differences and is at most this long;
# otherwise it is named by a digest of the differences (overrides.yaml in it lists them).
MAX_NAMED = 3
MAX_NAME_LEN = 80

# The file in an override's folder recording its differences from the reference run.
OVERRIDES_FILE = "overrides.yaml"


def results_root(scale: str, control: str, seed: int, override: str = "") -> str:
    """The folder a run writes its data, figures, claims, logs and checkpoints to.

    The default run (quick preset, no control, no seed shift, the settings of ``config.yaml``)
    keeps ``results/``; every other combination has its own sub-folder, so switching presets, the
    negative control, the seed or the settings and switching back recomputes nothing, and a one-off
    override never touches the reference run's files (the hub downloads, ``results/downloads/``,
    are shared).

    Parameters
    ----------
    scale : str
        The preset (``"quick"``, ``"paper"``).
    control : str
        The negative control (``"none"``, ``"null"``).
    seed : int
        The shift added to every random seed (``--config seed=N``); 0 is the default draw.
    override : str
        The name of the run's differences from the preset's own settings (:func:`override_name`;
        ``""``: none).

    Returns
    -------
    str
        ``results`` or ``results/<scale>/custom/<override>/control-<control>/seed-<N>``, with only
        the parts that differ from the default, e.g. ``results/paper``, ``results/control-null``,
        ``results/seed-1``, ``results/paper/seed-2``,
        ``results/custom/maxmargin.fig1.steps-500/seed-1``.  An override's seed runs and negative
        control sit inside its folder: everything made with its settings is in one place.
    """
    parts = [scale] if scale != "quick" else []
    parts += ["custom", override] if override else []
    parts += [f"control-{control}"] if control != "none" else []
    parts += [f"seed-{seed}"] if seed else []
    return "/".join(["results", *parts])


def same_value(a, b) -> bool:
    """Whether two configuration values are the same setting: numbers by value (``1 == 1.0``,
    as YAML spellings and command-line typing differ), booleans only equal to booleans, mappings
    key by key, lists item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (a != a and b != b)  # NaN is NaN
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_ABSENT = "(absent)"


def differences(config: dict, reference: dict, sections=SCIENTIFIC) -> list[tuple]:
    """The scientific settings in which ``config`` differs from ``reference``.

    Parameters
    ----------
    config : dict
        The run's configuration, after the command line (``--configfile``, ``--config``) was
        applied, typed and completed with the schema defaults.
    reference : dict
        The reference run's configuration, read the same way from ``config.yaml`` (and
        ``workflow/presets/paper.yaml`` for the paper preset).
    sections : iterable of str
        The top-level sections compared (:data:`SCIENTIFIC`).

    Returns
    -------
    list of (str, object, object)
        ``(dotted key path, reference value, value used)`` for every differing leaf: a mapping is
        compared key by key, anything else (a list included) as one value; a key on one side only
        has ``"(absent)"`` on the other.  In the reference's key order (config.yaml's), so the
        same differences always come in the same order.  Empty: the run is the reference run.
    """
    out: list[tuple[str, object, object]] = []

    def walk(path, ref, val):
        if isinstance(ref, dict) and isinstance(val, dict):
            for key in [*ref, *sorted((k for k in val if k not in ref), key=str)]:
                walk(f"{path}.{key}", ref.get(key, _ABSENT), val.get(key, _ABSENT))
        elif not same_value(ref, val):
            out.append((path, ref, val))

    for section in sections:
        walk(section, reference.get(section, {}), config.get(section, {}))
    return out


def like_reference(value, reference):
    """``value`` with every setting that :func:`same_value` finds equal to the reference's spelled
    as the reference spells it (``1`` where config.yaml says ``1.0``): a restated setting then
    gives the jobs exactly the params they had, and Snakemake's params trigger reruns nothing."""
    if isinstance(value, dict) and isinstance(reference, dict):
        return {k: like_reference(v, reference.get(k, _ABSENT)) for k, v in value.items()}
    return reference if same_value(value, reference) else value


_SAFE = re.compile(r"[A-Za-z0-9_.-]+")
_KEY = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")


def _scalar_name(v) -> str | None:
    """A scalar setting as it appears in a folder name, or None when it cannot appear there."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer()):
        return str(int(v))
    if isinstance(v, float) and math.isfinite(v):
        text = repr(v)
        return text if _SAFE.fullmatch(text) else None
    if isinstance(v, str) and _SAFE.fullmatch(v):
        return v
    return None


def _value_name(v) -> str | None:
    """A setting as it appears in a folder name: a scalar, or a list of scalars joined by
    commas; None for anything else (a mapping, a nested list, a string with other characters)."""
    if isinstance(v, list):
        names = [_scalar_name(x) for x in v]
        return ",".join(names) if v and None not in names else None
    return _scalar_name(v)


def _canonical(diffs) -> str:
    """The differences as canonical JSON text (the key paths and values used; numbers by value)."""

    def norm(v):
        if isinstance(v, dict):
            return {str(k): norm(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v

    return json.dumps([[path, norm(used)] for path, _, used in diffs], sort_keys=True)


def _digest_name(diffs) -> str:
    digest = hashlib.sha256(_canonical(diffs).encode()).hexdigest()[:12]
    return f"{len(diffs)}-settings-{digest}"


def readable_name(diffs) -> str | None:
    """Each difference as ``<key path>-<value>``, joined by ``+`` (``maxmargin.fig1.steps-500``,
    ``lowrank.fig2.seeds-0,1+lowrank.fig2.lr-0.003``: numbers by value, lists joined by commas),
    or None with more than :data:`MAX_NAMED` differences, a name longer than
    :data:`MAX_NAME_LEN` characters, or a value that cannot be spelled in a path (a mapping, a
    string with ``/`` or spaces, a list of lists)."""
    named = [(path, _value_name(used)) for path, _, used in diffs]
    if len(diffs) > MAX_NAMED or not all(v is not None and _KEY.fullmatch(p) for p, v in named):
        return None
    name = "+".join(f"{p}-{v}" for p, v in named)
    return name if len(name) <= MAX_NAME_LEN else None


def override_name(diffs, scale: str = "quick", root=".") -> str:
    """The folder name of a run with these :func:`differences` (``""`` for none): its
    :func:`readable_name`, else ``<n>-settings-<digest>`` (the first 12 hex digits of the SHA-256
    of the differences).  Only the values used count, not the reference's: an override keeps its
    folder when config.yaml changes elsewhere (its jobs then rerun in place, as the default run's
    do).  The folder's ``overrides.yaml`` lists the differences (:func:`write_overrides`); a
    readable name whose folder (under ``root``) already records other differences (two spellings
    that read alike, e.g. ``0.5`` and ``[0.5]`` where a key takes either) falls back to the digest,
    so a folder never holds the products of two sets of settings."""
    if not diffs:
        return ""
    name = readable_name(diffs)
    if name is None:
        return _digest_name(diffs)
    found = recorded_overrides(Path(root) / override_base(scale, name))
    return name if found in (None, _canonical(diffs)) else _digest_name(diffs)


def override_base(scale: str, name: str) -> str:
    """The folder of an override and of everything run with it (its seed shifts, its negative
    control): where its ``overrides.yaml`` is."""
    return results_root(scale, "none", 0, name)


def overrides_record(diffs) -> dict:
    """The differences as written to an override folder's ``overrides.yaml``:
    ``{key path: {"default": reference value, "used": value used}}``, in their order."""
    return {path: {"default": ref, "used": used} for path, ref, used in diffs}


def describe_overrides(diffs) -> list[str]:
    """One line per difference, for the claims summary and logs:
    ``maxmargin.fig1.steps = 500 (reference: 1000)``."""
    return [f"{p} = {json.dumps(used)} (reference: {json.dumps(ref)})" for p, ref, used in diffs]


def recorded_overrides(folder) -> str | None:
    """The differences recorded in ``folder``'s overrides.yaml as canonical text (see
    :func:`_canonical`), or None when it has none."""
    import yaml

    path = Path(folder) / OVERRIDES_FILE
    if not path.is_file():
        return None
    doc = yaml.safe_load(path.read_text()) or {}
    overrides = doc.get("overrides", {}) if isinstance(doc, dict) else {}
    return _canonical([(p, e.get("default"), e.get("used")) for p, e in overrides.items()])


def write_overrides(scale: str, name: str, diffs) -> bool:
    """Write the override's ``overrides.yaml`` (in :func:`override_base`): each differing key's
    reference value and value used (:func:`overrides_record`), unless it already says exactly
    that or there is no override; return whether it was written."""
    import yaml

    if not diffs:
        return False
    files = " + ".join(reference_files(scale))
    text = (
        "# The settings of the runs in this folder that differ from the reference run's\n"
        f"# ({files}): for each key, the reference value and the value used.\n"
        + yaml.safe_dump({"overrides": overrides_record(diffs)}, sort_keys=False)
    )
    path = Path(override_base(scale, name)) / OVERRIDES_FILE
    if path.is_file() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return True


def compare_with_reference(config: dict, root) -> tuple[list, str]:
    """Compare a run's ``config`` (after the command line, typed and completed with the schema
    defaults, before the seed shift) with its preset's reference run (:func:`reference_config`
    of the workflow directory ``root``).

    Every setting equal to the reference's is set, in place, to the reference's own spelling
    (:func:`like_reference`), so its jobs keep their params exactly.

    Returns
    -------
    (list, str)
        The :func:`differences` and the run's :func:`override_name` (``""``: the reference run).
    """
    reference = reference_config(root, config["scale"])
    diffs = differences(config, reference)
    for section in SCIENTIFIC:
        if section in config:
            config[section] = like_reference(config[section], reference.get(section, {}))
    return diffs, override_name(diffs, config["scale"])


def reference_files(scale: str) -> list[str]:
    """The files that define the reference run of a preset: ``config.yaml``, and
    ``workflow/presets/paper.yaml`` on top of it for the paper preset."""
    return ["config.yaml"] + (["workflow/presets/paper.yaml"] if scale == "paper" else [])


def reference_config(root, scale: str) -> dict:
    """The reference run's configuration of the preset ``scale``, read fresh from
    :func:`reference_files` in the workflow directory ``root`` and completed with the schema
    defaults, as the workflow completes its own (attnbias.workflow.load_config).  Raises
    ValueError, naming the key, when those files are themselves invalid."""
    from .workflow import PAPERS, load_config, load_schema, schema_problem, validate_with_defaults

    cfg = load_config(root, scale=scale, validate=False)
    schemas = Path(root) / "workflow" / "schemas"
    for name, section in [("config", cfg)] + [(p, cfg.setdefault(p, {})) for p in PAPERS]:
        schema = load_schema(schemas / f"{name}.schema.yaml")
        problem = schema_problem(section, schema, "" if name == "config" else name)
        if problem:
            raise ValueError(problem)
        validate_with_defaults(section, schema)
    return cfg


def results_folder(root, configfiles=(), config=None) -> str:
    """The results folder (relative to ``root``) that a run of the workflow in ``root`` with these
    ``--configfile`` files and ``--config`` values (a mapping, already typed) writes to: the
    workflow's own comparison with the preset's reference run (workflow/rules/common.smk), for
    scripts and tests that look at a run's files, e.g. ``results/custom/maxmargin.fig1.steps-500``
    for ``config={"maxmargin": {"fig1": {"steps": 500}}}``."""
    from .workflow import load_config

    cfg = load_config(root, configfiles=configfiles, config=config)
    name = override_name(differences(cfg, reference_config(root, cfg["scale"])), cfg["scale"], root)
    control = "null" if cfg["control"] is None else cfg["control"]
    return results_root(cfg["scale"], control, cfg["seed"], name)


def stale_products(edges, root=".") -> list[str]:
    """Outputs that exist although a file they were made from is gone, or is itself stale.

    Snakemake treats a missing intermediate file like a ``temp()`` file: if everything downstream
    of it exists, nothing reruns.  So an interrupted forced recompute (its declared outputs are
    deleted when the job starts and when it is killed) would leave the old figures and claims
    looking current with their data gone.  A real run sets the products listed here aside
    (:func:`set_aside_stale`) and rebuilds them; a dry run lists them and forces their jobs.

    Parameters
    ----------
    edges : iterable of (inputs, outputs)
        Each job's data inputs and its products, as paths relative to ``root`` (e.g. a figure's
        plot-ready CSVs and its PDF, PNG and claim file).
    root : str or Path
        The working directory the paths are relative to.

    Returns
    -------
    list of str
        The existing outputs of every edge with an input missing or stale, sorted (a claims
        summary whose claim file is stale is stale too); empty when every product's inputs are
        present, or when nothing downstream was ever made.
    """
    root, edges = Path(root), list(edges)
    stale: set[str] = set()
    while True:
        new = {
            o
            for inputs, outputs in edges
            if not all(i not in stale and (root / i).exists() for i in inputs)
            for o in outputs
            if o not in stale and (root / o).exists()
        }
        if not new:
            return sorted(stale)
        stale |= new


def set_aside_stale(edges, root=".", dest="results/stale") -> list[str]:
    """Move every product whose data is gone (:func:`stale_products`) under ``dest``, keeping its
    path: it is no longer shown as current, nothing is deleted, and Snakemake, seeing it missing,
    rebuilds the data and everything made from it.  A claims summary whose claim file is set aside
    follows it.

    Parameters
    ----------
    edges : list of (inputs, outputs)
        As for :func:`stale_products`.
    root : str or Path
        The working directory the paths are relative to.
    dest : str
        Folder (relative to ``root``) that receives the set-aside products; a product already there
        from an earlier interruption is replaced.

    Returns
    -------
    list of str
        The products moved, relative to ``root``.
    """
    root = Path(root)
    moved = stale_products(edges, root)
    for rel in moved:
        target = root / dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(root / rel, target)
    return moved


# The command-line options of a Snakemake run that say where and how jobs execute, passed on to
# the runs it starts for other seeds (``snakemake robustness``): a cluster run's seed runs then
# submit their jobs to the same cluster.
EXECUTION_OPTIONS = ("--workflow-profile", "--profile", "--executor", "-e", "--jobs", "-j")


def execution_options(argv: list[str]) -> list[str]:
    """The options of :data:`EXECUTION_OPTIONS` in a Snakemake command line, with their values
    (``--opt value`` or ``--opt=value``), in order; everything else is dropped.

    >>> execution_options(["snakemake", "--workflow-profile", "profiles/slurm", "-n", "robustness"])
    ['--workflow-profile', 'profiles/slurm']
    """
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if name in EXECUTION_OPTIONS:
            if "=" in arg:
                out.append(arg)
            elif i + 1 < len(argv):
                out += [arg, argv[i + 1]]
                i += 1
        i += 1
    return out


def write_given_config(path, settings: dict, log) -> None:
    """Write the settings every seed run of `snakemake robustness` gets (all but the seed shift)."""
    import yaml

    Path(path).write_text(
        "# the settings of the runs of `snakemake robustness` (all but the seed shift)\n"
        + yaml.safe_dump(dict(settings), sort_keys=False)
    )
    Path(log).write_text(f"wrote {path}\n")
