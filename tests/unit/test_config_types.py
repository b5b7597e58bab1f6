"""attnbias.workflow.coerce_to_schema: nested `--config` values typed by the schema."""

from pathlib import Path

import pytest
import yaml

from attnbias.workflow import ConfigTypeError, coerce_to_schema

SCHEMAS = Path(__file__).resolve().parents[2] / "workflow" / "schemas"


def schema(name):
    return yaml.safe_load((SCHEMAS / f"{name}.schema.yaml").read_text())


def test_string_leaves_become_the_declared_types():
    got = coerce_to_schema(
        {"fig1": {"steps": "500", "layers": "null", "source": "null", "model": "minilm",
                  "full_final_test": "true", "threshold": "0.5"},
         "fig6": {"lr": ["0.1", "1e-3"]}},
        schema("fastrates"),
    )  # fmt: skip
    assert got == {
        "fig1": {"steps": 500, "layers": None, "source": None, "model": "minilm",
                 "full_final_test": True, "threshold": 0.5},
        "fig6": {"lr": [0.1, 0.001]},
    }  # fmt: skip
    assert type(got["fig1"]["steps"]) is int


def test_typed_values_are_unchanged():
    cfg = yaml.safe_load((SCHEMAS.parents[1] / "config.yaml").read_text())
    for paper in ("maxmargin", "fastrates", "nucnorm", "lowrank"):
        assert coerce_to_schema(cfg[paper], schema(paper)) == cfg[paper]


def test_a_list_given_as_yaml_text():
    got = coerce_to_schema({"fig2": {"seeds": "[0, 1]"}}, schema("lowrank"))
    assert got == {"fig2": {"seeds": [0, 1]}}


def test_wrong_type_names_the_key_path_and_the_fix():
    with pytest.raises(ConfigTypeError) as err:
        coerce_to_schema({"fig4": {"steps": "many"}}, schema("maxmargin"), path="maxmargin")
    msg = str(err.value)
    assert "maxmargin.fig4.steps = 'many' is not of type integer" in msg
    assert "--config maxmargin='{fig4: {steps: <integer>}}'" in msg and "--configfile" in msg
    assert len(msg.splitlines()) <= 10
