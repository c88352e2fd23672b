"""Passages: the parts of a chunk that are embedded, bounded in number, size and model work.

Chunks are what search returns and what an answer cites; passages are what is embedded. A chunk
over ``PASSAGE_TOKENS`` is cut into passages at its paragraph and sentence boundaries (the chunker
itself, with no overlap), each embedded under the chunk's heading path, and a chunk's dense score
is its best passage's cosine. One vector for a whole ~1,800-character chunk averages its topics
away (what passages changed on docs_qa: BENCHMARKS.md).

Work per passage is bounded, whatever the text:

* tokens are counted as the chunker counts them, so an unbroken run (a base64 blob, a minified
  line, one 300,000-character "word") counts one token per 64 characters and is split like any
  other long text, instead of passing as one "token" of any length;
* what the model sees of a run longer than ``MAX_RUN_CHARS`` is its first ``MAX_RUN_CHARS``
  characters (e5 spends about 0.8 model tokens per character of base64, and a blob means nothing
  to it); the chunk text and its lexical index keep the whole run;
* a passage's embedded text is at most ``CHARS_PER_TOKEN`` characters per token of its budget.

Before these bounds, one 300,000-character word took 53 s and 2.0 GB of peak RSS to index (14
passages of 21,000 characters each); see ``tests/rag/test_pathological.py`` for the figures now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hello_memory.embedders.base import Embedder
from hello_memory.language.text import iter_token_spans
from hello_memory.stores.chunks.base import MAX_PASSAGES, ChunkRecord

__all__ = [
    "MAX_PASSAGES",
    "PASSAGE_TOKENS",
    "PassageEmbedder",
    "bounded",
    "chunk_passages",
    "embed_text",
    "passages",
]
PASSAGE_TOKENS = 128  # estimated tokens (a CJK character or a word each) per embedded passage
MAX_RUN_CHARS = 64  # of an unbroken run, the model sees this many characters (the chunker's token)
CHARS_PER_TOKEN = 16  # embedded characters per token of the passage budget, at most (~2.5x English)
PROGRESS_MIN_PASSAGES = 64  # a progress bar from this many passages up
Progress = Callable[[int, int], object]
"""Called with (passages embedded, passages in all) after every embedding batch."""


def _split(text: str) -> tuple[list[str], int]:
    """The chunker's cut of ``text`` into passages, and the token budget of each."""
    from rag.chunking import chunk_markdown, count_tokens

    tokens = count_tokens(text)
    if tokens <= PASSAGE_TOKENS:
        return [text], PASSAGE_TOKENS
    budget = max(PASSAGE_TOKENS, -(-tokens // MAX_PASSAGES))
    parts = [c.text for c in chunk_markdown(text, chunk_tokens=budget, overlap_tokens=0)]
    if len(parts) > MAX_PASSAGES:  # greedy packing can leave up to twice the ideal count
        step = -(-len(parts) // MAX_PASSAGES)
        parts = ["\n".join(parts[i : i + step]) for i in range(0, len(parts), step)]
    return parts or [text], budget


def bounded(text: str, limit: int) -> str:
    """``text`` with every unbroken run cut to ``MAX_RUN_CHARS`` characters, then to ``limit``.

    Example:
        >>> bounded("see " + "x" * 100 + " here", 1000) == "see " + "x" * 64 + " here"
        True
    """
    out: list[str] = []
    pos = 0
    for s, e in iter_token_spans(text):
        if e - s > MAX_RUN_CHARS:
            out.append(text[pos : s + MAX_RUN_CHARS])
            pos = e
    out.append(text[pos:])
    return "".join(out)[:limit]


def passages(text: str) -> list[str]:
    """The parts of a chunk embedded separately: at most ``MAX_PASSAGES``, each bounded.

    Example:
        >>> passages("short chunk")
        ['short chunk']
        >>> parts = passages("First sentence here. " * 100)
        >>> from hello_memory.language.text import estimate_tokens
        >>> len(parts) > 1 and all(estimate_tokens(t) <= PASSAGE_TOKENS for t in parts)
        True
        >>> [len(p) for p in passages("x" * 300_000)]  # one unbroken run: bounded work
        [64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64]
    """
    parts, budget = _split(text)
    return [bounded(p, budget * CHARS_PER_TOKEN) for p in parts]


def embed_text(heading_path: str, text: str) -> str:
    """What is embedded for a chunk: its heading path gives the chunk its context."""
    return f"{heading_path}\n{text}" if heading_path else text


def chunk_passages(heading_path: str, text: str) -> list[str]:
    """The embedded texts of a chunk's passages: each passage under the chunk's heading path."""
    return [embed_text(heading_path, part) for part in passages(text)]


@dataclass(frozen=True, slots=True)
class PassageEmbedder:
    """The :class:`~hello_memory.stores.chunks.base.PassageEncoder` of RAG: :func:`chunk_passages`
    embedded by ``embedder`` in batches of ``batch_size`` (provider limits), with progress.

    Example:
        >>> from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
        >>> PassageEmbedder(DeterministicFakeEmbedder(dimension=8), batch_size=2).embed(["a", "b", "c"]).shape
        (3, 8)
    """

    embedder: Embedder
    batch_size: int

    @property
    def name(self) -> str:
        """The embedder's name."""
        return self.embedder.name

    @property
    def dimension(self) -> int:
        """The embedder's dimension."""
        return self.embedder.dimension

    def texts(self, chunk: ChunkRecord) -> list[str]:
        """The embedded texts of a stored chunk's passages."""
        return chunk_passages(chunk.heading_path, chunk.text)

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> npt.NDArray[np.float32]:
        """Passage vectors of ``texts``; ``progress(done, total)`` after every batch."""
        parts = []
        bar = None
        if len(texts) >= PROGRESS_MIN_PASSAGES:
            from tqdm import tqdm

            bar = tqdm(total=len(texts), desc="embedding passages", unit="passage", leave=False)
        try:
            for start in range(0, len(texts), self.batch_size):
                parts.append(
                    self.embedder.embed(list(texts[start : start + self.batch_size]), kind="passage")
                )
                if bar is not None:
                    bar.update(len(parts[-1]))
                if progress is not None:
                    progress(min(start + self.batch_size, len(texts)), len(texts))
        finally:
            if bar is not None:
                bar.close()
        return np.vstack(parts) if parts else np.zeros((0, self.embedder.dimension), dtype=np.float32)
