"""Gradio event handlers: each resolves the session's assistant, calls it and renders the result.

Errors never reach the page as a stack trace: a :class:`HelloMemoryError` becomes a ``gr.Warning``
with its (bilingual where the app wrote it) message, and anything unexpected is logged and shown
as a short internal-error warning. Failed questions also get an error line in the chat.
"""

from __future__ import annotations

import functools
import logging
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from apps import render
from apps._gradio import gr
from apps.assistant import LearningAssistant
from apps.sessions import AssistantFactory, Session
from hello_memory import HelloMemoryError, InvalidInputError

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
Rows = list[list[object]]


def user_message(error: Exception) -> str:
    """What the page shows for ``error``."""
    if isinstance(error, HelloMemoryError):
        return str(error)
    return f"内部错误，详情见服务器日志 / Internal error, see the server log ({type(error).__name__})"


def _warn(error: Exception) -> None:
    if not isinstance(error, HelloMemoryError):
        logger.error("handler failed", exc_info=error)
    gr.Warning(user_message(error))


def guarded(outputs: int) -> Callable[[F], F]:
    """Turn a handler's exceptions into a ``gr.Warning`` and leave its ``outputs`` unchanged."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as e:  # the page must never show a stack trace
                _warn(e)
                skip = gr.skip()
                return skip if outputs == 1 else tuple(skip for _ in range(outputs))

        return inner  # type: ignore[return-value]

    return wrap


def status_markdown(la: LearningAssistant, *, remote: bool = False) -> str:
    """The line under the title: who is learning and how answers are made (through a memory service,
    by the service's LLM, whatever the app's own settings say)."""
    name = la.answering_llm
    if remote:
        llm = (f"LLM {name}（记忆服务 / the memory service's）" if name else
               "抽取式回答（记忆服务未配置 LLM）/ extractive answers (the memory service has no LLM)")
    else:
        llm = f"LLM {name}" if name else "抽取式回答（未配置 LLM）/ extractive answers (no LLM configured)"
    user, namespace = render.esc(la.user_id), render.esc(la.rag.namespace)
    return f"用户 / User **{user}** · 知识库 / Knowledge base `{namespace}` · {llm}"


class Handlers:
    """The app's callbacks, bound to one :class:`AssistantFactory`."""

    def __init__(self, factory: AssistantFactory) -> None:
        self.factory = factory

    def _la(self, session: Session, user_id: str) -> LearningAssistant:
        return self.factory.assistant(session, user_id)

    def _status(self, la: LearningAssistant) -> str:
        return status_markdown(la, remote=self.factory.server_url is not None)

    def _documents(self, la: LearningAssistant) -> tuple[Rows, Any]:
        docs = la.list_documents()
        choices = render.document_choices(docs)
        return render.document_rows(docs), gr.update(choices=choices, value=choices[0][1] if choices else None)

    # -- start tab --------------------------------------------------------------------------
    def enter(self, session: Session, user_id: str) -> tuple[Session, Any, Any, Any]:
        """Open (or switch to) the user's assistant; show their documents.

        The session box is an output so that Gradio registers it for deletion (and so calls
        ``close_session``) once the browser session has ended; it does so only for written state.
        """
        try:
            la = self._la(session, user_id)
            return (session, self._status(la), *self._documents(la))
        except Exception as e:  # the page must never show a stack trace
            _warn(e)
            return session, gr.skip(), gr.skip(), gr.skip()

    @guarded(5)
    def load(
        self,
        session: Session,
        user_id: str,
        files: list[str] | None,
        progress: gr.Progress = gr.Progress(),  # noqa: B008 - Gradio injects progress through this default
    ) -> tuple[str, str, Rows, Any, None]:
        """Index the uploaded files with a progress bar (per file, then per batch of passages).

        A file dropped while another upload is indexed starts its own event at once
        (``trigger_mode="multiple"``), says that it is queued and waits for the session's lock; it
        carries everything the upload box showed, so files this session already indexed (same
        content: Gradio names uploads by their hash) are skipped.
        """
        la = self._la(session, user_id)
        given = list(dict.fromkeys(files or []))
        new = [f for f in given if f not in session.indexed and f not in session.indexing]
        if not new:
            if given:
                raise InvalidInputError("这些文件本次已上传过 / These files were already uploaded in this session")
            raise InvalidInputError("请选择要上传的文件 / Choose files to upload")
        if session.indexing:
            names = "、".join(Path(f).name for f in new)
            gr.Info(f"已排队：{names} 将在当前文件索引完成后处理 / Queued: {names} will be indexed when the "
                    "current upload is done")
            progress(0.0, desc=f"已排队 / Queued: {names}")
        session.indexing |= set(new)
        try:
            # Gradio's temporary copies: each document keeps its file's own name as its source
            report = la.load_documents(new, progress=lambda f, d: progress(f, desc=d), as_uploads=True)
        finally:
            session.indexing -= set(new)
            session.indexed |= set(new)
        for failure in report.failed:
            gr.Warning(f"{failure.file_name}: {failure.error}")
        if report.loaded:
            gr.Info(f"已加载 {len(report.loaded)} 个文档 / Loaded {len(report.loaded)} document(s)")
        return (self._status(la), render.load_markdown(report), *self._documents(la), None)

    @guarded(3)
    def delete_document(self, session: Session, user_id: str, document_id: str | None) -> tuple[str, Rows, Any]:
        """Delete the chosen document."""
        la = self._la(session, user_id)
        if not document_id:
            raise InvalidInputError("请先选择文档 / Choose a document first")
        name = next((d.file_name for d in la.list_documents() if d.document_id == document_id), None)
        chunks = la.delete_document(document_id)
        session.indexed = {f for f in session.indexed if Path(f).name != name}  # may be uploaded again
        return (f"已删除文档（{chunks} 个分块）/ Document deleted ({chunks} chunks)", *self._documents(la))

    # -- ask tab ----------------------------------------------------------------------------
    def ask(
        self, session: Session, user_id: str, question: str, advanced: bool, history: list[Any] | None
    ) -> tuple[list[Any], str]:
        """Answer in the chat; a failure becomes an error line in the chat and a warning."""
        history = list(history or [])
        if question and question.strip():
            history.append({"role": "user", "content": render.esc(question.strip())})
        try:
            reply = self._la(session, user_id).ask(question, advanced=bool(advanced))
        except Exception as e:  # shown in the chat, never as a stack trace
            _warn(e)
            history.append({"role": "assistant", "content": render.error_markdown(user_message(e))})
            return history, question
        history.append({"role": "assistant", "content": render.reply_markdown(reply)})
        return history, ""

    # -- notes tab --------------------------------------------------------------------------
    @guarded(2)
    def add_note(self, session: Session, user_id: str, text: str) -> tuple[str, Rows]:
        """Save a note (semantic memory, importance 0.8)."""
        la = self._la(session, user_id)
        la.add_note(text)
        gr.Info("笔记已保存为语义记忆 / Note saved as semantic memory")
        return "", render.note_rows(la.notes())

    @guarded(1)
    def list_notes(self, session: Session, user_id: str) -> Rows:
        """The user's notes."""
        return render.note_rows(self._la(session, user_id).notes())

    # -- memory tab -------------------------------------------------------------------------
    @guarded(1)
    def browse(self, session: Session, user_id: str, memory_type: str | None) -> Rows:
        """The user's memories, newest first."""
        return render.memory_rows(self._la(session, user_id).browse_memories(_tier(memory_type)))

    @guarded(1)
    def search(self, session: Session, user_id: str, query: str, memory_type: str | None) -> Rows:
        """Memories ranked for ``query`` (all of them for an empty query)."""
        la = self._la(session, user_id)
        if not query or not query.strip():
            return render.memory_rows(la.browse_memories(_tier(memory_type)))
        return render.memory_rows(la.search_memories(query, _tier(memory_type)))

    @staticmethod
    def pick(evt: gr.SelectData) -> tuple[Any, Any]:
        """Fill the id and importance fields from the clicked row."""
        row = evt.row_value or []
        try:
            return str(row[0]), float(row[2])
        except (IndexError, TypeError, ValueError):
            return gr.skip(), gr.skip()

    @guarded(2)
    def update_importance(
        self, session: Session, user_id: str, memory_id: str, importance: float, memory_type: str | None
    ) -> tuple[str, Rows]:
        """Change one memory's importance."""
        la = self._la(session, user_id)
        item = la.update_importance(_need_id(memory_id), float(importance))
        return (f"重要性已更新为 / importance set to {item.importance:.2f}: {render.esc(item.content[:60])}",
                render.memory_rows(la.browse_memories(_tier(memory_type))))

    @guarded(2)
    def delete_memory(
        self, session: Session, user_id: str, memory_id: str, memory_type: str | None
    ) -> tuple[str, Rows]:
        """Delete one memory."""
        la = self._la(session, user_id)
        la.delete_memory(_need_id(memory_id))
        return "记忆已删除 / Memory deleted", render.memory_rows(la.browse_memories(_tier(memory_type)))

    @guarded(2)
    def forget(
        self, session: Session, user_id: str, strategy: str, threshold: float, max_age_days: float,
        capacity: float | None, memory_type: str | None,
    ) -> tuple[str, Rows]:
        """Run a forget policy (on the chosen tier) and show its report."""
        la = self._la(session, user_id)
        report = la.forget(strategy, threshold=float(threshold), max_age_days=float(max_age_days),
                           capacity=None if capacity is None else int(capacity), memory_type=_tier(memory_type))
        return render.forget_markdown(report), render.memory_rows(la.browse_memories(_tier(memory_type)))

    @guarded(2)
    def consolidate(
        self, session: Session, user_id: str, from_type: str, to_type: str, threshold: float,
        memory_type: str | None,
    ) -> tuple[str, Rows]:
        """Promote important memories and show the report."""
        la = self._la(session, user_id)
        report = la.consolidate(from_type, to_type, float(threshold))
        return render.consolidate_markdown(report), render.memory_rows(la.browse_memories(_tier(memory_type)))

    # -- stats tab --------------------------------------------------------------------------
    @guarded(1)
    def stats(self, session: Session, user_id: str) -> str:
        """The stats cards."""
        return render.stats_html(self._la(session, user_id).stats())

    @guarded(2)
    def report(self, session: Session, user_id: str) -> tuple[list[str], str]:
        """Write the JSON and Markdown learning reports to files for download."""
        la = self._la(session, user_id)
        folder = Path(tempfile.mkdtemp(prefix="hello-memory-report-"))
        stem = f"learning_report_{_slug(la.user_id)}"
        json_path, md_path = folder / f"{stem}.json", folder / f"{stem}.md"
        json_path.write_text(la.report_json(), encoding="utf-8")
        md_path.write_text(la.report_markdown(), encoding="utf-8")
        return [str(json_path), str(md_path)], render.stats_html(la.stats())


def _tier(memory_type: str | None) -> str | None:
    """``None`` (every tier) for the "all" choice."""
    return None if not memory_type or memory_type == "all" else memory_type


def _need_id(memory_id: str | None) -> str:
    if not memory_id or not memory_id.strip():
        raise InvalidInputError("请先在表格中点选一条记忆 / Click a memory in the table first")
    return memory_id.strip()


def _slug(text: str) -> str:
    """A file-name-safe form of a user id (letters, digits, CJK kept)."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text)[:40] or "user"
