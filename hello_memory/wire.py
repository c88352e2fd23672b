"""The memory service's wire format for errors, shared by the service and its clients.

Every :class:`~hello_memory.errors.HelloMemoryError` crosses HTTP as a status code and a JSON body
``{"error": {"code", "type", "message", "fields"}}``; the client raises the same class again with
the same message and attributes (``field``, ``object_id``, ...), so calling code cannot tell a
remote error from a local one. No stack trace ever crosses.

Example:
    >>> from hello_memory.errors import NotFoundError
    >>> status, body = encode(NotFoundError("no memory 'x'", object_id="x"))
    >>> status, body.code
    (404, 'not_found')
    >>> err = decode(body)
    >>> type(err).__name__, str(err), err.object_id
    ('NotFoundError', "no memory 'x'", 'x')
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hello_memory import errors as E
from hello_memory.models import MemoryType

# Most specific first: the first class in an error's MRO that is listed here gives its code and status.
ERROR_CODES: dict[type[E.HelloMemoryError], tuple[str, int]] = {
    E.ConversionError: ("conversion_error", 422),
    E.IdConflictError: ("id_conflict", 409),
    E.InvalidInputError: ("invalid_input", 422),
    E.NotFoundError: ("not_found", 404),
    E.WriteConflictError: ("write_conflict", 409),
    E.PermissionDeniedError: ("permission_denied", 403),
    E.DimensionMismatchError: ("dimension_mismatch", 409),
    E.EmbedderMismatchError: ("embedder_mismatch", 409),
    E.StoreLockedError: ("store_locked", 503),
    E.ForkedProcessError: ("forked_process", 500),
    E.CorruptStoreError: ("corrupt_store", 500),
    E.DiskFullError: ("disk_full", 507),
    E.IndexPendingError: ("index_pending", 503),
    E.StoreError: ("store_error", 503),
    E.EmbeddingError: ("embedding_error", 502),
    E.LLMUnavailableError: ("llm_unavailable", 501),
    E.LLMError: ("llm_error", 502),
    E.MissingDependencyError: ("missing_dependency", 501),
    E.ServiceTimeoutError: ("timeout", 504),
    E.ServiceError: ("service_error", 502),
    E.HelloMemoryError: ("error", 500),
}
_BY_CODE = {code: cls for cls, (code, _) in ERROR_CODES.items()}
_SCALARS = (str, int, float, bool, type(None))


class ErrorDetail(BaseModel):
    """One error as the service reports it."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="stable machine-readable error code, e.g. 'not_found', 'invalid_input'")
    type: str = Field(description="the HelloMemoryError subclass, e.g. 'NotFoundError'")
    message: str = Field(description="what went wrong and what to do")
    fields: dict[str, str | int | float | bool | list[str] | None] = Field(
        default_factory=dict, description="the error's attributes, e.g. {'field': 'importance'}"
    )


class ErrorBody(BaseModel):
    """The JSON body of every error response."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorDetail


class Identity(BaseModel):
    """Who an API key is (``GET /v1/me``) and what the service serves."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(description="the key's user: the default of every call")
    admin: bool = Field(description="may act for any user and namespace")
    namespaces: list[str] | None = Field(description="knowledge bases the key reaches; null = all")
    memory_types: list[MemoryType] = Field(description="the memory tiers the service serves")
    embedder: str
    version: str
    llm: str | None = Field(
        default=None, description="the service's LLM (answers, MQE/HyDE, extraction); null = none configured"
    )


class Summary(BaseModel):
    """``MemoryManager.summary`` as JSON."""

    model_config = ConfigDict(extra="forbid")

    summary: str


class Count(BaseModel):
    """How many objects an operation deleted (``clear_all``, ``delete_document``, ``clear``)."""

    model_config = ConfigDict(extra="forbid")

    count: int


def code_of(error: E.HelloMemoryError) -> tuple[str, int]:
    """``(code, HTTP status)`` of an error: its nearest listed class."""
    for cls in type(error).__mro__:
        if cls in ERROR_CODES:
            return ERROR_CODES[cls]
    return ERROR_CODES[E.HelloMemoryError]


def _wire_value(value: object) -> bool:
    """Scalars and lists of strings (e.g. ``IndexPendingError.memory_ids``) cross; nothing else does."""
    if isinstance(value, list):
        return len(value) <= 1000 and all(isinstance(v, str) for v in value)
    return isinstance(value, _SCALARS)


def encode(error: E.HelloMemoryError) -> tuple[int, ErrorBody]:
    """HTTP status and body for ``error`` (its message and scalar attributes, never a traceback)."""
    code, status = code_of(error)
    if isinstance(error, E.PermissionDeniedError):
        status = error.status
    fields = {k: v for k, v in vars(error).items() if not k.startswith("_") and _wire_value(v)}
    detail = ErrorDetail(code=code, type=type(error).__name__, message=str(error), fields=fields)
    return status, ErrorBody(error=detail)


def _blank(cls: type[E.HelloMemoryError]) -> E.HelloMemoryError:
    """An instance of ``cls`` without running its ``__init__`` (whose arguments differ per class).

    ``cls.__new__`` is the first built-in's in the MRO, which refuses classes whose layout comes
    from another built-in (e.g. a subclass of ``RuntimeError`` and ``OSError``); the one that lays
    them out accepts.
    """
    for base in cls.__mro__:
        if base.__module__ == "builtins" and issubclass(base, BaseException):
            try:
                instance: E.HelloMemoryError = base.__new__(cls)
                return instance
            except TypeError:
                continue
    raise TypeError(f"cannot create {cls.__name__}")  # pragma: no cover - every exception has a built-in base


def decode(body: ErrorBody, *, status: int | None = None, url: str | None = None) -> E.HelloMemoryError:
    """The error ``body`` describes, as the same class with the same message and attributes.

    The class is looked up by name in :mod:`hello_memory.errors` (never imported from elsewhere),
    falling back to the class of the code and then to :class:`~hello_memory.errors.ServiceError`.
    """
    detail = body.error
    named = getattr(E, detail.type, None)
    cls: type[E.HelloMemoryError]
    if isinstance(named, type) and issubclass(named, E.HelloMemoryError):
        cls = named
    else:
        cls = _BY_CODE.get(detail.code, E.ServiceError)
    error = _blank(cls)
    Exception.__init__(error, detail.message)
    fields: dict[str, Any] = dict(detail.fields)
    if issubclass(cls, E.ServiceError):  # where and how this client met it, unless the service said
        for key, value in (("url", url), ("status", status)):
            if fields.get(key) is None:
                fields[key] = value
    vars(error).update(fields)
    return error
