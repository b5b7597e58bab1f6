"""An output whose data is gone is never taken as current (attnbias.layout.stale_products)."""

from attnbias.layout import stale_products

FIG = (["data/fig9.csv", "data/fig9.json"], ["figures/fig9a.pdf", "claims/fig9a.json"])


def make(root, *names):
    for n in names:
        (root / n).parent.mkdir(parents=True, exist_ok=True)
        (root / n).write_text("x")


def test_outputs_with_missing_data_are_stale(tmp_path):
    make(tmp_path, "figures/fig9a.pdf", "claims/fig9a.json", "data/fig9.json")
    assert stale_products([FIG], tmp_path) == ["claims/fig9a.json", "figures/fig9a.pdf"]


def test_complete_chains_and_never_made_outputs_are_not_stale(tmp_path):
    make(tmp_path, "data/fig9.csv", "data/fig9.json", "figures/fig9a.pdf")
    assert stale_products([FIG], tmp_path) == []  # data present: Snakemake's dates decide
    assert stale_products([(["data/x.csv"], ["figures/x.pdf"])], tmp_path) == []  # nothing made


def test_set_aside_moves_stale_products_and_then_the_summary_made_from_them(tmp_path):
    from attnbias.layout import set_aside_stale

    make(tmp_path, "figures/fig9a.pdf", "claims/fig9a.json", "claims/summary.md", "data/fig9.json")
    summary = (["claims/fig9a.json"], ["claims/summary.md"])
    # the summary is stale through its stale claim file: found before anything moves, so a dry
    # run (which moves nothing) names it too
    assert stale_products([FIG, summary], tmp_path) == [
        "claims/fig9a.json", "claims/summary.md", "figures/fig9a.pdf"
    ]
    moved = set_aside_stale([FIG, summary], tmp_path, dest="stale")
    assert moved == ["claims/fig9a.json", "claims/summary.md", "figures/fig9a.pdf"]
    assert (tmp_path / "stale/claims/summary.md").exists()
    assert not (tmp_path / "claims/summary.md").exists()
    assert set_aside_stale([FIG, summary], tmp_path, dest="stale") == []  # nothing left stale
