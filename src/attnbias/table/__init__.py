"""The figure table: what the workflow builds, as typed Python entries.

:func:`build_table` makes the table of one run from its configuration; the Snakefile builds it
once per process (:func:`attnbias.run.build_run`, with the rest of what a run is) and generates
one job per entry from rules written once in ``workflow/rules/``; the tests build it the same way
(:func:`attnbias.run.load_run`).  Nothing heavy is imported here: every Snakemake process (each
run, dry run and cluster job) imports this package while it parses the workflow.  A function of
``attnbias.experiments`` is named by its dotted path under that package
(``"fastrates.synthetic.trajectories_fig2"``) and imported only by the job that runs it.

* :mod:`attnbias.table.registry`: the entry kinds (:class:`~attnbias.table.registry.Figure`,
  ``Compute``, ``Sweep``, ``Gather``, ``Download``, ``TableFiles``, ``Stages``) and
  :class:`~attnbias.table.registry.Table`, which registers them and builds each run's settings.
* :mod:`attnbias.table.stages`: the synthetic groups computed in three stages (instance, SVM,
  trajectories), and :func:`~attnbias.table.stages.run_stages`, the three in one call.
* :mod:`attnbias.table.downloads`: hub downloads and local sources.
* ``attnbias.table.<paper>``: each paper's entries (``register(table)``).

This is the top layer of the package: no other package of ``attnbias`` imports it.
"""

from __future__ import annotations

import importlib

from attnbias.table.registry import Table, TableError
from attnbias.workflow import PAPERS


def build_table(config: dict, *, basedir, results: str, uncontrolled: str, closures) -> Table:
    """The figure table of the run ``config`` describes.

    Parameters
    ----------
    config : dict
        The run's validated configuration (defaults filled, seeds shifted).  Its local sources
        are checked and expanded in place (:func:`attnbias.table.downloads.resolve_local_sources`).
    basedir : str or Path
        The repository.
    results, uncontrolled : str
        The run's results folder, and the same run's folder without the negative control.
    closures : attnbias.closure.ClosureCache
        The import closures making each job's ``code`` input.

    Raises
    ------
    TableError
        A setting the table cannot be built from (a missing local directory, a stage function
        taking an unknown setting), naming its key.
    """
    from attnbias.table.downloads import resolve_local_sources

    resolve_local_sources(config)
    table = Table(
        config, basedir=basedir, results=results, uncontrolled=uncontrolled, closures=closures
    )
    for paper in PAPERS:
        importlib.import_module(f"attnbias.table.{paper}").register(table)
    return table


__all__ = ["Table", "TableError", "build_table"]
