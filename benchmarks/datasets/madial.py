"""MADial-Bench (NAACL 2025): memory recall from the dialogue before the test turn.

Memory bank: ``MADial-Bench-{lang}-memory.json``, one JSON object per line, ``{id: {time, scene,
emotion, event, user-id}}``; a memory's text is its ``event``. Queries:
``MADial-Bench-{lang}-dialogue-<split>.json`` (``dev`` here), one dialogue per line; the query is
``"".join(dialogue[:test_turn[0]])`` without the ``<BOD>`` marker (as the benchmark's own
script builds it; ``Query.turns`` keeps the parsed ``(speaker, text)`` turns), the gold is
``relevant-id``. The memory's ``scene`` and ``emotion`` are kept in ``Doc.metadata``.

Corpus choice: ONE CORPUS PER USER. The benchmark's own recall script
(``embedding_top_20_new.py`` in hejunqing/MADial-Bench) ranks only the memories of the dialogue's
``user-id``, every ``relevant-id`` belongs to that user, and a memory system keeps users apart.
The English memory file has no ``user-id``; it lists the users' memories in blocks of ascending
ids (the original script slices it ``[:76]`` / ``[76:]``), so a new user starts where the id drops.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.datasets.base import (
    DEFAULT_SPLIT,
    Doc,
    Query,
    RetrievalTask,
    check_split,
    resolve_file,
    split_suffix,
)

logger = logging.getLogger(__name__)

LANGS = ("zh", "en")


def _read_lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _parse_day(text: str) -> datetime | None:
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def load_memories(path: Path) -> dict[str, list[Doc]]:
    """User id -> that user's memories, from a ``*-memory.json`` file."""
    corpora: dict[str, list[Doc]] = {}
    block, previous = 1, -1
    for line in _read_lines(path):
        for mid, mem in line.items():
            if "user-id" in mem:
                user = str(mem["user-id"])
            else:  # English file: ids ascend within a user's block and drop at the next user
                block += int(mid) < previous
                previous = int(mid)
                user = str(block)
            meta = {"scene": mem.get("scene"), "emotion": mem.get("emotion")}
            corpora.setdefault(user, []).append(
                Doc(str(mid), str(mem["event"]), _parse_day(str(mem.get("time", ""))), None, None, meta)
            )
    return corpora


# A dialogue line is `<Speaker>:"text"` (zh) or `<Speaker>: "text"` (en); a few lines lack the
# speaker tag or the quotes, so both are optional.
_TURN = re.compile(r'^\s*(?:<(?P<speaker>[^>]+)>:)?\s*"?(?P<text>.*?)"?\s*$', re.S)


def parse_turn(line: str) -> tuple[str, str]:
    """``(speaker, text)`` of one dialogue line; the speaker is ``""`` when untagged.

    Example:
        >>> parse_turn('<Bart>: "Hi there!"\\n')
        ('Bart', 'Hi there!')
    """
    m = _TURN.match(line)
    if m is None:  # pragma: no cover - the pattern matches any string
        return "", line.strip()
    return m.group("speaker") or "", m.group("text").strip()


def dialogue_query(item: dict[str, Any], qid: str) -> Query:
    """The query for one dialogue: its turns before the first test turn."""
    lines = [t for t in item["dialogue"][: int(item["test-turn"][0])] if t.strip() != "<BOD>"]
    gold = frozenset(str(r) for r in item["relevant-id"])
    turns = tuple(parse_turn(line) for line in lines)
    return Query(qid, "".join(lines).strip(), str(item["user-id"]), gold, turns=turns)


def load(path: Path, lang: str = "zh", split: str = DEFAULT_SPLIT) -> RetrievalTask:
    """Load MADial-Bench ``lang``: dialogues from ``path`` itself or its
    ``MADial-Bench-<lang>-dialogue-<split>.json``, memories from the ``-memory.json`` beside them."""
    if lang not in LANGS:
        raise ValueError(f"madial --lang must be one of {LANGS}, not {lang!r}")
    dialogues = resolve_file(path, [f"MADial-Bench-{lang}-dialogue-{check_split(split)}.json"], "madial")
    corpora = load_memories(resolve_file(dialogues.parent, [f"MADial-Bench-{lang}-memory.json"], "madial"))
    items = _read_lines(dialogues)
    queries = [dialogue_query(item, str(item.get("id", i))) for i, item in enumerate(items)]
    known = {(cid, d.doc_id) for cid, docs in corpora.items() for d in docs}
    foreign = sum(1 for q in queries for g in q.gold if (q.corpus_id, g) not in known)
    if foreign:
        logger.warning("madial-%s: %d relevant ids are not memories of the dialogue's user", lang, foreign)
    notes = ("one corpus per user-id (the benchmark's convention)",) + (
        (f"{foreign} relevant ids outside the user's memories",) if foreign else ()
    )
    return RetrievalTask(f"madial-{lang}{split_suffix(split)}", corpora, queries, unit="memory", notes=notes)
