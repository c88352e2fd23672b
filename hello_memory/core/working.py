"""The working tier: its limits (TTL, capacity, token budget) and its score.

Scoring: TF-IDF cosine + keyword overlap, time decay. Working memories are few (capacity 50 per
user), so the TF-IDF space is built per query over the user's live working items; no index is kept.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from hello_memory.core import MemoryCore
from hello_memory.core.deletes import purge
from hello_memory.core.scoring import working_decay, working_score
from hello_memory.errors import DiskFullError
from hello_memory.language.text import estimate_tokens, lexical_tokens
from hello_memory.models import MemoryItem, MemoryType, ScoredMemory
from hello_memory.stores.records.base import RecordOrder, RecordQuery

logger = logging.getLogger(__name__)


def expire_working(core: MemoryCore, user_id: str) -> None:
    """Delete the user's working memories older than the TTL."""
    if MemoryType.WORKING not in core.enabled:
        return
    cutoff = (core.now() - core.ttl).timestamp()
    old = core.records.scan(user_id, RecordQuery(types=(MemoryType.WORKING,), time_range=(None, cutoff)))
    if old:
        try:
            purge(core, old)
        except DiskFullError as e:  # reads call this and go on; the purge runs once there is room
            logger.warning("expired working memories not purged: %s", e)


def enforce_working_limits(core: MemoryCore, user_id: str) -> None:
    """Keep at most ``working_capacity`` items and ``working_token_budget`` tokens (least important go first)."""
    expire_working(core, user_id)
    items = core.records.scan(user_id, RecordQuery(types=(MemoryType.WORKING,), order=RecordOrder.IMPORTANT))
    keep, tokens, evict = 0, 0, []
    for it in items:
        t = estimate_tokens(it.content)
        if keep < core.settings.working_capacity and (
            keep == 0 or tokens + t <= core.settings.working_token_budget
        ):
            keep += 1
            tokens += t
        else:
            evict.append(it)
    if evict:
        purge(core, evict)




def _tfidf(docs: list[list[str]]) -> tuple[dict[str, float], list[dict[str, float]]]:
    n = len(docs)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    idf = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items()}
    vecs = []
    for d in docs:
        tf = Counter(d)
        v = {t: (1 + math.log(c)) * idf[t] for t, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vecs.append({t: x / norm for t, x in v.items()})
    return idf, vecs


def score_working(
    query: str, items: Sequence[MemoryItem], *, now: datetime, ttl_minutes: float
) -> list[ScoredMemory]:
    """Score live working memories against ``query``; items with no lexical or keyword match are dropped."""
    if not items:
        return []
    q_tokens = lexical_tokens(query)
    if not q_tokens:
        return []
    docs = [lexical_tokens(it.content) for it in items]
    idf, vecs = _tfidf(docs)
    q_tf = Counter(q_tokens)
    q_vec = {t: (1 + math.log(c)) * idf.get(t, 0.0) for t, c in q_tf.items()}
    q_norm = math.sqrt(sum(x * x for x in q_vec.values())) or 1.0
    q_set = set(q_tokens)
    out = []
    for item, vec, toks in zip(items, vecs, docs, strict=True):
        lexical = sum(q_vec[t] * vec.get(t, 0.0) for t in q_vec) / q_norm
        keyword = len(q_set & set(toks)) / len(q_set)
        if lexical <= 0 and keyword <= 0:
            continue
        age_min = (now - item.created_at).total_seconds() / 60.0
        score, terms = working_score(lexical, keyword, working_decay(age_min, ttl_minutes), item.importance)
        out.append(ScoredMemory(item=item, score=score, breakdown={"sim": lexical, **terms}))
    return out
