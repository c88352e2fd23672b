"""Memory write-back: record what was asked and which documents answered it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hello_memory.api import MemoryAPI
from hello_memory.models import MemoryItem
from rag.models import Answer


def record_qa(
    manager: MemoryAPI,
    answer: Answer,
    *,
    session_id: str | None = None,
    importance: float = 0.7,
    user_id: str | None = None,
) -> MemoryItem:
    """Store a Q&A interaction as an episodic memory with its sources in metadata."""
    sources = sorted({c.source_path or c.document_id for c in answer.citations})
    names = sorted({Path(s).name for s in sources})
    where = "、".join(names[:3]) if names else "无相关文档 / no matching document"
    content = f"关于「{answer.question}」的学习（来源: {where}）"
    meta: dict[str, Any] = {
        "event_type": "qa_interaction",
        "question": answer.question,
        "answer_mode": answer.mode,
        "grounded": answer.grounded,
        "sources": sources,
        "citations": [
            {"n": c.n, "document_id": c.document_id, "heading_path": c.heading_path, "chunk_id": c.chunk_id}
            for c in answer.citations
        ],
    }
    return manager.add(
        content,
        memory_type="episodic",
        importance=importance,
        session_id=session_id,
        metadata=meta,
        event_type="qa_interaction",
        user_id=user_id,
    )
