"""Rules of the configuration that span several settings, checked when the workflow is parsed.

The JSON schemas (``workflow/schemas/``) bound each setting on its own; what one setting needs of
another is checked here, right after them, so that every configuration the workflow accepts can
run.  Each problem names every key involved, the values given and what to change.
"""

from __future__ import annotations

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


def check_files(files, root=".", scale: str | None = None) -> list[str]:
    """The problems of config files as the workflow would layer them on ``config.yaml`` (and the
    paper overlay with ``scale="paper"``), each one line naming the file and line, or the key
    path: a file that is missing or not YAML, a value the schemas refuse, a cross-field rule.
    Snakemake reads a ``--configfile`` before the workflow starts, so its own message for a missing
    or broken file cannot name the line; this check can."""
    from pathlib import Path

    import yaml

    from .workflow import PAPERS, load_config, load_schema, schema_problem

    problems = []
    for f in map(Path, files):
        try:
            doc = yaml.safe_load(f.read_text())
        except OSError as e:
            problems.append(f"{f}: cannot read it: {e.strerror}")
            continue
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{f}:{mark.line + 1}:{mark.column + 1}" if mark else str(f)
            problems.append(f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}")
            continue
        if doc is not None and not isinstance(doc, dict):
            kind = type(doc).__name__
            problems.append(f"{f}: a config file maps settings to values, not a {kind}")
    if problems:
        return problems
    config = load_config(root, scale=scale, configfiles=files, validate=False)
    schemas = Path(root) / "workflow" / "schemas"
    for name, section, path in [("config", config, "")] + [
        (p, config.get(p, {}), p) for p in PAPERS
    ]:
        problem = schema_problem(section, load_schema(schemas / f"{name}.schema.yaml"), path)
        if problem:
            problems.append(problem)
    return problems or cross_field_problems(load_config(root, scale=scale, configfiles=files))


def main(argv=None) -> int:
    """``python -m attnbias.config_rules [--scale paper] FILE...``: check config files before a
    run; prints each problem and exits 1, or prints "ok"."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m attnbias.config_rules", description=main.__doc__)
    ap.add_argument("files", nargs="+", help="config files, as given to --configfile")
    ap.add_argument("--scale", choices=["quick", "paper"], help="the preset (default: the files')")
    args = ap.parse_args(argv)
    problems = check_files(args.files, scale=args.scale)
    print("\n".join(problems) if problems else "ok")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
