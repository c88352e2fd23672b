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
Abstention questions (``question_id`` ending in ``_abs``) are not queries (their oracle
sessions still join the pooled corpus as distractors). Questions whose answer
sits only in assistant turns have no turn-level gold and count for the session level only.
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


def _session_docs(sid: str, turns: list[dict[str, Any]], when: datetime | None) -> list[Doc]:
    return [
        Doc(f"{sid}:{i}", str(t["content"]), when, sid, "user", {"has_answer": bool(t.get("has_answer"))})
        for i, t in enumerate(turns)
        if t.get("role") == "user"
    ]


def _haystack(item: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]], datetime | None]]:
    dates = item.get("haystack_dates") or [""] * len(item["haystack_session_ids"])
    return [
        (str(sid), turns, parse_date(str(date)))
        for sid, turns, date in zip(
            item["haystack_session_ids"], item["haystack_sessions"], dates, strict=True
        )
    ]


def _query(item: dict[str, Any], corpus_id: str) -> Query:
    sessions = frozenset(str(s) for s in item.get("answer_session_ids", []))
    gold = {
        f"{sid}:{i}"
        for sid, turns, _ in _haystack(item)
        if sid in sessions
        for i, t in enumerate(turns)
        if t.get("role") == "user" and t.get("has_answer")
    }
    return Query(
        str(item["question_id"]),
        str(item["question"]),
        corpus_id,
        frozenset(gold),
        str(item.get("question_type")),
        parse_date(str(item.get("question_date", ""))),
        sessions,
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


def load(path: Path, split: str | None = None) -> RetrievalTask:
    """Load a LongMemEval split from a file or its directory (see the module docstring).

    ``split`` defaults to ``oracle`` for a directory and to the file's own kind for a file.
    """
    if split is None:
        split = ("oracle" if "oracle" in path.name else "s") if path.is_file() else "oracle"
    split = check_split(split)
    path = resolve_file(path, split_files(split), "longmemeval")
    pooled = split.startswith("oracle")
    corpora: dict[str, list[Doc]] = {}
    queries: list[Query] = []
    seen: set[str] = set()
    for item in _read(path):
        abstention = str(item["question_id"]).endswith("_abs")
        if abstention and not pooled:
            continue  # its haystack would be a corpus without queries
        cid = POOLED if pooled else str(item["question_id"])
        docs = corpora.setdefault(cid, [])
        for sid, turns, when in _haystack(item):
            if not pooled or sid not in seen:
                seen.add(sid)
                docs.extend(_session_docs(sid, turns, when))
        if not abstention:
            queries.append(_query(item, cid))
    without = sum(1 for q in queries if not q.gold)
    notes = (f"{without} questions have no user-turn gold (answer in assistant turns): session level only",)
    return RetrievalTask(f"longmemeval-{split}", corpora, queries, unit="turn", notes=notes)
