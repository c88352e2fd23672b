"""hello-memory through its public API only: ``hello_memory`` (default profile) and ``paper``.

Each corpus is one user of a :class:`hello_memory.MemoryManager` living in a temporary home;
docs are added as episodic memories carrying ``metadata["doc_id"]`` (and a named speaker as their
participant; docs of a session are conversation turns, ``event_type="conversation"``), and a search
maps hits back to those ids. ``form`` chooses how a user would have added them (:data:`FORMS`). The
``paper`` profile is the seed's
formulas with dense-only similarity (``Settings(fusion="dense", participant_weight=0)``).
``mode=server`` runs the same manager in server mode (``QDRANT_URL`` = a local-mode path: records,
vectors and the lexical index in Qdrant) for the parity benchmark of issue 19.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.datasets.base import Doc, Query
from benchmarks.systems.base import SystemContext, SystemUnavailableError
from benchmarks.systems.views import ASSISTANT_SPEAKERS, chat_messages
from hello_memory.settings import PRESETS
from hello_memory.stores.records.sqlite_lexical import TURN_EVENT_TYPE

PROFILES: dict[str, dict[str, Any]] = PRESETS  # the product's named presets (hello_memory.settings)
ROLE_SPEAKERS = ASSISTANT_SPEAKERS | {"user", "human"}
ADD_BATCH = 256
#: How the docs are added. ``turns``: ``add_many`` items marked as conversation turns (session,
#: ``event_type="conversation"``, a named speaker as participant); ``messages``: each session as one
#: ``add(messages, session_id=...)`` call (speaker = ``name``, else the role, as the product stores
#: it); ``session``: ``add_many`` items with their session and speaker but no ``event_type`` (what a
#: chat app storing each turn would naturally write); ``plain``: the text and its time only; ``notes``:
#: every doc in ONE session of its corpus with the corpus's user as participant and no ``event_type``
#: (an agent's tool writing unrelated notes over one long session: what a turn rule must not catch).
FORMS = ("turns", "messages", "session", "plain", "notes")
#: ``text``: the dataset's text as it is, ``bare`` without a leading ``"speaker: "``, ``named`` with one.
TEXTS = ("as_is", "bare", "named")


def doc_text(doc: Doc, text: str = "as_is") -> str:
    """The text a user would store for ``doc`` (see :data:`TEXTS`)."""
    prefix = f"{doc.speaker}: " if doc.speaker else ""
    bare = doc.text[len(prefix):] if prefix and doc.text.startswith(prefix) else doc.text
    return {"as_is": doc.text, "bare": bare, "named": prefix + bare}[text]


def memory_payload(
    doc: Doc, role_participants: bool = False, form: str = "turns", text: str = "as_is", corpus_id: str = ""
) -> dict[str, Any]:
    """The ``add_many`` item for one doc (``role_participants``: a role speaker is a participant too)."""
    item: dict[str, Any] = {
        "content": doc_text(doc, text),
        "memory_type": "episodic",
        "metadata": {"doc_id": doc.doc_id, "speaker": doc.speaker},
    }
    if doc.created_at is not None:
        item["created_at"] = doc.created_at
    if form == "notes":
        item.update(session_id="agent-session", participants=[f"user {corpus_id}"])
    if form in ("plain", "notes"):
        return item
    if doc.session_id is not None:  # a turn of a conversation session (LoCoMo, LongMemEval)
        item["session_id"] = doc.session_id
        if form == "turns":
            item["event_type"] = TURN_EVENT_TYPE
    if doc.speaker and (role_participants or doc.speaker.lower() not in ROLE_SPEAKERS):
        item["participants"] = [doc.speaker]  # a chat turn's participant is its speaker
    return item


def chat_message(doc: Doc, text: str = "bare") -> dict[str, Any]:
    """One LoCoMo/LongMemEval turn as a chat message: a role speaker is the role, a name is ``name``."""
    speaker = doc.speaker or "user"
    if speaker.lower() in ROLE_SPEAKERS:
        return {"role": speaker.lower(), "content": doc_text(doc, text)}
    return {"role": "user", "name": speaker, "content": doc_text(doc, text)}


def sessions(docs: Sequence[Doc]) -> list[list[Doc]]:
    """Consecutive docs of one session together (a doc without a session alone)."""
    out: list[list[Doc]] = []
    for doc in docs:
        if out and doc.session_id is not None and out[-1][-1].session_id == doc.session_id:
            out[-1].append(doc)
        else:
            out.append([doc])
    return out


def query_input(query: Query) -> str | list[dict[str, str]]:
    """What a user would pass: the question, or a dialogue query as chat messages."""
    return chat_messages(query) if query.turns else query.text


# Settings that change how memories are indexed: changing one re-opens the stores (the FTS
# documents are rebuilt from the stored rows; nothing is embedded again).
INDEX_TIME = frozenset({"lexical_context_window"})


class HelloMemorySystem:
    """Adapter over ``MemoryManager`` (imported lazily: the API may not exist yet).

    Options: ``profile`` (``default`` or ``paper``), ``role_participants`` (also pass a role speaker
    — ``user``, ``assistant`` — as the turn's participant, as a chat integration recording both sides
    would), ``form`` (:data:`FORMS`) and ``text`` (:data:`TEXTS`), and any ``Settings`` field as an
    override (``hello_memory:time_weight=0``).
    :meth:`configure` changes settings between runs over the same index.

    Example:
        >>> s = HelloMemorySystem(profile="paper")             # doctest: +SKIP
        >>> s.index("conv-26", docs); s.search("conv-26", query, k=10)  # doctest: +SKIP
    """

    handles_documents = False

    def __init__(
        self,
        *,
        profile: str = "default",
        mode: str = "embedded",
        role_participants: bool = False,
        form: str = "turns",
        text: str = "as_is",
        context: SystemContext | None = None,
        **overrides: Any,
    ) -> None:
        if profile not in PROFILES:
            raise ValueError(f"unknown hello_memory profile {profile!r}; choose one of {sorted(PROFILES)}")
        if mode not in ("embedded", "server"):
            raise ValueError(f"unknown hello_memory mode {mode!r}; choose embedded or server")
        if form not in FORMS or text not in TEXTS:
            raise ValueError(f"hello_memory form must be one of {FORMS} and text one of {TEXTS}")
        self._profile, self._mode = profile, mode
        self._role_participants = role_participants
        self._form, self._text = form, text
        self._doc_ids: dict[str, str] = {}  # memory id -> doc id (``messages``: one metadata per call)
        self._context = context or SystemContext()
        self._home: Path | None = None
        self._managers: dict[str, Any] = {}
        try:
            from hello_memory import MemoryManager, Settings
        except ImportError as e:
            raise SystemUnavailableError(
                f"hello_memory.MemoryManager is not importable yet ({e}); run bm25/dense meanwhile"
            ) from e
        self._manager_cls: Any = MemoryManager
        self._settings_cls: Any = Settings
        unknown = sorted(set(overrides) - set(Settings.model_fields))
        if unknown:
            raise ValueError(f"unknown hello_memory option(s) {unknown}: not Settings fields")
        self._overrides: dict[str, Any] = dict(overrides)
        self._embedder: Any = None

    def config(self) -> dict[str, Any]:
        """Profile, mode, the settings overrides it applies, and whether embeddings were cached."""
        mode = "server (qdrant-client local mode on disk)" if self._mode == "server" else "embedded"
        return {
            "profile": self._profile,
            "mode": mode,
            "settings": {**PROFILES[self._profile], **self._overrides},
            "role_participants": self._role_participants,
            "form": self._form,
            "text": self._text,
            "api": "MemoryManager",
            "embed_cache": str(self._context.embed_cache) if self._context.embed_cache else None,
        }

    def _settings(self) -> Any:
        assert self._home is not None
        server = {"qdrant_url": str(self._home / "qdrant")} if self._mode == "server" else {}
        return self._settings_cls(
            home=self._home / "home", **{**PROFILES[self._profile], **self._overrides}, **server
        )

    def _shared_embedder(self, settings: Any) -> Any:
        """One embedder for every corpus (the model loads once); cached e5 with ``--embed-cache``."""
        if self._embedder is None:
            if self._context.embed_cache is not None and settings.resolved_embedder() == "e5":
                from benchmarks.systems.encoder import CachedE5Embedder, shared_encoder

                self._embedder = CachedE5Embedder(shared_encoder(self._context.embed_cache))
            else:
                from hello_memory.embedders.factory import make_embedder

                self._embedder = make_embedder(settings)
        return self._embedder

    def _manager(self, corpus_id: str) -> Any:
        if corpus_id not in self._managers:
            if self._home is None:
                self._home = Path(tempfile.mkdtemp(prefix="hm-bench-"))
            settings = self._settings()
            self._managers[corpus_id] = self._manager_cls(
                settings, user_id=corpus_id, embedder=self._shared_embedder(settings)
            )
        return self._managers[corpus_id]

    def configure(self, overrides: dict[str, Any]) -> None:
        """Search with these settings overrides from now on (replacing earlier ones), same index.

        Query-time settings are swapped in place; an index-time one (:data:`INDEX_TIME`) closes and
        re-opens every manager so that the stores re-index (lexically: nothing is embedded again).
        """
        unknown = sorted(set(overrides) - set(self._settings_cls.model_fields))
        if unknown:
            raise ValueError(f"unknown hello_memory option(s) {unknown}: not Settings fields")
        before = self._settings()
        self._overrides = dict(overrides)
        after = self._settings()
        if any(getattr(before, k) != getattr(after, k) for k in INDEX_TIME):
            corpora = list(self._managers)
            self._close_managers()
            for cid in corpora:
                self._manager(cid)
        for mm in self._managers.values():
            mm.settings = after

    def index(self, corpus_id: str, docs: Sequence[Doc]) -> None:
        """Add every doc as an episodic memory of user ``corpus_id``."""
        mm = self._manager(corpus_id)
        if self._form == "messages":  # one add per session; docs without one as texts
            text = "bare" if self._text == "as_is" else self._text  # the product decides the content
            for part in sessions(docs):
                if part[0].session_id is None:
                    mm.add_many([memory_payload(part[0], self._role_participants, "plain", self._text)])
                    continue
                turns = mm.add([chat_message(d, text) for d in part], session_id=part[0].session_id,
                               created_at=part[0].created_at)
                self._doc_ids.update({t.id: d.doc_id for t, d in zip(turns, part, strict=True)})
            return
        for start in range(0, len(docs), ADD_BATCH):
            mm.add_many([memory_payload(d, self._role_participants, self._form, self._text, corpus_id)
                         for d in docs[start : start + ADD_BATCH]])

    def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
        """Doc ids of the top ``k`` episodic hits, asked at the query's own time when it has one."""
        hits = self._manager(corpus_id).search(
            query_input(query), limit=k, memory_types=["episodic"], reference_time=query.created_at
        )
        out: list[str] = []
        for hit in hits:
            doc_id = self._doc_ids.get(hit.item.id, hit.item.metadata.get("doc_id"))
            if doc_id is not None and doc_id not in out:
                out.append(str(doc_id))
        return out[:k]

    def _close_managers(self) -> None:
        for mm in self._managers.values():
            close = getattr(mm, "close", None)
            if callable(close):
                close()
        self._managers.clear()

    def close(self) -> None:
        """Close every manager and delete the temporary home."""
        self._close_managers()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
