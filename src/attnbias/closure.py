"""Which package modules a job's code depends on: the import closure, computed from the sources.

The workflow's jobs list, as ``input: code=``, the package modules whose edits should rerun them.
Those lists are computed here when Snakemake parses the workflow, by a static walk of the
sources' ``import`` statements (nothing is imported: parsing stays fast and never loads torch):

* :func:`code_closure` (``"experiments.fastrates.wonly_runs"``, or a module such as ``"io"``):
  the module that defines the function (a name re-exported by a package ``__init__``, also
  lazily through its ``_EXPORTS`` table, is followed to the module that defines it), then every
  module that one imports from ``attnbias`` (absolute or relative, at module level or inside a
  function), transitively.  ``from ..svm import min_norm_qp`` is followed to the module that
  defines ``min_norm_qp``.  The ``__init__.py`` of every package on the way is included (it
  runs on import), without following the re-exports the job does not use: editing
  ``experiments/maxmargin/vit.py`` does not rerun the synthetic maxmargin figures.
* :func:`script_closure` (``"scripts/plot.py"``): the union over a script's own ``attnbias``
  imports.
* :func:`function_parameters`: a function's parameter names, read the same way, from which the
  workflow takes the settings of a synthetic group's instance and SVM stages.

Paths come back sorted, as ``src/attnbias/<...>.py`` relative to the repository root.

Parsing every module takes about half a second, paid by every Snakemake process (each run, dry
run and cluster job parses the workflow), so the workflow keeps the closures it computed in a
:class:`ClosureCache` file, valid for one state of the sources (a digest of every package module
and script): any edit, added or removed file recomputes them all.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
from pathlib import Path

PACKAGE = "attnbias"
_SRC = Path(__file__).resolve().parents[1]  # the src/ folder this module lives in


@functools.cache
def _file(src: Path, module: str) -> Path | None:
    """The source file of ``module`` (dotted, under ``attnbias``), or None if none."""
    base = src.joinpath(*module.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


@functools.cache
def _is_package(src: Path, module: str) -> bool:
    return (src.joinpath(*module.split(".")) / "__init__.py").is_file()


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _absolute(src: Path, module: str, node: ast.ImportFrom) -> str | None:
    """The absolute module an ``ImportFrom`` in ``module`` names, or None outside the package."""
    if node.level == 0:
        return node.module
    # the package a relative import is relative to: the module's own if it is a package
    parts = module.split(".") if _is_package(src, module) else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _inside(name: str | None) -> bool:
    return bool(name) and (name == PACKAGE or name.startswith(PACKAGE + "."))


def _defining(src: Path, module: str, name: str) -> list[str]:
    """The modules to follow for ``from <module> import <name>``: the submodule ``name``, or the
    module that defines ``name`` (through re-exports), with the packages that re-export it."""
    sub = f"{module}.{name}"
    if _file(src, sub) is not None:
        return [sub]
    path = _file(src, module)
    if path is None or not _is_package(src, module):
        return [module]
    tree = _tree(path)
    for node in tree.body:  # defined in the __init__ itself
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return [module]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return [module]
    for node in tree.body:  # re-exported: `from .x import name`
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name and alias.name != "*":
                    origin = _absolute(src, module, node)
                    if _inside(origin):
                        return [_stem(module), *_defining(src, origin, alias.name)]
    exports = _lazy_exports(tree)  # re-exported lazily (PEP 562): _EXPORTS = {name: module}
    if name in exports:
        target = exports[name]
        level = len(target) - len(target.lstrip("."))
        node = ast.ImportFrom(module=target.lstrip(".") or None, names=[], level=level)
        origin = _absolute(src, module, node)
        if _inside(origin):
            return [_stem(module), *_defining(src, origin, name)]
    return [module]  # not found statically: the whole package, conservatively


def _stem(module: str) -> str:
    """A package counted as its ``__init__`` file only (not followed): marked with a trailing !"""
    return module + "!"


def _lazy_exports(tree: ast.Module) -> dict[str, str]:
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets)
            and isinstance(node.value, ast.Dict)
        ):
            return {
                k.value: v.value
                for k, v in zip(node.value.keys, node.value.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
            }
    return {}


@functools.cache
def _module_imports(src: Path, module: str, path: Path) -> tuple[str, ...]:
    """:func:`_imports` of a package module, once per module and process: the workflow asks for
    the closures of about 200 functions, which share most of their modules."""
    return tuple(_imports(src, module, _tree(path)))


def _import_nodes(tree: ast.AST):
    """The ``import`` statements anywhere in ``tree`` (module level or nested in a function or
    class).  Expressions are not entered: an import statement is never inside one, and most of a
    module's nodes are."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif not isinstance(node, ast.expr):
            todo.extend(ast.iter_child_nodes(node))


def _imports(src: Path, module: str, tree: ast.AST) -> list[str]:
    """The package modules one module (or script) imports, anywhere in its source."""
    out = []
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if _inside(a.name)]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(src, module, node)
            if not _inside(base):
                continue
            for alias in node.names:
                out += [base] if alias.name == "*" else _defining(src, base, alias.name)
    return out


def _walk(src: Path, start: list[str]) -> list[str]:
    files: set[Path] = set()
    seen: set[str] = set()
    todo = list(start)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        only_init = module.endswith("!")
        module = module.rstrip("!")
        parts = module.split(".")
        for i in range(1, len(parts)):  # the enclosing packages' __init__ files run on import
            init = _file(src, ".".join(parts[:i]))
            if init is not None:
                files.add(init)
        path = _file(src, module)
        if path is None:
            raise ValueError(f"{module}: no such module under {src / PACKAGE}")
        files.add(path)
        if not only_init:
            todo += _module_imports(src, module, path)
    return sorted(str(Path("src") / f.relative_to(src)) for f in files)


def code_closure(target: str, root: str | Path | None = None) -> list[str]:
    """The package source files ``target`` depends on, sorted, as ``src/attnbias/...py``.

    ``target``: a module or a function, dotted, relative to ``attnbias``
    (``"experiments.fastrates.wonly_runs"``, ``"plotting.maxmargin"``, ``"io"``).
    ``root``: the repository whose ``src/`` is read (default: the one this module is in).
    """
    src = Path(root) / "src" if root is not None else _SRC
    dotted = f"{PACKAGE}.{target}"
    if _file(src, dotted) is not None:
        start = [dotted]
    else:
        module, _, name = dotted.rpartition(".")
        if _file(src, module) is None:
            raise ValueError(f"{target}: no such module or function under {src / PACKAGE}")
        start = _defining(src, module, name)
    return _walk(src, start)


def function_parameters(target: str, root: str | Path | None = None) -> list[str] | None:
    """The parameter names of the function ``target`` (dotted, relative to ``attnbias``, e.g.
    ``"experiments.fastrates.problems.instance_fig2"``), in order, read from the source of the
    module it names (nothing is imported); None when that module defines no such function.

    ``root``: the repository whose ``src/`` is read (default: the one this module is in).  Only a
    function defined at the top level of that very module, or another name given to one there
    (``svm_fig2 = _svm``), counts; no import is followed: the workflow reads a stage's settings
    from the module its table entry names.
    """
    src = Path(root) / "src" if root is not None else _SRC
    module, _, name = f"{PACKAGE}.{target}".rpartition(".")
    path = _file(src, module)
    if path is None:
        raise ValueError(f"{target}: no module {module} under {src}")
    defs, aliases = {}, {}
    for node in _tree(path).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            defs[node.name] = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            # ``svm_fig2 = svm_fig3 = _svm``: another name for a function of the module
            aliases.update({t.id: node.value.id for t in node.targets if isinstance(t, ast.Name)})
    seen = set()
    while name in aliases and name not in defs and name not in seen:
        seen.add(name)
        name = aliases[name]
    return defs.get(name)


def script_closure(script: str | Path, root: str | Path | None = None) -> list[str]:
    """The package source files a script's own ``attnbias`` imports depend on (sorted)."""
    src = Path(root) / "src" if root is not None else _SRC
    path = Path(root) / script if root is not None else Path(script)
    tree = ast.parse(path.read_text(), filename=str(path))
    return _walk(src, _imports(src, "__script__", tree))


def sources_digest(root: str | Path) -> str:
    """A digest of the files a closure can read: the path and bytes of every ``.py`` file under
    ``src/attnbias/`` and ``scripts/`` of the repository ``root``."""
    root = Path(root)
    files = sorted([*(root / "src" / PACKAGE).rglob("*.py"), *(root / "scripts").glob("*.py")])
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


class ClosureCache:
    """:func:`code_closure` and :func:`script_closure` of one repository, remembered in the JSON
    file ``path`` for the sources' current :func:`sources_digest` (a file made for other sources
    is ignored, then replaced by :meth:`save`).  Only a cache: an unreadable or unwritable file
    costs the computation, never a wrong answer.

    Parameters
    ----------
    root : str or Path
        The repository (its ``src/`` and ``scripts/``).
    path : str or Path
        The cache file (the workflow's: ``.snakemake/attnbias/closures.json`` in the working
        directory).
    """

    def __init__(self, root: str | Path, path: str | Path):
        self.root, self.path = Path(root), Path(path)
        self.digest = sources_digest(self.root)
        self.known: dict[str, list[str]] = {}
        self.changed = False
        try:
            doc = json.loads(self.path.read_text())
            if doc.get("sources") == self.digest:
                self.known = doc["closures"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass

    def _get(self, key: str, compute) -> list[str]:
        if key not in self.known:
            self.known[key] = compute()
            self.changed = True
        return list(self.known[key])

    def code(self, target: str) -> list[str]:
        """:func:`code_closure` of ``target``."""
        return self._get(f"code {target}", lambda: code_closure(target, self.root))

    def script(self, script: str) -> list[str]:
        """:func:`script_closure` of ``script`` (relative to the repository)."""
        return self._get(f"script {script}", lambda: script_closure(script, self.root))

    def save(self) -> None:
        """Write the closures computed since the file was read (atomically; none: nothing)."""
        if not self.changed:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"sources": self.digest, "closures": self.known}))
            os.replace(tmp, self.path)
            self.changed = False
        except OSError:
            pass
