"""Messages that tell a person what to do, for the workflow's first mistakes (read while the
workflow is parsed or its jobs are planned; nothing heavy is imported here):

- an unknown target (``snakemake maxmargin_fig1``): the targets it is a prefix of, or the close
  ones (:func:`unknown_target`);
- a cluster profile whose ``YOUR_*`` placeholders are not filled in (:func:`placeholders`,
  :func:`profile_file`): a real run stops with one line naming the file, a dry run warns;
- training jobs that ask for a GPU on a machine without one (:func:`local_cuda`).
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

PLACEHOLDER = re.compile(r"\bYOUR_[A-Z0-9_]+\b")


def unknown_target(name: str, targets) -> str:
    """Why ``name`` is no target and which are meant: the targets starting with it (``fig1`` of
    ``fig1a``, ``fig1b``, ``fig1c``), else those ending in it or close to it."""
    targets = sorted(set(targets))
    starts = [t for t in targets if t.startswith(name)]
    meant = [t for t in targets if t.endswith(f"_{name}")]
    meant = meant or difflib.get_close_matches(name, targets, n=5, cutoff=0.6)
    if starts:
        head = f"{name} is not a target; the targets starting with it: {', '.join(starts)}."
    elif meant:
        head = f"{name} is not a target; did you mean {' or '.join(meant)}?"
    else:
        head = f"{name} is not a target of this workflow."
    return (
        head + "\n`snakemake --list-target-rules` lists every target with what it builds; "
        "docs/figures.md lists the figures."
    )


def resource_placeholders(resource_settings) -> dict[str, list[str]]:
    """``{placeholder: [resource, ...]}`` of the ``YOUR_*`` values among the default and per-rule
    resources Snakemake was given (a profile's ``default-resources`` and ``set-resources``, or
    the same options on the command line)."""
    found: dict[str, list[str]] = {}

    def scan(name, res):
        raw = getattr(res, "raw", res)
        for hit in PLACEHOLDER.findall(str(raw)):
            found.setdefault(hit, []).append(name)

    defaults = getattr(resource_settings, "default_resources", None)
    for name, res in (getattr(defaults, "_data", None) or dict(defaults or {})).items():
        scan(name, res)
    for rule, resources in (getattr(resource_settings, "overwrite_resources", None) or {}).items():
        for name, res in resources.items():
            scan(f"{rule}:{name}", res)
    return found


def profile_file(argv, environ=None, root=".") -> str | None:
    """The config file of the profile Snakemake was started with: ``--workflow-profile DIR`` or
    ``--profile DIR`` on the command line, else ``$SNAKEMAKE_PROFILE``, else the workflow's own
    ``profiles/default``; None when there is none."""
    env = os.environ if environ is None else environ
    found = None
    for i, arg in enumerate(argv):
        for opt in ("--workflow-profile", "--profile"):
            if arg == opt and i + 1 < len(argv):
                found = argv[i + 1]
            elif arg.startswith(opt + "="):
                found = arg.split("=", 1)[1]
    found = found or env.get("SNAKEMAKE_PROFILE") or "profiles/default"
    if found == "none":
        return None
    path = Path(found)
    if not path.is_absolute() and not path.exists() and (Path(root) / path).exists():
        path = Path(root) / path
    return str(path / "config.yaml") if path.is_dir() else str(path)


def placeholder_message(found: dict[str, list[str]], where: str | None, dry_run: bool) -> str:
    """One line: the unfilled placeholders, where they are, and what to do."""
    names = ", ".join(sorted(found))
    source = where or "the profile in use (or --default-resources/--set-resources)"
    action = (
        "a real run stops here; fill them in first (docs/cluster.md)"
        if dry_run
        else "replace them with your account and partitions (docs/cluster.md), then rerun"
    )
    return f"{source}: unfilled placeholder{'s' * (len(found) > 1)} {names}: {action}"


def local_cuda(environ=None) -> bool:
    """Whether this machine can run CUDA jobs, judged without importing torch: an NVIDIA driver
    (``/proc/driver/nvidia/version`` or a ``/dev/nvidia<N>`` device) and ``CUDA_VISIBLE_DEVICES``
    not emptied."""
    env = os.environ if environ is None else environ
    if env.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return Path("/proc/driver/nvidia/version").exists() or any(Path("/dev").glob("nvidia[0-9]*"))
