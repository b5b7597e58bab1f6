"""Messages that tell a person what to do, for the workflow's first mistakes (read while the
workflow is parsed or its jobs are planned; nothing heavy is imported here):

- an unknown target (``snakemake maxmargin_fig1``): the targets it is a prefix of, or the close
  ones (:func:`unknown_target`);
- a cluster profile whose ``YOUR_*`` placeholders are not filled in (:func:`placeholders`,
  :func:`profile_file`): a real run stops with one line naming the file, a dry run warns;
- training jobs that ask for a GPU on a machine without one (:func:`local_cuda`);
- said before Snakemake's banner (:func:`say_first`, from the Snakefile): an unknown target, and
  what a robustness target, `compare` of a seed shift or ``--config control=null`` costs
  (measured: :mod:`attnbias.estimates`).  A dotted ``--config`` key and a
  missing ``--configfile`` stop Snakemake before it reads the Snakefile: docs/configuration.md.
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


# --- said first: before Snakemake's banner and traceback ----------------------------------------
# The bare words the rule `unknown_target` claims (its wildcard_constraints, rules/hints.smk).
BARE_WORD = re.compile(r"(?!Snakefile$)[A-Za-z][\w-]*")
def command_line(argv):
    """Snakemake's own reading of its command line ``argv`` (``.targets``, ``.config``), or None
    where ``argv`` is no snakemake command (the API called from Python) or does not parse."""
    prog = Path(argv[0]) if argv else Path()
    if "snakemake" not in (prog.name, prog.parent.name):  # `snakemake`, `python -m snakemake`
        return None
    import contextlib
    import io

    from snakemake.cli import get_argument_parser  # imported by then: the parser costs ~10 ms

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return get_argument_parser().parse_args(argv[1:])
    except (Exception, SystemExit):
        return None


def robustness_note(seeds, estimate: str = "") -> str:
    """One line: what a robustness target costs (printed when one is asked for); ``estimate``:
    the measured cost (:meth:`attnbias.estimates.RunEstimates.robustness`)."""
    seeds = list(seeds)
    return (
        f"robustness: each of the {len(seeds)} seed shifts in robustness.seeds "
        f"({', '.join(map(str, seeds))}) reruns the redrawn figures of each paper as an inner run "
        "of this workflow" + (f": {estimate}" if estimate else "") + " (docs/controls.md)"
    )


CONTROL_NOTE = (
    "control=null: deep-learning figures rerun with their mechanism removed; fastrates runs the "
    "control does not change are relabelled copies of the default run's, not trained "
    "(docs/controls.md)"
)


def control_note(estimate: str = "") -> str:
    """:data:`CONTROL_NOTE` with the measured cost of the control's run, if given
    (:meth:`attnbias.estimates.RunEstimates.control`)."""
    return CONTROL_NOTE + (f"; its run: {estimate}" if estimate else "")


def compare_note(estimate: str) -> str:
    """What `compare` of a seed shift costs (its figures built anew in the seed's folder)."""
    return f"compare: this seed shift redraws and rebuilds {estimate}"


def first_notes(targets, config_args, rules, seeds, named=None, estimates=None,
                cores=2) -> list[str]:  # fmt: skip
    """The lines said before anything else, given the command's targets and ``--config`` values
    and the workflow's rule names (``named``: those a target may name, default all): an unknown
    bare-word target (:func:`unknown_target`), the cost of a robustness target, of `compare` with
    a seed shift, and what ``--config control=null`` trains.  ``estimates``: the run's measured
    costs (:class:`attnbias.estimates.RunEstimates`; without it the lines give no time), on
    ``cores`` cores.  Nested seed runs ask for claim files and pass only ``--config seed=N``, so
    they get none of these."""
    rules = set(rules)
    lines = []
    for t in targets or ():
        if t not in rules and BARE_WORD.fullmatch(t):
            lines += unknown_target(t, rules if named is None else named).splitlines()
    robust = [t for t in targets or () if t in rules and t.startswith("robustness")]
    if any(t != "robustness_config" for t in robust):
        papers = None if "robustness" in robust else [t.split("_", 1)[1] for t in robust]
        cost = estimates and estimates.robustness(seeds, cores, papers)
        lines.append(robustness_note(seeds, cost))
    given = dict(c.split("=", 1) for c in config_args or () if "=" in c)
    if "compare" in (targets or ()) and given.get("seed", "0").strip() not in ("0", ""):
        if estimates is not None:
            lines.append(compare_note(estimates.compare(cores)))
    if "control" in given and given["control"].strip().lower() in ("null", "~", ""):
        lines.append(control_note(estimates and estimates.control(cores)))
    return lines


def say_first(argv, rules, seeds, named=None, stream=None, estimates=None) -> list[str]:
    """Print :func:`first_notes` of the command line ``argv`` to stderr (the Snakefile calls it
    once the rules exist, in the process the user started, with the run's ``estimates``); returns
    them."""
    import sys

    args = command_line(argv)
    if args is None:
        return []
    cores = getattr(args, "cores", None)
    cores = int(cores) if str(cores or "").isdigit() else 2
    lines = first_notes(args.targets, args.config, rules, seeds, named, estimates, cores)
    for line in lines:
        print(line, file=stream or sys.stderr)
    return lines


def no_cuda_note(hours: float) -> str:
    """The note a run planning GPU training on a machine without CUDA prints once."""
    return (
        "Note: no CUDA GPU on this machine, so the paper preset's training jobs (rule train, "
        f"gpu=1, time limits up to {hours:g} h a run on a GPU) would run on its CPU.  Use a GPU "
        "machine or a cluster profile (docs/cluster.md), or gpu_results=precomputed, or the quick "
        "preset."
    )


def precomputed_missing(entry: str, missing, folder) -> str:
    """The error of a `precomputed` job whose committed files are absent."""
    return (
        f"gpu_results=precomputed, but no precomputed results are committed for {entry} "
        f"(missing {', '.join(missing)} in {folder}/). Run with gpu_results=compute on a GPU, or "
        "use the quick preset (scale=quick)."
    )


def set_aside_note(path: str, dry_run: bool = False) -> str:
    """What a run says of a product whose data is missing (attnbias.layout.stale_products)."""
    if dry_run:
        return (
            f"{path}: its data is missing (an interrupted run?); a run would set it aside under "
            "results/stale/ and rebuild it (this dry run moves nothing)"
        )
    return (
        f"{path}: its data is missing (an interrupted run?); set aside under results/stale/, "
        "it will be rebuilt"
    )



def target_labels(run) -> dict[str, str]:
    """One line per named target, for `snakemake --list-target-rules`: each figure's caption line
    (:func:`attnbias.figures.caption_line`), and what each aggregate builds."""
    from .figures import caption_line
    from .workflow import PAPER_TITLES

    labels = {f"{p}_{f}": caption_line(run.basedir, p, f) for p, f in run.table.figures}
    return labels | {
        "all": "every figure and the claims summary (the default target)",
        "cpu_figures": "the figures that need no GPU in the paper preset",
        "gpu_figures": "the figures whose paper-preset runs train on a GPU",
        "checks": "the claims summary (and, with claims_strict=true, the gate)",
        "claims_summary": "results/claims/summary.md and summary.csv from the claim files",
        "claims_gate": "fails when a paper claim or sanity check failed (claims_strict=true)",
        "robustness": "every claim over the seeds of robustness.seeds",
        "robustness_config": "the settings every seed run gets (used by the robustness targets)",
        **{p: f"every figure of the paper {t.split(' – ', 1)[1]}" for p, t in PAPER_TITLES.items()},
        **{f"robustness_{p}": f"every claim of {p} over the seeds" for p in PAPER_TITLES},
    }


def cluster_dry_run_note(submitted) -> str:
    """What a cluster dry run says: the rules whose jobs would be submitted."""
    return (
        f"Cluster dry run: jobs of the rules {', '.join(sorted(submitted))} would be submitted; "
        "all others are local rules and run on this host (the dry run lists every job as `rule`, "
        "with the default resources)."
    )


def cancel_rescheduling_timers() -> None:
    """Let Snakemake exit as soon as its run is over.  Snakemake 9's scheduler starts, in every
    scheduling round, a non-daemon ``threading.Timer`` of the ``--max-jobs-per-timespan`` span
    (1 s by default) that wakes it up again; the process then waits for the last one before
    exiting: a second lost per run (measured with strace on Snakemake 9.27.1).  Called once the
    run has ended (the workflow's onsuccess/onerror), when nothing is left to schedule."""
    import threading

    for t in threading.enumerate():
        if isinstance(t, threading.Timer) and "_schedule_reevalutation" in getattr(
            t.function, "__qualname__", ""
        ):
            t.cancel()


COMPARE_NEEDS_A_CHANGE = (
    "compare sets a run beside the preset's reference run: name the run with the settings that "
    "made it, e.g. `snakemake --cores 2 compare --configfile my.yaml`, `--config seed=2` or "
    "`--config control=null` (docs/running.md, Comparing a run with the reference)"
)


FOLDER = re.compile(
    r"results/(?:(?P<scale>paper)/)?(?:custom/(?P<custom>[^/]+)/)?"
    r"(?:control-(?P<control>[^/]+)/)?(?:seed-(?P<seed>\d+)/)?"
)


def folder_settings(target: str, results: str) -> str | None:
    """For a file ``target`` in another run's results folder than this run's (``results``): which
    settings made that folder (a custom folder's overrides.yaml, the preset, the control, the seed
    shift), as the `--config` to ask for it with; None for a file of this run, or no run folder."""
    import yaml

    m = FOLDER.match(target)
    folder = m[0].rstrip("/") if m else ""
    if not m or not any(m.groupdict().values()) or folder == results:
        return None
    config = {"scale": "paper"} if m["scale"] else {}
    lines = [f"{target} belongs to the run in {folder}/, not to this one ({results}/)."]
    if m["custom"]:
        record = Path(folder.split("/custom/")[0], "custom", m["custom"], "overrides.yaml")
        if not record.is_file():
            return "\n".join(lines + [f"{record} is missing: its settings are not recorded."])
        overrides = (yaml.safe_load(record.read_text()) or {}).get("overrides", {})
        for key, e in overrides.items():
            section, *rest = key.split(".")
            node = config.setdefault(section, {})
            for part in rest[:-1]:
                node = node.setdefault(part, {})
            node[rest[-1]] = e["used"]
        used = "; ".join(f"{k} = {e['used']}" for k, e in overrides.items())
        lines.append(f"Its settings (from {record}): the reference run's, with {used}.")
    if m["control"]:
        config["control"] = m["control"]
    if m["seed"]:
        config["seed"] = int(m["seed"])
    def flow(v):
        return yaml.safe_dump(v, default_flow_style=True).strip()

    args = " ".join(
        f"{k}='{flow(v)}'" if isinstance(v, dict) else f"{k}={v}" for k, v in config.items()
    )
    lines.append(f"Ask for it with them: snakemake --cores 2 {target} --config {args}"
                 " (or the --configfile that set them).")  # fmt: skip
    return "\n".join(lines)
