"""LongMemEval (ICLR 2025): user turns of chat sessions; turn- and session-level gold.

Split ``oracle`` pools the evidence sessions of all questions into ONE corpus (identical session
ids are indexed once), a realistic single-user retrieval task. Split ``s`` keeps one corpus per
question: its own haystack of about 48 sessions. Any other split name reads
``longmemeval_<split>.json[.gz]``; it is pooled when the name starts with ``oracle`` and one haystack
per question otherwise (``s_test``, ``m_dev``...). A ``--data FILE`` without ``--split`` is pooled
when its file name contains ``oracle``. Only user turns are indexed (doc id
``"{session_id}:{turn_index}"``, ``turn_index`` counting all turns of the session); the
turn-level gold is the user turns flagged ``has_answer`` in the question's answer sessions (a
pooled session may be evidence for one question and a distractor for another), the
session-level gold is ``answer_session_ids``.
Abstention questions (``question_id`` ending in ``_abs``: the answer is not in the history) are
unanswerable queries (``answerable=False``, category ``abstention``, no gold): they score the
no-answer rate only, and their sessions are indexed like any other. Questions whose answer
sits only in assistant turns have no turn-level gold and count for the session level only.

``roles="both"`` indexes the assistant turns too (speaker ``assistant``; the task is named
``longmemeval-<split>-both``), and the turn-level gold is then every turn flagged ``has_answer``:
a user/assistant log, as a chat integration that records both sides would hold it.
"""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.datasets.base import Doc, Query, RetrievalTask, check_split, resolve_file

# The two splits shipped in ../shared/data, by their short names.
FILES = {"oracle": "longmemeval_oracle.json.gz", "s": "longmemeval_s_dev.json.gz"}
POOLED = "pooled"


def parse_date(text: str) -> datetime | None:
    """Parse ``"2023/05/21 (Sun) 19:50"`` as UTC; ``None`` when it does not parse."""
    try:
        return datetime.strptime(text.strip(), "%Y/%m/%d (%a) %H:%M").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _read(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        data: list[dict[str, Any]] = json.load(f)
    return data


ROLES = {"user": ("user",), "both": ("user", "assistant")}


def _session_docs(
    sid: str, turns: list[dict[str, Any]], when: datetime | None, roles: tuple[str, ...] = ("user",)
) -> list[Doc]:
    return [
        Doc(f"{sid}:{i}", str(t["content"]), when, sid, str(t["role"]), {"has_answer": bool(t.get("has_answer"))})
        for i, t in enumerate(turns)
        if t.get("role") in roles
    ]


def _haystack(item: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]], datetime | None]]:
    dates = item.get("haystack_dates") or [""] * len(item["haystack_session_ids"])
    return [
        (str(sid), turns, parse_date(str(date)))
        for sid, turns, date in zip(
            item["haystack_session_ids"], item["haystack_sessions"], dates, strict=True
        )
    ]


def _query(item: dict[str, Any], corpus_id: str, roles: tuple[str, ...] = ("user",)) -> Query:
    qid, asked = str(item["question_id"]), parse_date(str(item.get("question_date", "")))
    if qid.endswith("_abs"):
        return Query(qid, str(item["question"]), corpus_id, frozenset(), "abstention", asked, answerable=False)
    sessions = frozenset(str(s) for s in item.get("answer_session_ids", []))
    gold = {
        f"{sid}:{i}"
        for sid, turns, _ in _haystack(item)
        if sid in sessions
        for i, t in enumerate(turns)
        if t.get("role") in roles and t.get("has_answer")
    }
    return Query(
        qid, str(item["question"]), corpus_id, frozenset(gold), str(item.get("question_type")), asked, sessions
    )


def split_files(split: str) -> list[str]:
    """File names that hold ``split``, in the order they are looked for.

    Example:
        >>> split_files("s_test")
        ['longmemeval_s_test.json.gz', 'longmemeval_s_test.json']
    """
    names = [FILES[split]] if split in FILES else []
    return names + [
        n for n in (f"longmemeval_{split}.json.gz", f"longmemeval_{split}.json") if n not in names
    ]


def load(path: Path, split: str | None = None, roles: str = "user") -> RetrievalTask:
    """Load a LongMemEval split from a file or its directory (see the module docstring).

    ``split`` defaults to ``oracle`` for a directory and to the file's own kind for a file;
    ``roles`` is ``user`` (user turns only) or ``both``.
    """
    if roles not in ROLES:
        raise ValueError(f"longmemeval --roles must be one of {sorted(ROLES)}, not {roles!r}")
    if split is None:
        split = ("oracle" if "oracle" in path.name else "s") if path.is_file() else "oracle"
    split = check_split(split)
    path = resolve_file(path, split_files(split), "longmemeval")
    pooled = split.startswith("oracle")
    corpora: dict[str, list[Doc]] = {}
    queries: list[Query] = []
    seen: set[str] = set()
    indexed = ROLES[roles]
    for item in _read(path):
        cid = POOLED if pooled else str(item["question_id"])
        docs = corpora.setdefault(cid, [])
        for sid, turns, when in _haystack(item):
            if not pooled or sid not in seen:
                seen.add(sid)
                docs.extend(_session_docs(sid, turns, when, indexed))
        queries.append(_query(item, cid, indexed))
    without = sum(1 for q in queries if q.answerable and not q.gold)
    notes = (f"{without} questions have no turn gold among the indexed roles: session level only",)
    name = f"longmemeval-{split}" + ("-both" if roles == "both" else "")
    return RetrievalTask(name, corpora, queries, unit="turn", notes=notes)
