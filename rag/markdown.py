"""Markdown structure: lines, fenced code blocks, ATX headings, and heading recovery for PDF text.

Only the structure the chunker needs is parsed: ATX headings (``#`` .. ``######`` followed by a
space or tab, up to three spaces of indentation), fenced code blocks (CommonMark rules: a closing
fence uses the opening character and is at least as long; an unterminated fence runs to the end
of the document) and paragraphs separated by blank lines. Setext headings, block quotes and HTML
blocks are left as paragraph text.

Example:
    >>> [(b.kind, b.level, b.title) for b in parse_blocks("# A\\n\\ntext\\n```\\n# no\\n```")]
    [('heading', 1, 'A'), ('paragraph', 0, ''), ('code', 0, '')]
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

# Line breaks as CommonMark defines them; "\r\n" must come first so it counts as one break.
_NEWLINE = re.compile(r"\r\n|\r|\n")
# Opening fence: up to 3 spaces, then 3+ backticks or 3+ tildes, then an info string.
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
# ATX heading: 1-6 '#' followed by a space or tab; seven '#' never match because the character
# after the run must be blank.
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t](.*)$")
# An optional closing sequence of '#' (preceded by blanks, or the whole title) is not title text.
_ATX_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")

BlockKind = Literal["heading", "paragraph", "code"]


@dataclass(frozen=True, slots=True)
class Block:
    """A top-level block: ``text[start:end]`` spans its lines (without the final line break).

    Attributes:
        kind: ``"heading"``, ``"paragraph"`` or ``"code"`` (a fenced block, fences included).
        start: offset of the block's first character.
        end: offset just past the block's last line (its line break excluded).
        level: heading level 1-6 (0 for other blocks).
        title: heading text without the ``#`` marks (``""`` for other blocks).
    """

    kind: BlockKind
    start: int
    end: int
    level: int = 0
    title: str = ""


def iter_lines(text: str) -> Iterator[tuple[int, int]]:
    """Yield ``(start, end)`` of every line's content, line breaks (LF, CRLF, CR) excluded."""
    pos = 0
    for m in _NEWLINE.finditer(text):
        yield pos, m.start()
        pos = m.end()
    if pos < len(text):
        yield pos, len(text)


def parse_heading(line: str) -> tuple[int, str] | None:
    """``(level, title)`` when ``line`` is an ATX heading with a non-empty title, else ``None``."""
    m = _ATX.match(line)
    if m is None:
        return None
    title = _ATX_CLOSING.sub("", m.group(2)).strip()
    return (len(m.group(1)), title) if title else None


def _fence_open(line: str) -> str | None:
    """The fence run (e.g. ``"````"``) when ``line`` opens a fenced code block."""
    m = _FENCE_OPEN.match(line)
    if m is None:
        return None
    fence, info = m.group(1), m.group(2)
    # A backtick fence's info string may not contain backticks (that would be inline code).
    return None if fence[0] == "`" and "`" in info else fence


def _fence_closes(line: str, fence: str) -> bool:
    """True when ``line`` closes a block opened by ``fence``: same character, at least as long."""
    body = line.lstrip(" ")
    if len(line) - len(body) > 3:
        return False
    run = len(body) - len(body.lstrip(fence[0]))
    return run >= len(fence) and not body[run:].strip(" \t")


def parse_blocks(text: str) -> list[Block]:
    """Split ``text`` into headings, fenced code blocks and blank-line separated paragraphs."""
    blocks: list[Block] = []
    para: list[int] = []  # [start, end] of the open paragraph, empty when none
    fence: tuple[str, int] | None = None  # (fence run, block start) while inside a code block
    for start, end in iter_lines(text):
        line = text[start:end]
        if fence is not None:
            if _fence_closes(line, fence[0]):
                blocks.append(Block("code", fence[1], end))
                fence = None
            continue
        blank = not line.strip()
        heading = None if blank else parse_heading(line)
        opened = None if blank or heading else _fence_open(line)
        if para and (blank or heading or opened):
            blocks.append(Block("paragraph", para[0], para[1]))
            para = []
        if heading:
            blocks.append(Block("heading", start, end, heading[0], heading[1]))
        elif opened:
            fence = (opened, start)
        elif not blank:
            para = [para[0] if para else start, end]
    if para:
        blocks.append(Block("paragraph", para[0], para[1]))
    if fence is not None:  # unterminated: the rest of the document is code
        blocks.append(Block("code", fence[1], len(text)))
    return blocks


# ---- heading recovery for text extracted from PDFs -------------------------------------------

_CN_NUM = "一二三四五六七八九十百零〇两"
# "1 Intro", "1. Intro", "2.3.4 Bar": 1-2 digit components, at most six levels.
_DECIMAL = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,5})\.?[ \t\u3000]+(\S.*)$")
# "第一章 绪论", "第3节 方法": the unit character fixes the depth.
_CHAPTER = re.compile(rf"^第([{_CN_NUM}\d]{{1,4}})([篇部编卷章回节])[ \t\u3000]*(\S.*)?$")
_CHAPTER_DEPTH = {"篇": 1, "部": 1, "编": 1, "卷": 1, "章": 1, "回": 1, "节": 2}
# "一、引言" and "（一）背景" (full- or half-width parentheses).
_CN_ENUM = re.compile(rf"^[{_CN_NUM}]{{1,3}}、[ \t\u3000]*(\S.*)$")
_CN_PAREN = re.compile(rf"^[（(][{_CN_NUM}]{{1,3}}[）)][ \t\u3000]*(\S.*)$")
# Headings do not end like sentences or clauses; table-of-contents lines have dot leaders.
_SENTENCE_END = tuple(".。!！?？;；,，:：、")
_LEADERS = re.compile(r"(?:\.\s?){4,}|…{2,}|·{4,}")
_MAX_HEADING_CHARS = 80


def _heading_depth(line: str, base: int) -> int | None:
    """Depth of a numbered heading line, or ``None``; ``base`` is 1 once a chapter was seen."""
    if m := _DECIMAL.match(line):
        parts = m.group(1).split(".")
        title = m.group(2)
        # Titles start with a capital or a non-ASCII letter (CJK): "3 apples" is not a heading.
        if int(parts[0]) == 0 or not (title[0].isupper() or (title[0].isalpha() and not title[0].isascii())):
            return None
        return len(parts)
    if m := _CHAPTER.match(line):
        return _CHAPTER_DEPTH[m.group(2)]
    if _CN_ENUM.match(line):
        return 1 + base
    if _CN_PAREN.match(line):
        return 2 + base
    return None


def _looks_like_heading(line: str) -> bool:
    """Short, not a sentence, no dot leaders, and with at least one letter."""
    return (
        0 < len(line) <= _MAX_HEADING_CHARS
        and not line.endswith(_SENTENCE_END)
        and not _LEADERS.search(line)
        and any(ch.isalpha() for ch in line)
    )


def recover_headings(text: str) -> str:
    """Turn numbered heading lines of extracted PDF text into Markdown ATX headings.

    Recognised: ``1 Intro`` / ``1.2 Foo`` / ``2.3.4 Bar`` (depth = number of components),
    ``第一章 …`` / ``第3节 …`` (章 depth 1, 节 depth 2), ``一、…`` and ``（一）…`` (depth 1 and 2,
    one deeper once a 第…章 heading was seen). Only short lines (at most 80 characters) that do not
    end with sentence or clause punctuation qualify. Form feeds (page breaks) become blank lines.

    Example:
        >>> recover_headings("1 Introduction\\nBody text.\\n1.1 Background\\nMore.")
        '# 1 Introduction\\n\\nBody text.\\n\\n## 1.1 Background\\n\\nMore.'
    """
    out: list[str] = []
    base = 0
    for raw in _NEWLINE.split(text.replace("\f", "\n\n")):
        line = raw.strip()
        depth = _heading_depth(line, base) if _looks_like_heading(line) else None
        if depth is None:
            out.append(raw)
            continue
        if line.startswith("第") and _CHAPTER.match(line):
            base = 1
        out.append(f"\n{'#' * min(depth, 6)} {line}\n")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")
