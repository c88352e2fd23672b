"""The retrieval harness: loaders on tiny files in the real formats, systems, the CLI end to end."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.datasets import load_task
from benchmarks.datasets.base import Doc, Match, Query, RetrievalTask
from benchmarks.datasets.locomo import normalise_evidence, parse_session_date
from benchmarks.evaluation import evaluate
from benchmarks.retrieval import main
from benchmarks.runner import run_system
from benchmarks.systems import RetrievalSystem, SystemUnavailableError, build_system, parse_spec
from benchmarks.systems.hello_memory import (
    HelloMemorySystem,
    chat_message,
    doc_text,
    memory_payload,
    query_input,
    sessions,
)
from benchmarks.systems.hybrid import HybridSystem, rrf
from benchmarks.systems.views import named_speaker_mask, query_text, with_metadata, with_neighbours

# ---------------------------------------------------------------- loaders on tiny real-format files


def _locomo_file(tmp_path: Path) -> Path:
    conv = {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to the LGBTQ support group yesterday."},
            {
                "speaker": "Melanie",
                "dia_id": "D1:2",
                "text": "That sounds powerful! I painted a sunrise last year.",
                "blip_caption": "a photo of a painting of a sunrise over a lake",
            },
            {"speaker": "Caroline", "dia_id": "D1:3", "text": "I want to study counseling and psychology."},
        ],
        "session_2_date_time": "7:55 pm on 9 June, 2023",
        "session_2": [
            {"speaker": "Melanie", "dia_id": "D2:1", "text": "We went camping at the beach with the kids."},
            {"speaker": "Caroline", "dia_id": "D2:2", "text": "I adopted a puppy named Oscar."},
        ],
    }
    qa = [
        {
            "question": "When did Caroline go to the LGBTQ support group?",
            "answer": "7 May 2023",
            "evidence": ["D1:1"],
            "category": 2,
        },
        {"question": "What did Melanie paint?", "answer": "a sunrise", "evidence": ["D1:02"], "category": 4},
        {
            "question": "Where did Melanie camp and what did Caroline adopt?",
            "answer": "beach; puppy",
            "evidence": ["D2:1; D:2:2"],
            "category": 1,
        },
        {
            "question": "What would Caroline study?",
            "answer": "psychology",
            "evidence": ["D1:3", "D9:9"],
            "category": 3,
        },
        {
            "question": "What is Melanie's cat called?",
            "adversarial_answer": "Oscar",
            "evidence": ["D2:2"],
            "category": 5,
        },
    ]
    path = tmp_path / "locomo_dev.json"
    path.write_text(json.dumps([{"sample_id": "conv-1", "conversation": conv, "qa": qa}]))
    return path


def test_locomo_loader(tmp_path):
    task = load_task("locomo", _locomo_file(tmp_path))
    docs = task.corpora["conv-1"]
    assert [d.doc_id for d in docs] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert docs[1].text == (
        "Melanie: That sounds powerful! I painted a sunrise last year. "
        "[image: a photo of a painting of a sunrise over a lake]"
    )
    assert (
        docs[0].created_at == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc) and docs[3].session_id == "2"
    )
    assert [q.category for q in task.queries] == [
        "temporal", "single-hop", "multi-hop", "open-domain", "adversarial"
    ]  # fmt: skip
    assert task.queries[1].gold == {"D1:2"} and task.queries[2].gold == {"D2:1", "D2:2"}
    assert task.queries[3].gold == {"D1:3"} and task.notes  # D9:9 dropped and noted
    # session-level gold: the sessions of the evidence turns, named as the docs' session_id
    assert [q.gold_sessions for q in task.queries[:4]] == [{"1"}, {"1"}, {"2"}, {"1"}] and task.has_sessions
    # category 5: its answer is not in the conversation; scored by the no-answer rate only
    adversarial = task.queries[4]
    assert not adversarial.answerable and adversarial.gold == frozenset()
    assert all(q.answerable for q in task.queries[:4])


def test_locomo_helpers():
    assert normalise_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "junk"]) == {
        "D8:6",
        "D9:17",
        "D11:26",
        "D30:5",
    }
    assert parse_session_date("12:09 am on 13 September, 2023") == datetime(
        2023, 9, 13, 0, 9, tzinfo=timezone.utc
    )
    assert parse_session_date("someday") is None


def _lme_item(
    qid: str, sessions: dict[str, list[dict[str, Any]]], answer: list[str], qtype: str
) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": f"question {qid}?",
        "answer": "x",
        "question_date": "2023/05/28 (Sun) 19:47",
        "haystack_dates": ["2023/05/21 (Sun) 19:50"] * len(sessions),
        "haystack_session_ids": list(sessions),
        "haystack_sessions": list(sessions.values()),
        "answer_session_ids": answer,
    }


def test_longmemeval_oracle_pools_and_dedupes(tmp_path):
    s1 = [
        {"role": "user", "content": "I waited a year for asylum.", "has_answer": True},
        {"role": "assistant", "content": "That is long.", "has_answer": False},
        {"role": "user", "content": "Thanks.", "has_answer": False},
    ]
    s2 = [
        {"role": "user", "content": "Recommend a hotel.", "has_answer": False},
        {"role": "assistant", "content": "Try the Grand.", "has_answer": True},
    ]
    items = [
        _lme_item("q1", {"a1": s1}, ["a1"], "single-session-user"),
        _lme_item("q2", {"a1": s1, "a2": s2}, ["a2"], "single-session-assistant"),
        _lme_item("q3_abs", {"a3": s1}, ["a3"], "single-session-user"),
    ]
    path = tmp_path / "longmemeval_oracle.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(items, f)
    task = load_task("longmemeval", tmp_path, split="oracle")
    assert list(task.corpora) == ["pooled"]
    assert [d.doc_id for d in task.corpora["pooled"]] == ["a1:0", "a1:2", "a2:0", "a3:0", "a3:2"]
    assert [q.qid for q in task.queries] == ["q1", "q2", "q3_abs"]
    assert task.queries[0].gold == {"a1:0"} and task.queries[0].gold_sessions == {"a1"}
    assert task.queries[1].gold == frozenset() and task.queries[1].gold_sessions == {"a2"}
    assert task.has_sessions and task.queries[0].created_at is not None
    abstention = task.queries[2]  # its answer is not in the history: no gold, no-answer rate only
    assert not abstention.answerable and abstention.gold == abstention.gold_sessions == frozenset()
    assert abstention.category == "abstention" and abstention.created_at is not None
    # with both roles the assistant turns are indexed too, and their has_answer flags are gold
    both = load_task("longmemeval", tmp_path, split="oracle", roles="both")
    assert both.name == "longmemeval-oracle-both"
    assert [d.doc_id for d in both.corpora["pooled"]] == [
        "a1:0", "a1:1", "a1:2", "a2:0", "a2:1", "a3:0", "a3:1", "a3:2"
    ]  # fmt: skip
    assert [d.speaker for d in both.corpora["pooled"][:2]] == ["user", "assistant"]
    assert both.queries[1].gold == {"a2:1"}
    with pytest.raises(ValueError, match="roles"):
        load_task("longmemeval", tmp_path, split="oracle", roles="system")


def test_longmemeval_s_one_corpus_per_question(tmp_path):
    s1 = [{"role": "user", "content": "My dog is Rex.", "has_answer": True}]
    path = tmp_path / "longmemeval_s_dev.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(
            [_lme_item("q1", {"a": s1}, ["a"], "t"), _lme_item("q2", {"a": s1, "b": s1}, ["b"], "t")], f
        )
    task = load_task("longmemeval", tmp_path, split="s")
    assert sorted(task.corpora) == ["q1", "q2"] and len(task.corpora["q2"]) == 2
    with gzip.open(path, "wt") as f:  # an abstention question keeps its own haystack
        json.dump([_lme_item("q1", {"a": s1}, ["a"], "t"), _lme_item("q2_abs", {"b": s1}, ["b"], "t")], f)
    task = load_task("longmemeval", tmp_path, split="s")
    assert sorted(task.corpora) == ["q1", "q2_abs"] and not task.queries[1].answerable


def test_madial_loader_per_user(tmp_path):
    zh = [
        {
            "1": {
                "time": "2023-12-25",
                "scene": "活动类",
                "emotion": "开心",
                "event": "Bart在圣诞节晚会上跳舞。",
                "user-id": 1,
                "id": "1",
            }
        },
        {
            "2": {
                "time": "2023-03-07",
                "scene": "活动类",
                "emotion": "开心",
                "event": "Lisa赢得作文比赛。",
                "user-id": 2,
                "id": "2",
            }
        },
    ]
    (tmp_path / "MADial-Bench-zh-memory.json").write_text(
        "\n".join(json.dumps(x, ensure_ascii=False) for x in zh)
    )
    dialogue = {
        "dialogue": [
            "<BOD>\n",
            '<Bart>:"元旦晚会我要表演！"\n',
            '<Assistant>:"太棒了！"\n',
            '<Assistant>:"你记得圣诞节跳舞吗？"\n',
            "<EOD>\n",
        ],
        "test-turn": [3],
        "relevant-id": [1],
        "user-id": 1,
        "id": 0,
    }
    (tmp_path / "MADial-Bench-zh-dialogue-dev.json").write_text(
        json.dumps(dialogue, ensure_ascii=False) + "\n"
    )
    task = load_task("madial", tmp_path, lang="zh")
    assert sorted(task.corpora) == ["1", "2"] and task.corpora["1"][0].text == "Bart在圣诞节晚会上跳舞。"
    q = task.queries[0]
    assert q.corpus_id == "1" and q.gold == {"1"}
    assert q.text == '<Bart>:"元旦晚会我要表演！"\n<Assistant>:"太棒了！"'


def test_madial_english_memory_without_user_ids(tmp_path):
    en = [
        {"3": {"time": "2023-01-01", "event": "Bart ran."}},
        {"7": {"time": "2023-01-02", "event": "Bart swam."}},
        {"2": {"time": "2023-01-03", "event": "Lisa wrote."}},
        {"5": {"time": "2023-01-04", "event": "Lisa read."}},
    ]
    (tmp_path / "MADial-Bench-en-memory.json").write_text("\n".join(json.dumps(x) for x in en))
    d = {
        "dialogue": ["<BOD>\n", '<Lisa>: "Hi"\n', '<Assistant>: "Remember?"\n'],
        "test-turn": [2],
        "relevant-id": [5],
        "user-id": 2,
    }
    (tmp_path / "MADial-Bench-en-dialogue-dev.json").write_text(json.dumps(d) + "\n")
    task = load_task("madial", tmp_path, lang="en")
    assert [d.doc_id for d in task.corpora["1"]] == ["3", "7"] and [d.doc_id for d in task.corpora["2"]] == [
        "2",
        "5",
    ]
    assert task.queries[0].qid == "0" and len(task.notes) == 1  # all relevant ids are the user's


def test_docs_qa_loader_and_fixed_chunk_judging(tmp_path):
    guide = tmp_path / "docs" / "install" / "master.txt"
    guide.parent.mkdir(parents=True)
    guide.write_text("# Install\n" + "x" * 1500 + "Run the installer with --force." + "y" * 600)
    qa = [
        {
            "id": "q1",
            "question": "How do I force the installer?",
            "answer": "--force",
            "category": "installation",
            "context": "...",
            "gold_spans": [{"doc": "install", "start": 1510, "end": 1541}],
        }
    ]
    (tmp_path / "qa_dev.json").write_text(json.dumps(qa))
    task = load_task("docs_qa", tmp_path)
    assert task.match is Match.SPAN and task.chunk_chars == 1000
    assert task.queries[0].gold == {"install#1510-1541"}
    (rep,) = evaluate(task, {"q1": ["install#0-1000", "install#1000-2000"]}, ks=(1, 2))
    assert rep.overall["hit@1"] == 0.0 and rep.overall["hit@2"] == 1.0 and rep.overall["mrr"] == 0.5


def test_held_out_splits_are_other_files_chosen_by_split_or_path(tmp_path):
    """A held-out split is a new file: ``--split NAME`` picks it in a directory, ``--data FILE`` directly."""
    dev = _locomo_file(tmp_path)
    test_file = dev.rename(tmp_path / "locomo_test.json")
    with pytest.raises(FileNotFoundError, match=r"locomo_dev\.json.*holds: locomo_test\.json"):
        load_task("locomo", tmp_path)
    by_split, by_path = load_task("locomo", tmp_path, split="test"), load_task("locomo", test_file)
    assert by_split.name == "locomo-test" and by_path.name == "locomo"
    assert [q.qid for q in by_split.queries] == [q.qid for q in by_path.queries] and by_split.queries
    for bad in ("../locomo_test", "a/b", "-x"):
        with pytest.raises(ValueError, match="plain name"):
            load_task("locomo", tmp_path, split=bad)

    # docs_qa: the questions file may be passed itself; its guides are the docs/ beside it.
    guide = tmp_path / "docs" / "g" / "master.txt"
    guide.parent.mkdir(parents=True)
    guide.write_text("alpha " * 400)
    qa = [{"id": "t1", "question": "alpha?", "gold_spans": [{"doc": "g", "start": 0, "end": 5}]}]
    (tmp_path / "qa_test.json").write_text(json.dumps(qa))
    for task in (
        load_task("docs_qa", tmp_path, split="test"),
        load_task("docs_qa", tmp_path / "qa_test.json"),
    ):
        assert [q.gold for q in task.queries] == [{"g#0-5"}] and [d.doc_id for d in task.corpora["docs"]] == [
            "g"
        ]
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "qa_x.json").write_text(json.dumps(qa))
    with pytest.raises(FileNotFoundError, match="no docs/"):
        load_task("docs_qa", tmp_path / "elsewhere" / "qa_x.json")

    # madial: the memory bank is read from beside the dialogue file.
    bank = {"9": {"time": "2023-01-01", "event": "Lisa swam.", "user-id": 1}}
    (tmp_path / "MADial-Bench-en-memory.json").write_text(json.dumps(bank) + "\n")
    d = {"dialogue": ["<BOD>\n", '<Lisa>: "Hi"\n', "x"], "test-turn": [2], "relevant-id": [9], "user-id": 1}
    (tmp_path / "MADial-Bench-en-dialogue-test.json").write_text(json.dumps(d) + "\n")
    for task in (
        load_task("madial", tmp_path, lang="en", split="test"),
        load_task("madial", tmp_path / "MADial-Bench-en-dialogue-test.json", lang="en"),
    ):
        assert task.queries[0].gold == {"9"} and task.corpora["1"][0].text == "Lisa swam."


def test_longmemeval_split_names_choose_pooled_or_per_question(tmp_path):
    s1 = [{"role": "user", "content": "My dog is Rex.", "has_answer": True}]
    items = [_lme_item("q1", {"a": s1}, ["a"], "t"), _lme_item("q2", {"a": s1, "b": s1}, ["b"], "t")]
    for name in ("longmemeval_s_test.json", "longmemeval_oracle_test.json"):
        (tmp_path / name).write_text(json.dumps(items))
    assert sorted(load_task("longmemeval", tmp_path, split="s_test").corpora) == ["q1", "q2"]
    assert list(load_task("longmemeval", tmp_path, split="oracle_test").corpora) == ["pooled"]
    # A file without --split: its name says which kind it is.
    assert list(load_task("longmemeval", tmp_path / "longmemeval_oracle_test.json").corpora) == ["pooled"]
    assert len(load_task("longmemeval", tmp_path / "longmemeval_s_test.json").corpora) == 2
    with pytest.raises(FileNotFoundError, match="longmemeval_m_dev"):
        load_task("longmemeval", tmp_path, split="m_dev")


def test_cli_reports_a_missing_split_as_a_usage_error(tmp_path, capsys):
    _locomo_file(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "--dataset",
                "locomo",
                "--data",
                str(tmp_path),
                "--split",
                "test",
                "--system",
                "bm25",
                "--json",
                str(tmp_path / "o.json"),
            ]
        )
    assert exit_info.value.code == 2 and "locomo_test.json" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


# ---------------------------------------------------------------- systems and the runner


def test_with_neighbours_and_rrf():
    import numpy as np

    docs = [
        Doc("1", "a", session_id="s"),
        Doc("2", "b", session_id="s"),
        Doc("3", "c", session_id="s"),
        Doc("4", "d", session_id="t"),
        Doc("5", "e"),
    ]
    assert with_neighbours(docs, 1) == ["a\nb", "a\nb\nc", "b\nc", "d", "e"]
    assert with_neighbours(docs, 0) == ["a", "b", "c", "d", "e"]
    assert with_neighbours(docs, 2, 0, center=2) == ["a\na", "a\nb\nb", "a\nb\nc\nc", "d\nd", "e\ne"]
    fused = rrf([np.array([3.0, 2.0, 1.0]), np.array([1.0, 2.0, 3.0])], k=60)
    assert fused[1] == pytest.approx(2 / 62) and fused[0] == pytest.approx(1 / 61 + 1 / 63)


def _without_mem0(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the mem0 peer unavailable whether or not mem0 is installed here."""
    from benchmarks.systems import mem0 as mem0_system

    def missing() -> None:
        raise SystemUnavailableError("mem0 is not installed (test)")

    monkeypatch.setattr(mem0_system, "load_mem0", missing)


def test_parse_spec_and_registry_errors(monkeypatch):
    _without_mem0(monkeypatch)  # an unavailable peer raises, and the CLI skips it
    assert parse_spec("bm25") == ("bm25", {})
    assert parse_spec("rrf_neighbors:window=2,fusion=convex") == (
        "rrf_neighbors",
        {"window": 2, "fusion": "convex"},
    )
    with pytest.raises(ValueError, match="unknown system"):
        build_system("nope")
    with pytest.raises(ValueError, match="key=value"):
        parse_spec("bm25:window")
    with pytest.raises(SystemUnavailableError):
        build_system("mem0")


class FakeSystem:
    """Returns a scripted ranking and records what it was given."""

    handles_documents = False

    def __init__(self, ranking: Sequence[str]) -> None:
        self.ranking = list(ranking)
        self.indexed: dict[str, list[str]] = {}
        self.closed = False

    def config(self) -> dict[str, Any]:
        return {"fake": True}

    def index(self, corpus_id: str, docs: Sequence[Doc]) -> None:
        self.indexed[corpus_id] = [d.doc_id for d in docs]

    def search(self, corpus_id: str, query: Query, k: int) -> list[str]:
        return self.ranking[:k]

    def close(self) -> None:
        self.closed = True


def test_runner_with_fake_system_chunks_documents():
    task = RetrievalTask(
        "d",
        {"c": [Doc("g", "z" * 2500)], "unused": [Doc("h", "z")]},
        [Query("q", "?", "c", frozenset({"g#1200-1300"}))],
        match=Match.SPAN,
        unit="span",
        chunk_chars=1000,
    )
    fake = FakeSystem(["g#0-1000", "g#1000-2000"])
    assert isinstance(fake, RetrievalSystem)
    run = run_system("fake", fake, task, depth=20)
    assert fake.indexed == {"c": ["g#0-1000", "g#1000-2000", "g#2000-2500"]}  # corpus without queries skipped
    assert run.reports[0].overall["hit@1"] == 0.0 and run.reports[0].overall["hit@5"] == 1.0
    assert len(run.query_seconds) == 1 and run.indexed_docs == 3


# ---------------------------------------------------------------- CLI end to end


def test_cli_end_to_end_bm25_and_dense(tmp_path, capsys, monkeypatch):
    _without_mem0(monkeypatch)  # an unavailable peer raises, and the CLI skips it
    out, md = tmp_path / "out.json", tmp_path / "out.md"
    code = main(
        [
            "--dataset",
            "locomo",
            "--data",
            str(_locomo_file(tmp_path)),
            "--system",
            "bm25",
            "--system",
            "dense",
            "--system",
            "mem0",
            "--json",
            str(out),
            "--markdown",
            str(md),
        ]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert set(data["systems"]) == {"bm25", "dense"} and "mem0" in data["skipped"]
    bm25 = data["systems"]["bm25"]
    assert bm25["levels"]["turn"]["n_queries"] == 4
    assert set(bm25["levels"]["turn"]["by_category"]) == {
        "temporal",
        "single-hop",
        "multi-hop",
        "open-domain",
    }
    assert bm25["levels"]["turn"]["overall"]["recall@20"] == 1.0  # 5 turns, k=20 retrieves them all
    assert bm25["levels"]["turn"]["overall"]["hit@1"] >= 0.5
    assert {"index_seconds", "query_ms_p50", "query_ms_p95", "config"} <= set(bm25)
    assert data["systems"]["dense"]["config"]["dense"] is True
    printed = capsys.readouterr().out
    assert "| bm25 |" in printed and "| dense |" in printed and md.read_text() in printed


def test_cli_limit_queries_and_options(tmp_path):
    out = tmp_path / "o.json"
    code = main(
        [
            "--dataset",
            "locomo",
            "--data",
            str(_locomo_file(tmp_path)),
            "--system",
            "bm25:window=1",
            "--limit-queries",
            "2",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert data["n_queries"] == 2 and data["systems"]["bm25:window=1"]["config"]["window"] == 1


# ---------------------------------------------------------------- retrieval ideas (views, options)


def test_query_views_for_dialogues():
    q = Query(
        "q",
        "<Bart>: hi\n<Assistant>: hello",
        "1",
        frozenset(),
        turns=(("Bart", "hi"), ("Assistant", "hello")),
    )
    assert query_text(q, "text") == q.text
    assert query_text(q, "turns") == "hi\nhello"
    assert query_text(q, "user_turns") == "hi"
    plain = Query("p", "When?", "1", frozenset())
    assert query_text(plain, "user_turns") == "When?"
    assert query_text(plain, "conversation") == "When?"
    with pytest.raises(ValueError):
        query_text(plain, "nope")


def test_baselines_search_with_the_query_the_product_gets():
    """MADial: the baselines' default view is the product's conversation query (issue 20), so the
    table compares retrieval, not query formatting."""
    from hello_memory.language.queries import conversation_query

    q = Query("q", '<Bart>:"元旦晚会我要表演！"<Assistant>:"太棒了！"<Bart>:"我还要跳舞"', "1", frozenset(),
              turns=(("Bart", "元旦晚会我要表演！"), ("Assistant", "太棒了！"), ("Bart", "我还要跳舞")))
    product = conversation_query(query_input(q))
    assert product == "元旦晚会我要表演！\n我还要跳舞"
    assert query_text(q, "conversation") == product
    assert HybridSystem(dense=False).options.query_view == "conversation"
    seen: list[str] = []
    system = HybridSystem(dense=False)
    system.index("1", [Doc("m", "跳舞")])
    system._bm25["1"].scores = lambda text: (seen.append(text), np.zeros(1, dtype=np.float32))[1]
    system.search("1", q, 1)
    assert seen == [product]


def test_metadata_and_speaker_helpers():
    docs = [
        Doc("1", "x", speaker="Caroline", metadata={"scene": "Activity", "n": 3}),
        Doc("2", "y", speaker="Mel"),
    ]
    assert with_metadata(docs, ["x", "y"], ["scene", "n"]) == ["x (Activity)", "y"]
    assert named_speaker_mask("what did caroline do?", docs).tolist() == [1.0, 0.0]
    assert named_speaker_mask("Did Caroline and Mel meet?", docs).tolist() == [0.0, 0.0]
    assert named_speaker_mask("Caroline's friend Melanie", docs).tolist() == [1.0, 0.0]  # "Mel" != "Melanie"


def test_speaker_boost_reorders_bm25():
    docs = [
        Doc("1", "Mel: I painted a lake", speaker="Mel"),
        Doc("2", "Caroline: I painted it too", speaker="Caroline"),
    ]
    q = Query("q", "What did Caroline paint, a lake?", "c", frozenset({"2"}))
    plain, boosted = HybridSystem(dense=False), HybridSystem(dense=False, speaker_boost=0.5)
    for s in (plain, boosted):
        s.index("c", docs)
    assert plain.search("c", q, 2)[0] == "1" and boosted.search("c", q, 2)[0] == "2"
    with pytest.raises(ValueError):
        HybridSystem(lexical=False, dense=False)
    with pytest.raises(TypeError):
        HybridSystem(windw=1)


def test_memory_payload_for_hello_memory():
    when = datetime(2023, 5, 8, tzinfo=timezone.utc)
    item = memory_payload(Doc("D1:1", "Caroline: hi", when, "1", "Caroline"))
    assert item == {
        "content": "Caroline: hi",
        "memory_type": "episodic",
        "metadata": {"doc_id": "D1:1", "speaker": "Caroline"},
        "created_at": when,
        "session_id": "1",
        "event_type": "conversation",  # a turn of a session: indexed with the turns around it
        "participants": ["Caroline"],
    }
    assert "created_at" not in memory_payload(Doc("m", "x"))
    assert "event_type" not in memory_payload(Doc("m", "x"))  # MADial memories are not turns
    assert "participants" not in memory_payload(Doc("m", "x", speaker="user"))  # a role, not a name


def test_dialogue_queries_reach_hello_memory_as_chat_messages():
    q = Query(
        "q", "<Bart>: hi <Assistant>: hello", "u", frozenset(), turns=(("Bart", "hi"), ("Assistant", "hello"))
    )
    assert query_input(q) == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert query_input(Query("p", "When?", "u", frozenset())) == "When?"


def test_a_failing_system_is_reported_not_fatal(tmp_path, monkeypatch):
    from benchmarks.systems import hybrid

    def boom(self, corpus_id, query, k):
        raise RuntimeError("search exploded")

    monkeypatch.setattr(hybrid.HybridSystem, "search", boom)
    out = tmp_path / "o.json"
    assert (
        main(
            [
                "--dataset",
                "locomo",
                "--data",
                str(_locomo_file(tmp_path)),
                "--system",
                "bm25",
                "--json",
                str(out),
            ]
        )
        == 1
    )
    assert "search exploded" in json.loads(out.read_text())["skipped"]["bm25"]


def test_memory_payload_forms_and_texts():
    when = datetime(2023, 5, 8, tzinfo=timezone.utc)
    doc = Doc("D1:1", "Caroline: hi", when, "1", "Caroline")
    session = memory_payload(doc, form="session")
    assert session["session_id"] == "1" and session["participants"] == ["Caroline"] and "event_type" not in session
    plain = memory_payload(doc, form="plain", text="bare")
    assert plain["content"] == "hi" and not {"session_id", "participants", "event_type"} & set(plain)
    notes = memory_payload(Doc("m1", "went hiking", when), form="notes", corpus_id="7")
    assert (notes["session_id"], notes["participants"]) == ("agent-session", ["user 7"])
    assert "event_type" not in notes
    assert doc_text(Doc("x", "hello", speaker="user"), "named") == "user: hello"
    assert chat_message(doc) == {"role": "user", "name": "Caroline", "content": "hi"}
    assert chat_message(Doc("x", "hello", speaker="assistant")) == {"role": "assistant", "content": "hello"}
    docs = [Doc("a", "1", session_id="s"), Doc("b", "2", session_id="s"), Doc("c", "3"), Doc("d", "4", session_id="t")]
    assert [[d.doc_id for d in part] for part in sessions(docs)] == [["a", "b"], ["c"], ["d"]]
    with pytest.raises(ValueError):
        HelloMemorySystem(form="chat")


@pytest.mark.parametrize("spec", ["hello_memory", "hello_memory:form=messages", "hello_memory:form=session",
                                  "hello_memory:form=plain", "hello_memory:form=notes"])
def test_hello_memory_adapter_round_trips_doc_ids(tmp_path, spec):
    """Through the public MemoryManager API: every turn comes back under its own doc id, in every form.

    The product must import: its ``SystemUnavailableError`` is a failure here, never a skip.
    """
    system = build_system(spec)
    task = load_task("locomo", _locomo_file(tmp_path))
    try:
        run = run_system("hello_memory", system, task, depth=5)
    finally:
        system.close()
    assert run.reports[0].n_queries == 4
    assert run.reports[0].overall["recall@5"] == 1.0  # 5 turns, 5 results: all ids mapped back
    assert all(len(set(r)) == len(r) for r in run.rankings.values())


def test_rag_pipeline_adapter_returns_judgeable_spans(tmp_path):
    """Through the public RAGPipeline API: hits come back as spans of the added document (no skip)."""
    system = build_system("hello_memory", documents=True)
    text = (
        "# Install\n\nRun the installer with --force to overwrite.\n\n# Upgrade\n\nUse the upgrade wizard.\n"
    )
    start = text.index("Run the installer")
    task = RetrievalTask(
        "docs",
        {"docs": [Doc("install", text)]},
        [Query("q", "How do I force the installer?", "docs", frozenset({f"install#{start}-{start + 20}"}))],
        match=Match.SPAN,
        unit="span",
        chunk_chars=1000,
    )
    assert system.handles_documents
    try:
        run = run_system("hello_memory", system, task, depth=5)
    finally:
        system.close()
    assert all(r.startswith("install#") for r in run.rankings["q"])
    assert run.reports[0].overall["hit@5"] == 1.0
