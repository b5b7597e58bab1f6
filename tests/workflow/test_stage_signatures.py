"""A stage parameter that is no setting of its group stops the workflow's parse, naming it.

Which settings each stage of a staged group takes is read from its functions' signatures
(attnbias.table.stages; the signatures themselves are checked against both presets by import in
tests/unit/test_table_stages.py).  Here, the workflow's own parse: an edited signature is reported
with the function and the group, before any job runs.
"""

from conftest import copy_workflow, snakemake_cmd


def test_a_stage_parameter_that_is_no_setting_stops_the_parse_naming_it(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    module = wf / "src" / "attnbias" / "experiments" / "nucnorm" / "full.py"
    text = module.read_text()
    assert "def instance_p1(\n    instances: list," in text
    module.write_text(text.replace("def instance_p1(\n", "def instance_p1(\n    margin_tol,\n", 1))
    res = snakemake_cmd("-n", "nucnorm_p1", cwd=wf)
    assert res.returncode != 0
    expected = "nucnorm.full.instance_p1 takes ['margin_tol'], which are not settings of nucnorm.p1"
    assert expected in res.stdout + res.stderr, res.stderr[-3000:]
