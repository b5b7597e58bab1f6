"""One run of the workflow: what a configuration describes, defined once.

A *run* is the configuration Snakemake layers (``config.yaml``, the paper overlay, the user's
``--configfile`` and ``--config``) made into everything the rules need: the settings typed,
validated and completed with their defaults, the cross-field rules checked, the comparison with the
preset's reference run (a changed setting writes to ``results/custom/<what changed>/``), the
negative control and the seed shift applied, the results folder, the figure table
(:mod:`attnbias.table`) and the robustness tables (``snakemake robustness``).

:func:`build_run` makes the :class:`Run` from Snakemake's ``config``; the Snakefile calls it once
per process and its rules (``workflow/rules/*.smk``, each written once with wildcards) read the run
through the methods below, which are functions of a job's wildcards.  :func:`load_run` builds the
same run outside Snakemake from a workflow folder and settings, for the tests,
``python -m attnbias.figures``, ``benchmarks/resource_table.py`` and notebooks::

    from attnbias.run import load_run
    run = load_run(".", config={"maxmargin": {"fig1": {"steps": 500}}})
    run.results          # 'results/custom/maxmargin.fig1.steps-500'
    run.table.figures    # every figure of the run, typed entries

Nothing heavy is imported here: every Snakemake process (each run, dry run and cluster job) builds
the run while it parses the workflow.  Like the table, this is the top layer: no other module of
``attnbias`` imports it.
"""

from __future__ import annotations

import copy
import functools
import os
from dataclasses import dataclass
from pathlib import Path

from attnbias.closure import ClosureCache
from attnbias.config_rules import cross_field_problems
from attnbias.layout import compare_with_reference, describe_overrides, results_root
from attnbias.run.changes import Changes
from attnbias.run.jobs import PER_ATTEMPT, JobFunctions
from attnbias.run.robustness import Robustness, RobustnessError, robustness_of
from attnbias.table import TableError, build_table
from attnbias.table.registry import Table
from attnbias.workflow import (
    PAPERS,
    ConfigTypeError,
    coerce_to_schema,
    load_config,
    load_schema,
    order_like,
    parse_yaml,
    schema_problem,
    shift_seeds,
    validate_with_defaults,
)

# `--config key=value` passes strings: the usual spellings of the boolean switches.
_BOOLEAN_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


class RunError(ValueError):
    """A configuration no run can be made of; the message names the key (the workflow shows it
    as its error, without a traceback)."""


@dataclass
class Run(JobFunctions, Changes):
    """One run of the workflow (:func:`build_run`).

    Attributes
    ----------
    config : dict
        The settings: typed, validated, defaults filled, seeds shifted, local sources resolved,
        in ``config.yaml``'s key order (Snakemake compares params by their text).
    given : dict
        The settings as given, before the seed shift (every seed run of ``snakemake
        robustness`` gets them).
    basedir : Path
        The workflow's folder.
    overrides : list of (str, object, object)
        The paper settings that differ from the preset's reference run: (key path, reference
        value, value used); empty for the reference run.
    override : str
        The override's folder name (``""``: the reference run).
    results, uncontrolled : str
        The run's results folder, and the same run's folder without the negative control (where
        the runs the control shares are trained).
    table : attnbias.table.registry.Table
        The figure table.
    robustness : Robustness
        The tables of ``snakemake robustness``.
    """

    config: dict
    given: dict
    basedir: Path
    overrides: list
    override: str
    results: str
    uncontrolled: str
    table: Table
    robustness: Robustness

    # --- what the run is -------------------------------------------------------------------------
    @property
    def scale(self) -> str:
        return self.config["scale"]

    @property
    def control(self) -> str:
        return self.config["control"]

    @property
    def seed(self) -> int:
        return self.config["seed"]

    def folder(self, seed: int | None = None, control: str | None = None) -> str:
        """The results folder of this run with another seed shift or control."""
        seed = self.seed if seed is None else seed
        return results_root(self.scale, control or self.control, seed, self.override)

    def shows(self) -> dict:
        """What the claims summary's first line says about the run (params of `claims_summary`)."""
        shows = dict(preset=self.scale, control=self.control, seed=self.seed, folder=self.results)
        if self.overrides:
            shows["overrides"] = describe_overrides(self.overrides)
        if self.label():  # a custom run or seed shift says what it is (not the reference run)
            shows["label"] = self.label()
        return shows

    @property
    def landing_pages(self) -> list[Path]:
        """The report's landing page, as the claims summary and the robustness summary write it
        (each with the other's table when it exists; the report shows the newer)."""
        return [
            Path(f"{self.results}/claims/landing.rst"),
            Path(f"{self.robustness.folder}/summary.landing.rst"),
        ]

    @functools.cached_property
    def reference(self) -> Run:
        """The preset's reference run (built on first use: only `compare` and the claims summary
        of another run's folder need it)."""
        if self.is_reference():
            return self
        layered = load_config(self.basedir, scale=self.scale, validate=False)
        return build_run(layered, self.basedir, closures=self.table.closures)  # closures shared

    # --- targets ---------------------------------------------------------------------------------
    def shown_figures(self) -> list[tuple[str, str]]:
        """The figures the run builds: every figure, or under the negative control those it
        reaches (:meth:`attnbias.table.registry.Table.shown_figures`)."""
        return self.table.shown_figures()

    def figure_targets(self, paper: str, fig: str) -> list[str]:
        """A figure's PDF, PNG and claim file."""
        return [*self.table.figure_outputs(paper, fig), self.table.claim_file(paper, fig)]

    def paper_targets(self, paper: str) -> list[str]:
        return [x for p, f in self.shown_figures() if p == paper for x in self.figure_targets(p, f)]

    def all_targets(self) -> list[str]:
        """What `all` builds: every shown figure, the claims summary (and the strict gate)."""
        out = [x for p in PAPERS for x in self.paper_targets(p)]
        out += [f"{self.results}/claims/summary.md", f"{self.results}/claims/summary.csv"]
        return out + ([f"{self.results}/claims/strict.ok"] if self.config["claims_strict"] else [])

    def stale_edges(self) -> list[tuple[list[str], list[str]]]:
        """(data, products) of every figure and of the claims summary, for
        :func:`attnbias.layout.stale_products`."""
        t = self.table
        edges = [(t.figures[k].data, self.figure_targets(*k)) for k in t.figures]
        summary = [f"{self.results}/claims/summary.{ext}" for ext in ("md", "csv")]
        return edges + [([t.claim_file(*k) for k in t.figures], summary)]


def build_run(config: dict, basedir, *, closures: ClosureCache | None = None,
              where=lambda problem: "") -> Run:  # fmt: skip
    """The run Snakemake's layered ``config`` describes.

    ``config`` is completed in place (typed, validated, defaults, control spelled "null", seeds
    shifted, key order), so that Snakemake's own ``config`` is the run's settings.

    Parameters
    ----------
    config : dict
        The configuration as Snakemake layers it: ``config.yaml`` [+ ``workflow/presets/
        paper.yaml``] + ``--configfile`` + ``--config`` (nested command-line values as strings).
    basedir : str or Path
        The workflow's folder.
    closures : attnbias.closure.ClosureCache, optional
        The import closures making each job's ``code`` input (default: computed, not cached).
    where : callable, optional
        ``where(problem) -> str``: where a refused value was given (the Snakefile passes
        :func:`attnbias.config_rules.where_given`).

    Raises
    ------
    RunError
        A value the schemas refuse, a cross-field rule, a broken reference configuration, a
        setting the table cannot be built from, an unknown robustness figure: one message naming
        the key.
    """
    basedir = Path(basedir)
    _check_settings(config, basedir, where)
    try:
        overrides, override = compare_with_reference(config, basedir)
    except ValueError as e:
        raise RunError(f"{e}\n  (in the reference run's files)") from None
    if config["control"] is None:  # `--config control=null` arrives as YAML null
        config["control"] = "null"
    given = {k: v for k, v in config.items() if k not in ("seed", "robustness", "compare")}
    if config["seed"]:  # every random seed of every figure shifted by N
        for paper in PAPERS:
            config[paper] = shift_seeds(config[paper], config["seed"])
    # Params compare by their text, and layering reorders keys: config.yaml's order throughout.
    order = parse_yaml((basedir / "config.yaml").read_text())
    config.update(order_like(config, order))
    given = order_like(given, order)
    scale, control, seed = config["scale"], config["control"], config["seed"]
    results = results_root(scale, control, seed, override)
    uncontrolled = results_root(scale, "none", seed, override)
    closures = closures or ClosureCache(basedir, os.devnull)
    try:
        table = build_table(config, basedir=basedir, results=results, uncontrolled=uncontrolled,
                            closures=closures)  # fmt: skip
    except TableError as e:
        raise RunError(str(e)) from None
    unknown = sorted(set(config["compare"]["figures"]) - {f"{p}/{f}" for p, f in table.figures})
    if unknown:
        raise RunError(f"compare.figures: unknown figure(s) {unknown}; allowed: '<paper>/<fig>'")
    try:
        robustness = robustness_of(config, table, results, basedir)
    except RobustnessError as e:
        raise RunError(str(e)) from None
    return Run(config, given, basedir, overrides, override, results, uncontrolled, table,
               robustness)  # fmt: skip


def _check_settings(config: dict, basedir: Path, where) -> None:
    """Type, validate and complete ``config`` in place (the main schema, then each paper's:
    every key required, no unknown key), and check what one setting needs of another."""
    for key in ("claims_strict",):
        if isinstance(config.get(key), str) and config[key].lower() in _BOOLEAN_WORDS:
            config[key] = _BOOLEAN_WORDS[config[key].lower()]
    schemas = basedir / "workflow" / "schemas"
    for name in ("config", *PAPERS):
        schema = load_schema(schemas / f"{name}.schema.yaml")
        path = "" if name == "config" else name
        section = config if name == "config" else config.get(name, {})
        try:  # `--config '{a: {b: 500}}'` gives strings: typed as the schema declares
            typed = coerce_to_schema(section, schema, path=path)
        except ConfigTypeError as e:
            raise RunError(str(e)) from None
        if name == "config":
            config.update(typed)
        else:
            config[name] = typed
        problem = schema_problem(typed if name != "config" else config, schema, path)
        if problem:
            raise RunError(problem + where(problem))
        validate_with_defaults(config if name == "config" else config[name], schema)
    problems = cross_field_problems(config)
    if problems:
        raise RunError("config error: " + "\nconfig error: ".join(problems))


def load_run(root=".", scale: str | None = None, configfiles=(), config: dict | None = None) -> Run:
    """The run of the workflow in ``root`` with these settings, outside Snakemake, built as the
    workflow builds it (:func:`build_run`).  Writes nothing.

    Parameters
    ----------
    root : str or Path
        The workflow's folder (the repository).
    scale : str, optional
        The preset (default: ``config.yaml``'s, quick).
    configfiles : sequence of path
        ``--configfile`` files, in order.
    config : dict, optional
        ``--config`` values, e.g. ``{"control": None}``, ``{"seed": 2}`` or
        ``{"maxmargin": {"fig1": {"steps": 500}}}``.
    """
    layered = load_config(root, scale=scale, configfiles=configfiles, validate=False,
                          config=copy.deepcopy(config))  # fmt: skip
    return build_run(layered, root)


__all__ = ["PER_ATTEMPT", "Robustness", "Run", "RunError", "build_run", "load_run"]
