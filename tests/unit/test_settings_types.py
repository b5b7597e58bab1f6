"""Settings typed once: each deep-learning job family's settings dataclass has exactly the keys of
its schema block, with the schema's types, and both presets' blocks construct it; the lowrank toys'
compute functions take exactly their block's keys, with its types.

Not checked here: the staged synthetic groups of maxmargin, fastrates and nucnorm, whose stage
functions take their blocks' keys split by stage (tests/workflow/test_stage_signatures.py).
"""

from __future__ import annotations

import copy
import functools
import operator
import typing
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from attnbias.experiments.fastrates.finetune import FinetuneSettings, train_text
from attnbias.experiments.fastrates.image import ImageSettings, train_image
from attnbias.experiments.fastrates.mnist import MnistSettings, compute_fig6
from attnbias.experiments.lowrank import toys
from attnbias.experiments.lowrank.balance import (
    Fig4Settings,
    FigBSettings,
    compute_balance,
    compute_figB,
)
from attnbias.experiments.lowrank.lm import LMSettings, train_lm
from attnbias.experiments.lowrank.recall import RecallSettings, train_recall_job
from attnbias.experiments.lowrank.vit import VitSettings, train_vit_wd
from attnbias.experiments.maxmargin.vit import ViTSettings, train_vit
from attnbias.workflow import sweep_keys

ROOT = Path(__file__).resolve().parents[2]

# (paper, schema block) -> (settings dataclass, the job function that takes it)
FAMILIES = {
    ("maxmargin", "vit"): (ViTSettings, train_vit),
    ("fastrates", "fig1"): (FinetuneSettings, train_text),
    ("fastrates", "fig4"): (FinetuneSettings, train_text),
    ("fastrates", "fig7"): (ImageSettings, train_image),
    ("fastrates", "fig6"): (MnistSettings, compute_fig6),
    ("lowrank", "fig2"): (RecallSettings, train_recall_job),
    ("lowrank", "lm"): (LMSettings, train_lm),
    ("lowrank", "vit"): (VitSettings, train_vit_wd),
    ("lowrank", "fig4"): (Fig4Settings, compute_balance),
    ("lowrank", "figB"): (FigBSettings, compute_figB),
}
# compute functions whose keyword parameters are their block's keys
COMPUTES = {
    ("lowrank", "fig1"): toys.compute_fig1,
    ("lowrank", "figA"): toys.compute_figA,
    ("lowrank", "figL"): toys.compute_figL,
}

ATOMS = {"integer": int, "number": float, "string": str, "boolean": bool, "null": type(None)}


def _schema(paper):
    return yaml.safe_load((ROOT / "workflow" / "schemas" / f"{paper}.schema.yaml").read_text())


def _block(schema, block):
    sub = schema["properties"][block]
    if "$ref" in sub:
        sub = schema["$defs"][sub["$ref"].rsplit("/", 1)[-1]]
    return sub


def schema_type(prop) -> frozenset:
    """A schema property's type as a set of atoms: ``int``, ``("list", items)``, ``dict``."""
    if "oneOf" in prop or "anyOf" in prop:
        return frozenset().union(*map(schema_type, prop.get("oneOf", prop.get("anyOf"))))
    kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    out = set()
    for kind in kinds:
        if kind == "array":
            out.add(
                ("list", schema_type(prop["items"]) if "type" in prop.get("items", {}) else None)
            )
        elif kind == "object":
            out.add(dict)
        else:
            out.add(ATOMS[kind])
    return frozenset(out)


def python_type(hint) -> frozenset:
    """A type hint in the same form; a bare ``list`` (no item type) is ``("list", None)``."""
    if typing.get_origin(hint) in (typing.Union, __import__("types").UnionType):
        return frozenset().union(*map(python_type, typing.get_args(hint)))
    if hint is list or typing.get_origin(hint) is list:
        args = typing.get_args(hint)
        return frozenset({("list", python_type(args[0]) if args else None)})
    if hint is dict or typing.get_origin(hint) is dict:
        return frozenset({dict})
    return frozenset({hint})


def agree(hint, prop) -> bool:
    """The hint's type equals the schema's; an item type left out on either side matches any."""
    want, got = schema_type(prop), python_type(hint)
    strip = lambda s: {("list", None) if isinstance(a, tuple) else a for a in s}  # noqa: E731
    return got == want or (
        strip(got) == strip(want)
        and all(
            a[1] is None or b[1] is None
            for a in got
            for b in want
            if isinstance(a, tuple) and isinstance(b, tuple) and a != b
        )
    )


def deep_merge(base, over):
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = (
            deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
        )
    return out


QUICK = yaml.safe_load((ROOT / "config.yaml").read_text())
PAPER = deep_merge(
    QUICK, yaml.safe_load((ROOT / "workflow" / "presets" / "paper.yaml").read_text())
)


@pytest.mark.parametrize(
    "paper, block", sorted(FAMILIES), ids=[f"{p}/{b}" for p, b in sorted(FAMILIES)]
)
def test_settings_fields_are_the_schema_block_with_its_types(paper, block):
    cls, func = FAMILIES[(paper, block)]
    schema = _schema(paper)
    props = _block(schema, block)["properties"]
    names = [f.name for f in fields(cls)]
    assert set(names) == set(props), (
        f"{cls.__name__} lacks {sorted(set(props) - set(names))}, "
        f"has extra {sorted(set(names) - set(props))}"
    )
    hints = typing.get_type_hints(cls)
    sweep = set(cls.sweep_fields())
    assert sweep == sweep_keys(schema, block)  # the fields a run does not get: x-sweep keys
    for name in names:
        hint = hints[name]
        if name in sweep:  # None in a run's settings
            hint = functools.reduce(
                operator.or_, [a for a in typing.get_args(hint) if a is not type(None)]
            )
        assert agree(hint, props[name]), (name, hint, props[name])
    # the job function takes the object
    assert list(typing.get_type_hints(func))[0] == "settings"
    assert cls in typing.get_args(typing.get_type_hints(func)["settings"])


@pytest.mark.parametrize("config", [QUICK, PAPER], ids=["quick", "paper"])
def test_both_presets_construct_the_settings(config):
    for (paper, block), (cls, _) in FAMILIES.items():
        settings = cls.of(config[paper][block])
        record = settings.record()
        assert record == config[paper][block]  # recorded whole, the sweep's keys included
        run = {k: v for k, v in record.items() if k not in cls.sweep_fields()}
        assert cls.of(run).record() == dict(record, **dict.fromkeys(cls.sweep_fields()))


def test_settings_are_frozen_and_reject_unknown_keys():
    s = LMSettings.of(QUICK["lowrank"]["lm"])
    with pytest.raises(AttributeError):
        s.steps = 1  # type: ignore[misc]
    with pytest.raises(TypeError, match="lam_sa"):
        LMSettings.of(dict(QUICK["lowrank"]["lm"], lam_sa=0.1))
    with pytest.raises(TypeError, match="steps"):
        LMSettings.of({k: v for k, v in QUICK["lowrank"]["lm"].items() if k != "steps"})


@pytest.mark.parametrize(
    "paper, block", sorted(COMPUTES), ids=[f"{p}/{b}" for p, b in sorted(COMPUTES)]
)
def test_compute_signature_is_the_schema_block_with_its_types(paper, block):
    func = COMPUTES[(paper, block)]
    props = _block(_schema(paper), block)["properties"]
    hints = {k: v for k, v in typing.get_type_hints(func).items() if k not in ("return", "control")}
    assert set(hints) == set(props), sorted(set(props) ^ set(hints))
    for name, hint in hints.items():
        assert agree(hint, props[name]), (name, hint, props[name])


def test_every_training_function_of_the_workflow_takes_typed_settings():
    """Every training sweep's function, in both presets' figure tables, is in FAMILIES, so the
    checks above cover the whole workflow."""
    from attnbias.run import load_run
    from attnbias.workflow import resolve

    tables = [load_run(ROOT, scale).table for scale in ("quick", "paper")]
    named = {s.func for table in tables for s in table.sweeps.values()}
    assert len(named) >= 6, named
    covered = {func for _, func in FAMILIES.values()}
    for name in named:
        func = resolve("attnbias.experiments", name)
        assert func in covered, f"{name} has no typed settings test"
