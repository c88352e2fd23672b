"""LearningAssistant: the document-Q&A learning assistant behind the web app.

RAG answers, memory records the process, with the seed's importance gradient: a loaded
document is an episodic event (0.9), a Q&A interaction an episodic event (0.7), the question
itself working memory (0.6), a note semantic memory (0.8). Each user has a knowledge base of
their own (RAG namespace ``docs_<user>``) and memories of their own (``user_id``). No Gradio here.

Example:
    >>> from apps import LearningAssistant
    >>> with LearningAssistant("alice", Settings(home="/tmp/hm-app")) as la:     # doctest: +SKIP
    ...     la.load_documents(["guide.md"])
    ...     reply = la.ask("hello-memory 的默认向量库是什么？")
    ...     print(reply.answer, [c.heading_path for c in reply.citations])
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from apps import reporting
from apps.memory_ops import MemoryOps
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
from apps.routing import recall_topic, route_question, strip_force_prefix
from hello_memory import HelloMemoryError, InvalidInputError, MemoryManager, ScoredMemory, Settings
from hello_memory.api import MemoryAPI
from hello_memory.embedders.base import Embedder
from hello_memory.embedders.factory import make_embedder
from hello_memory.errors import ConversionError
from hello_memory.llm.base import LLMClient
from hello_memory.llm.factory import make_llm
from hello_memory.models import cleared, utcnow
from hello_memory.validation import check_id
from rag import RAGPipeline, record_qa
from rag.api import RAGAPI
from rag.namespaces import default_namespace

logger = logging.getLogger(__name__)

_DOC_IDS = uuid.UUID("0b7f3c52-3d1e-4a8e-9f0e-6a1c2b9d4e77")
MAX_USER_ID_CHARS = 64
NOTE_TAG = "note"


class ProgressCallback(Protocol):
    """Receives indexing progress: a fraction in [0, 1] and a bilingual description."""

    def __call__(self, fraction: float, desc: str, /) -> object:
        """Report progress."""
        ...


def check_user_id(user_id: object) -> str:
    """A trimmed user id of at most 64 characters; bilingual :class:`InvalidInputError` otherwise."""
    text = user_id.strip() if isinstance(user_id, str) else ""
    if not text or len(text) > MAX_USER_ID_CHARS:
        raise InvalidInputError(f"请输入 1-{MAX_USER_ID_CHARS} 个字符的用户 ID / "
                                f"Enter a user id of 1-{MAX_USER_ID_CHARS} characters", field="user_id")
    return check_id(text, "user_id")


class LearningAssistant(MemoryOps):
    """One learner's session: a knowledge base, a memory and the session's counters.

    Args:
        user_id: the learner; selects the RAG namespace ``docs_<user_id>`` and the memory owner.
        settings: configuration (``Settings()`` from the environment when omitted).
        embedder: shared text embedder (built from settings when omitted; share one across sessions).
        llm: LLM client; built from settings when omitted (none configured = extractive answers).
        session_id: id stamped on this session's memories (a new one when omitted).
        memory / rag: the learner's memory and knowledge base (e.g. the clients of a memory service,
            :class:`~hello_memory.client.remote.RemoteMemory` and :class:`~rag.remote.RemoteRAG`); opened on
            the data directory when omitted. The assistant closes them.

    Raises:
        InvalidInputError: the user id is empty or too long.
        StoreError: the data directory cannot be opened (e.g. used by another process).
    """

    def __init__(
        self,
        user_id: str,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        llm: LLMClient | None = None,
        session_id: str | None = None,
        memory: MemoryAPI | None = None,
        rag: RAGAPI | None = None,
    ) -> None:
        self.user_id = check_user_id(user_id)
        self.settings = settings or Settings()
        self.session_id = session_id or f"session-{uuid.uuid4().hex[:12]}"
        self.started_at = utcnow()
        self.llm = llm if llm is not None else make_llm(self.settings)
        shared = embedder or (make_embedder(self.settings) if memory is None or rag is None else None)
        self.lock = threading.RLock()  # one operation of a session at a time (UI events may overlap)
        self.memory: MemoryAPI = memory or MemoryManager(self.settings, user_id=self.user_id, embedder=shared,
                                                         llm=self.llm)
        try:
            self.rag: RAGAPI = rag or RAGPipeline(
                self.settings, namespace=default_namespace(self.user_id), embedder=shared, llm=self.llm
            )
        except BaseException:
            self.memory.close()
            raise
        self._answering_llm: tuple[str | None] | None = None  # (name,) once asked
        self.loaded: list[LoadedDocument] = []
        self.questions: list[QuestionRecord] = []
        self.session_notes: list[NoteRecord] = []
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def advanced_available(self) -> bool:
        """True when an LLM answers, so MQE/HyDE expansion and generated answers are on."""
        return self.answering_llm is not None

    @property
    def answering_llm(self) -> str | None:
        """The LLM of the knowledge base, which answers and expands questions: :attr:`llm` in process,
        the memory service's through a service (asked once). ``None``: extractive answers."""
        if self._answering_llm is None:
            self._answering_llm = (self.rag.stats().llm,)
        return self._answering_llm[0]

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def close(self) -> None:
        """Release the stores (idempotent)."""
        if not self._closed:
            self._closed = True
            self.rag.close()
            self.memory.close()

    def __enter__(self) -> LearningAssistant:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- documents --------------------------------------------------------------------------
    def load_documents(
        self, paths: Sequence[str | Path], progress: ProgressCallback | None = None, *, as_uploads: bool = False
    ) -> LoadReport:
        """Index files into the user's knowledge base, each recorded as an episodic event (0.9).

        A file that cannot be converted is reported in ``failed`` (nothing of it is stored) and the
        others are still loaded. Re-loading a file of the same name replaces the earlier version.
        ``progress(fraction, text)`` is told each file's conversion, then each embedding batch of its
        passages, so a single large file does not sit at 0 % for its whole indexing.
        ``as_uploads``: the paths are temporary copies (the web app's uploads), so each document is
        recorded and cited under its file name instead of the copy's path.
        """
        report = LoadReport()
        note: Callable[[float, str], object] = progress or (lambda f, d: None)
        n = max(len(paths), 1)
        with self.lock:
            for i, raw in enumerate(paths):
                path = Path(raw)
                label = f"{path.name} ({i + 1}/{len(paths)})"
                note(i / n, f"正在转换 / Converting {label}")

                def passages(done: int, total: int, i: int = i, label: str = label) -> None:
                    note((i + done / max(total, 1)) / n,
                         f"正在索引 / Indexing {label}: {done}/{total} 段 / passages")

                try:
                    report.loaded.append(self._load_one(path, passages, as_upload=as_uploads))
                except HelloMemoryError as e:
                    logger.info("loading %s failed: %s", path.name, e)
                    report.failed.append(LoadFailure(file_name=path.name, error=describe_load_error(e)))
            note(1.0, "完成 / Done")
        self.loaded += report.loaded
        return report

    def _load_one(
        self, path: Path, progress: Callable[[int, int], object] | None = None, *, as_upload: bool = False
    ) -> LoadedDocument:
        doc_id = str(uuid.uuid5(_DOC_IDS, f"{self.rag.namespace}\x1f{path.name}"))
        ingest = self.rag.add_document(path, document_id=doc_id, metadata={"file_name": path.name},
                                       progress=progress, source_path=path.name if as_upload else None)
        title = next((d.title for d in self.rag.list_documents() if d.document_id == doc_id), None)
        label = path.name if not title or title == path.name else f"{path.name}（{title}）"
        item = self.memory.add(
            f"加载了文档《{label}》，共 {ingest.chunks} 个分块", memory_type="episodic", importance=0.9,
            event_type="document_loaded", session_id=self.session_id,
            metadata={"document_id": doc_id, "file_name": path.name, "chunks": ingest.chunks,
                      "format": ingest.format},
        )
        return LoadedDocument(file_name=path.name, document_id=doc_id, title=title, format=ingest.format,
                              chunks=ingest.chunks, tokens=ingest.tokens, replaced=ingest.replaced,
                              memory_id=item.id)

    def list_documents(self) -> list[DocumentRow]:
        """The user's documents, oldest first."""
        return [DocumentRow(document_id=d.document_id, file_name=file_name(d.source_path, d.title),
                            title=d.title, format=d.format, chunks=d.chunks, tokens=d.tokens,
                            added_at=d.added_at)
                for d in sorted(self.rag.list_documents(), key=lambda d: d.added_at)]

    def delete_document(self, document_id: str) -> int:
        """Delete one document of the user's knowledge base; returns the chunks deleted."""
        with self.lock:
            return self.rag.delete_document(document_id)

    # -- questions --------------------------------------------------------------------------
    def ask(self, question: str, advanced: bool = False) -> AskReply:
        """Answer a question: recall questions from memory, all others from the documents.

        The question is stored as working memory (0.6); a document answer is also recorded as an
        episodic ``qa_interaction`` (0.7) with its sources. ``advanced`` turns on MQE and HyDE when
        an LLM is configured (and is noted as unavailable otherwise).

        Raises:
            InvalidInputError: the question is empty.
        """
        if not isinstance(question, str) or not question.strip():
            raise InvalidInputError("请输入问题 / Please enter a question", field="question")
        text = question.strip()
        route = route_question(text)
        with self.lock:
            asked = self.memory.add(f"提问: {text}", memory_type="working", importance=0.6,
                                    session_id=self.session_id, metadata={"route": route})
            reply = self._recall_reply(text) if route == "memory" else self._rag_reply(text, advanced)
        reply.memory_ids.insert(0, asked.id)
        self.questions.append(QuestionRecord(question=text, route=route, asked_at=utcnow(),
                                             sources=sorted({file_name(c.source_path) for c in reply.citations})))
        return reply

    def _rag_reply(self, question: str, advanced: bool) -> AskReply:
        expand = advanced and self.advanced_available
        answer = self.rag.ask(question, limit=5, enable_mqe=expand, enable_hyde=expand)
        notes = list(answer.notes)
        if advanced and not expand:
            notes.append("高级检索需要配置 LLM，本次使用基础检索 / Advanced search needs an LLM; basic search was used")
        if not self.rag.list_documents():
            notes.append("还没有加载文档：请在“开始”页上传 / No documents yet: upload some on the Start tab")
        event = record_qa(self.memory, answer, session_id=self.session_id)
        return AskReply(question=question, answer=answer.answer, route="rag", citations=answer.citations,
                        extracts=answer.extracts, mode=answer.mode, grounded=answer.grounded, advanced=expand,
                        notes=notes, memory_ids=[event.id])

    def _recall_reply(self, question: str) -> AskReply:
        hits = self.recall(strip_force_prefix(question))
        return AskReply(question=question, answer=reporting.recall_answer(hits), route="memory",
                        memories=hits, mode="memory", grounded=bool(hits))

    def recall(self, query: str, limit: int = 8) -> list[ScoredMemory]:
        """The learning record (episodic events and semantic notes) about ``query``.

        A question that names no topic ("我之前学过什么？", "what did I learn before?") asks for the
        record itself: its newest entries, not a search — searched, such a question matches nothing
        it stored (the relevance floor rightly finds no memory about "learning before"). Listed
        entries carry ``breakdown={"listed": 1.0}``: they are in time order, not ranked.
        """
        topic = recall_topic(query)
        if topic:
            return cleared(self.memory.search(query, memory_types=["episodic", "semantic"], limit=limit))
        found = [it for t in ("episodic", "semantic") for it in self.memory.get_all(memory_type=t, limit=limit)]
        found.sort(key=lambda it: it.created_at, reverse=True)
        return [ScoredMemory(item=it, score=1.0, breakdown={"listed": 1.0}) for it in found[:limit]]

    # -- notes ------------------------------------------------------------------------------
    def add_note(self, content: str) -> NoteRecord:
        """Save a note as semantic memory (importance 0.8).

        Raises:
            InvalidInputError: the note is empty.
        """
        if not isinstance(content, str) or not content.strip():
            raise InvalidInputError("笔记不能为空 / The note is empty", field="content")
        with self.lock:
            item = self.memory.add(content.strip(), memory_type="semantic", importance=0.8,
                                   session_id=self.session_id, tags=[NOTE_TAG], metadata={"kind": NOTE_TAG})
        note = NoteRecord(memory_id=item.id, content=item.content, created_at=item.created_at)
        self.session_notes.append(note)
        return note

    def notes(self) -> list[NoteRecord]:
        """All of the user's notes (every session), newest first."""
        return [NoteRecord(memory_id=m.id, content=m.content, created_at=m.created_at)
                for m in self.memory.get_all(memory_type="semantic") if NOTE_TAG in m.tags]

    # -- stats and reports ------------------------------------------------------------------
    def stats(self) -> SessionStats:
        """Session time, documents, questions, notes and memories per tier."""
        mem, kb = self.memory.stats(), self.rag.stats()
        return SessionStats(
            user_id=self.user_id, session_id=self.session_id, started_at=self.started_at,
            duration_seconds=(utcnow() - self.started_at).total_seconds(), documents=kb.documents,
            documents_loaded=len({d.document_id for d in self.loaded}), chunks=kb.chunks,
            questions=len(self.questions), recall_questions=sum(q.route == "memory" for q in self.questions),
            notes=len(self.session_notes), memories_total=mem.total, memories_by_type=mem.by_type,
            llm=kb.llm, embedder=kb.embedder,
        )

    def report(self) -> LearningReport:
        """The learning report: stats, documents, questions, notes and the memory summary."""
        return LearningReport(generated_at=utcnow(), stats=self.stats(), documents=self.list_documents(),
                              questions=list(self.questions), notes=self.notes(),
                              memory_summary=self.memory.summary(limit=5))

    def report_json(self) -> str:
        """The learning report as JSON (UTF-8 text, Chinese unescaped)."""
        return self.report().model_dump_json(indent=2)

    def report_markdown(self) -> str:
        """The learning report as Markdown."""
        return reporting.report_markdown(self.report())


def file_name(source_path: str | None, fallback: str | None = None) -> str:
    """The file name of a source path (``fallback`` or ``"?"`` without one)."""
    return Path(source_path).name if source_path else (fallback or "?")


def describe_load_error(error: HelloMemoryError) -> str:
    """A user-facing, bilingual reason why a file could not be loaded."""
    if isinstance(error, ConversionError):
        hint = f" (pip install 'hello-memory[{error.extra}]')" if error.extra else ""
        if "unsupported file extension" in error.reason:
            return f"不支持的文件类型 / Unsupported file type: {error.reason}"
        return f"无法读取文件 / Cannot read the file: {error.reason}{hint}"
    return f"索引失败 / Indexing failed: {error}"
