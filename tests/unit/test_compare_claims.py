"""The comparison of two runs' claims (attnbias.claims.compare) and the marks a run that is not the
reference carries (claim file, caption, landing page, figure title)."""

import json

import pandas as pd

from attnbias.claims import Claim
from attnbias.claims.caption import render_caption
from attnbias.claims.compare import COLUMNS, comparison, write_comparison
from attnbias.claims.core import write_claims
from attnbias.claims.landing import landing_rst
from attnbias.plotting import mark_run, new_figure

NOTE = {"label": "custom: x.steps 500, default 1000",
        "overrides": [{"setting": "x.steps", "default": 1000, "used": 500}]}  # fmt: skip


def _claims(folder, fig, values, run=None):
    claims = [
        Claim(f"c{i}", "paper", f"value {v}", v, "<= 0.5", v <= 0.5) for i, v in enumerate(values)
    ]
    write_claims(folder / "claims" / "p" / f"{fig}.json", "p", fig, "quick", claims, run=run)


def test_claims_are_joined_by_id_and_changed_verdicts_come_first(tmp_path):
    ref, other = tmp_path / "ref", tmp_path / "other"
    _claims(ref, "f1", [0.1, 0.2])
    _claims(other, "f1", [0.1, 0.3], NOTE)
    _claims(ref, "f2", [0.1, 0.9])
    _claims(other, "f2", [0.7, 0.9, 0.2], NOTE)  # c0 now fails; c2 only here
    df = comparison(ref, other, [("p", "f1"), ("p", "f2")])
    assert list(df.columns) == list(COLUMNS)
    assert list(df.figure) == ["f2", "f2", "f2", "f1", "f1"]  # f2 changed: first
    c0 = df[(df.figure == "f2") & (df.claim == "c0")].iloc[0]
    assert (c0.reference_value, c0.reference_verdict) == ("0.1", "passed")
    assert (c0.other_value, c0.other_verdict, c0.verdict_changed) == ("0.7", "failed", True)
    c2 = df[(df.figure == "f2") & (df.claim == "c2")].iloc[0]
    assert c2.reference_verdict == "" and c2.verdict_changed
    assert not df[df.figure == "f1"].verdict_changed.any()
    about = dict(label=NOTE["label"], reference="ref", other="other", missing=[], build="",
                 changes=NOTE["overrides"], figures=[["p", "f1"], ["p", "f2"]])  # fmt: skip
    write_comparison(df, about, tmp_path / "c.md", tmp_path / "c.csv", tmp_path / "c.html")
    md = (tmp_path / "c.md").read_text()
    assert "`x.steps`: 1000 → **500**" in md and md.index("## p f2") < md.index("## p f1")
    assert "2 changed verdict (2 paper claims)" in md
    back = pd.read_csv(tmp_path / "c.csv", keep_default_na=False)
    assert len(back) == 5 and json.loads((tmp_path / "c.json").read_text())["columns"] == COLUMNS
    assert "table-layout:fixed" in (tmp_path / "c.html").read_text()


def test_a_reference_not_built_is_named_with_its_command(tmp_path):
    _claims(tmp_path / "other", "f1", [0.1], NOTE)
    df = comparison(tmp_path / "ref", tmp_path / "other", [("p", "f1")])
    assert (df.reference_verdict == "").all() and not df.verdict_changed.any()
    about = dict(label="seed shift 1", reference="ref", other="other", changes=[],
                 figures=[["p", "f1"]], missing=["p_f1"],
                 build="snakemake --cores 2 p_f1")  # fmt: skip
    write_comparison(df, about, tmp_path / "c.md", tmp_path / "c.csv", tmp_path / "c.html")
    assert "`snakemake --cores 2 p_f1`" in (tmp_path / "c.md").read_text()


def test_a_run_that_is_not_the_reference_says_so(tmp_path):
    _claims(tmp_path, "f1", [0.1], NOTE)
    doc = json.loads((tmp_path / "claims/p/f1.json").read_text())
    assert doc["overrides"] == NOTE["overrides"] and doc["label"] == NOTE["label"]
    render_caption(None, doc, {}, tmp_path / "cap.rst", text="**Fig. 1**  A figure.")
    assert f"**Not the reference run** ({NOTE['label']})" in (tmp_path / "cap.rst").read_text()
    _claims(tmp_path / "ref", "f1", [0.1])
    plain = json.loads((tmp_path / "ref/claims/p/f1.json").read_text())
    assert "overrides" not in plain and "label" not in plain
    assert landing_rst(None, about=NOTE["label"]).count(f"**This run: {NOTE['label']}**") == 1
    fig, ax = new_figure()
    fig.suptitle("Fig. 1")
    mark_run(fig, NOTE["label"])
    assert fig._suptitle.get_text().startswith(f"[{NOTE['label']}]\n")
