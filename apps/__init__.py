"""The document-Q&A learning assistant (seed 002 §8.4): RAG answers, memory records the process.

:class:`LearningAssistant` is the Gradio-free core; ``apps.ui`` builds the web app on it and
``python -m apps`` (or :func:`apps.app.serve`) launches it. Gradio is imported only by those.
"""

from __future__ import annotations

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

__all__ = [
    "AskReply",
    "DocumentRow",
    "LearningAssistant",
    "LearningReport",
    "LoadFailure",
    "LoadReport",
    "LoadedDocument",
    "NoteRecord",
    "QuestionRecord",
    "SessionStats",
]
