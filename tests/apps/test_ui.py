"""Routing rules, rendering, per-session assistants and the Gradio handlers (no browser)."""

from __future__ import annotations

import warnings

import pytest

from apps.models import AskReply
from apps.render import citation_html, reply_markdown, stats_html
from apps.routing import route_question, strip_force_prefix
from apps.sessions import AssistantFactory, Session, close_session
from rag import Citation


@pytest.mark.parametrize("question", [
    "我之前学过什么？", "我以前学了哪些内容", "我学过哪些文档", "回顾一下我的学习", "我的笔记有哪些",
    "What did I learn before?", "what have I studied so far", "remind me what I read", "/recall 向量库",
    "回顾：Qdrant",
])
def test_recall_questions_go_to_memory(question):
    assert route_question(question) == "memory"


@pytest.mark.parametrize("question", [
    "hello-memory 的默认向量库是什么？", "What is recall@10?", "How does HyDE work?", "什么是工作记忆？",
    "之前的版本支持 PDF 吗", "Explain the learning rate schedule",
])
def test_document_questions_go_to_rag(question):
    assert route_question(question) == "rag"


def test_force_prefix_is_stripped():
    assert strip_force_prefix("/recall 向量库") == "向量库" and strip_force_prefix("回顾：") == "回顾："


def _citation(text: str) -> Citation:
    return Citation(n=1, chunk_id="c", document_id="d", source_path="/tmp/x/guide <b>.md", heading_path="A > B",
                    start=0, end=len(text), score=0.5, text=text)


def test_citations_are_escaped_collapsible_sources():
    html = citation_html(_citation("<script>alert(1)</script>\n第二行"))
    assert html.startswith('<details class="hm-cite"><summary>[1] guide &lt;b&gt;.md › A &gt; B · score 0.500')
    assert "<script>" not in html and "&lt;script&gt;" in html and "<br>第二行" in html


def test_reply_markdown_lists_sources_and_bilingual_notes():
    reply = AskReply(question="q", answer="答案 [1]", route="rag", citations=[_citation("原文")], mode="extractive",
                     grounded=True, notes=["no LLM configured: extractive answer"])
    md = reply_markdown(reply)
    assert "来源 / Sources" in md and md.count("<details") == 1 and "未配置 LLM：抽取式回答" in md


def test_stats_cards_carry_data_attributes(assistant):
    html = stats_html(assistant.stats())
    for key in ("documents", "questions", "notes", "memories", "duration"):
        assert f'data-stat="{key}"' in html


def test_factory_shares_one_embedder_and_switching_user_closes_the_old_assistant(settings, fake_embedder):
    factory = AssistantFactory(settings, embedder=fake_embedder)
    s1, s2 = Session(), Session()
    a = factory.assistant(s1, " alice ")
    assert factory.assistant(s1, "alice") is a and a.user_id == "alice"
    b = factory.assistant(s2, "bob")
    assert a.memory.embedder is b.memory.embedder is fake_embedder
    c = factory.assistant(s1, "carol")
    assert a.closed and not c.closed and s1.assistant is c
    close_session(s1)
    assert c.closed and s1.assistant is None
    factory.close_all()
    assert b.closed


def test_factory_without_an_llm_disables_advanced_search(settings, fake_embedder):
    assert not AssistantFactory(settings, embedder=fake_embedder).advanced_available


@pytest.fixture
def handlers(settings, fake_embedder):
    pytest.importorskip("gradio", reason="the web app needs: pip install gradio")
    from apps.handlers import Handlers

    factory = AssistantFactory(settings, embedder=fake_embedder)
    yield Handlers(factory)
    factory.close_all()


def test_an_empty_question_becomes_an_error_line_in_the_chat(handlers):
    session = Session()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gr.Warning outside a request falls back to warnings.warn
        history, kept = handlers.ask(session, "alice", "  ", False, [])
    assert kept == "  " and history[-1]["role"] == "assistant"
    assert "错误 / Error" in history[-1]["content"] and "请输入问题" in history[-1]["content"]


def test_handler_errors_leave_outputs_unchanged(handlers):
    import gradio as gr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = Session()
        out = handlers.enter(session, "")
        note = handlers.add_note(Session(), "alice", "")
    assert out == (session, gr.skip(), gr.skip(), gr.skip()) and note == (gr.skip(), gr.skip())


def test_handlers_drive_a_session(handlers, guide_md):
    session = Session()
    same, status, rows, _ = handlers.enter(session, "alice")
    assert same is session and "alice" in status and rows == []
    _, log, rows, _, cleared = handlers.load(session, "alice", [str(guide_md)], progress=lambda *a, **k: None)
    assert "learning_guide.md" in log and rows[0][0] == "learning_guide.md" and cleared is None
    history, _ = handlers.ask(session, "alice", "遗忘策略有哪些？", False, [])
    assert [m["role"] for m in history] == ["user", "assistant"] and "<details" in history[1]["content"]
    _, notes = handlers.add_note(session, "alice", "遗忘有三种策略")
    assert notes[0][1] == "遗忘有三种策略"
    assert 'data-stat="notes">1<' in handlers.stats(session, "alice")
    files, _ = handlers.report(session, "alice")
    assert [f.rsplit(".", 1)[1] for f in files] == ["json", "md"]
    log, rows, _ = handlers.delete_document(session, "alice", session.assistant.list_documents()[0].document_id)
    assert "Document deleted" in log and rows == []


def test_an_upload_is_stored_and_cited_under_its_own_name(handlers, guide_md, tmp_path):
    """Gradio hands the app a temporary copy (``/tmp/gradio/<hash>/<name>``); before (issue 27 §5) the
    document was stored, listed and cited (to the LLM, to MCP and CLI users) under that copy's path."""
    upload = tmp_path / "gradio" / "9f86d081884c7d65" / guide_md.name
    upload.parent.mkdir(parents=True)
    upload.write_bytes(guide_md.read_bytes())
    session = Session()
    handlers.load(session, "alice", [str(upload)], progress=lambda *a, **k: None)
    la = session.assistant
    assert [d.source_path for d in la.rag.list_documents()] == ["learning_guide.md"]
    answer = la.rag.ask("遗忘策略有哪些？")
    assert answer.citations and {c.source_path for c in answer.citations} == {"learning_guide.md"}
    assert str(tmp_path) not in answer.answer


def test_the_app_builds_with_five_tabs(settings, fake_embedder):
    pytest.importorskip("gradio", reason="the web app needs: pip install gradio")
    from apps.ui import build_app

    factory = AssistantFactory(settings, embedder=fake_embedder)
    demo = build_app(factory)
    labels = [b.label for b in demo.blocks.values() if type(b).__name__ == "Tab"]
    assert labels == ["开始 / Start", "问答 / Ask", "笔记 / Notes", "记忆 / Memory", "统计 / Stats"]


def test_without_gradio_the_launcher_names_the_extra(monkeypatch, tmp_path, capsys):
    import sys

    for name in [m for m in sys.modules if m.split(".")[0] == "gradio" or m in ("apps.ui", "apps.handlers",
                                                                               "apps._gradio")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "gradio", None)
    from apps.app import main

    assert main(["--home", str(tmp_path / "data"), "--port", "1"]) == 2
    assert "pip install 'hello-memory[demo]'" in capsys.readouterr().err


def test_an_extractive_answer_shows_its_sentences_as_written():
    """The model gets the sentences JSON-quoted; the page shows them as written, HTML-escaped."""
    from rag.models import Extract

    reply = AskReply(question="q", answer='(Extractive answer …)\n"Use \\"a <b>\\" tag:\\n- one" [1]', route="rag",
                     citations=[_citation("原文")], mode="extractive", grounded=True,
                     extracts=[Extract(n=1, text='Use "a <b>" tag:\n- one')])
    md = reply_markdown(reply)
    assert md.startswith("(Extractive answer …)  \nUse &quot;a &lt;b&gt;&quot; tag:  \n- one [1]")
    assert "\\u003c" not in md and '\\"' not in md


def test_an_upload_dropped_during_indexing_queues_and_is_indexed(handlers, guide_md, tmp_path):
    """Before: Gradio's default trigger_mode dropped it silently; now it waits on the session, says so,
    and indexes only what the first upload did not (its files still showed in the upload box)."""
    import threading

    other = tmp_path / "docs" / "second.md"
    other.write_text("# 第二个\n\n排队的文件。\n", encoding="utf-8")
    session = Session()
    handlers.enter(session, "alice")
    la = session.assistant
    started, release = threading.Event(), threading.Event()
    real = la._load_one

    def slow(path, progress=None, **kwargs):
        started.set()
        release.wait(30)
        return real(path, progress, **kwargs)

    la._load_one = slow
    infos: list[str] = []
    first = threading.Thread(target=handlers.load, args=(session, "alice", [str(guide_md)]),
                             kwargs={"progress": lambda *a, **k: None})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first.start()
        assert started.wait(30)
        import gradio as gr

        real_info = gr.Info
        gr.Info = lambda message, *a, **k: infos.append(message)  # type: ignore[assignment]
        try:
            second = threading.Thread(target=handlers.load, args=(session, "alice", [str(guide_md), str(other)]),
                                      kwargs={"progress": lambda *a, **k: None})
            second.start()
            for _ in range(100):
                if any("已排队" in m for m in infos):
                    break
                threading.Event().wait(0.05)
            release.set()
            first.join(30)
            second.join(30)
        finally:
            gr.Info = real_info
    assert any("已排队：second.md" in m for m in infos), infos
    assert sorted(d.file_name for d in la.list_documents()) == ["learning_guide.md", "second.md"]
    assert [d.file_name for d in la.loaded] == ["learning_guide.md", "second.md"]  # each indexed once


@pytest.mark.parametrize(("question", "topic"), [
    ("我之前学过什么？", ""), ("What did I learn before?", ""), ("回顾一下我的学习", ""), ("我的笔记有哪些", ""),
    ("what have I studied so far", ""), ("/recall 向量库", "向量库"), ("回顾：Qdrant", "qdrant"),
    ("我之前学过哪些关于 HyDE 的内容", "hyde"),
])
def test_a_recall_question_names_a_topic_or_asks_for_the_record(question, topic):
    from apps.routing import recall_topic

    assert recall_topic(question) == topic
