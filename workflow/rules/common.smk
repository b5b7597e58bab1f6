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


def use_precomputed(paper, group):
    """True when the plot-ready files of a GPU computation are copied from
    workflow/precomputed/<paper>/<group>/ instead of trained (gpu_results=precomputed, paper preset).

    In the quick preset the GPU figures already train on the CPU in minutes, so they are computed.
    """
    return config["gpu_results"] == "precomputed" and SCALE == "paper"


def precomputed_files(paper, group, names):
    """Input function of a precomputed-copy rule: the committed files, or a clear error naming what
    is missing (raised only when a requested target needs them)."""

    def inputs(wildcards):
        folder = PRECOMPUTED / paper / group
        missing = [n for n in names if not (folder / n).exists()]
        if missing:
            raise WorkflowError(
                f"gpu_results=precomputed, but no precomputed results are committed for {paper}/{group} "
                f"(missing {', '.join(missing)} in {folder}/). Run with gpu_results=compute on a GPU, "
                "or use the quick preset (scale=quick)."
            )
        return [str(folder / n) for n in names]

    return inputs


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
