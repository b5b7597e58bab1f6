"""What a run changes relative to the preset's reference run: the settings (a custom run's
overrides, a seed shift, the negative control), the figures that change touches, the label that
says so, and what `compare` and a folder's claims summary read.  Mixed into
:class:`attnbias.run.Run`."""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path


class Changes:
    """A run's differences from its reference run (``self.reference``: attnbias.run.Run)."""

    def is_reference(self) -> bool:
        """Whether this is the preset's reference run (no override, seed shift or control)."""
        return not self.overrides and not self.seed and self.control == "none"

    def changes(self) -> list[dict]:
        """One ``{setting, default, used}`` per difference from the reference run: each changed
        setting, the seed shift, the negative control."""
        out = [dict(setting=k, default=ref, used=used) for k, ref, used in self.overrides]
        if self.seed:
            out.append(dict(setting="seed", default=0, used=self.seed))
        if self.control != "none":
            out.append(dict(setting="control", default="none", used=self.control))
        return out

    def label(self) -> str:
        """What the run is, for figure titles and captions ("" for the reference run): "custom:
        maxmargin.fig1.steps 500, default 1000", "seed shift 2", joined when both."""
        parts = []
        if self.overrides:
            parts.append(
                "custom: "
                + "; ".join(
                    f"{k} {_short(used)}, default {_short(ref)}" for k, ref, used in self.overrides
                )
            )
        if self.seed:
            parts.append(f"seed shift {self.seed}")
        return ", ".join(parts)

    def run_note(self) -> dict:
        """The params of a figure's `check` and `plot` jobs that say what the run is: empty for the
        reference run and the control (which has its own mark), so their jobs keep their params."""
        if not (self.overrides or self.seed):
            return {}
        note = {"label": self.label()}
        if self.overrides:
            note["overrides"] = [
                dict(setting=k, default=ref, used=used) for k, ref, used in self.overrides
            ]
        if self.seed:
            note["seed"] = self.seed
        return note

    def lineage(self, paper: str, fig: str) -> str:
        """Everything a figure's data are computed from, as canonical JSON with this run's
        folders written as ``<results>``: each entry upstream of its plot-ready files (function,
        settings; a sweep's every run's settings).  Two runs draw a figure alike exactly when
        their lineages are equal."""
        t = self.table
        found, todo, seen = [], list(t.figures[(paper, fig)].data), set()
        sweeps = {(p, g): s for (p, _), s in t.sweeps.items() for g in s.gathers}
        gathers, precomputed = t.gathers(), t.precomputed_groups()
        while todo:
            key = _group(todo.pop())
            if key is None or key in seen:
                continue
            seen.add(key)
            entry = t.computes.get(key) or gathers.get(key)
            if key in t.stages:
                found.append(("stages", key, _plain(t.stages[key])))
            if key in precomputed:
                found.append(("precomputed", key))
            if entry is not None:
                found.append((type(entry).__name__, key, _plain(entry)))
                todo += [
                    f
                    for v in getattr(entry, "inputs", {}).values()
                    for f in (v if isinstance(v, list) else [v])
                ]
            if key in sweeps:
                s = sweeps[key]
                found.append(("runs", [t.point_settings(s, p) for p in s.points]))
        text = json.dumps(sorted(found, key=str), sort_keys=True, default=str)
        folders = {self.results: "<results>", self.uncontrolled: "<uncontrolled>"}
        for folder in sorted(folders, key=len, reverse=True):  # results/x before results
            text = text.replace(f'"{folder}/', f'"{folders[folder]}/')
        return text

    @functools.cached_property
    def touched(self) -> list[tuple[str, str]]:
        """The shown figures whose data this run computes otherwise than the reference run."""
        if self.is_reference():
            return []
        ref, chosen = self.reference, self.config["compare"]["figures"]
        return [
            k
            for k in self.shown_figures()
            if not chosen or f"{k[0]}/{k[1]}" in chosen
            if k not in ref.table.figures or ref.lineage(*k) != self.lineage(*k)
        ]

    def summary_figures(self, requested=()) -> list[tuple[str, str]]:
        """The figures a run's claims summary covers: every shown figure in the reference run
        (and when ``all`` is requested); in another run's folder the figures the change touches
        and those already built there, so a summary of a custom, seed or control folder never
        builds the others."""
        if self.is_reference() or "all" in requested:
            return self.shown_figures()
        built = {k for k in self.shown_figures() if Path(self.table.claim_file(*k)).exists()}
        return [k for k in self.shown_figures() if k in built or k in self.touched]

    def reference_claims(self, wildcards=None) -> list[str]:
        """The reference run's claim files of the touched figures that exist (inputs of
        `compare`: a rebuilt reference reruns it; a missing one is named in its output)."""
        ref = self.reference
        return [f for k in self.touched if Path(f := ref.table.claim_file(*k)).exists()]

    def compare_inputs(self, wildcards=None) -> list[str]:
        """What `compare` needs in this run: the touched figures' PNGs and claim files."""
        return [x for k in self.touched for x in self.figure_targets(*k)]

    def compare_about(self, wildcards=None) -> dict:
        """The params of `compare`: this run and its reference, the changes, the touched figures,
        those not built in the reference run and the command that builds them."""
        ref = self.reference
        missing = [
            f"{p}_{f}" for p, f in self.touched if not Path(ref.table.claim_file(p, f)).exists()
        ]
        build = (
            "snakemake --cores 2 "
            + " ".join(missing)
            + ("" if self.scale == "quick" else f" --config scale={self.scale}")
        )
        return dict(
            label=self.label() or "negative control",
            reference=ref.results,
            other=self.results,
            changes=self.changes(),
            figures=[list(k) for k in self.touched],
            missing=missing,
            build=build,
        )


def _short(value) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def _group(path) -> tuple[str, str] | None:
    """(paper, group) of a plot-ready or stage file: <results>/data/<paper>/<group>.csv|json,
    <results>/stages/<paper>/<group>.<stage>.npz."""
    parts = str(path).split("/")
    if len(parts) >= 3 and parts[-3] in ("data", "stages"):
        return parts[-2], parts[-1].split(".")[0]
    return None


def _plain(entry):
    """An entry's fields without its code (the same files in every run), JSON-able."""
    if dataclasses.is_dataclass(entry):
        return {
            f.name: _plain(getattr(entry, f.name))
            for f in dataclasses.fields(entry)
            if f.name != "code"
        }
    if isinstance(entry, dict):
        return {str(k): _plain(v) for k, v in entry.items()}
    if isinstance(entry, (list, tuple)):
        return [_plain(v) for v in entry]
    return getattr(entry, "__qualname__", entry) if callable(entry) else entry
