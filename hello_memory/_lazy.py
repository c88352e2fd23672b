"""Lazy imports of optional dependencies with errors that name the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

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
