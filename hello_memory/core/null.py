"""The per-question null: what an embedder gives a question, and a memory, with texts unrelated to them.

One cosine floor per script (:mod:`hello_memory.core.calibration`) is a knife edge: e5-small gives
some questions high cosines with everything ("what time is it now?", "今天有什么新闻？": 0.86 with a
note about a mortgage) and some memories high cosines with every question ("Paid off the last of my
student loans." is the best match of four unrelated questions), while a true paraphrase may stay
below the floor (我的上司是谁 → 我的领导叫陈静). So the floor asks instead how far a memory stands out
for *this* question: its cosine against what *this question* and *this memory* give unrelated texts.

From the calibration corpus of the query's script (``hello_memory/data/null_{en,zh}.tsv``, 180
personal memories and 180 questions, written for hello-memory), per embedder and script:

- ``memories``: the mean vector of the corpus's memories (embedded as passages): ``q · memories``
  is question ``q``'s mean cosine with unrelated memories — its null mean, one dot product per query;
- ``questions``: the mean vector of the corpus's questions (embedded as queries): ``m · questions``
  is memory ``m``'s null mean (how much of a hub it is);
- ``spread``: how far above the mean of their two null means the corpus's unrelated pairs
  (question and memory of other topics) reach, scaled so that a standing of 2.88 is their 99.8th
  percentile — about one unrelated memory in 500, the quantile of the absolute floor — as it would
  be for a normal null (for e5 the spread is then 1.16 standard deviations: its null has a slightly
  heavy tail; for TF-IDF, whose unrelated pairs are mostly 0 with a long tail of shared words, 2.4).

A candidate's *standing* is ``(cos − (q·memories + m·questions) / 2) / spread``: how many null
spreads it stands above what unrelated texts reach with these two (a hubness correction in the
manner of CSLS, Conneau et al. 2018). :mod:`hello_memory.core.floor` decides with it. Shipped for the
default e5 (``hello_memory/data/null_stats.json``, recomputed by the tests); any other embedder is
measured on first use, once per process and name (720 short texts). Test doubles whose cosines mean
nothing have none: the floor then falls back to its absolute rule.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from hello_memory.core.calibration import NULL_QUANTILE, SCRIPTS, corpus, script_of
from hello_memory.embedders.base import Embedder

logger = logging.getLogger(__name__)

NULL_STANDING = 2.8782  # the standard normal's NULL_QUANTILE quantile: where the null's own quantile stands
_MEANINGLESS = ("fake-",)  # test doubles: only identical texts match (as calibration.floors)
_lock = threading.Lock()
_measured: dict[str, dict[str, Null]] = {}


@dataclass(frozen=True, slots=True)
class Null:
    """One script's null for one embedder (see the module docstring)."""

    memories: np.ndarray
    questions: np.ndarray
    spread: float

    def standing(self, cosine: float, query_mean: float, memory_mean: float) -> float:
        """How many spreads ``cosine`` stands above the pair's null mean.

        Example:
            >>> n = Null(np.zeros(2), np.zeros(2), 0.02)
            >>> round(n.standing(0.85, 0.75, 0.77), 2)
            4.0
        """
        return (cosine - (query_mean + memory_mean) / 2) / self.spread


def measure(embedder: Embedder) -> dict[str, Null]:
    """The null of each script for ``embedder`` (embeds the calibration corpus; not cached)."""
    out = {}
    for script in SCRIPTS:
        c = corpus(script)
        memories = np.asarray(embedder.embed(list(c.memories), kind="passage"), dtype=np.float64)
        questions = np.asarray(embedder.embed(list(c.questions), kind="query"), dtype=np.float64)
        sims = questions @ memories.T
        query_means = sims.mean(axis=1)  # == questions @ memories.mean(0)
        memory_means = sims.mean(axis=0)
        topics = np.asarray(c.topics)
        unrelated = topics[:, None] != topics[None, :]
        residual = (sims - (query_means[:, None] + memory_means[None, :]) / 2)[unrelated]
        spread = float(np.quantile(residual, NULL_QUANTILE)) / NULL_STANDING
        out[script] = Null(memories.mean(axis=0), questions.mean(axis=0), spread)
    return out


@cache
def shipped() -> dict[str, dict[str, Null]]:
    """The nulls shipped with the package (``hello_memory/data/null_stats.json``), by embedder name."""
    text = resources.files("hello_memory").joinpath("data", "null_stats.json").read_text(encoding="utf-8")
    raw: Mapping[str, Mapping[str, Mapping[str, object]]] = json.loads(text)
    return {
        name: {
            script: Null(np.asarray(v["memories"], dtype=np.float64), np.asarray(v["questions"], dtype=np.float64),
                         float(v["spread"]))  # type: ignore[arg-type]
            for script, v in by_script.items()
        }
        for name, by_script in raw.items()
    }


def as_json(nulls: Mapping[str, Null]) -> dict[str, dict[str, object]]:
    """``nulls`` as they are shipped (5 decimals: more than e5's engines agree on)."""
    return {
        script: {"memories": [round(float(x), 5) for x in n.memories],
                 "questions": [round(float(x), 5) for x in n.questions], "spread": round(n.spread, 5)}
        for script, n in nulls.items()
    }  # fmt: skip


def nulls(embedder: Embedder) -> dict[str, Null] | None:
    """The null of each script for ``embedder``: shipped, measured once per process and name, or
    ``None`` for an embedder whose cosines carry no meaning."""
    name = embedder.name
    if name in shipped():
        return shipped()[name]
    if name.startswith(_MEANINGLESS):
        return None
    with _lock:
        if name not in _measured:
            logger.info("measuring the relevance floor's null for %s (once per process)", name)
            _measured[name] = measure(embedder)
        return _measured[name]


def for_query(by_script: Mapping[str, Null], query: str) -> list[Null]:
    """The null(s) that judge ``query``: its script's, or every script's for a query mixing them
    (a candidate must then stand out against each)."""
    script = script_of(query)
    return [by_script[script]] if script is not None else [by_script[s] for s in SCRIPTS]
