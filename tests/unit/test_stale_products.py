"""An output whose data is gone is never taken as current (attnbias.workflow.stale_products)."""

from attnbias.workflow import stale_products

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
