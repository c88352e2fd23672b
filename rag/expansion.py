"""Query expansion: MQE paraphrases, a HyDE passage, offline pseudo-relevance feedback.

Expansions that need the LLM run concurrently. A failed or absent LLM never blocks retrieval: the
original query is always searched, and the result says which expansions ran and why others did not.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from hello_memory.errors import LLMError
from hello_memory.language.text import detect_language, lexical_tokens
from hello_memory.llm.base import LLMClient
from rag.models import Expansion

logger = logging.getLogger(__name__)

MQE_PROMPT = {
    "zh": (
        "你是检索查询扩展助手。生成语义等价或互补的多样化查询。使用中文，简短，避免标点。",
        "原始查询：{query}\n请给出{n}个不同表述的查询，每行一个。",
    ),
    "en": (
        "You expand search queries. Write diverse paraphrases that mean the same or complementary "
        "things. Use English, keep them short, no punctuation.",
        "Original query: {query}\nGive {n} different phrasings, one per line.",
    ),
}
HYDE_PROMPT = {
    "zh": ("你是知识文档的作者。", "请写一段约 100 字、像技术文档中会出现的段落，直接回答：{query}"),
    "en": (
        "You write technical documentation.",
        "Write a passage of about 80 words, as it would appear in documentation, that answers: {query}",
    ),
}


def _lang(query: str) -> str:
    return "zh" if detect_language(query) in ("zh", "mixed") else "en"


def mqe(llm: LLMClient, query: str, n: int) -> list[str]:
    """``n`` paraphrases of ``query`` in its language (fewer if the model gave fewer)."""
    system, user = MQE_PROMPT[_lang(query)]
    reply = llm.complete(
        [{"role": "system", "content": system}, {"role": "user", "content": user.format(query=query, n=n)}],
        temperature=0.7,
    )
    lines = [ln.strip().lstrip("-*•0123456789.、) \t").strip() for ln in reply.content.splitlines()]
    seen = {query.strip()}
    out = []
    for ln in lines:
        if ln and ln not in seen:
            seen.add(ln)
            out.append(ln)
    return out[:n]


def hyde(llm: LLMClient, query: str) -> str:
    """A hypothetical answer passage for ``query`` (empty if the model returned nothing)."""
    system, user = HYDE_PROMPT[_lang(query)]
    reply = llm.complete(
        [{"role": "system", "content": system}, {"role": "user", "content": user.format(query=query)}],
        temperature=0.3,
    )
    return reply.content.strip()


def llm_expansions(
    llm: LLMClient | None, query: str, *, enable_mqe: bool, n_mqe: int, enable_hyde: bool
) -> tuple[list[Expansion], list[str]]:
    """Run MQE and HyDE concurrently; returns the expansions and notes on what did not run."""
    if not (enable_mqe or enable_hyde):
        return [], []
    if llm is None:
        return [], ["no LLM configured: MQE/HyDE replaced by offline pseudo-relevance feedback"]
    jobs: dict[str, Callable[[], list[str]]] = {}
    if enable_mqe and n_mqe > 0:
        jobs["mqe"] = lambda: mqe(llm, query, n_mqe)
    if enable_hyde:
        jobs["hyde"] = lambda: [t for t in [hyde(llm, query)] if t]
    out: list[Expansion] = []
    notes: list[str] = []
    with ThreadPoolExecutor(max_workers=len(jobs) or 1) as pool:
        futures = {kind: pool.submit(fn) for kind, fn in jobs.items()}
        for kind, fut in futures.items():
            try:
                out += [Expansion(kind=kind, text=t) for t in fut.result()]  # type: ignore[arg-type]
            except LLMError as e:
                logger.warning("%s expansion failed: %s", kind, e)
                notes.append(f"{kind} failed ({e}); searched without it")
    return out, notes


def prf_query(query: str, top_texts: Sequence[str], n_terms: int = 6) -> str | None:
    """Offline pseudo-relevance feedback: the query plus frequent terms of the top chunks."""
    q = set(lexical_tokens(query))
    counts: Counter[str] = Counter()
    for text in top_texts:
        counts.update(t for t in set(lexical_tokens(text)) if t not in q and len(t) > 1)
    terms = [t for t, c in counts.most_common(n_terms * 2) if c >= 2][:n_terms]
    return f"{query} {' '.join(terms)}" if terms else None


def pool_sizes(limit: int, multiplier: int, n_queries: int) -> tuple[int, int]:
    """``pool = max(limit·multiplier, 20)`` split evenly: ``per = max(1, pool // n_queries)``."""
    pool = max(limit * multiplier, 20)
    return pool, max(1, pool // max(1, n_queries))


def merge(per_query: Sequence[Mapping[str, float]], method: str, k: int = 60) -> dict[str, float]:
    """Merge per-query scores by max (seed behaviour) or reciprocal-rank fusion."""
    out: dict[str, float] = {}
    if method == "rrf":
        for scores in per_query:
            for rank, cid in enumerate(sorted(scores, key=lambda c: -scores[c]), 1):
                out[cid] = out.get(cid, 0.0) + 1.0 / (k + rank)
        return out
    for scores in per_query:
        for cid, s in scores.items():
            out[cid] = max(s, out.get(cid, float("-inf")))
    return out
