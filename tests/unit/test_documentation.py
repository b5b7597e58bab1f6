"""The README and the documentation pages (docs/) as a reader meets them: a short README that
links every page, pages that start by saying what they are for, links that lead somewhere, and
performance numbers that carry their machine, date and commit (the history stays in git)."""

import re

import pytest
from conftest import ROOT

README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))  # the methods pages (docs/papers/) are their own
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_is_short():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (at most 200)"


def test_the_readme_carries_no_development_history():
    """At most the headline's commit and date: performance and history live in docs/ and git."""
    text = README.read_text()
    hashes = set(re.findall(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", text))
    dates = set(re.findall(r"\b20\d\d-\d\d-\d\d\b", text))
    assert len(hashes) <= 1 and len(dates) <= 1, (hashes, dates)
    longest = max(len(line) for line in text.splitlines() if line.startswith("|"))
    assert longest <= 300, f"a README table row of {longest} characters"


def test_the_readme_shows_the_two_fresh_machine_commands_as_ci_runs_them():
    ci = (ROOT / ".ci" / "run").read_text()
    text = README.read_text()
    test_cmd = next(ln.strip() for ln in ci.splitlines() if "pytest" in ln and "pip install" in ln)
    assert test_cmd in text
    run_cmd = test_cmd.replace(" -q", "").replace(
        ".venv/bin/python -m pytest", ".venv/bin/snakemake --cores 2 all"
    )
    assert run_cmd in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_each_page_starts_with_what_it_is_for(page):
    text = page.read_text()
    assert text.startswith("# "), f"{page.name}: no title"
    first = text.split("\n\n")[1]
    assert first.startswith("This page "), f"{page.name} opens with: {first[:80]!r}"


def test_every_page_is_listed_in_the_readme_and_the_index():
    readme = README.read_text()
    index = (ROOT / "docs" / "README.md").read_text()
    for page in PAGES:
        if page.name == "README.md":
            continue
        assert f"(docs/{page.name})" in readme, f"README.md does not link docs/{page.name}"
        assert f"({page.name})" in index, f"docs/README.md does not list {page.name}"


def _anchors(path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (lower case, spaces as hyphens, punctuation
    dropped)."""
    heads = re.findall(r"^#+ (.+)$", path.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize("doc", [README, ROOT / "CONTRIBUTING.md", *PAGES], ids=lambda p: p.name)
def test_links_lead_somewhere(doc):
    text = re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.M | re.S)
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if path.startswith("docs/images/"):
            continue  # the report's picture, made from a run
        assert dest.exists(), f"{doc.name}: link to a missing {target}"
        if anchor and dest.suffix == ".md":
            where = path or doc.name
            assert anchor in _anchors(dest), f"{doc.name}: no heading #{anchor} in {where}"


def test_performance_numbers_carry_machine_date_and_commit():
    text = (ROOT / "docs" / "performance.md").read_text()
    tables = [t for t in re.split(r"\n\n", text) if t.startswith("| what |")]
    assert tables, "no table of measurements"
    for table in tables:
        rows = [r for r in table.splitlines()[2:] if r.startswith("|")]
        header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
        assert header[-3:] == ["machine", "date", "commit"], header
        for row in rows:
            machine, date, commit = [c.strip() for c in row.strip("|").split("|")][-3:]
            assert machine and re.fullmatch(r"20\d\d-\d\d-\d\d", date), row
            assert re.fullmatch(r"[0-9a-f]{7,40}|—", commit), row
