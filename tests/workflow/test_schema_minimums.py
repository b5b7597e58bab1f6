"""Every accepted setting runs: the whole workflow at the schemas' minimums.

Each paper's settings are taken from config.yaml and pushed down to what the schema still accepts:
every integer with a ``minimum`` to it (sizes, steps, counts, dimensions; seeds keep their values),
every list to its ``minItems`` first entries.  Settings that the cross-field rules tie to those
(attnbias.config_rules: an image side fixed by its dataset, d ≥ n·T + 1 for orthogonal tokens,
layers within the trained model) get the smallest value the rule accepts; a training-set size
whose minimum (0 or null) means the whole split, the largest size, gets its smallest real size
(``WHOLE_SPLIT``).  Floating-point settings keep their values (their schema minimum is either
exclusive or an off switch such as zero weight decay).  ``snakemake all`` must then finish: a
figure whose claims cannot be measured at such sizes records why (a failed ``measurable`` check
and a plot saying so), never a crash.

Why this file takes minutes: ``snakemake all`` at the minimums is about 130 jobs, one process each,
whose start-up and Snakemake's bookkeeping take most of their seconds; it is the only test that
runs every figure's code at the edge of its schema (docs/performance.md, "The test suite").
"""

import copy

import pytest
import yaml
from conftest import ROOT, copy_workflow, registered_figures, set_reference, snakemake_cmd

from attnbias.config_rules import NATIVE_IMAGE_SIZE, ORTHOGONAL_TOKENS, cross_field_problems
from attnbias.workflow import PAPERS, load_config, load_schema


def _block_schema(schema, root):
    if "$ref" in schema:
        return root["$defs"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def at_minimums(value, schema, root, changed, path=""):
    """``value`` with its integers at their schema minimum and its lists at ``minItems`` entries
    (dicts inside lists are walked too); ``changed`` collects the key paths changed."""
    schema = _block_schema(schema, root)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return {
            k: v if k not in props or "seed" in k
            else at_minimums(v, props[k], root, changed, f"{path}.{k}")
            for k, v in value.items()
        }  # fmt: skip
    if isinstance(value, list):
        out = [
            at_minimums(v, schema.get("items", {}), root, changed, f"{path}[{i}]")
            if isinstance(v, dict) else v
            for i, v in enumerate(value[: schema.get("minItems", 1)])
        ]  # fmt: skip
    elif isinstance(value, int) and not isinstance(value, bool) and "minimum" in schema:
        out = schema["minimum"]
    else:
        return value
    if out != value:
        changed.append(path)
    return out


# Training-set sizes whose schema minimum (0) or null means the whole split, the largest size: the
# smallest real size instead (the images are then trained at batch size 1, so at the whole split
# these two models took 111 of the run's 369 CPU-s of jobs, 2026-12-02).
WHOLE_SPLIT = {("maxmargin", "vit", "train_size"): 1, ("fastrates", "fig7", "n_train"): 1}


def minimum_config() -> tuple[dict, list[str]]:
    """The paper sections of config.yaml at the schema minimums, tied settings made consistent."""
    config = load_config(ROOT)
    changed, out = [], {}
    for paper in PAPERS:
        schema = load_schema(ROOT / "workflow" / "schemas" / f"{paper}.schema.yaml")
        out[paper] = at_minimums(config[paper], schema, schema, changed, paper)
    for (paper, block), sizes in NATIVE_IMAGE_SIZE.items():
        b = out[paper][block]
        b["image_size"] = sizes.get(b["dataset"], b["image_size"])
    for paper, group in ORTHOGONAL_TOKENS:
        b = out[paper][group]
        b["d"] = max(b["d"], b["n"] * b["T"] + 1)
    for fig in ("fig3", "figC"):  # layers are counted from 1, at most lm.n_layer
        out["lowrank"][fig]["layers"] = [1]
    for (paper, block, key), smallest in WHOLE_SPLIT.items():
        assert out[paper][block][key] in (0, None), (paper, block, key)  # "all" at the minimum
        out[paper][block][key] = smallest
        changed.append(f"{paper}.{block}.{key}")
    full = copy.deepcopy(config)
    full.update(out)
    assert cross_field_problems(full) == []
    return out, changed


def test_the_minimum_configuration_really_is_at_the_minimums():
    out, changed = minimum_config()
    assert len(changed) > 150  # sizes, steps and grids of every paper
    assert out["maxmargin"]["fig1"]["steps"] == 1 and out["fastrates"]["fig2"]["d"] == 3
    assert len(out["lowrank"]["fig3"]["lam_sa"]) == 1 and out["nucnorm"]["p2"]["n"] == 1


@pytest.mark.slow
def test_every_figure_runs_at_the_schema_minimums(tmp_path):
    cfg = tmp_path / "minimums.yaml"
    cfg.write_text(yaml.safe_dump(minimum_config()[0], sort_keys=False))
    wf = set_reference(copy_workflow(tmp_path / "attnbias"), cfg)  # its default run: results/
    res = snakemake_cmd("--cores", "2", "all", "--configfile", cfg, cwd=wf, timeout=1800)
    assert res.returncode == 0, f"{res.stdout[-3000:]}\n{res.stderr[-6000:]}"
    for paper, fig in registered_figures():  # every figure drawn and checked
        assert (wf / "results" / "figures" / paper / f"{fig}.pdf").is_file(), (paper, fig)
        assert (wf / "results" / "claims" / paper / f"{fig}.json").is_file(), (paper, fig)
    # the instance stage's reason reaches the claims (nucnorm p1: no instance at n=1, L=2, d=2)
    p1 = yaml.safe_load((wf / "results" / "claims" / "nucnorm" / "p1.json").read_text())
    reasons = [c["value"] for c in p1["claims"] if c["id"] == "measurable"]
    assert reasons and "NotMeasurable: no instance with n=1" in reasons[0]
