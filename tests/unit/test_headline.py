"""README.md's headline (section "What it verifies") is the block the script renders from the
committed record of a run's counts (workflow/headline.json, attnbias.claims.headline), and the
script writes that record and block from a run's summary.csv, touching nothing else of README."""

from __future__ import annotations

import json
import shutil

from conftest import ROOT

from attnbias.claims import headline
from attnbias.claims.core import holds, write_claims
from attnbias.claims.summary import write_summary


def test_readme_and_script_agree():
    record = json.loads((ROOT / headline.RECORD).read_text())
    readme = (ROOT / "README.md").read_text()
    assert headline.current_block(readme) == headline.render(record)
    assert headline.main(["--check", str(ROOT / "README.md")]) == 0
    block = headline.current_block(readme)
    assert all(len(line) <= 100 for line in block.splitlines()[1:])
    for key in ("date", "machine", "commit"):
        assert record[key] and str(record[key]) in " ".join(block.split())


def _summary(tmp_path):
    def c(cid, kind, ok):
        return holds(cid, f"statement of {cid}", 1.0, ok, kind=kind)

    files = [
        write_claims(tmp_path / "c" / "fig1.json", "alpha", "fig1", "quick",
                     [c("p1", "paper", True), c("p2", "paper", False), c("s1", "sanity", True),
                      c("r1", "regime", True)]),
        write_claims(tmp_path / "c" / "fig2.json", "alpha", "fig2", "quick",
                     [c("p3", "paper", True), c("s2", "sanity", False)]),  # p3: void
    ]  # fmt: skip
    assert files
    results = tmp_path / "results"
    (results / "claims").mkdir(parents=True)
    csv = results / "claims" / "summary.csv"
    write_summary([tmp_path / "c" / "fig1.json", tmp_path / "c" / "fig2.json"],
                  results / "claims" / "summary.md", csv)  # fmt: skip
    return csv


def test_the_script_counts_a_run_and_rewrites_only_the_block(tmp_path):
    csv = _summary(tmp_path)
    record = headline.count_record(csv)
    assert record["paper"] == dict(passed=1, failed=1, inconclusive=0, void=1, total=3)
    assert record["sanity"] == dict(passed=1, failed=1, total=2)
    assert record["regime"]["total"] == 1 and record["preset"] == "quick"
    root = tmp_path / "repo"
    (root / "workflow").mkdir(parents=True)
    readme = root / "README.md"
    before, after = "# Title\n\nbefore the block\n\n", "\n\nafter the block\n"
    readme.write_text(before + f"{headline.START}\nold\n{headline.END}" + after)
    assert headline.main([str(csv), "--update", str(readme), "--root", str(root), "--machine",
                          "a test machine, 2 cores", "--date", "2026-12-02", "--commit",
                          "abc1234", "--note", "idle"]) == 0  # fmt: skip
    text = readme.read_text()
    assert text.startswith(before) and text.endswith(after)
    flat = " ".join(headline.current_block(text).split())
    assert ("On a quick run of 2026-12-02 (a test machine, 2 cores; idle; the workflow of commit "
            "abc1234), **1 of 3 paper claims pass, 1 fails, 0 are inconclusive and 1 is void; 1 of "
            "1 regime checks and 1 of 2 sanity checks pass**.") in flat  # fmt: skip
    saved = json.loads((root / headline.RECORD).read_text())
    assert saved["commit"] == "abc1234" and saved["paper"]["void"] == 1
    assert headline.main(["--check", str(readme), "--root", str(root)]) == 0
    # a README that says something else than the record fails the check
    readme.write_text(text.replace("**1 of", "**2 of"))
    assert headline.main(["--check", str(readme), "--root", str(root)]) == 1


def test_the_commit_defaults_to_the_run_provenance(tmp_path):
    csv = _summary(tmp_path)
    data = tmp_path / "results" / "data" / "alpha"
    data.mkdir(parents=True)
    (data / "fig1.json").write_text(json.dumps({"provenance": {"git_sha": "0123456789abcdef"}}))
    root = tmp_path / "repo"
    (root / "workflow").mkdir(parents=True)
    shutil.copy(ROOT / "README.md", root / "README.md")
    assert headline.main([str(csv), "--update", str(root / "README.md"), "--root",
                          str(root)]) == 0  # fmt: skip
    assert json.loads((root / headline.RECORD).read_text())["commit"] == "0123456"
