# Config loading and validation, the figure registry, and shared helpers.
import os
from pathlib import Path

from snakemake.utils import validate

PAPERS = {
    "maxmargin": "1 – Max-margin token selection (Tarzanagh et al. 2023)",
    "fastrates": "2 – Fast rates for self-attention (Vasudeva et al.)",
    "nucnorm": "3 – Nuclear-norm bias of softmax attention (Sheen et al.)",
    "lowrank": "4 – Weight decay induces low rank (Kobayashi et al.)",
}

# `--config key=value` passes strings: accept the usual spellings for the boolean switches.
_BOOLEAN_WORDS = {
    "true": True,
    "yes": True,
    "1": True,
    "false": False,
    "no": False,
    "0": False,
}
for _key in ("claims_strict",):
    if isinstance(config.get(_key), str) and config[_key].lower() in _BOOLEAN_WORDS:
        config[_key] = _BOOLEAN_WORDS[config[_key].lower()]

validate(config, "../schemas/config.schema.yaml")
# Each paper's settings have their own schema (additionalProperties: false, defaults filled).
for _paper in PAPERS:
    _schema = Path(workflow.basedir) / "workflow" / "schemas" / f"{_paper}.schema.yaml"
    if _schema.exists():
        config.setdefault(_paper, {})
        validate(config[_paper], str(_schema))

SCALE = config["scale"]

# Figure registry: (paper, figure id) -> entry.  Paper rules files register their figures
# (with the plot-ready data files that feed them); figures.smk turns every entry into a plot
# rule `<paper>_<fig>` and a claim rule `<paper>_check_<fig>`, and builds the aggregates.
FIGURES = {}
# Standard compute rules: (paper, group) -> entry; figures.smk generates `<paper>_compute_<group>`.
COMPUTES = {}


def data_files(paper, group):
    """The plot-ready data of a compute group: a tidy CSV and its JSON sidecar."""
    return [f"results/data/{paper}/{group}.csv", f"results/data/{paper}/{group}.json"]


def register_compute(
    paper, group, figures, func, code, threads=1, mem_mb=2000, runtime="30m", gpu=False
):
    """Register a standard compute rule running ``attnbias.experiments.<func>(**config[paper][group])``.

    ``code``: package modules (paths under src/attnbias) whose edits should rerun it.
    """
    COMPUTES[(paper, group)] = dict(
        figures=list(figures),
        func=func,
        code=[f"src/attnbias/{c}" for c in code],
        threads=threads,
        mem_mb=mem_mb,
        runtime=runtime,
        gpu=gpu,
    )
    for fig in figures:
        register_figure(paper, fig, data_files(paper, group), gpu=gpu)


def register_figure(paper, fig, data, gpu=False):
    """Register a figure whose plot and claim rules read the plot-ready files ``data``."""
    FIGURES[(paper, fig)] = dict(data=list(data), gpu=gpu)


PRECOMPUTED = Path(workflow.basedir) / "workflow" / "precomputed"


def use_precomputed(gpu):
    """True when a GPU computation's plot-ready files are copied from workflow/precomputed/
    instead of trained: gpu_results=precomputed, for computations that need a GPU (paper preset).
    In the quick preset the GPU figures train on the CPU in minutes, so they are computed."""
    return gpu and config["gpu_results"] == "precomputed"


def precomputed_files(paper, group, names):
    """Input function of a precomputed-copy rule: the committed files, or a clear error naming what
    is missing (raised only when a requested target needs them)."""

    def inputs(wildcards):
        folder = PRECOMPUTED / paper / group
        missing = [n for n in names if not (folder / n).exists()]
        if missing:
            raise WorkflowError(
                f"gpu_results=precomputed, but no precomputed results are committed for "
                f"{paper}/{group} (missing {', '.join(missing)} in {folder}/). Run with "
                "gpu_results=compute on a GPU, or use the quick preset (scale=quick)."
            )
        return [str(folder / n) for n in names]

    return inputs


# Hub downloads: (paper, name) -> entry; figures.smk generates one rule `<paper>_download_<name>`
# per entry, all alike: a local rule (compute nodes often have no internet) running
# attnbias.<func>(**settings) through scripts/download.py, with retries, writing the marker
# results/downloads/<paper>/<name>.{csv,json}.  Consumers depend on the marker through ancient(),
# so a re-download never retrains.
DOWNLOADS = {}


def register_download(
    paper, name, func, settings, prepares=False, threads=1, mem_mb=8000, runtime=240
):
    """Register a hub download; returns its marker (the input a training rule depends on).

    ``prepares``: the function also writes files (e.g. tokens) into ``out_dir``, the folder
    results/downloads/<paper>/<name>/ beside the marker; consumers find them from the marker.
    """
    entry = dict(
        func=func,
        settings=settings,
        prepares=prepares,
        threads=threads,
        mem_mb=mem_mb,
        runtime=runtime,
    )
    if DOWNLOADS.get((paper, name), entry) != entry:
        raise WorkflowError(f"download {paper}/{name} registered twice with different settings")
    DOWNLOADS[(paper, name)] = entry
    return ancient(f"results/downloads/{paper}/{name}.csv")


# Training sweeps: (paper, name) -> entry; figures.smk generates, per sweep, one training rule
# `<paper>_<name>_train` (one job per point, its resume checkpoint under results/scratch/) and, per
# gathered group, a rule `<paper>_gather_<group>` writing results/data/<paper>/<group>.{csv,json}
# from the runs of that group -- or, with gpu_results=precomputed on a GPU preset, one rule
# `<paper>_precomputed_<group>` copying the committed files instead of both.
SWEEPS = {}

# wildcard spelling and pattern of each point value type
_WILDCARD_RE = {float: r"[0-9.e+-]+", int: r"\d+"}


def point_label(point):
    """``{"lam": 0.3, "seed": 0}`` -> ``"lam0.3_seed0"`` (floats as %g): the run's file stem."""
    return "_".join(f"{k}{v:g}" if isinstance(v, float) else f"{k}{v}" for k, v in point.items())


def register_sweep(
    paper,
    name,
    points,
    func,
    settings,
    gathers,
    code,
    inputs=None,
    resources=None,
    gpu=None,
    tables=None,
    gpu_figures=True,
):
    """Register a training sweep: ``func`` (under attnbias.experiments) runs once per point.

    ``points``: list of dicts, all with the same keys in the same order (the wildcards), e.g.
    ``[{"lam": 0.3, "seed": 0}, ...]``; float values are written with %g.
    ``settings``: dict shared by every run, to which the point's values are added (typed as in
    ``points``); or a function of the point returning a run's whole settings.
    ``gathers``: ``{group: dict(points=[...] or None for all, func=..., settings={...},
    figures=[...], code=[...])}``; the gather function receives the runs' CSVs as ``parts``.
    ``code``: package modules (under src/attnbias) whose edits rerun the training jobs: only what
    the job runs.  ``inputs``: named inputs (e.g. download markers) passed to ``func`` by name.
    ``resources``: {"quick": {...}, "paper": {...}} for the preset in use (threads, mem_mb,
    runtime in minutes, gpu_mem_mb); mem_mb and runtime grow with the attempt.
    ``gpu``: whether the jobs need a GPU (default: the paper preset).
    ``tables``: for a single run with no gather (one point, ``gathers={}``): the names of the
    plot-ready tables it returns, written straight to results/data/<paper>/<table>.{csv,json};
    ``{table: [figures]}``.
    ``gpu_figures``: whether the figures belong to the ``gpu_figures`` target (else
    ``cpu_figures``).
    """
    keys = list(points[0])
    types = {k: type(points[0][k]) for k in keys}
    pattern = "_".join(f"{k}{{{k}}}" for k in keys)
    if tables:
        assert len(points) == 1 and not gathers, "a sweep with tables is one run, no gather"
        outputs = {}
        for t in tables:
            outputs[t], outputs[f"{t}_meta"] = data_files(paper, t)
    else:
        outputs = dict(
            csv=f"results/data/{paper}/{name}/{pattern}.csv",
            meta=f"results/data/{paper}/{name}/{pattern}.json",
        )
    gpu = SCALE == "paper" if gpu is None else gpu
    res = dict(threads=1, mem_mb=2000, runtime=20)
    res.update((resources or {}).get(SCALE, {}))
    constraints = {
        k: _WILDCARD_RE.get(t) or "|".join(sorted({str(p[k]) for p in points}))
        for k, t in types.items()
    }
    SWEEPS[(paper, name)] = dict(
        keys=keys,
        types=types,
        pattern=pattern,
        func=func,
        settings=settings,
        code=[f"src/attnbias/{c}" for c in code],
        inputs=dict(inputs or {}),
        resources=res,
        gpu=gpu,
        constraints=constraints,
        gathers={},
        outputs=outputs,
        point=point_label(points[0]) if tables else None,
        single=dict(points[0]) if tables else None,
        tables=list(tables or []),
    )
    for t, figs in (tables or {}).items():
        for fig in figs:
            register_figure(paper, fig, data_files(paper, t), gpu=gpu_figures)
    for group, g in gathers.items():
        chosen = points if g.get("points") is None else g["points"]
        SWEEPS[(paper, name)]["gathers"][group] = dict(
            parts=[f"results/data/{paper}/{name}/{point_label(p)}.csv" for p in chosen],
            func=g["func"],
            settings=g.get("settings", {}),
            code=[f"src/attnbias/{c}" for c in g.get("code", code)],
        )
        for fig in g["figures"]:
            register_figure(paper, fig, data_files(paper, group), gpu=gpu_figures)


def sweep_settings(sweep):
    """The params function of a sweep's training rule: shared settings plus the typed point."""

    def settings(wildcards):
        if sweep["tables"]:  # one run: its point is fixed, no wildcards
            point = sweep["single"]
        else:
            point = {k: sweep["types"][k](wildcards[k]) for k in sweep["keys"]}
        if callable(sweep["settings"]):
            return sweep["settings"](point)
        return dict(sweep["settings"], **point)

    return settings


def scratch(paper, name, filename):
    """Params function: the undeclared resume state of one run (Snakemake deletes declared
    outputs before a job starts; a killed run resumes from here)."""
    sweep = SWEEPS[(paper, name)]

    def path(wildcards):
        run = sweep["point"] or "_".join(f"{k}{v}" for k, v in wildcards.items())
        return f"results/scratch/{paper}_{name}_train/{SCALE}/{run}/{filename}"

    return path


def analysis_code(paper):
    """The analysis module a paper's claims and plots share (src/attnbias/analysis/), if any."""
    path = Path(workflow.basedir) / "src" / "attnbias" / "analysis" / f"{paper}.py"
    return [f"src/attnbias/analysis/{paper}.py"] if path.exists() else []


def figure_outputs(paper, fig):
    return [f"results/figures/{paper}/{fig}.pdf", f"results/figures/{paper}/{fig}.png"]


def claim_file(paper, fig):
    return f"results/claims/{paper}/{fig}.json"


def paper_targets(paper):
    out = []
    for (p, fig), entry in FIGURES.items():
        if p == paper:
            out += figure_outputs(p, fig) + [claim_file(p, fig)]
    return out


def all_targets():
    out = []
    for paper in PAPERS:
        out += paper_targets(paper)
    out += ["results/claims/summary.md", "results/claims/summary.csv"]
    if config["claims_strict"]:
        out.append("results/claims/strict.ok")
    return out
