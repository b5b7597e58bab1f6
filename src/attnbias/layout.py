"""Where a run's files go: each preset, negative control and seed shift in its own results folder,
and products whose data is gone set aside so they are never taken as current."""

import os
from pathlib import Path


def results_root(scale: str, control: str, seed: int) -> str:
    """The folder a run writes its data, figures, claims, logs and checkpoints to.

    The default run (quick preset, no control, no seed shift) keeps ``results/``; every other
    combination has its own sub-folder, so switching presets, the negative control or the seed and
    switching back recomputes nothing (the hub downloads, ``results/downloads/``, are shared).

    Parameters
    ----------
    scale : str
        The preset (``"quick"``, ``"paper"``).
    control : str
        The negative control (``"none"``, ``"null"``).
    seed : int
        The shift added to every random seed (``--config seed=N``); 0 is the default draw.

    Returns
    -------
    str
        ``results`` or ``results/<scale>/control-<control>/seed-<N>``, with only the parts that
        differ from the default, e.g. ``results/paper``, ``results/control-null``,
        ``results/seed-1``, ``results/paper/seed-2``.
    """
    parts = [scale] if scale != "quick" else []
    parts += [f"control-{control}"] if control != "none" else []
    parts += [f"seed-{seed}"] if seed else []
    return "/".join(["results", *parts])


def stale_products(edges, root=".") -> list[str]:
    """Outputs that exist although a file they were made from is gone.

    Snakemake treats a missing intermediate file like a ``temp()`` file: if everything downstream
    of it exists, nothing reruns.  So an interrupted forced recompute (its declared outputs are
    deleted when the job starts and when it is killed) left the old figures and claims looking
    current with their data gone.  The workflow forces the outputs listed here, so the next plain
    run rebuilds the missing data and everything made from it, and a dry run says so.

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
        The existing outputs of every edge with a missing input, sorted; empty when every
        product's inputs are present, or when nothing downstream was ever made.
    """
    root = Path(root)
    stale = set()
    for inputs, outputs in edges:
        made = [o for o in outputs if (root / o).exists()]
        if made and not all((root / i).exists() for i in inputs):
            stale.update(made)
    return sorted(stale)


def set_aside_stale(edges, root=".", dest="results/stale") -> list[str]:
    """Move every product whose data is gone (:func:`stale_products`) under ``dest``, keeping its
    path: it is no longer shown as current, nothing is deleted, and Snakemake, seeing it missing,
    rebuilds the data and everything made from it (a dry run lists those jobs).  Repeated until
    nothing more is stale, so a claims summary whose claim file was set aside follows it.

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
    moved: list[str] = []
    while stale := stale_products(edges, root):
        for rel in stale:
            target = root / dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(root / rel, target)
            moved.append(rel)
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
