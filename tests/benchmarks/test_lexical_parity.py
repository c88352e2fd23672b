"""benchmarks.lexical_parity on a tiny task: both record stores rank, and the report says so."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.datasets.base import Doc, Query, RetrievalTask
from benchmarks.lexical_parity import compare, main, to_markdown


def tiny_task() -> RetrievalTask:
    docs = [
        Doc("d1", "We hiked up the mountain on Saturday", session_id="s1"),
        Doc("d2", "The violin lesson moved to Tuesday", session_id="s1"),
        Doc("d3", "我们周末去爬山了", session_id="s2"),
        Doc("d4", "Grandma baked an apple pie", session_id="s2"),
    ]
    queries = [
        Query("q1", "Who hiked the mountain?", "c1", frozenset({"d1"})),
        Query("q2", "爬山", "c1", frozenset({"d3"})),
        Query("q3", "apple pie", "c1", frozenset({"d4"})),
    ]
    return RetrievalTask("tiny", {"c1": docs}, queries, unit="turn")


def test_both_stores_find_the_gold_and_agree() -> None:
    result = compare(tiny_task(), window=1, avg_len=None)
    assert [r.store for r in result.runs] == ["sqlite-fts5-bm25", "qdrant-sparse-idf (local mode)"]
    for run in result.runs:
        assert run.metrics["turn"]["recall@10"] == 1.0
    assert result.top1_agreement == 1.0 and (result.docs, result.queries) == (4, 3)
    assert "| tiny | 1 | default | sqlite-fts5-bm25 | turn | 1.000 |" in to_markdown([result])


def test_command_line_writes_json_and_markdown(tmp_path: Path, shared_data: Path) -> None:
    out, md = tmp_path / "p.json", tmp_path / "p.md"
    main(
        [
            "--dataset",
            "madial:en",
            "--data",
            str(shared_data),
            "--limit-queries",
            "5",
            "--json",
            str(out),
            "--markdown",
            str(md),
        ]
    )
    (row,) = json.loads(out.read_text())
    assert row["queries"] == 5 and len(row["runs"]) == 2
    assert "madial-en" in md.read_text()
