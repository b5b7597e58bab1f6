"""Claim kinds (paper / sanity / identity): the record, every call site choosing a kind, the
summary (paper claims first, sanity separately, identities never counted), the strict gate, the
report caption, and claims that must fail rather than crash on degenerate tables."""

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from attnbias.claims import KINDS, Claim, compare, holds, within, write_claims
from attnbias.claims import lowrank as lowrank_claims
from attnbias.claims import nucnorm as nucnorm_claims
from attnbias.claims.caption import render_caption
from attnbias.claims.core import verdicts
from attnbias.claims.summary import (
    counts,
    gate,
    headline,
    read_summary,
    summary_table,
    write_summary,
)
from attnbias.io import natural_key

CLAIM_FILES = ["maxmargin", "fastrates", "nucnorm", "lowrank"]


def test_claim_record_has_kind_and_no_default():
    c = compare("x", "a statement", 1.0, ">", 0.0, kind="paper")
    assert list(c.to_dict()) == ["id", "kind", "statement", "value", "threshold", "passed"]
    assert c.to_dict()["kind"] == "paper" and c.passed
    with pytest.raises(TypeError):
        compare("x", "s", 1.0, ">", 0.0)  # no default kind: the call site must choose
    with pytest.raises(TypeError):
        within("x", "s", [1.0], [1.0], 0.1)
    with pytest.raises(TypeError):
        holds("x", "s", 1, True)
    with pytest.raises(ValueError, match="kind"):
        compare("x", "s", 1.0, ">", 0.0, kind="evidence")
    with pytest.raises(ValueError, match="kind"):
        Claim("x", "paperish", "s", 1, "t", True)


def test_nan_and_empty_values_fail_instead_of_passing_or_crashing():
    assert not compare("x", "s", float("nan"), "<", 1.0, kind="paper").passed
    assert not within("x", "s", [], [], 1.0, kind="paper").passed
    assert not within("x", "s", [np.nan], [0.0], 1.0, kind="sanity").passed


@pytest.mark.parametrize("paper", CLAIM_FILES)
def test_every_call_site_names_a_literal_kind(paper):
    """Each compare/within/holds call in a claim file passes ``kind=`` with one of KINDS."""
    tree = ast.parse((ROOT / "src" / "attnbias" / "claims" / f"{paper}.py").read_text())
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in ("compare", "within", "holds")
    ]
    assert calls
    for n in calls:
        kinds = [k.value for k in n.keywords if k.arg == "kind"]
        assert len(kinds) == 1 and isinstance(kinds[0], ast.Constant), f"line {n.lineno}"
        assert kinds[0].value in KINDS, f"line {n.lineno}: {kinds[0].value!r}"


def _claims(spec):
    return [
        holds(cid, f"statement of {cid}", 1.0, ok, kind=kind) for cid, kind, ok in spec
    ]


@pytest.fixture
def claim_files(tmp_path):
    files = [
        write_claims(tmp_path / "a" / "fig1.json", "alpha", "fig1", "quick", _claims([
            ("i1", "identity", True), ("s1", "sanity", True), ("p1", "paper", True),
            ("p2", "paper", False),
        ])),  # fmt: skip
        write_claims(tmp_path / "a" / "fig2.json", "alpha", "fig2", "quick", _claims([
            ("p3", "paper", True), ("s2", "sanity", False),
        ])),  # fmt: skip
        write_claims(tmp_path / "b" / "p1.json", "beta", "p1", "quick", _claims([
            ("p4", "paper", True), ("i2", "identity", True), ("i3", "identity", False),
        ])),  # fmt: skip
    ]
    assert all(set(c) == {"id", "kind", "statement", "value", "threshold", "passed", "verdict",
                        "reason"}
               for d in files for c in d["claims"])  # fmt: skip
    return [tmp_path / "a" / "fig1.json", tmp_path / "a" / "fig2.json", tmp_path / "b" / "p1.json"]


def test_summary_counts_by_kind_and_verdict_and_orders_paper_claims_first(claim_files, tmp_path):
    """fig2's paper claim p3 passed as measured, but its sanity check s2 failed: it is void."""
    df = summary_table(claim_files)
    assert df[df.figure == "fig1"].kind.tolist() == ["paper", "paper", "sanity", "identity"]
    assert df.set_index("claim").verdict.to_dict() == {
        "p1": "passed", "p2": "failed", "s1": "passed", "i1": "passed", "p3": "void",
        "s2": "failed", "p4": "passed", "i2": "passed", "i3": "failed",
    }  # fmt: skip
    assert df.set_index("claim").void_by.to_dict()["p3"] == "s2"
    assert json.loads(Path(claim_files[1]).read_text())["claims"][0]["passed"]  # kept as measured
    per_paper = counts(df, ["paper"]).set_index("paper")
    cols = ["paper_passed", "paper_failed", "paper_void", "paper_total", "sanity_passed",
            "sanity_failed", "sanity_total", "identities", "void_by"]  # fmt: skip
    assert per_paper.loc["alpha", cols].tolist() == [1, 1, 1, 3, 1, 1, 2, 1, "s2"]
    assert per_paper.loc["beta", cols].tolist() == [1, 0, 0, 1, 0, 0, 0, 2, ""]
    assert headline(df) == (
        "Paper claims: 2/4 passed, 1 failed, 0 inconclusive, 1 void.  Sanity checks: "
            "1/2 passed, 1 failed.  "
        "Identities (not evidence): 3."
    )
    md, csv, page = tmp_path / "summary.md", tmp_path / "summary.csv", tmp_path / "summary.html"
    n_fail = write_summary(claim_files, md, csv, html_path=page)
    assert n_fail == 3  # p2, s2 and the (buggy) identity i3; p3 is void, not failed
    text = md.read_text()
    assert text.index("Paper claims: 2/4 passed") < text.index("Sanity checks: 1/2")
    assert "| alpha | fig1 | quick | none | 1/2 passed, 1 failed, 0 inconclusive, 0 " \
        "void | 0/0 passed, 0 failed | 1/1 passed, 0 failed " \
           "|  | 1 |" in text  # fmt: skip
    assert "| alpha | fig2 | quick | none | 0/1 passed, 0 failed, 0 inconclusive, 1 " \
        "void | 0/0 passed, 0 failed | 0/1 passed, 1 failed " \
           "| s2 | 0 |" in text  # fmt: skip
    assert "| beta | 1/1 passed, 0 failed, 0 inconclusive, 0 void | 0/0 passed, 0 failed | " \
        "0/0 passed, 0 failed | 2 |" in text  # fmt: skip
    assert text.index("## Failed paper claims") < text.index("## Failed sanity checks")
    # the reader's order: counts per paper, what did not pass, then per figure and every claim
    heads = ["## Per paper", "## Failed paper claims", "## Failed sanity checks",
             "## Failed identities", "## Void paper claims", "## Per figure", "## All claims"]
    assert [text.index(h) for h in heads] == sorted(text.index(h) for h in heads)
    assert "- **alpha fig1 `p2`**: statement of p2 — does not hold (value 1)" in text
    assert ("- **alpha fig2**: `p3` — sanity check `s2` failed (statement of s2: does not hold "
            "(value 1)): the run is not valid") in text
    assert ("| alpha | fig2 | paper | p3 | statement of p3 | 1 | true | VOID | void: its figure's "
            "run failed the sanity check s2, so it is not evidence | s2 |") in text
    assert "7 claims" not in text and "9 claims" not in text  # kinds are never pooled
    out = pd.read_csv(csv, keep_default_na=False)
    assert list(out.columns[:6]) == ["paper", "figure", "preset", "control", "kind", "claim"]
    assert len(out) == 9 and set(out.kind) == {"paper", "sanity", "identity"} < set(KINDS)
    assert set(out.verdict) == {"passed", "failed", "void"}
    html = page.read_text()
    every = html[html.index("<h3 id='every-claim'>"):]
    assert "<td class='void'>VOID</td>" in every and every.count("<tr class=") == 9
    assert "Paper claims: 2/4 passed, 1 failed, 0 inconclusive, 1 void." in html
    # the same sections as the Markdown, in its order; the failed claims (p2, s2, i3) and the void
    # one (p3, with the check that voids it) before the tables of every figure and claim
    ids = ["per-paper", "failed", "void", "per-figure", "every-claim"]
    assert [html.index(f"<h3 id='{i}'>") for i in ids] == sorted(
        html.index(f"<h3 id='{i}'>") for i in ids)  # fmt: skip
    assert "<h3 id='inconclusive'>" not in html  # none here: no empty section
    failed = html[html.index("<h3 id='failed'>"):html.index("<h3 id='void'>")]
    assert [c for c in ("p2", "s2", "i3", "p1", "p3") if f"<code>{c}</code>" in failed] == [
        "p2", "s2", "i3"]  # fmt: skip
    void = html[html.index("<h3 id='void'>"):html.index("<h3 id='per-figure'>")]
    assert "<td class='void'><code>p3</code></td>" in void
    assert "sanity check <code>s2</code>" in void
    assert "<a href='#failed'>Failed (3)</a>" in html and "<a href='#void'>Void (1)</a>" in html
    per_paper = html[html.index("<h3 id='per-paper'>"):html.index("<h3 id='failed'>")]
    assert "<td>alpha</td><td class='passed'>1/3</td><td class='failed'>1</td>" in per_paper


def _measured(cid, value, op, threshold, kind="paper"):
    return compare(cid, f"cos(p_1000, GMM) of {cid}", value, op, threshold, kind=kind)


def test_pages_round_values_and_the_csv_keeps_them(tmp_path):
    """Values on the pages to 4 significant digits (more where 4 would put a value on its
    threshold: 0.99899 against > 0.999), long decimals in thresholds too; the CSV at full
    precision."""
    f = tmp_path / "fig1.json"
    write_claims(f, "alpha", "fig1", "quick", [
        _measured("near", 0.99899123456789, ">", 0.999),
        _measured("far", 0.999772757084247, ">", 0.999),
        within("gmm", "GMM", [-0.09900990099009901, 0.9900990099009901],
               [-0.09900990099009901, 0.9900990099009901], 1e-4, kind="sanity"),
    ])  # fmt: skip
    md, csv, page = tmp_path / "s.md", tmp_path / "s.csv", tmp_path / "s.html"
    write_summary([f], md, csv, html_path=page)
    back = read_summary(csv).set_index("claim")
    assert float(back.loc["far", "value"]) == 0.999772757084247  # full precision
    assert json.loads(back.loc["gmm", "value"]) == [-0.09900990099009901, 0.9900990099009901]
    text, html = md.read_text(), page.read_text()
    for out in (text, html):
        assert "0.999772757084247" not in out and "0.09900990099009901" not in out
    assert "| paper | far | cos(p_1000, GMM) of far | 0.9998 | > 0.999 | PASS" in text
    assert "— measured 0.99899, threshold > 0.999" in text  # not 0.9990: it misses 0.999
    assert "| [-0.09901, 0.9901] | |· − [-0.09901, 0.9901]| ≤ 0.0001".replace("|·", "\\|·") \
        .replace("]|", "]\\|") in text  # fmt: skip
    assert "<td>0.9998 <span class='thr'>(&gt; 0.999)</span></td>" in html
    assert "<td>0.99899 <span class='thr'>(&gt; 0.999)</span></td>" in html


def _three_voids(tmp_path):
    """fig1: a sanity check fails; fig2: a regime check fails; fig3: a paper claim that does not
    pass while its positive control fails too."""
    files = [tmp_path / f"fig{i}.json" for i in (1, 2, 3)]
    write_claims(files[0], "alpha", "fig1", "quick", [
        _measured("p1", 0.9995, ">", 0.999), holds("trained", "the run trained", 0.3, False,
                                                   kind="sanity")])  # fmt: skip
    write_claims(files[1], "alpha", "fig2", "quick", [
        _measured("p2", 0.9995, ">", 0.999), _measured("p3", 0.5, ">", 0.999),
        compare("learned", "SGD loss over its start", 0.8123456789, "<=", 0.5, kind="regime")])
    write_claims(files[2], "alpha", "fig3", "quick", [
        compare("faster", "SNGD / SGD", 0.8, "<=", 0.5, kind="paper",
                positive_control="adamw"),
        compare("adamw", "AdamW / SGD", 0.7, "<=", 0.5, kind="control")])  # fmt: skip
    return files


def test_void_claims_are_listed_with_the_check_that_voids_them(tmp_path):
    md, csv, page = tmp_path / "s.md", tmp_path / "s.csv", tmp_path / "s.html"
    write_summary(_three_voids(tmp_path), md, csv, html_path=page)
    text = md.read_text()
    void = text[text.index("## Void paper claims"):text.index("## Per figure")]
    lines = [x for x in void.splitlines() if x.startswith("- ")]
    assert lines == [
        "- **alpha fig1**: `p1` — sanity check `trained` failed (the run trained: does not hold "
        "(value 0.3)): the run is not valid",
        "- **alpha fig2**: `p2`, `p3` — regime check `learned` failed (SGD loss over its start: "
        "measured 0.8123, threshold <= 0.5): the run has not reached the regime the paper's "
        "mechanism needs",
        "- **alpha fig3**: `faster` — positive control `adamw` failed too (AdamW / SGD: measured "
        "0.7, threshold <= 0.5): the same test on the paper's reference does not pass either: "
        "not testable at this budget",
    ]
    html = page.read_text()
    void = html[html.index("<h3 id='void'>"):html.index("<h3 id='per-figure'>")]
    assert void.count("<tr><td>") == 3  # one row per group
    for by in ("sanity check <code>trained</code>", "regime check <code>learned</code>",
               "positive control <code>adamw</code>"):  # fmt: skip
        assert by in void
    assert "<td class='void'><code>p2</code>, <code>p3</code></td>" in void
    assert "SGD loss over its start: 0.8123 <span class='thr'>(&lt;= 0.5)</span>" in void


def test_figures_in_reading_order():
    assert sorted(["fig10", "fig1b", "fig2", "fig1a", "fig9b", "figA", "fig4"], key=natural_key) \
        == ["fig1a", "fig1b", "fig2", "fig4", "fig9b", "fig10", "figA"]  # fmt: skip
    assert sorted(["p10", "p2", "P1"], key=natural_key) == ["P1", "p2", "p10"]


def test_summary_keeps_the_papers_order_and_sorts_figures_naturally(tmp_path):
    files = []
    for paper, fig in [("zeta", "fig10"), ("zeta", "fig1a"), ("alpha", "fig2"), ("zeta", "fig9b")]:
        files.append(tmp_path / f"{paper}_{fig}.json")
        write_claims(files[-1], paper, fig, "quick", _claims([("p", "paper", True)]))
    df = summary_table(files)
    assert list(zip(df.paper, df.figure, strict=True)) == [
        ("zeta", "fig1a"), ("zeta", "fig9b"), ("zeta", "fig10"), ("alpha", "fig2"),
    ]  # fmt: skip
    write_summary(files, tmp_path / "s.md", tmp_path / "s.csv")
    text = (tmp_path / "s.md").read_text()
    assert text.index("| zeta | fig1a |") < text.index("| zeta | fig9b |") < text.index(
        "| zeta | fig10 |")  # fmt: skip


def test_summary_of_all_passing_claims(tmp_path):
    write_claims(tmp_path / "x.json", "alpha", "fig1", "quick", _claims([
        ("p1", "paper", True), ("s1", "sanity", True),
    ]))  # fmt: skip
    shows = dict(preset="paper", control="none", seed=2, folder="results/paper/seed-2")
    write_summary([tmp_path / "x.json"], tmp_path / "s.md", tmp_path / "s.csv", shows)
    text = (tmp_path / "s.md").read_text()
    assert "Results of the **paper** preset, control `none`, seed shift 2, in " in text
    # which lock made the run (issue: provenance names the environment)
    from attnbias.io import lock_provenance

    assert f"Environment: `requirements/lock.txt`, sha256 {lock_provenance()['lock_sha256'][:16]}" \
        in text  # fmt: skip
    assert "`results/paper/seed-2/`" in text
    assert "Paper claims: 1/1 passed, 0 failed, 0 inconclusive, 0 void.  Sanity checks: " \
        "1/1 passed, 0 failed." \
        in text  # fmt: skip
    assert "Identities (not evidence): 0." in text and "## Failed" not in text
    assert "## Void" not in text
    gate(tmp_path / "s.csv", tmp_path / "ok")
    assert (tmp_path / "ok").read_text().startswith("Paper claims: 1/1 passed")


@pytest.mark.parametrize("kind", ["paper", "sanity", "identity"])
def test_gate_fails_on_a_failed_claim_of_any_counted_kind(tmp_path, kind):
    write_claims(tmp_path / "x.json", "alpha", "fig1", "quick", _claims([
        ("ok", "paper", True), ("bad", kind, False),
    ]))  # fmt: skip
    write_summary([tmp_path / "x.json"], tmp_path / "s.md", tmp_path / "s.csv")
    with pytest.raises(SystemExit, match=rf"1 claim\(s\) failed \(1 {kind}\)") as e:
        gate(tmp_path / "s.csv", tmp_path / "ok")
    # a failed sanity check voids the paper claim "ok": counted apart, named with its cause
    assert ("1 paper claim(s) void" in str(e.value)) == (kind == "sanity")
    assert ("alpha fig1 (ok; void by bad)" in str(e.value)) == (kind == "sanity")
    assert not (tmp_path / "ok").exists()


def test_a_not_measurable_figure_voids_its_paper_claims(tmp_path):
    """A figure whose claims could not be computed (one failed sanity check ``measurable``) has
    no paper claim to count: the summary, the gate and the caption say its paper claims are
    void."""
    from attnbias.claims import not_measurable

    write_claims(tmp_path / "a.json", "alpha", "fig1", "quick", _claims([("p1", "paper", True)]))
    write_claims(tmp_path / "b.json", "alpha", "fig2", "quick", not_measurable(ValueError("few")))
    files = [tmp_path / "a.json", tmp_path / "b.json"]
    df = summary_table(files)
    assert counts(df, ["figure"]).not_measurable.tolist() == ["", "alpha fig2"]
    assert counts(df, ["figure"]).void_by.tolist() == ["", "measurable"]
    assert headline(df).startswith(
        "Paper claims: 1/1 passed, 0 failed, 0 inconclusive, 0 void; not measurable: "
            "alpha fig2 (every paper claim "
        "void, uncounted).  Sanity checks: 0/1 passed, 1 failed."
    )
    write_summary(files, tmp_path / "s.md", tmp_path / "s.csv", html_path=tmp_path / "s.html")
    assert "- **alpha fig2**: not measurable" in (tmp_path / "s.md").read_text()
    assert "all: not measurable" in (tmp_path / "s.html").read_text()
    with pytest.raises(SystemExit, match="alpha fig2 measurable failed"):
        gate(tmp_path / "s.csv", tmp_path / "ok")
    out = tmp_path / "cap.rst"
    render_caption(None, json.loads((tmp_path / "b.json").read_text()), {}, out, text="Fig.")
    assert "**Paper claims:** void: not measurable at these settings (sanity check " \
        "``measurable`` failed)." in out.read_text()  # fmt: skip


def test_gate_rejects_a_summary_without_kinds(tmp_path):
    pd.DataFrame({"paper": ["a"], "verdict": ["PASS"]}).to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(SystemExit, match="kind"):
        gate(tmp_path / "s.csv", tmp_path / "ok")


def test_summary_rejects_records_without_kind(tmp_path):
    doc = {"paper": "a", "figure": "f", "preset": "quick",
           "claims": [{"id": "x", "statement": "s", "value": 1, "threshold": "t", "passed": True}]}
    (tmp_path / "old.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="no valid kind"):
        summary_table([tmp_path / "old.json"])


def test_caption_says_each_thing_once(claim_files, tmp_path):
    """The caption: what is drawn (the template), what is claimed (the paper claims' ids),
    the tally, then one line per claim that did not pass with its statement and reason; the
    statement and value of a claim that passed are on the claims page, not here."""
    tmpl = tmp_path / "cap.rst"
    tmpl.write_text("What is plotted.\n")
    out = tmp_path / "out.rst"
    doc = json.loads(Path(claim_files[0]).read_text())
    render_caption(tmpl, doc, {}, out)
    text = out.read_text()
    assert text.startswith("What is plotted.\n\n**Claimed:** ``p1``, ``p2``.\n\n")
    assert "**Paper claims:** 1/2 passed, 1 failed, 0 inconclusive, 0 void." in text
    assert "**Sanity checks:** 1/1 passed, 0 failed." in text
    assert "**Identities (not evidence):** 1." in text
    not_passed = text[text.index("**Not passed:**"):]
    assert not_passed.splitlines()[2] == "- **FAIL** ``p2``: statement of p2 — does not hold " \
        "(``1``)"  # fmt: skip
    assert text.count("``p2``") == 2  # claimed, then why it did not pass: once each
    assert text.count("``p1``") == 1 and "``s1``" not in text and "``i1``" not in text
    assert "statement of p1" not in text  # a passed claim's statement: on the claims page
    assert "PASS" not in text and "Why not held" not in text
    assert text.rstrip().endswith("Every claim with its measured value and threshold: *0 – Claims "
                                  "summary* → *every claim*.")  # fmt: skip


def test_caption_names_the_check_that_voids_and_the_failed_checks(tmp_path):
    files = _three_voids(tmp_path)
    texts = []
    for f in files:
        render_caption(None, json.loads(f.read_text()), {}, tmp_path / "c.rst", text="Fig.")
        texts.append((tmp_path / "c.rst").read_text())
    assert "- *VOID* ``p1``: its figure's run failed the sanity check trained, so it is not " \
        "evidence" in texts[0]  # fmt: skip
    assert "- **FAIL** ``trained`` (sanity check): the run trained — does not hold (``0.3``)" \
        in texts[0]  # fmt: skip
    # one line for the two claims voided by the same regime check; the check's value rounded
    assert "- *VOID* ``p2``, ``p3``: its figure's run has not reached the regime" in texts[1]
    assert "- **FAIL** ``learned`` (regime check): SGD loss over its start — measured " \
        "``0.8123``, threshold ``<= 0.5``" in texts[1]  # fmt: skip
    assert texts[1].index("*VOID* ``p2``") < texts[1].index("**FAIL** ``learned``")
    assert "- *VOID* ``faster``: not testable at this budget" in texts[2]
    assert "- **FAIL** ``adamw`` (positive control): AdamW / SGD — measured ``0.7``" in texts[2]
    for t in texts:  # each claim that did not pass: one line
        lines = t[t.index("**Not passed:**"):].splitlines()
        assert len([x for x in lines if x.startswith("- ")]) == 2


def test_caption_keeps_a_value_on_its_side_of_the_threshold(tmp_path):
    doc = {"paper": "a", "figure": "f", "preset": "quick", "claims": [
        _measured("near", 0.99899123456789, ">", 0.999).to_dict()]}  # fmt: skip
    render_caption(None, doc, {}, tmp_path / "c.rst", text="Fig.")
    text = (tmp_path / "c.rst").read_text()
    assert "- **FAIL** ``near``: cos(p_1000, GMM) of near — measured ``0.99899``, threshold " \
        "``> 0.999``" in text  # fmt: skip
    assert "0.99899123" not in text


def test_caption_shows_void_paper_claims_and_their_cause(claim_files, tmp_path):
    """fig2's paper claim p3 passed as measured, but its sanity check s2 failed: the caption
    counts it void, marks it VOID and names s2."""
    doc = json.loads(Path(claim_files[1]).read_text())
    render_caption(None, doc, {}, tmp_path / "out.rst", text="Fig. 2.")
    text = (tmp_path / "out.rst").read_text()
    assert "**Paper claims:** 0/1 passed, 0 failed, 0 inconclusive, 1 void (sanity " \
        "check ``s2`` failed)." in text
    assert "*VOID* ``p3``" in text and "**FAIL** ``s2``" in text and "PASS ``p3``" not in text


def test_verdicts_void_paper_claims_of_a_figure_with_a_failed_sanity_check():
    def c(cid, kind, ok):
        return {"id": cid, "kind": kind, "passed": ok}

    ok = [c("p", "paper", True), c("q", "paper", False), c("s", "sanity", True)]
    assert verdicts(ok) == ["passed", "failed", "passed"]
    bad = [*ok, c("t", "sanity", False), c("i", "identity", True)]
    assert verdicts(bad) == ["void", "void", "passed", "failed", "passed"]
    assert verdicts([c("p", "paper", True), c("i", "identity", False)]) == ["passed", "failed"]


# --------------------------------------------------------------- degenerate tables: fail, no crash


def _lm_rows(lams=(0.0, 1.0)):
    return pd.DataFrame([
        {"lam_sa": lam, "lam_mlp": 0.1, "seed": 0, "layer": layer, "head": 0, "product": p,
         "eff_rank": 4.0 - 2 * lam, "rank_1e2": 8.0 - 4 * lam, "rank_1e3": 8.0, "ratio": 0.9,
         "val_ppl": 10.0}
        for lam in lams for layer in (1, 2) for p in ("kq", "pv")
    ])  # fmt: skip


def _vit_rows(accs: dict):
    return pd.DataFrame([
        {"lam_attn": lam, "lam_other": 0.1, "seed": 0, "layer": layer, "head": 0, "product": p,
         "eff_rank": 3.0, "rank_1e2": 6.0, "rank_1e3": 6.0, "ratio": 0.9, "test_acc": acc}
        for lam, acc in accs.items() for layer in (1, 2) for p in ("kq", "pv")
    ])  # fmt: skip


def test_lowrank_fig3_with_no_solved_vit_run_records_failed_claims():
    """Regression: no ViT run reaching solved_acc used to raise IndexError (lams[-1] of an empty
    array); now the sanity claim vit_solved fails and the ViT rank claims fail with NaN."""
    vit = _vit_rows({0.0: 0.2, 1.0: 0.3, 3.0: 0.1})
    lm_meta = {"preset": "quick", "layers_fig3": [2], "layers_figC": [1]}
    claims = lowrank_claims.fig3((_lm_rows(), lm_meta), (vit, {"solved_acc": 0.8}))
    by = {c.id: c for c in claims}
    assert by["vit_solved"].kind == "sanity" and not by["vit_solved"].passed
    assert by["vit_solved"].value == []
    vit_claims = [c for c in claims if c.id.startswith("vit_") and c.id != "vit_solved"]
    assert len(vit_claims) == 8  # 2 products × 2 metrics × (non-increasing, drop)
    values = [v for c in vit_claims for v in (c.value.values() if isinstance(c.value, dict)
                                             else [c.value])]  # fmt: skip
    assert all(c.kind == "paper" and not c.passed for c in vit_claims)
    assert values and all(np.isnan(v) for v in values)
    assert "none: no run" in by["vit_kq_eff_rank_drop"].statement
    assert all(c.passed for c in claims if c.id.startswith("lm_"))  # the LM half is unaffected


def test_nucnorm_p5_without_a_qualifying_cell_fails_rank_order():
    """cells_checked ≥ 1 is no longer a claim: with no cell of d ≥ 3 and ≥ 10 feasible instances,
    rank_order itself is NaN and fails."""
    rows = [{"n": 5, "L": 3, "d": d, "instance": i, "feasible": True, "rank_nuc": 1,
             "rank_frob": 2, "nuc_of_nuc": 1.0, "nuc_of_frob": 1.1, "frob_of_frob": 1.0,
             "frob_of_nuc": 1.1, "min_margin_nuc": 1.0, "min_margin_frob": 1.0}
            for d, k in ((2, 12), (4, 5)) for i in range(k)]  # fmt: skip
    claims = {c.id: c for c in nucnorm_claims.p5((pd.DataFrame(rows), {"rank_tol": 1e-4}))}
    assert "cells_checked" not in claims
    assert np.isnan(claims["rank_order"].value) and not claims["rank_order"].passed
    rows += [dict(rows[-1], instance=100 + i) for i in range(5)]  # d = 4 now has 10 instances
    ok = {c.id: c for c in nucnorm_claims.p5((pd.DataFrame(rows), {"rank_tol": 1e-4}))}
    assert ok["rank_order"].passed and ok["rank_order"].value == -1.0


def _claims_file(tmp_path, name, control, claims):
    return write_claims(tmp_path / f"{name}.json", "lowrank", name, "quick", claims, control)


def test_negative_control_reverses_the_gate_for_paper_claims_only(tmp_path):
    """Under ``control=null`` a figure's paper claims must fail and its sanity checks pass: the
    gate fails on a paper claim that survives its control, or on a failed sanity check there; a
    figure made without the control keeps the usual rule."""
    def paper(ok):
        return compare("effect", "the paper's effect", 1.0 if ok else -1.0, ">", 0.0, kind="paper")

    def sanity(ok):
        return holds("trained", "the run trained", ok, ok, kind="sanity")

    files = [
        _claims_file(tmp_path, "a", "null", [paper(False), sanity(True)]),
        _claims_file(tmp_path, "b", "none", [paper(True), sanity(True)]),
    ]
    md, csv = tmp_path / "s.md", tmp_path / "s.csv"
    write_summary([tmp_path / "a.json", tmp_path / "b.json"], md, csv)
    assert "NEGATIVE CONTROL RUN" in md.read_text() and "lowrank a" in md.read_text()
    assert read_summary(csv).control.tolist() == ["null", "null", "none", "none"]
    gate(csv, tmp_path / "ok")  # as expected: passes
    assert files[0]["control"] == "null"
    for bad in ([paper(True), sanity(True)], [paper(False), sanity(False)]):
        _claims_file(tmp_path, "a", "null", bad)
        write_summary([tmp_path / "a.json", tmp_path / "b.json"], md, csv)
        with pytest.raises(SystemExit, match="lowrank a"):
            gate(csv, tmp_path / "ok")
    _claims_file(tmp_path, "a", "none", [paper(False), sanity(True)])  # not controlled: usual rule
    write_summary([tmp_path / "a.json", tmp_path / "b.json"], md, csv)
    with pytest.raises(SystemExit, match="effect failed"):
        gate(csv, tmp_path / "ok")
    assert "NEGATIVE CONTROL RUN" not in md.read_text()


def test_control_is_read_from_the_data_and_marked_on_figure_and_caption(tmp_path):
    from attnbias.io import control_of
    from attnbias.plotting import mark_control, new_figure

    assert control_of({"settings": {"lr": 1}}) == "none"
    assert control_of({"settings": {"control": "null"}}) == "null"
    assert control_of({"control": "null", "settings": {}}) == "null"
    with pytest.raises(ValueError, match="control"):
        control_of({"control": "placebo"})
    fig, ax = new_figure()
    fig.suptitle("Fig 2")
    mark_control(fig, "W_q, W_k frozen")
    text = fig._suptitle.get_text()
    assert text.startswith("NEGATIVE CONTROL") and "W_q, W_k frozen" in text and "Fig 2" in text
    doc = _claims_file(tmp_path, "a", "null", [compare("e", "s", 1.0, ">", 0.0, kind="paper")])
    tpl = tmp_path / "cap.rst"
    tpl.write_text("Caption.")
    render_caption(tpl, doc, {}, tmp_path / "out.rst")
    assert "NEGATIVE CONTROL" in (tmp_path / "out.rst").read_text()


def test_every_controlled_figure_says_what_its_control_removes():
    """The banner of a controlled figure names what was removed: each paper's CONTROL_NOTES covers
    the deep-learning figures the end-to-end control test expects to be controlled."""
    import importlib

    from integration.test_end_to_end import CONTROLLED

    for paper, fig in CONTROLLED:
        notes = importlib.import_module(f"attnbias.plotting.{paper}").CONTROL_NOTES
        assert notes.get(fig), (paper, fig)
