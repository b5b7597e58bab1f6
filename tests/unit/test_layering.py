"""The package's imports run one way (CONTRIBUTING, "Where things live"): ``claims`` and
``plotting`` read plot-ready data and never import ``experiments``, ``train``, ``models`` or each
other; the lower layers never import ``experiments``, ``claims`` or ``plotting``; no package imports
``table``, the figure table (the top layer, read by the workflow and the tests)."""

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "src" / "attnbias"

# package -> the attnbias packages it must not import (``table``, the figure table, is the top
# layer: no package imports it)
FORBIDDEN = {
    "claims": {"experiments", "train", "models", "plotting", "table"},
    "plotting": {"experiments", "train", "models", "claims", "table"},
    "experiments": {"table"},
    **{
        low: {"experiments", "claims", "plotting", "table"}
        for low in ("models", "optim", "svm", "data", "train", "metrics", "analysis")
    },
}


def attnbias_imports(path: Path, root: Path = PKG) -> set[str]:
    """The first-level ``attnbias`` packages a module under ``root`` imports (absolute or
    relative)."""
    rel = path.relative_to(root).parts[:-1]  # the module's package, e.g. ("claims",)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = list(rel[: len(rel) - node.level + 1])
                mod = ".".join(["attnbias", *base, *([node.module] if node.module else [])])
                names = [mod] + ([f"{mod}.{a.name}" for a in node.names] if not node.module else [])
            else:
                names = [node.module or ""]
        else:
            continue
        for n in names:
            parts = n.split(".")
            if parts[0] == "attnbias" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_run_one_way(package):
    bad = {
        str(p.relative_to(PKG)): sorted(attnbias_imports(p) & FORBIDDEN[package])
        for p in sorted((PKG / package).rglob("*.py"))
    }
    assert not {k: v for k, v in bad.items() if v}


def test_the_checker_sees_relative_and_absolute_imports(tmp_path):
    (tmp_path / "plotting").mkdir()
    mod = tmp_path / "plotting" / "x.py"
    mod.write_text(
        "from ..claims.core import verdicts\n"
        "import attnbias.experiments.a\n"
        "from . import style\n"
        "import numpy\n"
    )
    assert attnbias_imports(mod, root=tmp_path) == {"claims", "experiments", "plotting"}
