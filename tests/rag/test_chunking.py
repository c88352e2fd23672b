"""Heading-aware chunking: fixed cases, Hypothesis properties and the happy_llm sample.

The coverage invariant checked by ``assert_invariants`` (and documented in ``rag.chunking``):
every chunk is ``markdown[start:end]``, non-empty, without outer whitespace, within budget;
``start <= overlap_start < end`` with at most ``overlap_tokens`` before ``overlap_start``; between
one chunk's ``end`` and the next chunk's ``overlap_start`` lies only whitespace; so the new-content
spans joined with those gaps give back ``markdown.strip()`` exactly.
"""

from __future__ import annotations

import re
from datetime import timedelta
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hello_memory.errors import InvalidInputError
from hello_memory.language.text import estimate_tokens
from rag.chunking import Chunk, chunk_markdown


def assert_invariants(md: str, chunks: list[Chunk], budget: int, overlap: int) -> None:
    if not md.strip():
        assert chunks == []
        return
    assert chunks, "non-blank input must give chunks"
    assert md[: chunks[0].start].strip() == ""
    assert md[chunks[-1].end :].strip() == ""
    assert chunks[0].overlap_start == chunks[0].start
    for i, c in enumerate(chunks):
        assert c.index == i
        assert md[c.start : c.end] == c.text
        assert c.text and c.text == c.text.strip()
        assert c.tokens == estimate_tokens(c.text) <= budget
        assert c.start <= c.overlap_start < c.end
        assert not md[c.overlap_start].isspace()
        assert estimate_tokens(md[c.start : c.overlap_start]) <= overlap
    for a, b in pairwise(chunks):
        assert a.end <= b.overlap_start
        assert md[a.end : b.overlap_start].strip() == ""
        if b.start < b.overlap_start:  # the overlap is a proper tail of the previous chunk
            assert a.start < b.start < a.end
            assert b.heading_path == a.heading_path
        else:
            assert b.start == b.overlap_start
    pieces = [md[c.overlap_start : c.end] + md[c.end : n.overlap_start] for c, n in pairwise(chunks)]
    assert "".join(pieces) + md[chunks[-1].overlap_start : chunks[-1].end] == md.strip()


def run(md: str, budget: int = 400, overlap: int = 60) -> list[Chunk]:
    chunks = chunk_markdown(md, chunk_tokens=budget, overlap_tokens=overlap)
    assert_invariants(md, chunks, budget, overlap)
    return chunks


# ---- fixed cases ----------------------------------------------------------------------------


@pytest.mark.parametrize("md", ["", " ", "\n\n\t \r\n", "\x0c\n\u3000 "])
def test_blank_input_gives_no_chunks(md: str) -> None:
    assert chunk_markdown(md) == []


@pytest.mark.parametrize(("budget", "overlap"), [(0, 0), (-3, 0), (10, 10), (10, 11), (10, -1), (10.5, 1),
                                                (10, 2.0), (True, 0)])
def test_invalid_budgets_are_rejected(budget: int, overlap: int) -> None:
    with pytest.raises(InvalidInputError):
        chunk_markdown("text", chunk_tokens=budget, overlap_tokens=overlap)


def test_six_heading_levels_and_seven_hashes() -> None:
    md = "# H1\n## H2\n### H3\n#### H4\n##### H5\n###### H6\nbody\n####### H7 is text\n\n## Back\nmore"
    chunks = run(md)
    assert [c.heading_path for c in chunks] == ["H1 > H2 > H3 > H4 > H5 > H6", "H1 > Back"]
    assert chunks[0].text.startswith("# H1") and "####### H7 is text" in chunks[0].text


def test_heading_stack_pops_to_the_right_level() -> None:
    md = "intro\n\n# A\na\n## B\nb\n### C\nc\n## D #\nd\n# E ##\ne"
    assert [c.heading_path for c in run(md)] == ["", "A", "A > B", "A > B > C", "A > D", "E"]


def test_code_fences_full_of_hashes_hold_no_headings() -> None:
    md = (
        "# Real\n\n```python\n# comment\n## also\n\n# still code\n```\n\n"
        "~~~~\n# tilde\n~~~\n# inner tilde is shorter, still code\n~~~~\n\n"
        "````\n```\n# nested\n```\n````\n\n# After\ntext\n\n```\n# unterminated\n\n## to the end"
    )
    chunks = run(md, budget=12, overlap=3)
    assert {c.heading_path for c in chunks} == {"Real", "After"}
    assert chunks[-1].heading_path == "After" and chunks[-1].text.endswith("## to the end")


def test_mixed_chinese_english_counts_and_sentence_splits() -> None:
    sentence = "模型使用 Transformer 架构处理长文本。"
    md = "## 方法\n\n" + sentence * 40
    chunks = run(md, budget=60, overlap=10)
    assert estimate_tokens(sentence) == 13  # 4 + "Transformer" + 7 + "。"
    assert all(c.heading_path == "方法" for c in chunks)
    assert all(c.text.endswith("。") for c in chunks)  # cut at sentence ends only
    assert chunks[0].text.startswith("## 方法\n\n模型")  # the heading stays with its text


def test_overlap_is_respected_and_taken_at_sentence_boundaries() -> None:
    sentences = [f"Sentence number {i} talks about topic {i % 7} in some detail." for i in range(120)]
    md = "# Doc\n\n" + " ".join(sentences)
    chunks = run(md, budget=100, overlap=25)
    assert len(chunks) > 5
    for prev, c in pairwise(chunks):
        overlap = md[c.start : c.overlap_start]
        assert 0 < estimate_tokens(overlap) <= 25
        assert overlap.startswith("Sentence") and prev.text.endswith(".")


def test_paragraphs_are_packed_whole() -> None:
    paras = [" ".join(f"p{i}w{j}" for j in range(30)) for i in range(10)]
    chunks = run("\n\n".join(paras), budget=100, overlap=0)
    assert [c.text.count("\n\n") + 1 for c in chunks] == [3, 3, 3, 1]


def test_heading_glued_to_an_oversized_paragraph() -> None:
    md = "# Title\n\n" + " ".join(f"w{i}" for i in range(500))
    chunks = run(md, budget=50, overlap=5)
    assert chunks[0].text.startswith("# Title\n\nw0 w1")


def test_enormous_line_without_spaces_terminates() -> None:
    latin = run("a" * 300_000, budget=400, overlap=60)
    assert all(len(c.text) <= 400 * 64 for c in latin)
    cjk = run("中" * 50_000, budget=400, overlap=60)
    assert all(c.tokens <= 400 for c in cjk) and len(cjk) >= 50_000 // 400


def test_ten_thousand_hash_lines() -> None:
    run("#\n" * 10_000)
    run("#" * 10_000)
    chunks = run("# x\n" * 10_000, budget=5, overlap=1)
    assert len(chunks) == 10_000 and {c.heading_path for c in chunks} == {"x"}
    assert {c.heading_path for c in run("####### x\n" * 10_000)} == {""}


def test_crlf_gives_the_same_chunks_as_lf() -> None:
    md = "# A\n\nfirst para. second sentence.\n\n## B\n\n```\n# code\n```\ntext\n" * 20
    lf = run(md, budget=20, overlap=5)
    crlf = run(md.replace("\n", "\r\n"), budget=20, overlap=5)
    assert [c.heading_path for c in crlf] == [c.heading_path for c in lf]
    assert [c.text.replace("\r\n", "\n") for c in crlf] == [c.text for c in lf]


def test_empty_parent_heading_joins_its_child() -> None:
    chunks = run("# Part\n\n## Chapter\n\ntext\n\n## Sibling\n\n# Next\n\nbody")
    assert [(c.heading_path, c.text.split("\n")[0]) for c in chunks] == [
        ("Part > Chapter", "# Part"), ("Part > Sibling", "## Sibling"), ("Next", "# Next")]


# ---- properties -----------------------------------------------------------------------------

FRAGMENTS = ["# ", "## ", "###### ", "####### ", "#", "```", "````", "~~~", "\n", "\r\n", "\r",
             "\n\n", " ", "\t", "word", "Foo.", "。", "中文", "；", ";", ", ", "！", "x" * 70, "1. ",
             "\x0c", "\u3000"]
texts = st.one_of(st.lists(st.sampled_from(FRAGMENTS), max_size=120).map("".join), st.text(max_size=300))


@st.composite
def budgets(draw: st.DrawFn) -> tuple[int, int]:
    budget = draw(st.integers(1, 40))
    return budget, draw(st.integers(0, budget - 1))


@settings(max_examples=300, deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow])
@given(md=texts, bo=budgets())
def test_property_invariants_and_termination(md: str, bo: tuple[int, int]) -> None:
    run(md, *bo)


WORDS = st.sampled_from(["alpha", "beta.", "gamma", "中文", "句子。", "x;", "not#heading", "1.2"])


@st.composite
def heading_trees(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, str]]]:
    """A document of random heading levels with bodies, some holding fences full of fake headings.

    Returns the document and, per section, ``(start offset, level, expected path)``.
    """
    parts: list[str] = []
    sections: list[tuple[int, int, str, bool]] = [(0, 0, "", False)]
    stack: list[tuple[int, str]] = []
    pos = 0
    for i in range(draw(st.integers(0, 12))):
        level = draw(st.integers(1, 6))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, f"T{i}"))
        body = " ".join(draw(st.lists(WORDS, max_size=30)))
        if draw(st.booleans()):
            body += "\n\n```\n# FENCED\n## FENCED\n```"
        section = f"{'#' * level} T{i}\n\n{body}\n\n"
        sections.append((pos, level, " > ".join(t for _, t in stack), bool(body.strip())))
        parts.append(section)
        pos += len(section)
    # An empty section followed by a deeper heading joins it: its text carries the deeper path.
    out: list[tuple[int, int, str]] = []
    for start, level, path, has_body in reversed(sections):
        if level > 0 and not has_body and out and out[-1][1] > level:
            path = out[-1][2]
        out.append((start, level, path))
    return "".join(parts), out[::-1]


@settings(max_examples=200, deadline=timedelta(seconds=5))
@given(tree=heading_trees(), bo=budgets())
def test_property_heading_paths_follow_the_tree(tree: tuple[str, list[tuple[int, int, str]]],
                                                bo: tuple[int, int]) -> None:
    md, sections = tree
    starts = [s for s, _, _ in sections]

    def path_at(offset: int) -> str:
        return sections[max(i for i, s in enumerate(starts) if s <= offset)][2]

    for c in run(md, *bo):
        assert "FENCED" not in c.heading_path
        assert c.heading_path == path_at(c.start) == path_at(c.end - 1)


# ---- real-world sample ----------------------------------------------------------------------


def test_happy_llm_chapters(shared_data: Path) -> None:
    folder = shared_data / "happy_llm"
    files = sorted(folder.glob("*.md"))
    if not files:
        pytest.skip(f"no Markdown files in {folder}")
    for path in files:
        md = path.read_text(encoding="utf-8")
        chunks = run(md, 400, 60)
        heads = [m.group(1).strip() for m in re.finditer(r"^#{1,6} +(.+)$", md, re.M)]
        assert chunks and any(h in chunks[-1].heading_path for h in heads), path.name
