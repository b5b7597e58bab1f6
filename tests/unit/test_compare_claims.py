"""The comparison of two runs' claims (attnbias.claims.comparison), its pictures
(attnbias.plotting.compare: shared axes that keep both runs' data in view, the overlay of what
moved, the claims against their thresholds) and the marks a run that is not the reference carries
(claim file, caption, landing page, figure title)."""

import json
import sys
import types

import numpy as np
import pandas as pd

from attnbias.claims import Claim
from attnbias.claims.caption import render_caption
from attnbias.claims.comparison import COLUMNS, comparison, write_comparison
from attnbias.claims.core import write_claims
from attnbias.claims.landing import landing_rst
from attnbias.io import save_data
from attnbias.plotting import compare as pictures
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
    write_comparison(df, about, tmp_path / "c.md", tmp_path / "c.csv", tmp_path / "c.html",
                     pictures=tmp_path / "compare")  # fmt: skip
    md = (tmp_path / "c.md").read_text()
    assert "`x.steps`: 1000 → **500**" in md and md.index("## p f2") < md.index("## p f1")
    assert "2 changed verdict (2 paper claims)" in md
    # the threshold in its own column; each run's statement where they differ (the value is in
    # the statement: "value 0.1" beside "value 0.7"); the change of value; the pictures linked
    assert "| claim | kind | statement | threshold | reference | this run | change | verdict " \
        "changed |" in md  # fmt: skip
    assert "| `c0` | paper | reference: value 0.1; this run: value 0.7 | <= 0.5 | 0.1 passed | " \
        "**0.7 failed** | +0.6 | **yes** |" in md  # fmt: skip
    assert "| `c0` | paper | value 0.1 | <= 0.5 | 0.1 passed | 0.1 passed | 0 |  |" in md  # f1
    assert "| `c2` | paper | value 0.2 | <= 0.5 | — | **0.2 passed** |  | **yes** |" in md
    assert "![p f2: the reference run beside this run](compare/p/f2.png) ([PNG](compare/p/f2.png)" \
        ", [PDF](compare/p/f2.pdf))" in md  # fmt: skip
    assert md.index("](compare/p/f2.png)") < md.index("| `c0` | paper | reference: value 0.1")
    page = (tmp_path / "c.html").read_text()
    assert "<a href='compare/p/f2.png'>" in page and "<th>threshold</th>" in page
    assert "<span class='run'>reference:</span> value 0.1<br><span class='run'>this run:</span> " \
        "value 0.7</td><td>&lt;= 0.5</td><td>0.1 passed</td><td>0.7 failed</td><td>+0.6</td>" \
        in page  # fmt: skip
    assert page.startswith("<!doctype html>")  # standards mode: the tables take the page's font
    back = pd.read_csv(tmp_path / "c.csv", keep_default_na=False)
    assert len(back) == 5 and json.loads((tmp_path / "c.json").read_text())["columns"] == COLUMNS
    assert "table-layout:fixed" in (tmp_path / "c.html").read_text()
    assert list(back.reference_statement[back.figure == "f2"]) == ["value 0.1", "value 0.9", ""]
    assert list(back.threshold[back.figure == "f2"]) == ["<= 0.5"] * 3


def test_the_pages_show_values_to_four_digits_kept_on_their_side(tmp_path):
    ref, other = tmp_path / "ref", tmp_path / "other"
    for folder, v in ((ref, 0.999772757084247), (other, 0.99899123456789)):
        claims = [Claim("cos_final", "paper", f"cos(p_{1000 if folder is ref else 500}, GMM)", v,
                        "> 0.999", v > 0.999)]  # fmt: skip
        write_claims(folder / "claims/p/f.json", "p", "f", "quick", claims)
    df = comparison(ref, other, [("p", "f")])
    assert df.reference_value.iloc[0] == "0.999773"  # the CSV: 6 digits
    about = dict(label="x", reference="ref", other="other", missing=[], build="", changes=[])
    write_comparison(df, about, tmp_path / "c.md", tmp_path / "c.csv", tmp_path / "c.html")
    md = (tmp_path / "c.md").read_text()
    assert "| reference: cos(p_1000, GMM); this run: cos(p_500, GMM) | > 0.999 | 0.9998 passed | " \
        "**0.99899 failed** | −0.000782 | **yes** |" in md  # fmt: skip
    assert "](compare/" not in md  # no pictures given: none linked


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


# --- the pictures -------------------------------------------------------------------------------


def _curve_figure(top: float, guide: float = 40.0):
    """A curve from 0 to ``top`` drawn with its own view cut at 2 (the data leave the axes), a
    straight guide line to ``guide`` and a scatter point."""
    fig, ax = new_figure(3.0, 2.5)
    t = np.linspace(0, 1, 20)
    ax.plot(t, top * t, color="0.45")
    ax.plot([0, 1], [0, guide], ls="--", color="tab:red")
    ax.scatter([0.5], [1.0])
    ax.set_ylim(0, 2)
    return fig, ax


def test_shared_axes_keep_both_runs_data_in_view():
    (ref, rax), (oth, oax) = _curve_figure(5.0), _curve_figure(10.0)
    assert pictures.share_axes(ref, oth)  # the curves differ
    for ax in (rax, oax):
        lo, hi = ax.get_ylim()
        assert lo <= 0 and 10.0 <= hi < 12  # both curves in view, 4 % over the top
        assert hi < 40  # the straight guide line, alike in both runs, does not stretch the view
    assert rax.get_xlim() == oax.get_xlim()
    (ref, rax), (oth, oax) = _curve_figure(5.0, guide=30.0), _curve_figure(5.0, guide=50.0)
    assert pictures.share_axes(ref, oth)
    assert rax.get_ylim()[1] >= 50  # a guide line that differs is what moved: kept in view
    (ref, rax), (oth, _) = _curve_figure(1.5), _curve_figure(1.5)
    assert not pictures.share_axes(ref, oth) and rax.get_ylim() == (0, 2)  # nothing moved


def test_the_overlay_colours_what_only_one_run_draws():
    white = np.ones((4, 4, 3))
    ref, oth = white.copy(), white.copy()
    ref[0, 0] = oth[0, 0] = 0.0  # drawn alike
    ref[1, 1] = 0.0  # the reference's alone
    oth[2, 2] = 0.0  # this run's alone
    out, share = pictures.overlay(ref, oth)
    assert np.allclose(out[0, 0], pictures.SAME) and np.allclose(out[3, 3], 1.0)
    from matplotlib.colors import to_rgb

    assert np.allclose(out[1, 1], to_rgb(pictures.REFERENCE))
    assert np.allclose(out[2, 2], to_rgb(pictures.OTHER))
    assert share == 2 / 16
    a, b = pictures.crop(np.pad(ref, ((5, 5), (5, 5), (0, 0)), constant_values=1.0),
                         np.pad(oth, ((5, 5), (5, 5), (0, 0)), constant_values=1.0), margin=1)
    assert a.shape == b.shape == (5, 5, 3)  # the same box for both: rows and columns 0–2, ± 1


def _fake_run(folder, top, value):
    """A results folder of one figure of a made-up paper: its plot-ready data, its rendered PNG
    and its claim file."""
    df = pd.DataFrame({"t": np.linspace(0, 1, 20), "y": top * np.linspace(0, 1, 20)})
    save_data(df, {"columns": {"t": "time", "y": "the curve"}}, folder / "data/fake/grp.csv")
    fig, _ = _curve_figure(top)
    (folder / "figures/fake").mkdir(parents=True)
    fig.savefig(folder / "figures/fake/fig1.png")
    claims = [Claim("end", "paper", "y at the end", value, "<= 6", value <= 6),
              Claim("shape", "sanity", "a list", [1.0, 2.0], "true", True)]  # fmt: skip
    write_claims(folder / "claims/fake/fig1.json", "fake", "fig1", "quick", claims)


def test_a_figure_pair_redraws_both_runs_and_shows_what_moved(tmp_path, monkeypatch):
    module = types.ModuleType("attnbias.plotting.fake")

    def fig1(grp):
        df, _ = grp
        fig, ax = new_figure(3.0, 2.5)
        ax.plot(df.t, df.y)
        ax.set_ylim(0, 2)
        return fig

    module.fig1 = fig1
    monkeypatch.setitem(sys.modules, "attnbias.plotting.fake", module)
    _fake_run(tmp_path / "ref", 5.0, 5.0)
    _fake_run(tmp_path / "ref/custom/x", 10.0, 10.0)
    ref_fig = pictures.redraw(tmp_path / "ref", "fake", "fig1")
    assert ref_fig.axes[0].get_ylim() == (0, 2)  # as the plotting function draws it
    rows, skipped = pictures.claim_rows(pictures._claims(tmp_path / "ref", "fake", "fig1"),
                                        pictures._claims(tmp_path / "ref/custom/x", "fake",
                                                         "fig1"))  # fmt: skip
    assert [(r["id"], r["ref"], r["other"], r["threshold"], r["changed"]) for r in rows] == [
        ("end", 5.0, 10.0, ("<=", 6.0), True)]  # the list-valued check unchanged: not drawn
    assert skipped == []
    ref_png, other_png = (tmp_path / "ref/figures/fake/fig1.png",
                          tmp_path / "ref/custom/x/figures/fake/fig1.png")  # fmt: skip
    parts = pictures.pair_parts(ref_png, other_png)
    assert parts["note"] == "" and parts["differs"] and parts["moved"] > 0
    assert parts["reference"].shape == parts["other"].shape == parts["overlay"].shape
    over = parts["overlay"]

    def bluish(img):
        return int((img[..., 2] - img[..., 0] > 0.25).sum())

    def orange(img):
        return int((img[..., 0] - img[..., 2] > 0.25).sum())

    # the two curves (y = 5t and y = 10t) on the same axes: the reference's in orange, this run's
    # in blue; the frame, ticks and labels drawn alike in gray
    assert bluish(over) > 100 and orange(over) > 100
    assert orange(parts["reference"]) == orange(parts["other"]) == 0  # drawn in the default blue
    same = pictures.overlay(parts["reference"], parts["reference"])[0]
    assert bluish(same) == orange(same) == 0
    out = tmp_path / "pairs/fake/fig1.png"
    pictures.figure_pair(ref_png, other_png, "reference", "this run", out)
    assert out.exists() and out.with_suffix(".pdf").exists()
    import matplotlib.image as mpimg

    assert mpimg.imread(out).shape[1] == pictures.WIDTH * pictures.DPI
    # without data to redraw: the rendered pictures as they are, and why
    (tmp_path / "ref/data/fake/grp.csv").unlink()
    parts = pictures.pair_parts(ref_png, other_png)
    assert parts["note"].startswith("no plot-ready data") and parts["overlay"] is None
    assert parts["rows"] == rows
    pictures.figure_pair(ref_png, other_png, "reference", "this run", out)
    assert mpimg.imread(out).shape[1] == pictures.WIDTH * pictures.DPI
