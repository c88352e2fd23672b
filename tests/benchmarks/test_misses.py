"""Miss analysis: rankings written by the retrieval CLI, read back and explained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_retrieval_harness import _locomo_file

from benchmarks.datasets.base import Doc, Match, Query, RetrievalTask
from benchmarks.misses import flips, main, miss_report, ranking_records, read_rankings
from benchmarks.retrieval import main as retrieval_main


def _pooled_task() -> RetrievalTask:
    """Two users' evidence in one corpus: each question's gold is a turn the other could match."""
    docs = [
        Doc("a1", "I graduated in Business Administration."),
        Doc("b1", "I graduated with a degree in Computer Science."),
        Doc("x", "We talked about the weather."),
    ]
    queries = [
        Query("qa", "What degree did I graduate with?", "pool", frozenset({"a1"}), "single-session-user"),
        Query("qb", "Which degree do I hold?", "pool", frozenset({"b1"}), "single-session-user"),
        Query("qc", "What did we talk about?", "pool", frozenset({"x"}), "other"),
        Query("qn", "No gold here", "pool", frozenset(), "other"),
    ]
    return RetrievalTask("pooled", {"pool": docs}, queries)


def _write(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_misses_count_other_users_gold_in_the_top_k(tmp_path):
    task = _pooled_task()
    rankings = {"qa": ["b1", "x", "a1"], "qb": ["b1"], "qc": ["a1", "b1"]}
    records = ranking_records(task, "sys", rankings)
    assert [r["qid"] for r in records] == ["qa", "qb", "qc"]  # a query without gold is not judged
    report = miss_report(read_rankings(_write(tmp_path, records)), k=2)
    assert report.n == 3 and not report.span
    assert report.misses == {"single-session-user": 1, "other": 1}
    assert report.other_gold == {"single-session-user": 1, "other": 1}  # b1 is qb's gold, a1 is qa's
    assert [r.qid for r in report.missed] == ["qa", "qc"] and report.missed[0].first_hit() == 3
    assert miss_report(read_rankings(_write(tmp_path, records)), k=3).misses == {"other": 1}


def test_span_misses_count_the_right_document(tmp_path):
    guide = Doc("guide", "x" * 3000)
    task = RetrievalTask(
        "docs",
        {"docs": [guide]},
        [
            Query("q1", "where?", "docs", frozenset({"guide#2500-2600"}), "install"),
            Query("q2", "other?", "docs", frozenset({"other#0-10"}), "install"),
            Query("q3", "hit?", "docs", frozenset({"guide#100-200"}), "install"),
        ],
        match=Match.SPAN,
    )
    rankings = {"q1": ["guide#0-1000"], "q2": ["guide#0-1000"], "q3": ["guide#0-1000"]}
    report = miss_report(read_rankings(_write(tmp_path, ranking_records(task, "rag", rankings))), k=1)
    assert report.span and report.misses == {"install": 2} and report.right_document == {"install": 1}


def test_cli_reads_rankings_written_by_the_retrieval_cli(tmp_path, capsys):
    data = _locomo_file(tmp_path)
    rankings = tmp_path / "runs" / "locomo.jsonl"
    code = retrieval_main(
        ["--dataset", "locomo", "--data", str(data), "--system", "bm25", "--system", "dense",
         "--json", str(tmp_path / "o.json"), "--rankings", str(rankings)]
    )
    assert code == 0
    lines = [json.loads(x) for x in rankings.read_text().splitlines()]
    assert {x["system"] for x in lines} == {"bm25", "dense"} and len(lines) == 8  # 4 judged queries each
    assert all(x["match"] == "id" and x["ranked"] for x in lines)
    capsys.readouterr()
    assert main([str(rankings), "--k", "1", "--system", "bm25", "--examples", "1",
                 "--dataset", "locomo", "--data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "### bm25: misses at 1" in out and "### dense" not in out
    assert "| **all** | 4 |" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k", "0"], "--k must be at least 1"),
        (["--examples", "2"], "--examples needs --dataset and --data"),
        (["--system", "nobody"], "holds no rankings of ['nobody']"),
    ],
)
def test_cli_usage_errors(tmp_path, capsys, args, message):
    path = _write(tmp_path, ranking_records(_pooled_task(), "sys", {"qa": ["a1"]}))
    with pytest.raises(SystemExit) as e:
        main([str(path), *args])
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_a_file_that_is_not_rankings_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"system": "x"}\n')
    with pytest.raises(SystemExit):
        main([str(path)])
    assert "bad.jsonl:1: not a rankings line" in capsys.readouterr().err


def test_against_an_earlier_run_lists_fixed_and_broken_queries(tmp_path, capsys):
    task = _pooled_task()
    before = _write(tmp_path, ranking_records(task, "sys", {"qa": ["b1", "a1"], "qb": ["b1"], "qc": ["x"]}))
    after_path = tmp_path / "after.jsonl"
    after_path.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in ranking_records(task, "sys", {"qa": ["a1"], "qb": ["a1", "x"], "qc": ["x"]})
        )
    )
    f = flips(read_rankings(before), read_rankings(after_path), k=1)
    assert (f.n, f.hits_before, f.hits_after) == (3, 2, 2)
    assert [r.qid for r in f.fixed] == ["qa"] and [r.qid for r in f.broken] == ["qb"]
    assert main([str(after_path), "--against", str(before), "--k", "1", "--examples", "1"]) == 0
    out = capsys.readouterr().out
    assert "hit@1 0.667 → 0.667 (3 queries in both runs; 1 fixed, 1 broken)" in out
    assert "| single-session-user | 1 | 1 |" in out
    assert "- fixed `qa`" in out and "- broken `qb`" in out
    assert main([str(after_path), "--against", str(before), "--k", "2"]) == 0
    assert "hit@2 1.000 → 0.667 (3 queries in both runs; 0 fixed, 1 broken)" in capsys.readouterr().out
