"""Lazy re-exports for a package ``__init__`` (PEP 562): importing the package loads only the
module of the name asked for, so a job imports its own module's dependencies and no other's (and
``attnbias.closure`` reads the table ``_EXPORTS`` to follow a name to its module)."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, str], namespace: dict):
    """``__getattr__`` and ``__dir__`` for the package ``package`` re-exporting ``exports``
    (public name -> the module defining it, relative to the package or absolute); ``namespace``:
    the package's ``globals()``."""

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name], package), name)

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
