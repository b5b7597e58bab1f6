"""Params compare by value: the merged config is put in config.yaml's key order."""

from pathlib import Path

import yaml

from attnbias.workflow import deep_update, order_like

ROOT = Path(__file__).resolve().parents[2]


def test_a_restated_setting_keeps_the_repr_snakemake_records():
    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    # Snakemake starts from the command-line values and merges config.yaml into them
    merged = deep_update({"lowrank": {"fig2": {"steps": base["lowrank"]["fig2"]["steps"]}}}, base)
    merged = deep_update(merged, {"lowrank": {"fig2": {"steps": base["lowrank"]["fig2"]["steps"]}}})
    assert merged == base
    assert repr(merged["lowrank"]) != repr(base["lowrank"])  # the bug: only the order differs
    assert repr(order_like(merged, base)) == repr(base)


def test_a_changed_value_still_differs_and_unknown_keys_follow_sorted():
    ref = {"a": {"x": 1, "y": 2}, "b": 0}
    out = order_like({"z": 1, "b": 0, "a": {"y": 3, "x": 1}, "c": [{"q": 1, "p": 2}]}, ref)
    assert list(out) == ["a", "b", "c", "z"]
    assert list(out["a"]) == ["x", "y"] and out["a"]["y"] == 3
    assert out["c"] == [{"q": 1, "p": 2}]  # lists (and dicts inside them) are values, kept as given


def test_paper_preset_overlay_is_ordered_like_the_quick_preset():
    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    paper = yaml.safe_load((ROOT / "workflow" / "presets" / "paper.yaml").read_text())
    merged = order_like(deep_update(deep_update(paper, base), paper), base)
    for paper_key in ("maxmargin", "fastrates", "nucnorm", "lowrank"):
        assert list(merged[paper_key]) == list(base[paper_key])
