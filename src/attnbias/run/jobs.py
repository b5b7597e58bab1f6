"""The rules' functions of a job's wildcards (inputs, params, threads, resources, constraints),
read from the run (:class:`attnbias.run.Run` has them): each finds its job's entry in the figure
table by the wildcard ``entry``, its table key written as a path ("maxmargin/fig1"; a training
batch "lowrank/fig2/lam0"), so a path says which entry made it."""

from __future__ import annotations

import functools
import re
from pathlib import Path

# The resources that grow with Snakemake's attempt (a retried job gets attempt × the first's);
# every resource is an integer (runtime in minutes, memory in MB).
PER_ATTEMPT = ("mem_mb", "runtime")


class JobFunctions:
    """The functions of the wildcards the rules of workflow/rules/*.smk read; mixed into
    :class:`attnbias.run.Run` (``self.table``, ``self.results``, ``self.robustness``, ...)."""

    def entries(self, kind: str) -> dict:
        """The table of one kind of job, by key: figure, compute, sweep (its `train` jobs'
        batches: key + batch), extension, gather, precomputed, download, table_files, stage,
        svm."""
        t = self.table
        if kind == "train":
            return {(*k, b): s for k, s in t.trained_sweeps().items() for b in s.batches}
        if kind == "svm":
            return {k: s for k, s in t.stages.items() if s.svm}
        return dict(
            figure=t.figures, compute=t.computes, sweep=t.sweeps, extension=t.extensions(),
            gather=t.gathers(), precomputed=t.precomputed_groups(), download=t.downloads,
            table_files=t.table_files, stage=t.stages,
        )[kind]  # fmt: skip

    def constraint(self, kind: str) -> str:
        """The wildcard constraint of a rule's `entry`: exactly the keys of its table, written as
        paths, longest first, so the rules writing the same kind of path (`compute`, `gather`,
        `precomputed`: <results>/data/<paper>/<group>.csv) each match only their own.  No key: a
        constraint that matches nothing."""
        names = sorted({"/".join(map(str, k)) for k in self.entries(kind)}, key=len, reverse=True)
        return "|".join(re.escape(n) for n in names) or r"[^\s\S]"

    @staticmethod
    def key(wildcards) -> tuple:
        """The table key a job's `entry` wildcard spells: "maxmargin/fig1" -> ("maxmargin",
        "fig1")."""
        return tuple(wildcards.entry.split("/"))

    def entry(self, kind: str, wildcards):
        """The job's entry: a `train` or `extend` job's is its sweep; an `instance` or `svm`
        job's its stage."""
        key = self.key(wildcards)
        if kind in ("train", "extend"):
            return self.table.sweeps[key[:2]]
        if kind in ("instance", "svm"):
            return getattr(self.table.stages[key], kind)
        return self.entries(kind)[key]

    def value(self, kind: str, name: str):
        """A params (or input) function: one field of the job's entry."""

        def value(wildcards):
            return getattr(self.entry(kind, wildcards), name)

        return value

    def resource(self, kind: str, name: str, default: int = 0):
        """A resources function: the entry's ``name`` (a Compute's field, a Sweep's or Download's
        ``resources``), × the attempt for :data:`PER_ATTEMPT`, and for a training job's runtime ×
        the runs it trains (one after another)."""

        def value(wildcards, attempt):
            entry = self.entry(kind, wildcards)
            if kind in ("train", "extend"):
                v = (1 if entry.gpu else 0) if name == "gpu" else entry.resources.get(name, default)
                v *= self.job_runs(wildcards) if name == "runtime" else 1
            else:
                v = getattr(entry, name)
            return v * attempt if name in PER_ATTEMPT else v

        return value

    def threads(self, kind: str):
        """A threads function: the entry's (a training job's: its sweep's ``resources``)."""

        def threads(wildcards):
            entry = self.entry(kind, wildcards)
            return entry.resources["threads"] if kind in ("train", "extend") else entry.threads

        return threads

    def part(self, index: int):
        """A params function: one part of the job's key (0: the paper, 1: the name)."""
        return lambda wildcards: self.key(wildcards)[index]

    def job_inputs(self, inputs: dict) -> dict:
        """A table entry's named inputs, the download markers (results/downloads/) as ancient():
        a re-download never reruns what read it."""
        from snakemake.io import ancient

        def mark(f):
            return ancient(f) if str(f).startswith("results/downloads/") else f

        return {k: [mark(f) for f in v] if isinstance(v, list) else mark(v)
                for k, v in inputs.items()}  # fmt: skip

    def compute_inputs(self, wildcards) -> dict:
        entry = self.entry("compute", wildcards)
        return dict(self.job_inputs(entry.inputs), code=entry.code)

    def figure_data(self, wildcards) -> list[str]:
        """The plot-ready files of a figure."""
        return self.entry("figure", wildcards).data

    @functools.cached_property
    def figure_code(self) -> dict[str, dict[tuple[str, str], list[str]]]:
        """The code of each figure's `check` and `plot` jobs: the import closures of the script
        and of claims.<paper>.<fig> / plotting.<paper>.<fig> (a per-figure function or module
        where there is one, else the whole module claims.<paper> / plotting.<paper>)."""
        return {
            kind: {(p, f): self.table.script_code(f"scripts/{kind}.py", f"{package}.{p}.{f}")
                   for p, f in self.table.figures}  # fmt: skip
            for kind, package in (("check", "claims"), ("plot", "plotting"))
        }

    def check_code(self, wildcards) -> list[str]:
        return self.figure_code["check"][self.key(wildcards)]

    def plot_code(self, wildcards) -> list[str]:
        return self.figure_code["plot"][self.key(wildcards)]

    def caption_source(self, wildcards) -> list[str]:
        """A figure's caption file (workflow/report/<paper>_<fig>.rst), if it has one; else none
        (the plot job takes the first paragraph of its plotting function's docstring)."""
        path = "workflow/report/{}_{}.rst".format(*self.key(wildcards))
        return [path] if (self.basedir / path).exists() else []

    def report_caption(self, wildcards) -> Path:
        """The figure's rendered caption (the report's caption file shows it)."""
        return Path(f"{self.results}/figures/{wildcards.entry}.rst")

    def robustness_note(self, wildcards) -> Path:
        """How the figure's claims fared over seeds, once `snakemake robustness` has run."""
        return Path("{}/{}.notes/{}.rst".format(self.robustness.folder, *self.key(wildcards)))

    def report_category(self, wildcards) -> str:
        from attnbias.workflow import PAPER_TITLES

        return PAPER_TITLES[self.key(wildcards)[0]]

    def report_menu(self, wildcards) -> str:
        """The figure's place in the report's menu of its paper and how its paper claims fared
        ("03 fig1c · 2/2 passed").  Snakemake calls it only when it writes the report, after the
        run; a claim file that is absent or unreadable leaves the plain label ("03 fig1c")."""
        import json

        from attnbias.claims.landing import report_menu

        paper, fig = self.key(wildcards)
        figures = [f for p, f in self.table.figures if p == paper]
        try:
            claims = json.loads(Path(f"{self.results}/claims/{wildcards.entry}.json").read_text())
            return report_menu(fig, figures, claims)
        except (OSError, ValueError, KeyError, TypeError):
            return report_menu(fig, figures)

    def report_labels(self, wildcards) -> dict:
        return dict(zip(("paper", "figure"), self.key(wildcards), strict=True))

    def gather_settings(self, wildcards) -> dict:
        return self.table.with_control(self.entry("gather", wildcards).settings)

    def data_folder(self, wildcards) -> str:
        """The plot-ready data folder of the job's paper."""
        return f"{self.results}/data/{self.key(wildcards)[0]}"

    def table_files_data(self, wildcards) -> list[str]:
        paper = self.key(wildcards)[0]
        return self.table.data_files(paper, self.entry("table_files", wildcards).group)

    def download_target(self, wildcards) -> str:
        return "{}_download_{}".format(*self.key(wildcards))

    # --- training jobs ---------------------------------------------------------------------------
    def _batch(self, wildcards) -> list[dict]:
        """The points of the `train` job ``wildcards`` name (<paper>/<sweep>/<batch>)."""
        return self.entry("train", wildcards).batches[self.key(wildcards)[2]]

    def job_runs(self, wildcards) -> int:
        """The most runs a `train` job (its batch) or an `extend` job (one side's candidates)
        trains."""
        key = self.key(wildcards)
        extensions = self.table.extensions()
        if key in extensions:
            return max(len(c) for c in extensions[key].candidates.values())
        return len(self._batch(wildcards))

    def train_inputs(self, wildcards) -> dict:
        """A `train` job's named inputs: its sweep's (download markers), its code and the
        uncontrolled folders of the runs it shares."""
        sweep = self.entry("train", wildcards)
        return dict(self.job_inputs(sweep.inputs), code=sweep.code,
                    shared=self._shared(wildcards, self.batch_runs(wildcards)))  # fmt: skip

    def batch_runs(self, wildcards) -> list[dict]:
        """A `train` job's runs, as scripts/train.py takes them (Table.run_params)."""
        paper, sweep, _ = self.key(wildcards)
        return [self.table.run_params(paper, sweep, p, wildcards.root)
                for p in self._batch(wildcards)]  # fmt: skip

    def extend_inputs(self, wildcards) -> dict:
        """An `extend` job's named inputs: as `train`'s, with the folders of its grid's runs."""
        extension = self.entry("extension", wildcards)
        runs = [r for side in self.extension_runs(wildcards).values() for r in side]
        root = wildcards.root
        return dict(
            self.job_inputs(self.entry("extend", wildcards).inputs),
            code=extension.code,
            batches=[root + p[len(self.results):] for p in extension.batches],
            shared=self._shared(wildcards, runs),
        )

    def extension_runs(self, wildcards) -> dict:
        """An `extend` job's candidate runs on each side ("down", "up"), as scripts/train.py takes
        them."""
        paper, sweep, _ = self.key(wildcards)
        candidates = self.entry("extension", wildcards).candidates
        return {side: [self.table.run_params(paper, sweep, p, wildcards.root) for p in points]
                for side, points in candidates.items()}  # fmt: skip

    def _shared(self, wildcards, runs) -> list[str]:
        """The uncontrolled folders holding the runs a job under the negative control shares
        (none outside the control, or for the uncontrolled folder's own jobs)."""
        if wildcards.root != self.results:
            return []
        return sorted({r["shared"]["folder"] for r in runs if r.get("shared")})

    # --- robustness ------------------------------------------------------------------------------
    def robustness_claims(self, wildcards) -> list[str]:
        """Seed 0's claim files of a paper: this run's."""
        paper = wildcards.paper
        return [self.table.claim_file(paper, f) for f in self.robustness.figures_of(paper)]

    def seed_folder(self, wildcards) -> str:
        return self.folder(seed=int(wildcards.seed))

    def seed_targets(self, wildcards) -> list[str]:
        """The claim files a seed run builds: the paper's figures the seed redraws."""
        figures = self.robustness.figures_of(wildcards.paper, redrawn_only=True)
        return [f"{self.seed_folder(wildcards)}/claims/{wildcards.paper}/{f}.json" for f in figures]

    def seed_tables(self, wildcards) -> list[str]:
        """The seed tables a robustness summary reads (scope `summary`: every paper)."""
        scope = getattr(wildcards, "scope", None) or wildcards.paper
        return self.robustness.tables(self.robustness.papers if scope == "summary" else [scope])

    def robustness_shows(self) -> dict:
        seeds = [0, *self.robustness.settings["seeds"]]
        return dict(preset=self.scale, control=self.control,
                    folders=[self.folder(seed=s) for s in seeds])  # fmt: skip
