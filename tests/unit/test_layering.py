"""The package's imports run one way (CONTRIBUTING, "Where things live"): ``claims`` and
``plotting`` read plot-ready data and never import ``experiments``, ``train``, ``models`` or each
other; the lower layers never import ``experiments``, ``claims`` or ``plotting``; only ``run`` (what
a configuration makes: the top layer, read by the workflow, the tools and the tests) imports
``table``, the figure table, and no package imports ``run``, nor
``gpu_check``, the GPU check (a tool on top of the package: it imports the experiments, the engine
and the models).  And no import loop: no module of ``src/attnbias`` or of ``benchmarks/`` imports,
directly or through others, a module that imports it (at module level or inside a function)."""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "attnbias"

# package -> the attnbias packages it must not import (``run`` is the top layer, and only it
# imports ``table``)
FORBIDDEN = {
    "claims": {"experiments", "train", "models", "plotting", "table", "run"},
    "plotting": {"experiments", "train", "models", "claims", "table", "run"},
    "experiments": {"table", "run"},
    "gpu_check": {"claims", "plotting", "table", "run"},
    "table": {"run"},
    **{
        low: {"experiments", "claims", "plotting", "table", "run"}
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


def test_no_module_of_the_package_imports_the_gpu_check():
    """The GPU check (``python -m attnbias.gpu_check``) is a top-level tool: only its own modules
    import it, none of the package's (top-level modules such as ``io.py`` included)."""
    bad = sorted(
        str(p.relative_to(PKG))
        for p in PKG.rglob("*.py")
        if p.relative_to(PKG).parts[0] != "gpu_check" and "gpu_check" in attnbias_imports(p)
    )
    assert not bad


# --- import loops --------------------------------------------------------------------------------


def modules(root: Path, package: bool) -> dict[str, Path]:
    """``{dotted name: file}`` of the modules under ``root``: a package (``src/attnbias``: every
    module under it, named from the package, a package by its ``__init__.py``) or a folder of
    scripts (``benchmarks/``: its own ``*.py``, imported by their names as its scripts do)."""
    base = root.parent if package else root
    found = {}
    for path in sorted(root.rglob("*.py") if package else root.glob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _runtime_imports(tree: ast.AST):
    """The import statements of ``tree`` that can run: all but those under ``if TYPE_CHECKING:``
    (read by type checkers only)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))


def module_imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports anywhere in its source (at module
    level or in a function: a lazy import closes a loop as well; not under ``if TYPE_CHECKING:``,
    which never runs), absolute or relative.  ``from a.b import c`` is the module ``a.b.c`` where
    there is one, else ``a.b``; a name of another library is no module of ``known``."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in _runtime_imports(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_loops(root: Path, package: bool = True) -> list[list[str]]:
    """Every import loop among the modules under ``root`` (:func:`modules`): the strongly
    connected components of the import graph with more than one module, each sorted."""
    known = modules(root, package)
    graph = {name: sorted(module_imports(name, path, known)) for name, path in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                loops.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(loops)


@pytest.mark.parametrize(("folder", "package"), [("src/attnbias", True), ("benchmarks", False)])
def test_no_import_loop(folder, package):
    assert import_loops(ROOT / folder, package) == []


def test_the_loop_finder_can_fail(tmp_path):
    """Loops through relative, absolute and lazy (in a function) imports are found, in a package
    and among scripts; a one-way chain, an import for type checkers only and other libraries are
    not loops."""
    pkg = tmp_path / "src" / "pkg"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "data" / "__init__.py").write_text("from .text import load\n")
    (pkg / "data" / "hub.py").write_text("import numpy\n\ndef f():\n    from .text import load\n")
    (pkg / "data" / "text.py").write_text("from pkg.data.hub import f\n\nload = f\n")
    (pkg / "io.py").write_text("from pkg.data import hub\nimport pkg.models.x\n")
    (pkg / "models").mkdir()
    (pkg / "models" / "x.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .y import Y\n"
    )
    (pkg / "models" / "y.py").write_text("from . import x\nfrom ..io import save\n")
    assert import_loops(pkg) == [["pkg.data.hub", "pkg.data.text"]]
    (pkg / "models" / "x.py").write_text("from ..models import y\n")  # x -> y -> (io ->) x
    loop = ["pkg.io", "pkg.models.x", "pkg.models.y"]
    assert import_loops(pkg) == [["pkg.data.hub", "pkg.data.text"], loop]
    scripts = tmp_path / "benchmarks"
    scripts.mkdir()
    (scripts / "bench_a.py").write_text("def main():\n    from levers import marks\n")
    (scripts / "levers.py").write_text("import bench_a\nimport torch\n")
    (scripts / "bench_b.py").write_text("from levers import marks\n")
    assert import_loops(scripts, package=False) == [["bench_a", "levers"]]
