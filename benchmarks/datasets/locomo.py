"""LoCoMo (ACL 2024): every turn is a doc, every category 1-4 QA is a query.

One corpus per conversation (``sample_id``). A turn's text is ``"{speaker}: {text}"`` plus
``" [image: {blip_caption}]"`` when the turn shared an image; its ``created_at`` is the session's
``session_N_date_time``. Category 5 (adversarial: the question twists a fact, e.g. asks about the
other speaker, and its answer is not in the conversation) becomes an unanswerable query
(``answerable=False``, category ``adversarial``, no gold): it scores the no-answer rate only.
Session-level gold is the sessions of a question's evidence turns (a doc's ``session_id`` is its
session number), so the report has a session level too.
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

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL = 5

# Evidence ids are "D<session>:<turn>"; a few are malformed ("D:11:26", "D30:05"): an optional colon
# after the D and leading zeros on the turn are tolerated, and "D8:6; D9:17" lists are split first.
_EVIDENCE = re.compile(r"^D:?(\d+):0*(\d+)$")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


def normalise_evidence(raw: list[str]) -> set[str]:
    """Canonical ``"D{s}:{t}"`` ids from a raw ``evidence`` list (unparseable entries dropped).

    Example:
        >>> sorted(normalise_evidence(["D8:6; D9:17", "D:11:26", "D30:05"]))
        ['D11:26', 'D30:5', 'D8:6', 'D9:17']
    """
    out: set[str] = set()
    for item in raw:
        for part in re.split(r"[;\s]+", str(item)):
            m = _EVIDENCE.match(part)
            if m:
                out.add(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out


def parse_session_date(text: str) -> datetime | None:
    """Parse ``"1:56 pm on 8 May, 2023"`` as UTC; ``None`` when it does not parse."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [image: {turn['blip_caption']}]"
    return text


def _conversation_docs(conv: dict[str, Any]) -> list[Doc]:
    sessions = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.match(key)))
    docs: list[Doc] = []
    for s in sessions:
        when = parse_session_date(str(conv.get(f"session_{s}_date_time", "")))
        for turn in conv[f"session_{s}"]:
            dia_id = normalise_evidence([turn["dia_id"]]) or {turn["dia_id"]}
            docs.append(
                Doc(
                    next(iter(dia_id)),
                    _turn_text(turn),
                    when,
                    str(s),
                    turn["speaker"],
                    {"caption": turn.get("blip_caption")} if turn.get("blip_caption") else {},
                )
            )
    return docs


def load(path: Path, split: str = DEFAULT_SPLIT) -> RetrievalTask:
    """Load ``path`` itself when it is a file, else ``locomo_<split>.json`` inside it."""
    split = check_split(split)
    path = resolve_file(path, [f"locomo_{split}.json"], "locomo")
    samples = json.loads(path.read_text(encoding="utf-8"))
    corpora: dict[str, list[Doc]] = {}
    queries: list[Query] = []
    dropped = 0
    for sample in samples:
        cid = str(sample["sample_id"])
        corpora[cid] = _conversation_docs(sample["conversation"])
        known = {d.doc_id for d in corpora[cid]}
        for i, qa in enumerate(sample["qa"]):
            if qa.get("category") == ADVERSARIAL:
                queries.append(Query(f"{cid}/{i}", str(qa["question"]), cid, frozenset(), "adversarial",
                                     answerable=False))
                continue
            if qa.get("category") not in CATEGORIES:
                continue
            evidence = normalise_evidence(qa.get("evidence", []))
            gold = evidence & known
            dropped += len(evidence - known)
            if gold:
                sessions = frozenset(g.split(":")[0][1:] for g in gold)  # "D<s>:<t>" → the doc's session_id "<s>"
                queries.append(
                    Query(f"{cid}/{i}", str(qa["question"]), cid, frozenset(gold), CATEGORIES[qa["category"]],
                          gold_sessions=sessions)
                )
    notes = (f"{dropped} evidence ids not found among the turns were dropped",) if dropped else ()
    if dropped:
        logger.info("locomo: dropped %d unknown evidence ids", dropped)
    return RetrievalTask(f"locomo{split_suffix(split)}", corpora, queries, unit="turn", notes=notes)
