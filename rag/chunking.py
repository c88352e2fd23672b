"""Heading-aware Markdown chunking with a CJK-aware token budget and overlap.

The document is cut into sections at ATX headings (never inside fenced code); a chunk never
spans two sections, so its ``heading_path`` is exact. Inside a section, whole paragraphs are
packed greedily up to ``chunk_tokens``; a heading is glued to the text that follows it; a
paragraph over the budget is split at sentence ends (``。！？`` anywhere, ``.!?`` before
whitespace), then ``；;``, then line breaks, then commas, then between tokens, so no chunk exceeds
the budget. Each chunk after the first of a section starts with at most ``overlap_tokens`` of the
previous chunk's tail, cut at the coarsest boundary available.

Everything is computed on the token spans of :func:`hello_memory.language.text.iter_token_spans`, and
every chunk starts at a token start and ends at a token end, so offsets are exact and the token
count of a slice is the number of spans in it. Runs longer than 64 characters (a base64 blob, a
minified line) are counted as one token per 64 characters, which keeps chunks of such text
bounded in size; the reported ``tokens`` is always ``estimate_tokens(text)``, which is never more.

Coverage invariant (tested): chunk texts are non-empty and start and end with non-whitespace;
``start <= overlap_start < end``; consecutive chunks satisfy ``a.end <= b.overlap_start`` with only
whitespace in ``markdown[a.end:b.overlap_start]``; whitespace alone precedes the first chunk (whose
``overlap_start == start``) and follows the last. So every non-whitespace character of the input
lies in exactly one ``markdown[c.overlap_start:c.end]``, and joining those spans with the gaps
between them gives back ``markdown.strip()``.

Example:
    >>> chunks = chunk_markdown("# A\\n\\nalpha beta.\\n\\n## B\\n\\ngamma", chunk_tokens=8, overlap_tokens=2)
    >>> [(c.heading_path, c.text) for c in chunks]
    [('A', '# A\\n\\nalpha beta.'), ('A > B', '## B\\n\\ngamma')]
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise

from hello_memory.errors import InvalidInputError
from hello_memory.language.text import estimate_tokens, iter_token_spans
from rag.markdown import parse_blocks

# Boundary levels before a token, coarsest first; splitting and overlap prefer lower levels.
_PARA, _SENT, _CLAUSE, _LINE, _COMMA, _TOKEN, _INTRA = range(7)
_MAX_TOKEN_CHARS = 64
MAX_TITLE_CHARS = 200
_CLOSERS = "\"'”’」』）)]】》"
_LIST_MARKERS = frozenset(f"{i}." for i in range(1000))


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk: ``markdown[start:end] == text``; ``[start, overlap_start)`` repeats earlier text.

    Attributes:
        index: position in the returned list.
        text: the chunk text, starting and ending with non-whitespace.
        start: character offset of the chunk in the source Markdown.
        end: character offset just past the chunk.
        heading_path: heading titles from the outermost in, joined by ``" > "``; ``""`` before
            the first heading. Titles over ``MAX_TITLE_CHARS`` are cut (ending in ``…``).
        tokens: ``estimate_tokens(text)``.
        overlap_start: where the chunk's new content begins (``== start`` when it has no overlap).
    """

    index: int
    text: str
    start: int
    end: int
    heading_path: str
    tokens: int
    overlap_start: int


@dataclass(slots=True)
class _Section:
    path: str
    level: int  # level of the section's (last) heading, 0 before the first heading
    headings: int = 0  # leading heading units, glued to the unit after them
    units: list[tuple[int, int]] = field(default_factory=list)  # token ranges of blocks


def _token_spans(text: str) -> tuple[list[tuple[int, int]], set[int]]:
    """Estimate tokens, long runs cut every 64 characters; also the indices of those cuts."""
    spans: list[tuple[int, int]] = []
    intra: set[int] = set()
    for s, e in iter_token_spans(text):
        spans.append((s, min(e, s + _MAX_TOKEN_CHARS)))
        for x in range(s + _MAX_TOKEN_CHARS, e, _MAX_TOKEN_CHARS):
            intra.add(len(spans))
            spans.append((x, min(e, x + _MAX_TOKEN_CHARS)))
    return spans, intra


def count_tokens(text: str) -> int:
    """Tokens as the chunker counts them: :func:`estimate_tokens`, runs over 64 characters one per 64.

    Example:
        >>> count_tokens("short words"), count_tokens("x" * 200)
        (2, 4)
    """
    return len(_token_spans(text)[0])


def _level(prev: str, gap: str) -> int:
    """Level of the boundary after token ``prev`` followed by whitespace ``gap`` (maybe empty)."""
    tail = prev.rstrip(_CLOSERS) or prev
    ch = tail[-1]
    if ch in "。！？" or (ch in ".!?" and gap and tail not in _LIST_MARKERS):
        return _SENT
    if gap.count("\n") + gap.count("\r") - gap.count("\r\n") >= 2:
        return _SENT  # a blank line inside a code block
    if ch == "；" or (ch == ";" and gap):
        return _CLAUSE
    if "\n" in gap or "\r" in gap:
        return _LINE
    if ch in "，、：" or (ch in ",:" and gap):
        return _COMMA
    return _TOKEN


def _levels(text: str, spans: list[tuple[int, int]], intra: set[int]) -> bytearray:
    """``levels[k]``: the level of the boundary before token ``k`` (``levels[0]`` unused)."""
    levels = bytearray(len(spans) + 1)
    for k in range(1, len(spans)):
        ps, pe = spans[k - 1]
        levels[k] = _INTRA if k in intra else _level(text[ps:pe], text[pe : spans[k][0]])
    return levels


def _short_title(title: str) -> str:
    """A heading title cut to ``MAX_TITLE_CHARS``: every chunk of a section stores (and embeds) its
    heading path, so an unbounded title would be stored once per chunk (quadratic growth)."""
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def _sections(text: str, starts: list[int]) -> list[_Section]:
    """Group the blocks into sections, one per heading plus one for text before the first.

    A heading directly followed by a deeper heading joins that heading's section: the deeper
    path names both, so an empty parent heading does not become a chunk of its own.
    """
    sections = [_Section("", 0)]
    stack: list[tuple[int, str]] = []
    for block in parse_blocks(text):
        cur = sections[-1]
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, _short_title(block.title)))
            if not (cur.headings and len(cur.units) == cur.headings and block.level > cur.level):
                cur = _Section("", 0)
                sections.append(cur)
            cur.path, cur.level = " > ".join(t for _, t in stack), block.level
            cur.headings += 1
        unit = (bisect_left(starts, block.start), bisect_left(starts, block.end))
        if unit[1] > unit[0]:
            cur.units.append(unit)
    return [s for s in sections if s.units]


def _glue_headings(sec: _Section, levels: bytearray) -> list[tuple[int, int]]:
    """Units of a section with its leading headings merged into the unit after them.

    Boundaries inside the headings and right after the last one drop to token level, so the
    headings are only ever cut from their text when nothing else fits.
    """
    units, h = sec.units, sec.headings
    if not h:
        return units
    last = min(h + 1, len(units))
    for k in range(units[0][0] + 1, units[h - 1][1] + 1):
        levels[k] = max(levels[k], _TOKEN)
    return [(units[0][0], units[last - 1][1]), *units[last:]]


def _mark_pieces(a: int, b: int, levels: bytearray, budget: int, cut: bytearray) -> None:
    """Mark piece boundaries inside unit ``[a, b)`` until every piece fits the budget.

    A piece over the budget is split at every boundary of the coarsest level inside it, and the
    parts still over the budget are split again at the next level; packing re-joins small pieces.
    """
    todo = [(a, b)]
    while todo:
        a, b = todo.pop()
        if b - a <= budget:
            continue
        inner = levels[a + 1 : b]
        best = min(inner)
        ks = [a + 1 + i for i, lv in enumerate(inner) if lv == best]
        for k in ks:
            cut[k] = 1
        bounds = [a, *ks, b]
        todo.extend((x, y) for x, y in pairwise(bounds) if y - x > budget)


def _overlap_start(prev_start: int, pos: int, limit: int, levels: bytearray) -> int:
    """Token index where the overlap before ``pos`` starts: at most ``limit`` tokens, never the
    whole previous chunk, at the coarsest boundary level available (then the longest)."""
    lo = max(prev_start + 1, pos - limit)
    if lo >= pos:
        return pos
    window = levels[lo:pos]
    return lo + window.index(min(window))


def _pack(
    a: int, b: int, cut: bytearray, levels: bytearray, budget: int, overlap: int
) -> Iterator[tuple[int, int, int]]:
    """Yield ``(start, new_start, end)`` token indices of the chunks of section ``[a, b)``."""
    pos, prev = a, -1
    while pos < b:
        first = cut.find(1, pos + 1, b + 1)  # cut[b] is set, so a piece end is always found
        q = pos if prev < 0 else _overlap_start(prev, pos, min(overlap, budget - (first - pos)), levels)
        end = cut.rfind(1, first, min(b, q + budget) + 1)
        yield q, pos, end
        prev, pos = q, end


def _validate(markdown: object, chunk_tokens: int, overlap_tokens: int) -> None:
    if not isinstance(markdown, str):
        raise InvalidInputError("markdown must be a str", field="markdown")
    for field_name, value in (("chunk_tokens", chunk_tokens), ("overlap_tokens", overlap_tokens)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidInputError(f"{field_name} must be an int, got {value!r}", field=field_name)
    if chunk_tokens < 1:
        raise InvalidInputError(f"chunk_tokens must be >= 1, got {chunk_tokens}", field="chunk_tokens")
    if not 0 <= overlap_tokens < chunk_tokens:
        raise InvalidInputError(
            f"overlap_tokens must be >= 0 and < chunk_tokens ({chunk_tokens}), got {overlap_tokens}",
            field="overlap_tokens",
        )


def chunk_markdown(markdown: str, *, chunk_tokens: int = 400, overlap_tokens: int = 60) -> list[Chunk]:
    """Cut Markdown into heading-aware chunks of at most ``chunk_tokens`` estimated tokens.

    Args:
        markdown: the document; LF, CRLF and CR line endings are all accepted.
        chunk_tokens: token budget per chunk (CJK characters count one each, other
            whitespace-separated runs one each).
        overlap_tokens: at most this many tokens of a chunk's tail open the next chunk of the
            same section.

    Returns:
        The chunks in document order (``[]`` for empty or whitespace-only input).

    Raises:
        InvalidInputError: ``chunk_tokens < 1``, ``overlap_tokens < 0`` or
            ``overlap_tokens >= chunk_tokens``.
    """
    _validate(markdown, chunk_tokens, overlap_tokens)
    spans, intra = _token_spans(markdown)
    levels = _levels(markdown, spans, intra)
    cut = bytearray(len(spans) + 1)
    chunks: list[Chunk] = []
    for sec in _sections(markdown, [s for s, _ in spans]):
        units = _glue_headings(sec, levels)
        for ua, ub in units:
            levels[ua] = _PARA
            cut[ua] = cut[ub] = 1
            _mark_pieces(ua, ub, levels, chunk_tokens, cut)
        for q, pos, end in _pack(units[0][0], units[-1][1], cut, levels, chunk_tokens, overlap_tokens):
            start, stop = spans[q][0], spans[end - 1][1]
            text = markdown[start:stop]
            tokens = estimate_tokens(text)
            chunks.append(Chunk(len(chunks), text, start, stop, sec.path, tokens, spans[pos][0]))
    return chunks
