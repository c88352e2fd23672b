"""What every store adapter shares, whatever its role: a backend name and ``with`` support.

Example:
    >>> class NullStore(StoreAdapter):
    ...     BACKEND = "null"
    ...     def close(self) -> None:
    ...         print("closed")
    >>> with NullStore() as store:
    ...     store.backend
    'null'
    closed
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from typing_extensions import Self


class StoreAdapter(ABC):
    """Base of the store adapters: :attr:`backend` from :attr:`BACKEND`; leaving ``with`` closes the store."""

    #: Short backend name, e.g. ``"qdrant-edge"``.
    BACKEND: ClassVar[str]

    @property
    def backend(self) -> str:
        """Short backend name, e.g. ``"qdrant-edge"``."""
        return self.BACKEND

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def close(self) -> None:
        """Release resources; idempotent."""
