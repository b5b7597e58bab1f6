# Config loading and validation, the figure registry, and shared helpers.
import os
from pathlib import Path

import yaml
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
# Each paper's settings have their own schema (every key required, additionalProperties: false).
for _paper in PAPERS:
    _schema = Path(workflow.basedir) / "workflow" / "schemas" / f"{_paper}.schema.yaml"
    if _schema.exists():
        config.setdefault(_paper, {})
        validate(config[_paper], str(_schema))

SCALE = config["scale"]

# `--config control=null` arrives as YAML null: both spell the negative control.
CONTROL = "null" if config["control"] is None else config["control"]
config["control"] = CONTROL


def with_control(settings):
    """The settings of a deep-learning job (training run, gather, deep-learning compute) with
    ``control="null"`` added under the negative control.  Only then: default runs keep their
    params, so turning the feature on reruns nothing, and turning the control off reruns exactly the
    controlled jobs (the params trigger)."""
    return settings if CONTROL == "none" else dict(settings, control=CONTROL)


# `--config seed=N` shifts every random seed of every figure by N (attnbias.workflow.shift_seeds):
# the paper claims should hold on any draw, not only the default one.
if config["seed"]:
    from attnbias.workflow import shift_seeds

    for _paper in PAPERS:
        config[_paper] = shift_seeds(config[_paper], config["seed"])

# Params compare by value: Snakemake records repr(params), and layering --configfile/--config on
# config.yaml reorders keys without changing values.  Put every mapping in config.yaml's order.
from attnbias.workflow import order_like

with open(Path(workflow.basedir) / "config.yaml") as _f:
    config.update(order_like(config, yaml.safe_load(_f)))

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


def claims_code(paper):
    """A paper's claim modules: claims/<paper>.py and any claims/<paper>_<part>.py it imports."""
    folder = Path(workflow.basedir) / "src" / "attnbias" / "claims"
    return [
        f"src/attnbias/claims/{f.name}"
        for f in [folder / f"{paper}.py", *sorted(folder.glob(f"{paper}_*.py"))]
    ]


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
