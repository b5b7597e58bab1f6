"""Rules of the configuration that span several settings, checked when the workflow is parsed.

The JSON schemas (``workflow/schemas/``) bound each setting on its own; what one setting needs of
another is checked here, right after them, so that every configuration the workflow accepts can
run.  Each problem names every key involved, the values given and what to change.
"""

from __future__ import annotations

from pathlib import Path

# The image side of datasets whose images come at one size (the offline digits, CIFAR-10): the
# model's ``image_size`` must be it.  A hub dataset absent here (ImageNet) is resized on the fly.
NATIVE_IMAGE_SIZE = {
    ("maxmargin", "vit"): {"digits": 16, "cifar10": 32},  # the digits upsampled ×2
    ("fastrates", "fig7"): {"digits": 8, "cifar10": 32},
    ("lowrank", "vit"): {"digits": 8},
}

# Groups whose tokens are drawn orthogonal (attnbias.data.fastrates.orth_data, and antipodal_data
# built on it): n·T tokens and one spare direction need d ≥ n·T + 1.
ORTHOGONAL_TOKENS = [("fastrates", g) for g in ("fig2", "fig5", "fig8", "fig9", "fig10")]


def cross_field_problems(config: dict) -> list[str]:
    """The problems of ``config`` (the whole, schema-valid configuration) that involve several
    settings, one sentence each; empty when there is none."""
    problems = []
    for (paper, block), sizes in NATIVE_IMAGE_SIZE.items():
        b = config[paper][block]
        native = sizes.get(b["dataset"])
        if native is not None and b["image_size"] != native:
            problems.append(
                f"{paper}.{block}.image_size = {b['image_size']}, but the {b['dataset']} images "
                f"({paper}.{block}.dataset) are {native} pixels wide: set image_size to {native}"
            )
    for paper, group in ORTHOGONAL_TOKENS:
        b = config[paper][group]
        need = b["n"] * b["T"] + 1
        if b["d"] < need:
            problems.append(
                f"{paper}.{group}.d = {b['d']}: its n·T tokens are orthogonal with a spare "
                f"direction, so d must be at least n·T + 1 = {need} ({paper}.{group}.n = "
                f"{b['n']}, {paper}.{group}.T = {b['T']}): raise d or lower n or T"
            )
    lm = config["lowrank"]["lm"]
    bad = {
        f"lowrank.{k}.layers": [x for x in config["lowrank"][k]["layers"] if x > lm["n_layer"]]
        for k in ("fig3", "figC")
    }
    if any(bad.values()):
        problems.append(
            "layers are counted from 1 and must be at most lowrank.lm.n_layer = "
            f"{lm['n_layer']}: "
            + "; ".join(f"{k} has {v}" for k, v in bad.items() if v)
            + ".  Lower the layers or raise lowrank.lm.n_layer."
        )
    return problems


def yaml_problem(path) -> str | None:
    """Why the config file ``path`` cannot be read as settings, naming the file and line (a YAML
    error), or None when it can."""
    import yaml

    from .workflow import parse_yaml

    f = Path(path)
    try:
        doc = parse_yaml(f.read_text())
    except OSError as e:
        return f"{f}: cannot read it: {e.strerror}"
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{f}:{mark.line + 1}:{mark.column + 1}" if mark else str(f)
        return f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}"
    if doc is not None and not isinstance(doc, dict):
        return f"{f}: a config file maps settings to values, not a {type(doc).__name__}"
    return None


def key_line(path, keys) -> int | None:
    """The line (from 1) of the setting ``keys`` (a key path: ``["maxmargin", "fig1"]``) in the
    YAML file ``path``, or None when the file does not set it."""
    import yaml

    try:
        node = yaml.compose(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for k, v in node.value if k.value == key), None)
        if node is None:
            return None
        line = node.start_mark.line + 1
    return line if keys else None


def value_origin(problem: str, cli_config, configfiles, root=".", scale=None) -> str:
    """Where the setting of a config error (``config error at <key path>: ...``) was given, as a
    line to add to the error: the ``--config`` option, or the file and line of the last config
    file that sets it (``--configfile`` files, then the preset's files).  Empty for a top-level
    setting given on the command line (the error shows it) or when it cannot be told."""
    import re

    m = re.match(r"config error at (\S+):", problem)
    if not m or m[1] == "(top level)":
        return ""
    keys = re.sub(r"\[\d+\]", "", m[1]).split(".")
    if keys[0] in (cli_config or {}):
        return f"\n  (given by --config {keys[0]}=...)" if len(keys) > 1 else ""
    presets = [Path(root) / "config.yaml"]
    if scale == "paper":
        presets.append(Path(root) / "workflow" / "presets" / "paper.yaml")
    files = [*map(Path, reversed(list(configfiles or []))), *reversed(presets)]
    for n in range(len(keys), 0, -1):  # the setting, else the block holding it
        for f in files:  # the last file that sets it
            line = key_line(f, keys[:n])
            if line:
                shown = f.relative_to(Path.cwd()) if f.is_relative_to(Path.cwd()) else f
                return f"\n  (set in {shown}:{line})"
    return ""


def where_given(problem: str, workflow) -> str:
    """:func:`value_origin` for a running Snakemake ``workflow``: its ``--config`` values and
    ``--configfile`` files, the preset files of its working directory."""
    given = workflow.config_settings
    scale = workflow.config.get("scale")
    return value_origin(problem, given.config, given.configfiles, ".", scale)


def check_files(files, root=".", scale: str | None = None, config=None) -> list[str]:
    """The problems of config files (and ``--config`` values ``config``, a mapping) as the
    workflow would layer them on ``config.yaml`` (and the paper overlay with ``scale="paper"``),
    each naming the file and line or the key path: a file that is missing or not YAML, a value the
    schemas refuse (with the file and line that set it), a cross-field rule.  Snakemake reads a
    ``--configfile`` before the workflow starts, so its own message for a missing or broken file
    cannot name the line; this check can."""
    from .workflow import PAPERS, load_config, load_schema, schema_problem

    problems = [p for p in map(yaml_problem, files) if p]
    if problems:
        return problems
    merged = load_config(root, scale=scale, configfiles=files, validate=False, config=config)
    schemas = Path(root) / "workflow" / "schemas"
    for name, section, path in [("config", merged, "")] + [
        (p, merged.get(p, {}), p) for p in PAPERS
    ]:
        problem = schema_problem(section, load_schema(schemas / f"{name}.schema.yaml"), path)
        if problem:
            scale_used = scale or merged.get("scale")
            problems.append(problem + value_origin(problem, config, files, root, scale_used))
    if problems:
        return problems
    return cross_field_problems(
        load_config(root, scale=scale, configfiles=files, config=config)
    )


def parse_config_args(entries) -> tuple[dict, list[str]]:
    """``--config KEY=VALUE`` entries as Snakemake reads them (a value is YAML), and a note for
    each dotted key (``maxmargin.fig1.steps=500``), which Snakemake refuses before the workflow
    starts ("Config entry must start with a valid identifier"): its nested YAML form, used here
    in its place."""
    import yaml

    config, notes = {}, []
    for entry in entries:
        key, sep, value = entry.partition("=")
        if not sep:
            notes.append(f"--config {entry}: not KEY=VALUE")
            continue
        keys = key.split(".")
        parsed = yaml.safe_load(value) if value else None
        if len(keys) > 1:
            nested = value
            for k in reversed(keys[1:]):
                nested = f"{{{k}: {nested}}}"
            notes.append(
                f"--config {entry}: Snakemake reads no dotted keys (it stops with \"Config entry "
                f"must start with a valid identifier\"); write  --config {keys[0]}='{nested}'"
            )
        node = config
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = parsed
    return config, notes


def main(argv=None) -> int:
    """``python -m attnbias.config_rules [--scale paper] [FILE...] [--config KEY=VALUE...]``:
    check config files and ``--config`` values before a run, as the workflow would read them;
    prints each problem and exits 1, or prints "ok"."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m attnbias.config_rules", description=main.__doc__)
    ap.add_argument("files", nargs="*", help="config files, as given to --configfile")
    ap.add_argument("--configfile", nargs="+", default=[], help="more config files")
    ap.add_argument("--config", nargs="+", default=[], help="KEY=VALUE, as given to snakemake")
    ap.add_argument("--scale", choices=["quick", "paper"], help="the preset (default: the files')")
    args = ap.parse_args(argv)
    config, notes = parse_config_args(args.config)
    files = [*args.files, *args.configfile]
    problems = notes + check_files(files, scale=args.scale or config.get("scale"), config=config)
    print("\n".join(problems) if problems else "ok")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
