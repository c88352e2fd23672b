"""The document-Q&A learning assistant: RAG answers, memory records the process.

:class:`LearningAssistant` is the Gradio-free core; ``apps.ui`` builds the web app on it and
``python -m apps`` (or :func:`apps.app.serve`) launches it. Gradio is imported only by those.
Names are imported lazily, so the ``hello-memory`` command (``apps.cli``) starts without loading
the stores, the RAG pipeline or the embedder it may not need (through a memory service it needs none).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "LearningAssistant": "apps.assistant",
    "AskReply": "apps.models",
    "DocumentRow": "apps.models",
    "LearningReport": "apps.models",
    "LoadedDocument": "apps.models",
    "LoadFailure": "apps.models",
    "LoadReport": "apps.models",
    "NoteRecord": "apps.models",
    "QuestionRecord": "apps.models",
    "SessionStats": "apps.models",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from apps.assistant import LearningAssistant
    from apps.models import (
        AskReply,
        DocumentRow,
        LearningReport,
        LoadedDocument,
        LoadFailure,
        LoadReport,
        NoteRecord,
        QuestionRecord,
        SessionStats,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'apps' has no attribute {name!r}")
    return getattr(import_module(module), name)
