"""The configuration's cross-field rules (attnbias.config_rules): each names every key involved."""

import copy
import sys

import pytest
from conftest import ROOT

from attnbias.config_rules import cross_field_problems
from attnbias.workflow import load_config


@pytest.fixture(scope="module")
def config():
    return load_config(ROOT)


@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_both_presets_break_no_rule(scale):
    assert cross_field_problems(load_config(ROOT, scale=scale)) == []


def test_orthogonal_tokens_need_d_above_n_times_T(config):
    cfg = copy.deepcopy(config)
    cfg["fastrates"]["fig8"].update(n=4, T=3, d=12)
    (problem,) = cross_field_problems(cfg)
    assert "fastrates.fig8.d = 12" in problem and "n·T + 1 = 13" in problem
    assert "fastrates.fig8.n = 4" in problem and "fastrates.fig8.T = 3" in problem
    cfg["fastrates"]["fig8"]["d"] = 13
    assert cross_field_problems(cfg) == []


def test_an_image_side_must_be_its_datasets(config):
    cfg = copy.deepcopy(config)
    cfg["fastrates"]["fig7"].update(dataset="digits", image_size=16)
    cfg["maxmargin"]["vit"].update(dataset="digits", image_size=8)
    problems = cross_field_problems(cfg)
    assert len(problems) == 2
    assert any("maxmargin.vit.image_size = 8" in p and "16 pixels" in p for p in problems)
    assert any("fastrates.fig7.image_size = 16" in p and "8 pixels" in p for p in problems)
    cfg["lowrank"]["vit"].update(dataset="imagenet", image_size=5)  # resized on the fly: any side
    assert len(cross_field_problems(cfg)) == 2


def test_layers_within_the_trained_model(config):
    cfg = copy.deepcopy(config)
    cfg["lowrank"]["lm"]["n_layer"] = 1
    cfg["lowrank"]["fig3"]["layers"] = [1, 2]
    (problem,) = cross_field_problems(cfg)
    assert "lowrank.lm.n_layer = 1" in problem and "lowrank.fig3.layers has [2]" in problem


def test_the_config_file_check_names_the_file_and_line(tmp_path):
    """``python -m attnbias.config_rules FILE``: what Snakemake's own reading of a --configfile
    cannot say (it reads the file before the workflow starts)."""
    from attnbias.config_rules import check_files, main

    broken = tmp_path / "broken.yaml"
    broken.write_text("maxmargin:\n  fig1: {steps: 5\n  bad: [\n")
    (problem,) = check_files([broken], root=ROOT)
    assert problem.startswith(f"{broken}:3:") and "not valid YAML" in problem
    (problem,) = check_files([tmp_path / "missing.yaml"], root=ROOT)
    assert "missing.yaml: cannot read it: No such file" in problem
    bad = tmp_path / "bad.yaml"
    bad.write_text("fastrates:\n  fig2: {n: 0}\n")
    (problem,) = check_files([bad], root=ROOT)
    assert problem.startswith("config error at fastrates.fig2.n")
    assert len(problem.splitlines()) <= 10
    bad.write_text("fastrates:\n  fig2: {d: 10}\n")
    (problem,) = check_files([bad], root=ROOT)
    assert "fastrates.fig2.d = 10" in problem
    bad.write_text("maxmargin:\n  fig1: {steps: 500}\n")
    assert check_files([bad], root=ROOT) == [] and main([str(bad)]) == 0


def test_validation_where_jsonschema_is_installed(monkeypatch):
    """``validate=None`` (the benchmarks on GPU machines) validates with jsonschema and skips
    validation where it is missing; ``validate=True`` then fails."""
    bad = {"maxmargin": {"no_such_key": 1}}
    with pytest.raises(Exception, match="no_such_key"):
        load_config(ROOT, config=bad, validate=None)
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # what find_spec reads as "not installed"
    assert load_config(ROOT, config=bad, validate=None)["maxmargin"]["no_such_key"] == 1
    with pytest.raises(ImportError):
        load_config(ROOT, config=bad, validate=True)
