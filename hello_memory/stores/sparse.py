"""Sparse lexical vectors that rank like the FTS5 BM25 index: same terms, BM25 term weights, server IDF.

The SQLite record store ranks memories with FTS5's ``bm25()`` over ``lexical_tokens`` (stemmed
Latin words, jieba words and bigrams for CJK; :mod:`hello_memory.language.text`). A server has no FTS5, so
the Qdrant record store encodes the same document as a sparse vector:

- **terms**: :func:`index_terms` yields exactly the terms FTS5's ``unicode61`` tokenizer indexes for
  the store's token string (word characters only, lower case, ``_`` as a separator, diacritics
  removed from Latin letters), checked against FTS5 itself in the tests;
- **ids**: the first 4 bytes of BLAKE2b of the UTF-8 term, big-endian (:func:`term_id`) — stable
  across processes, machines and Python versions (``hash()`` is salted). Two terms share an id with
  probability ~n²/2³³ (a 100k-term vocabulary: ~1 pair); their counts then add up;
- **document weights**: BM25's saturated term frequency, computed client-side,
  ``tf·(k1+1) / (tf + k1·(1 − b + b·dl/avg_len))`` (``context_avg_len`` for documents with session
  neighbours, see :class:`LexicalEncoder`) with FTS5's defaults ``k1 = 1.2``, ``b = 0.75``
  and ``dl`` the document's terms plus one (FTS5 counts the row's scope token too). FTS5 divides by
  the live mean document length; a sparse vector cannot follow a moving mean, so ``avg_len`` is a
  fixed parameter (:func:`default_avg_len`, by context window) recorded with the collection, so
  every worker encodes alike;
- **query**: each distinct term once, weight 1;
- **IDF**: supplied by the server (``Modifier.IDF``: ``ln(1 + (N − n + 0.5)/(n + 0.5))`` over the
  points that carry the sparse vector). FTS5 uses ``ln((N − n + 0.5)/(n + 0.5))`` (floored at 1e-6):
  the same order for rare terms, a little more weight for terms in most documents.

A memory's document can carry the conversation around it (:func:`context_document`, the same rule
as :mod:`hello_memory.stores.records.sqlite_lexical`: up to ``window`` live episodic turns of the session
before and after, its own terms twice).
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hello_memory.errors import InvalidInputError
from hello_memory.stores.records.sqlite_lexical import fts_tokens

K1 = 1.2
B = 0.75
# Mean lexical terms of one memory, rounded, across the conversational development sets (their
# per-set means are in docs/benchmarks/history.md), plus FTS5's scope token.
TERMS_PER_MEMORY = 20.0
DEFAULT_AVG_LEN = TERMS_PER_MEMORY
MAX_QUERY_TERMS = 256


def default_avg_len(window: int) -> float:
    """The typical length of a document *with* ``window`` session neighbours on each side.

    Such a document is its own terms twice plus up to ``2 * window`` neighbours':
    ``TERMS_PER_MEMORY * (2 + 2 * window)`` (120 for the default window 2, between the measured
    means of the conversational development sets: docs/benchmarks/history.md).

    Example:
        >>> default_avg_len(0), default_avg_len(2)
        (20.0, 120.0)
    """
    return TERMS_PER_MEMORY if window == 0 else TERMS_PER_MEMORY * (2 + 2 * window)


def _latin(ch: str) -> bool:
    code = ord(ch)
    return code < 0x250 or 0x1E00 <= code <= 0x1EFF


def _fold(term: str) -> str:
    """``term`` with diacritics removed from Latin letters (FTS5 ``unicode61`` ``remove_diacritics=1``)."""
    if term.isascii():
        return term
    out = []
    for ch in term:
        parts = unicodedata.normalize("NFD", ch) if ord(ch) >= 0x80 else ch
        if len(parts) > 1 and _latin(parts[0]) and all(unicodedata.combining(c) for c in parts[1:]):
            out.append(parts[0])
        else:
            out.append(ch)
    return "".join(out)


def index_terms(tokens: Iterable[str]) -> list[str]:
    """The terms FTS5 indexes for ``lexical_tokens`` output, in order.

    Example:
        >>> index_terms(["Café", "foo_bar", "喜欢", "!!"])
        ['cafe', 'foo', 'bar', '喜欢']
    """
    out: list[str] = []
    for token in fts_tokens(tokens):
        out.extend(part for part in _fold(token).split("_") if part)
    return out


def term_id(term: str) -> int:
    """Stable 32-bit id of a term (see the module docstring).

    Example:
        >>> term_id("tea") == term_id("tea") and 0 <= term_id("tea") < 2**32
        True
    """
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big")


def context_document(
    before: Sequence[Sequence[str]], own: Sequence[str], after: Sequence[Sequence[str]]
) -> list[str]:
    """A memory's lexical document: neighbours before (oldest first), its own terms twice, neighbours after.

    Without neighbours the document is its own terms once, as in the FTS5 index.
    """
    if not before and not after:
        return list(own)
    out: list[str] = []
    for terms in before:
        out.extend(terms)
    out.extend(own)
    out.extend(own)
    for terms in after:
        out.extend(terms)
    return out


@dataclass(frozen=True, slots=True)
class LexicalEncoder:
    """BM25 document weights and unit query weights over hashed term ids.

    Length normalisation has two references: ``avg_len`` for a memory's own terms and
    ``context_avg_len`` (default: ``avg_len``) for documents that carry session neighbours, several
    times longer. FTS5 normalises by one live mean; a collection of only one kind (conversation turns,
    or memories without sessions) is the common case, and there each kind's own mean is what FTS5
    uses; one shared reference cost lexical recall on memories without sessions (measured in
    docs/benchmarks/history.md).

    Example:
        >>> enc = LexicalEncoder(avg_len=4)
        >>> ids, weights = enc.document(["tea", "tea", "green"])
        >>> len(ids), round(max(weights), 3)
        (2, 1.375)
    """

    k1: float = K1
    b: float = B
    avg_len: float = DEFAULT_AVG_LEN
    context_avg_len: float | None = None

    def __post_init__(self) -> None:
        checks = [("k1", self.k1, 0.0), ("avg_len", self.avg_len, 1e-9)]
        if self.context_avg_len is not None:
            checks.append(("context_avg_len", self.context_avg_len, 1e-9))
        for name, value, lo in checks:
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= lo:
                raise InvalidInputError(f"{name} must be a number >= {lo}", field=name)
        if isinstance(self.b, bool) or not isinstance(self.b, int | float) or not 0 <= self.b <= 1:
            raise InvalidInputError("b must be a number in [0, 1]", field="b")

    @classmethod
    def for_window(cls, window: int, **kwargs: float) -> LexicalEncoder:
        """The default encoder for a collection whose turns carry ``window`` neighbours each side."""
        return cls(**kwargs, context_avg_len=default_avg_len(window))

    def document(self, terms: Sequence[str], *, context: bool = False) -> tuple[list[int], list[float]]:
        """Sparse ``(indices, values)`` of a document's terms (empty for no terms).

        ``context``: the document carries session neighbours (normalised by ``context_avg_len``).
        """
        if not terms:
            return [], []
        counts: Counter[int] = Counter(term_id(t) for t in terms)
        reference = self.context_avg_len if context and self.context_avg_len is not None else self.avg_len
        norm = self.k1 * (1.0 - self.b + self.b * (len(terms) + 1) / reference)
        ids = sorted(counts)
        return ids, [counts[i] * (self.k1 + 1.0) / (counts[i] + norm) for i in ids]

    def query(self, terms: Sequence[str]) -> tuple[list[int], list[float]]:
        """Sparse ``(indices, values)`` of a query: each distinct term once (at most ``MAX_QUERY_TERMS``)."""
        ids = list(dict.fromkeys(term_id(t) for t in terms))[:MAX_QUERY_TERMS]
        return ids, [1.0] * len(ids)

    def to_json(self) -> dict[str, Any]:
        """The parameters, as recorded in a collection's metadata."""
        return {
            "k1": self.k1,
            "b": self.b,
            "avg_len": self.avg_len,
            "context_avg_len": self.context_avg_len,
            "hash": "blake2b-32",
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LexicalEncoder:
        """The encoder a collection's metadata describes."""
        if data.get("hash", "blake2b-32") != "blake2b-32":
            raise InvalidInputError(f"unknown lexical term hash {data.get('hash')!r}", field="lexical")
        context = data.get("context_avg_len")
        return cls(
            float(data["k1"]),
            float(data["b"]),
            float(data["avg_len"]),
            None if context is None else float(context),
        )
