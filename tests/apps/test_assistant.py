"""LearningAssistant without a browser: importance gradient, routing, isolation, stats, reports, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from apps import LearningAssistant
from hello_memory import InvalidInputError, MemoryType, NotFoundError
from hello_memory.testing.fake_llm import FailingLLM, ScriptedLLM

QUESTION = "hello-memory 的默认向量库是什么？"


def test_loading_a_document_records_an_episodic_event_of_importance_0_9(assistant, guide_md):
    report = assistant.load_documents([guide_md])
    assert report.ok and [d.file_name for d in report.loaded] == ["learning_guide.md"]
    loaded = report.loaded[0]
    assert loaded.chunks >= 2 and loaded.title == "学习指南" and not loaded.replaced
    event = assistant.memory.get(loaded.memory_id)
    assert event.memory_type == MemoryType.EPISODIC and event.importance == 0.9
    assert event.event_type == "document_loaded" and event.session_id == assistant.session_id
    assert "learning_guide.md" in event.content and event.metadata["document_id"] == loaded.document_id


def test_loading_reports_progress_and_reloading_replaces(assistant, guide_md):
    seen: list[tuple[float, str]] = []
    assistant.load_documents([guide_md], progress=lambda f, d: seen.append((f, d)))
    assert seen[0][0] == 0.0 and seen[-1] == (1.0, "完成 / Done") and "learning_guide.md" in seen[0][1]
    again = assistant.load_documents([guide_md])
    assert again.loaded[0].replaced
    assert [d.file_name for d in assistant.list_documents()] == ["learning_guide.md"]


def test_ask_answers_with_citations_and_records_working_and_episodic(assistant, guide_md, backend_docx):
    assistant.load_documents([guide_md, backend_docx])
    reply = assistant.ask(QUESTION)
    assert reply.route == "rag" and reply.grounded and reply.mode == "extractive"
    assert "Qdrant Edge" in reply.answer
    top = reply.citations[0]
    assert Path(top.source_path or "").name == "storage_backends.docx" and top.heading_path == "存储后端"
    working, episode = (assistant.memory.get(i) for i in reply.memory_ids)
    assert (working.memory_type, working.importance) == (MemoryType.WORKING, 0.6)
    assert QUESTION in working.content and working.session_id == assistant.session_id
    assert (episode.memory_type, episode.importance) == (MemoryType.EPISODIC, 0.7)
    assert episode.event_type == "qa_interaction" and episode.metadata["question"] == QUESTION


def test_recall_questions_are_answered_from_memory(assistant, guide_md):
    assistant.load_documents([guide_md])
    assistant.add_note("整合把重要的工作记忆升格为情景记忆")
    episodes = assistant.memory.stats().by_type["episodic"]
    reply = assistant.ask("我之前学过什么？")
    assert reply.route == "memory" and reply.mode == "memory" and not reply.citations
    contents = [h.item.content for h in reply.memories]
    assert any("learning_guide.md" in c for c in contents) and "整合把重要的工作记忆升格为情景记忆" in contents
    assert {h.item.memory_type for h in reply.memories} <= {MemoryType.EPISODIC, MemoryType.SEMANTIC}
    assert "learning_guide.md" in reply.answer
    assert assistant.memory.stats().by_type["episodic"] == episodes  # no Q&A event for a recall
    assert assistant.memory.get(reply.memory_ids[0]).memory_type == MemoryType.WORKING


def test_recall_with_nothing_learned_says_so(assistant):
    reply = assistant.ask("what did I learn before?")
    assert reply.route == "memory" and not reply.grounded and "No learning records yet" in reply.answer


def test_note_is_semantic_memory_of_importance_0_8(assistant):
    note = assistant.add_note("  HyDE 先生成假设答案再检索  ")
    item = assistant.memory.get(note.memory_id)
    assert (item.memory_type, item.importance, item.content) == (MemoryType.SEMANTIC, 0.8, "HyDE 先生成假设答案再检索")
    assert "note" in item.tags
    assert [n.content for n in assistant.notes()] == ["HyDE 先生成假设答案再检索"]
    with pytest.raises(InvalidInputError, match="笔记不能为空"):
        assistant.add_note("   ")


def test_two_users_never_see_each_others_documents_or_memories(settings, fake_embedder, guide_md):
    with LearningAssistant("alice", settings, embedder=fake_embedder) as alice, \
            LearningAssistant("bob", settings, embedder=fake_embedder) as bob:
        alice.load_documents([guide_md])
        alice.add_note("alice 的私人笔记：语义记忆保存抽象知识")
        alice.ask("情景记忆记录什么？")
        assert bob.list_documents() == [] and bob.rag.namespace == "docs_bob"
        bob_reply = bob.ask("情景记忆记录什么？")
        assert bob_reply.citations == [] and not bob_reply.grounded
        assert all(m.user_id == "bob" for m in bob.browse_memories())
        assert not any("alice" in h.item.content for h in bob.search_memories("alice 的私人笔记"))
        assert all(h.item.user_id == "bob" for h in bob.recall("语义记忆 alice 的私人笔记"))
        assert bob.notes() == []
        assert len(alice.list_documents()) == 1 and alice.stats().notes == 1
        with pytest.raises(NotFoundError):
            bob.delete_memory(alice.notes()[0].memory_id)


def test_stats_count_the_session(assistant, guide_md, backend_docx):
    assistant.load_documents([guide_md, backend_docx])
    assistant.ask(QUESTION)
    assistant.ask("我之前学过什么")
    assistant.add_note("Qdrant Edge 在进程内运行")
    st = assistant.stats()
    assert (st.documents, st.documents_loaded, st.questions, st.recall_questions, st.notes) == (2, 2, 2, 1, 1)
    assert st.memories_by_type == {"working": 2, "episodic": 3, "semantic": 1} and st.memories_total == 6
    assert st.chunks >= 4 and st.duration_seconds >= 0 and st.llm is None and st.user_id == "alice"


def test_reports_in_json_and_markdown(assistant, guide_md):
    assistant.load_documents([guide_md])
    assistant.ask("遗忘策略有哪些？")
    assistant.add_note("遗忘有三种策略")
    data = json.loads(assistant.report_json())
    assert data["stats"]["documents"] == 1 and data["stats"]["questions"] == 1
    assert data["documents"][0]["file_name"] == "learning_guide.md"
    assert data["questions"][0] == {**data["questions"][0], "question": "遗忘策略有哪些？", "route": "rag",
                                    "sources": ["learning_guide.md"]}
    assert data["notes"][0]["content"] == "遗忘有三种策略" and "alice" in data["memory_summary"]
    md = assistant.report_markdown()
    assert md.startswith("# 学习报告 / Learning report — alice")
    for text in ("learning_guide.md", "遗忘策略有哪些？", "遗忘有三种策略", "## 记忆摘要 / Memory summary"):
        assert text in md


def test_unsupported_and_missing_files_are_reported_and_the_rest_is_loaded(assistant, guide_md, tmp_path):
    exe = tmp_path / "setup.exe"
    exe.write_bytes(b"MZ not a document")
    report = assistant.load_documents([exe, guide_md, tmp_path / "gone.md"])
    assert [d.file_name for d in report.loaded] == ["learning_guide.md"] and not report.ok
    failures = {f.file_name: f.error for f in report.failed}
    assert failures["setup.exe"].startswith("不支持的文件类型 / Unsupported file type")
    assert failures["gone.md"].startswith("无法读取文件 / Cannot read the file")
    assert assistant.stats().memories_by_type["episodic"] == 1


@pytest.mark.parametrize("question", ["", "   ", None])
def test_an_empty_question_is_a_typed_error_and_stores_nothing(assistant, question):
    with pytest.raises(InvalidInputError, match="请输入问题 / Please enter a question"):
        assistant.ask(question)
    assert assistant.memory.stats().total == 0 and assistant.stats().questions == 0


def test_bad_user_ids_are_rejected(settings, fake_embedder):
    for bad in ("", "   ", "x" * 65):
        with pytest.raises(InvalidInputError, match="用户 ID / Enter a user id"):
            LearningAssistant(bad, settings, embedder=fake_embedder)


def test_advanced_search_without_an_llm_is_noted(assistant, guide_md):
    assert not assistant.advanced_available
    assistant.load_documents([guide_md])
    reply = assistant.ask("遗忘策略有哪些？", advanced=True)
    assert not reply.advanced and any("Advanced search needs an LLM" in n for n in reply.notes)


def test_an_llm_enables_mqe_hyde_and_generated_answers(settings, fake_embedder, guide_md):
    llm = ScriptedLLM.by_rules([("原始查询", "遗忘的策略\n如何遗忘"), ("直接回答", "遗忘策略有三种。"),
                                ("Sources:", "遗忘策略包括按重要性、按时间和按容量三种 [1]。")], default="{}")
    with LearningAssistant("alice", settings, embedder=fake_embedder, llm=llm) as la:
        la.load_documents([guide_md])
        reply = la.ask("遗忘策略有哪些？", advanced=True)
    assert reply.advanced and reply.mode == "llm" and reply.answer.endswith("[1]。")
    kinds = {c.last_user_message.split("\n")[0][:4] for c in llm.calls}
    assert {"原始查询", "请写一段"} & kinds


def test_a_failing_llm_degrades_to_an_extractive_answer_with_a_note(settings, fake_embedder, guide_md):
    with LearningAssistant("alice", settings, embedder=fake_embedder, llm=FailingLLM()) as la:
        la.load_documents([guide_md])
        reply = la.ask("遗忘策略有哪些？", advanced=True)
    assert reply.mode == "extractive" and reply.citations
    assert any("LLM answer failed" in n for n in reply.notes) and any("failed" in n for n in reply.notes)


def test_memory_management_operations(assistant, guide_md):
    assistant.load_documents([guide_md])
    assistant.ask("情景记忆记录什么？")
    question = assistant.browse_memories("working")[0]
    assert assistant.update_importance(question.id, 0.95).importance == 0.95
    promoted = assistant.consolidate("working", "episodic", 0.9)
    assert promoted.count == 1 and promoted.source_ids == [question.id]
    note = assistant.add_note("临时笔记")
    assistant.update_importance(note.memory_id, 0.05)
    forgotten = assistant.forget("importance_based", threshold=0.1)
    assert [f.id for f in forgotten.forgotten] == [note.memory_id]
    episode = assistant.browse_memories("episodic")[0]
    assistant.delete_memory(episode.id)
    with pytest.raises(NotFoundError):
        assistant.memory.get(episode.id)
    hits = assistant.search_memories("learning_guide.md", memory_type="episodic")
    assert hits and all(h.item.memory_type == MemoryType.EPISODIC for h in hits)


def test_delete_document_and_close(settings, fake_embedder, guide_md):
    la = LearningAssistant("alice", settings, embedder=fake_embedder)
    doc = la.load_documents([guide_md]).loaded[0]
    assert la.delete_document(doc.document_id) == doc.chunks and la.list_documents() == []
    with pytest.raises(NotFoundError):
        la.delete_document(doc.document_id)
    la.close()
    la.close()
    assert la.closed


def test_one_large_file_reports_progress_per_batch_of_passages(assistant, tmp_path):
    """Before: one file sat at 0 % for its whole indexing (28 s for a 98 KB chapter)."""
    path = tmp_path / "docs" / "manual.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text("# Manual\n\n" + "\n\n".join(f"Step {i}: check valve {i} and log it." for i in range(1500)),
                    encoding="utf-8")
    seen: list[tuple[float, str]] = []
    assistant.load_documents([path], progress=lambda f, d: seen.append((f, d)))
    during = [(f, d) for f, d in seen if "段 / passages" in d]
    assert len(during) >= 3 and all(0.0 < f <= 1.0 for f, _ in during)
    assert [f for f, _ in during] == sorted(f for f, _ in during) and during[-1][0] == 1.0
    last = re.search(r"manual\.md \(1/1\): (\d+)/(\d+) 段 / passages$", during[-1][1])
    assert last is not None and last.group(1) == last.group(2)


def test_the_recall_tip_lists_the_learning_record_with_a_real_embedder(tmp_path):
    """Before: 「我之前学过什么？」 answered "no records" right after notes were stored (searched with e5,
    the question matched no memory and the relevance floor rightly returned nothing)."""
    from apps.assistant import LearningAssistant
    from hello_memory import Settings

    la = LearningAssistant("learner", Settings(home=tmp_path / "data", embedder="e5"))
    try:
        la.add_note("HyDE 先让模型写一段假设答案，再用它去检索")
        la.add_note("Working memory lives for one session")
        for question in ("我之前学过什么？", "What did I learn before?"):
            reply = la.ask(question)
            assert reply.route == "memory" and reply.grounded, question
            contents = [h.item.content for h in reply.memories]
            assert "HyDE 先让模型写一段假设答案，再用它去检索" in contents
            assert "Working memory lives for one session" in contents
        topical = la.ask("/recall HyDE 假设答案")
        assert topical.memories[0].item.content.startswith("HyDE")
    finally:
        la.close()


# -- only what cleared the relevance floor is shown as recalled (issue 35 §1) -----------------------------
FLOOR_LIFE = ["Alex was born on 3 May 2015", "My dentist appointment is on Friday at 3pm",
              "We adopted a puppy called Oscar from the shelter", "I turned 30 that spring"]


@pytest.fixture
def floored(tmp_path, fake_embedder):
    """An assistant whose floor is decided by words (the fake embedder's cosines mean nothing)."""
    from hello_memory import Settings

    la = LearningAssistant("alice", Settings(home=tmp_path / "floored", floor_cosine=0.99), embedder=fake_embedder)
    for text in FLOOR_LIFE:
        la.memory.add(text, memory_type="semantic")
    yield la
    la.close()


def test_recall_shows_only_memories_that_cleared_the_floor(floored):
    assert len(floored.memory.search("When was Alex born?", memory_types=["semantic"])) == len(FLOOR_LIFE)
    reply = floored.ask("/recall When was Alex born?")
    assert [h.item.content for h in reply.memories] == [FLOOR_LIFE[0]]
    assert FLOOR_LIFE[0] in reply.answer and not any(t in reply.answer for t in FLOOR_LIFE[1:])


def test_the_memory_panel_search_leaves_out_what_is_below_the_floor_and_reads_in_order(floored):
    from apps.render import memory_rows

    rows = memory_rows(floored.search_memories("When was Alex born?"))
    assert [r[5] for r in rows] == [FLOOR_LIFE[0]]
    scores = [float(r[3]) for r in rows]
    assert scores == sorted(scores, reverse=True)
