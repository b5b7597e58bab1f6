"""Each inconclusive claim names an estimate of the seeds that would resolve it and the one
robustness command that runs them (attnbias.claims.core.seeds_to_resolve,
attnbias.claims.summary_table.to_resolve; docs/outputs.md#seeds-to-resolve), on the claims page
(summary.md, summary.html).  The numbers are real: the ViT claims of lowrank Fig 3 on the seeds
0, 1, 2 of a finished run at CI sizes (2026-12-02, commit 71fdbd3)."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from conftest import ROOT
from scipy.stats import norm

from attnbias.claims.core import over_seeds, resolve, seeds_needed, seeds_to_resolve
from attnbias.claims.summary import write_summary
from attnbias.claims.summary_table import robustness_command, to_resolve
from attnbias.run import load_run

# lowrank Fig 3, the ViT's K·Q effective rank, last / first (≤ 0.5): seeds 0, 1, 2
KQ_DROP = {"0": {"value": 0.2273957347613772, "passed": True},
           "1": {"value": 0.28108811139215045, "passed": True},
           "2": {"value": 0.6989217655357612, "passed": False}}  # fmt: skip
# the ViT's P·V rank at 1e-2, last / first (≤ 0.5): the mean sits near the threshold
PV_DROP = {"0": {"value": 0.53125, "passed": False}, "1": {"value": 0.2109375, "passed": True},
           "2": {"value": 0.6875, "passed": False}}  # fmt: skip


def _smallest(p):
    return next(n for n in range(1, 10_000) if n * p >= seeds_needed(n))


@pytest.mark.parametrize("seeds", [KQ_DROP, PV_DROP])
def test_the_estimate_is_the_normal_approximation_against_the_threshold(seeds):
    vals = [r["value"] for r in seeds.values()]
    assert resolve(r["passed"] for r in seeds.values()) == "inconclusive"
    est = seeds_to_resolve(seeds, "<= 0.5")
    mean = sum(vals) / 3
    sd = (sum((v - mean) ** 2 for v in vals) / 2) ** 0.5
    p_pass = norm.cdf((0.5 - mean) / sd)  # a seed passes when its value is at most 0.5
    assert est["method"] == "normal approximation"
    assert est["mean"] == pytest.approx(mean) and est["sd"] == pytest.approx(sd)
    assert est["p"] == pytest.approx(max(p_pass, 1 - p_pass))
    assert est["side"] == ("passed" if p_pass > 0.5 else "failed")
    n = est["n"]
    # the smallest count at which the expected agreement reaches what the sign test asks
    assert n == _smallest(est["p"]) and n * est["p"] >= seeds_needed(n) > (n - 1) * est["p"]
    assert n > 3


def test_the_real_numbers():
    kq, pv = seeds_to_resolve(KQ_DROP, "<= 0.5"), seeds_to_resolve(PV_DROP, "<= 0.5")
    assert round(kq["p"], 3) == 0.647 and kq["side"] == "passed" and kq["n"] == 25
    # P·V: mean 0.477 against 0.5, sd 0.243: a seed passes with chance 0.54
    assert round(pv["p"], 3) == 0.538 and pv["n"] == 262


def test_no_finite_number_when_the_seeds_split_evenly_and_the_pass_rate_otherwise():
    even = {"0": {"value": 1.0, "passed": True}, "1": {"value": -1.0, "passed": False}}
    assert seeds_to_resolve(even, "> 0")["n"] is None
    text = to_resolve(dict(seeds=even, threshold="> 0"), "maxmargin", "fig7")
    assert "no finite number" in text and "estimate" in text and "snakemake" not in text
    # a structured value (no one number to compare with the threshold): the observed pass rate
    rows = {s: {"value": {"a": v}, "passed": v < 0.5}
            for s, v in zip("012", (0.2, 0.3, 0.7), strict=True)}  # fmt: skip
    est = seeds_to_resolve(rows, "max consecutive ratio ≤ 1.05")
    assert est["method"] == "pass rate" and est["p"] == pytest.approx(2 / 3)
    assert est["n"] == _smallest(2 / 3)


def test_the_command_runs_those_seeds_for_that_figure():
    text = to_resolve(dict(seeds=KQ_DROP, threshold="<= 0.5"), "lowrank", "fig3")
    assert text.startswith("seeds to resolve (estimate): about 25 seeds, each passed with chance")
    # 25 seeds at 3 a draw: 9 draws, seed 0 (the run itself) and 8 seed shifts
    cmd = robustness_command("lowrank", "fig3", 8)
    assert text.endswith(f"9 draws of 3: `{cmd}`")
    assert cmd == ("snakemake --cores 2 robustness --config robustness='{seeds: [1, 2, 3, 4, 5, "
                   "6, 7, 8], figures: [lowrank/fig3]}'")  # fmt: skip
    # the --config value is one the workflow takes: that figure, those seed shifts
    value = yaml.safe_load(cmd.split("robustness=", 1)[1].strip("'"))
    run = load_run(ROOT, config={"robustness": value})
    assert list(run.robustness.figures) == ["lowrank/fig3"]
    assert run.robustness.settings["seeds"] == list(range(1, 9))
    assert "scale=paper" in robustness_command("lowrank", "fig3", 2, "paper")


def test_the_claims_page_names_them(tmp_path):
    from attnbias.claims.core import Claim

    per_seed = {int(s): [Claim("vit_kq_eff_rank_drop", "paper", "K·Q effective rank, last / "
                               "first", r["value"], "<= 0.5", r["passed"])]
                for s, r in KQ_DROP.items()}  # fmt: skip
    (claim,) = over_seeds(per_seed, None)
    assert claim.outcome == "inconclusive"
    doc = dict(paper="lowrank", figure="fig3", preset="quick", claims=[claim.to_dict()])
    path = tmp_path / "fig3.json"
    path.write_text(json.dumps(doc))
    md, csv, html = tmp_path / "s.md", tmp_path / "s.csv", tmp_path / "s.html"
    write_summary([path], md, csv, html_path=html)
    text = md.read_text()
    section = text.split("## Inconclusive", 1)[1].split("\n## ", 1)[0]
    assert "seeds to resolve (estimate): about 25 seeds" in section
    assert "`snakemake --cores 2 robustness --config robustness='{seeds: [1, 2," in section
    page = html.read_text()
    inconclusive = page.split("id='inconclusive'", 1)[1].split("<h3", 1)[0]
    assert "<i>seeds to resolve (estimate): about 25 seeds" in inconclusive
    assert re.search(r"<code>snakemake --cores 2 robustness --config robustness=.*lowrank/fig3",
                     inconclusive)  # fmt: skip
    assert "about 25 seeds" in csv.read_text()  # the CSV's column to_resolve
