"""The figure table: what the workflow builds, as typed Python entries.

The Snakefile imports these entries and generates one job per entry from rules written once in
``workflow/rules/``; the tests import them directly.  Nothing heavy is imported here: every
Snakemake process (each run, dry run and cluster job) imports this package while it parses the
workflow.  A function of ``attnbias.experiments`` is named by its dotted path under that package
(``"fastrates.synthetic.trajectories_fig2"``) and imported only by the job that runs it.

* :mod:`attnbias.table.stages`: the synthetic groups computed in three stages (instance, SVM,
  trajectories), and :func:`~attnbias.table.stages.run_stages`, the three in one call.

This is the top layer of the package: no other package of ``attnbias`` imports it.
"""
