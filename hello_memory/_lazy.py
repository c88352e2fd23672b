"""Lazy imports of optional dependencies with errors that name the extra to install."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from hello_memory.errors import MissingDependencyError


def require(module: str, extra: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``extra``.

    Args:
        module: dotted module name to import.
        extra: the hello-memory extra that installs it.
        package: the PyPI name to show, when it differs from the module name.
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(package or module, extra) from e


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` importing each name of ``exports`` (name → module) on first use.

    Example:
        >>> getter = lazy_exports("pkg", {"sqrt": "math"})
        >>> getter("sqrt")(9.0)
        3.0
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
