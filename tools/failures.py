"""What a failed tool call tells the model: a bounded sentence and a code; the detail goes to the log.

The sentence reaches the model quoted (:meth:`tools.base.ToolResult.text`), since it may echo input.

A library error (:class:`~hello_memory.errors.HelloMemoryError`) says what went wrong and what to
do, in the library's words; what a backend said (a SQLite or Qdrant message wrapped as its cause)
is cut out of it and logged instead. Anything else is an internal error: the model gets a generic
sentence and a reference that the log line carries with the traceback.

Example:
    >>> from hello_memory.errors import NotFoundError
    >>> describe(NotFoundError("no memory 'x' for user 'alice'"), "memory.remove")
    ('not_found', "no memory 'x' for user 'alice'")
"""

from __future__ import annotations

import logging
import secrets

from hello_memory import errors
from hello_memory.render import shorten

logger = logging.getLogger(__name__)

MAX_ERROR_CHARS = 500
_CODES: tuple[tuple[type[BaseException], str], ...] = (  # most specific first
    (errors.InvalidInputError, "invalid_arguments"),
    (errors.NotFoundError, "not_found"),
    (errors.ConversionError, "conversion_failed"),
    (errors.MissingDependencyError, "missing_dependency"),
    (errors.StoreLockedError, "store_locked"),
    (errors.StoreError, "store_error"),
    (errors.EmbeddingError, "embedding_error"),
    (errors.LLMError, "llm_error"),
    (errors.HelloMemoryError, "error"),
)
DETAIL = "details in the server log"


def bounded(text: str) -> str:
    """``text`` cut to ``MAX_ERROR_CHARS`` characters (ending in ``…`` when cut)."""
    return shorten(text, MAX_ERROR_CHARS)


def _causes(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur = e.__cause__ or e.__context__
    while cur is not None and cur not in out and len(out) < 10:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def scrub(e: BaseException) -> str:
    """``str(e)`` without the text of the exceptions it wraps (they are backend words, not ours)."""
    message = str(e)
    for cause in _causes(e):
        text = str(cause)
        for raw in (f"{type(cause).__name__}: {text}", text):
            if len(raw) >= 4 and raw in message:
                message = message.replace(raw, f"({DETAIL})")
    return message


def describe(e: Exception, where: str) -> tuple[str, str]:
    """(code, message) for the model; logs the detail (with the traceback for internal errors)."""
    ref = secrets.token_hex(4)
    if isinstance(e, errors.HelloMemoryError):
        code = next(c for kind, c in _CODES if isinstance(e, kind))
        message = scrub(e)
        log = logger.warning if code in ("store_error", "embedding_error", "llm_error", "error") else logger.info
        log("%s failed [%s] (%s): %s", where, ref, type(e).__name__, e, exc_info=message != str(e))
        return code, bounded(message)
    logger.error("%s failed [%s]", where, ref, exc_info=e)
    return "internal_error", f"internal error (reference {ref}, {DETAIL}); the call did not complete"
