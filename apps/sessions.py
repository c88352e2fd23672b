"""Per-browser-session assistants, created lazily for the user id typed in the page.

Each browser session owns a :class:`Session` box (a ``gr.State`` value, deep-copied per session by
Gradio); the box holds that session's :class:`LearningAssistant`. One :class:`AssistantFactory`
per app shares the embedder (one model in memory) and LLM client between sessions and closes
every assistant still open when the app shuts down. Nothing here is module-global.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from apps.assistant import LearningAssistant, check_user_id
from hello_memory import Settings
from hello_memory.embedders.base import Embedder
from hello_memory.embedders.factory import make_embedder
from hello_memory.errors import HelloMemoryError, StoreLockedError
from hello_memory.llm.base import LLMClient
from hello_memory.llm.factory import make_llm
from rag.namespaces import default_namespace

if TYPE_CHECKING:
    from hello_memory import MemoryManager

logger = logging.getLogger(__name__)


@dataclass
class Session:
    """One browser session's assistant (``None`` until the first action) and its uploads.

    Uploads queue (a file dropped while another is indexed is indexed after it): ``indexing``
    holds the files being indexed or waiting, ``indexed`` those this session already indexed (until
    their document is deleted), so a queued upload, which carries every file the upload box showed,
    indexes only the new ones.
    """

    assistant: LearningAssistant | None = None
    indexing: set[str] = field(default_factory=set)
    indexed: set[str] = field(default_factory=set)

    def close(self) -> None:
        """Close the assistant, if any (Gradio calls this when the session's state is deleted)."""
        if self.assistant is not None:
            logger.info("closing the session of %s", self.assistant.user_id)
            self.assistant.close()
            self.assistant = None


def close_session(session: object) -> None:
    """``gr.State`` delete callback."""
    if isinstance(session, Session):
        session.close()


class AssistantFactory:
    """Builds assistants that share one embedder and one LLM client.

    Args:
        settings: the app's configuration (data directory, embedder, LLM).
        embedder / llm: injected components; built from ``settings`` when omitted.
        server_url / api_key: a memory service whose memories and knowledge bases the assistants use
            (:class:`~hello_memory.client.remote.RemoteMemory`, :class:`~rag.remote.RemoteRAG`) instead of
            opening the data directory.
    """

    def __init__(
        self, settings: Settings, *, embedder: Embedder | None = None, llm: LLMClient | None = None,
        server_url: str | None = None, api_key: str | None = None,
    ) -> None:
        self.settings = settings
        self.llm = llm if llm is not None else make_llm(settings)
        self._embedder = embedder
        self.server_url = server_url
        self._api_key = api_key
        self._lock = threading.Lock()
        self._service_llm: tuple[str | None] | None = None  # (name,) once the service told
        self._open: set[LearningAssistant] = set()  # strong: Gradio may drop a session without a callback
        self._claim: MemoryManager | None = None

    @property
    def advanced_available(self) -> bool:
        """True when an LLM answers the questions (MQE/HyDE and generated answers)."""
        return self.answering_llm is not None

    @property
    def answering_llm(self) -> str | None:
        """The LLM that answers and expands questions: the app's own, or through a memory service the
        service's (``/v1/me``; the app's own LLM settings do not apply there). ``None``: extractive."""
        if self.server_url is None:
            return self.llm.name if self.llm is not None else None
        with self._lock:
            if self._service_llm is None:
                from hello_memory.client.remote import RemoteMemory

                try:
                    with RemoteMemory(self.server_url, api_key=self._api_key) as probe:
                        self._service_llm = (probe.identity().llm,)
                except HelloMemoryError as e:  # unreachable now: say "none", ask again next time
                    logger.warning("cannot ask the memory service which LLM it uses: %s", e)
                    return None
            return self._service_llm[0]

    @property
    def embedder(self) -> Embedder:
        """The shared embedder (built on first use; the model itself loads on the first embed)."""
        with self._lock:
            if self._embedder is None:
                self._embedder = make_embedder(self.settings)
            return self._embedder

    def assistant(self, session: Session, user_id: str) -> LearningAssistant:
        """The session's assistant for ``user_id``; switching user closes the previous one."""
        uid = check_user_id(user_id)
        current = session.assistant
        if current is not None and current.user_id == uid and not current.closed:
            return current
        session.close()
        if self.server_url is not None:
            from hello_memory.client.remote import RemoteMemory
            from rag.remote import RemoteRAG

            la = LearningAssistant(
                uid, self.settings, llm=self.llm,
                memory=RemoteMemory(self.server_url, api_key=self._api_key, user_id=uid),
                rag=RemoteRAG(self.server_url, namespace=default_namespace(uid), api_key=self._api_key),
            )
        else:
            la = self._local(uid)
        session.assistant = la
        with self._lock:
            self._open = {a for a in self._open if not a.closed}
            self._open.add(la)
        return la

    def _local(self, uid: str) -> LearningAssistant:
        """An assistant on the data directory itself; a locked one names its holder and the fix."""
        try:
            return LearningAssistant(uid, self.settings, embedder=self.embedder, llm=self.llm)
        except StoreLockedError as e:
            from hello_memory.client.discovery import locked_home

            raise locked_home(self.settings.home) from e

    def claim(self) -> None:
        """Hold the data directory from now until :meth:`close_all`, before any session opens it.

        Sessions open their stores on their first action; without a claim another process (a CLI
        command, the demo) could take the directory in between and the app's next answer would be
        an error. Opening the memory takes the directory's lock and leaves the model unloaded. Through
        a memory service there is nothing to hold.

        Raises:
            StoreLockedError: another process holds the directory (naming it, and what to do).
        """
        if self.server_url is not None or self._claim is not None:
            return
        from hello_memory import MemoryManager

        try:
            self._claim = MemoryManager(self.settings, embedder=self.embedder)
        except StoreLockedError as e:
            from hello_memory.client.discovery import locked_home

            raise locked_home(self.settings.home) from e

    def close_all(self) -> None:
        """Close every assistant still open and release the claim on the data directory (at shutdown)."""
        with self._lock:
            open_now, self._open = list(self._open), set()
            claim, self._claim = self._claim, None
        for la in open_now:
            la.close()
        if claim is not None:
            claim.close()
