"""The Gradio Blocks of the learning assistant: Start, Ask, Notes, Memory and Stats tabs.

Per-browser-session state is a ``gr.State`` holding a :class:`~apps.sessions.Session` box; the
assistant inside is created lazily for the user id typed on the Start tab and closed when
Gradio deletes the session's state. UI text is Chinese first, English second.

Example:
    >>> from apps.ui import build_app, launch_kwargs
    >>> demo = build_app(AssistantFactory(Settings(home="./hello_memory_data")))   # doctest: +SKIP
    >>> demo.launch(server_name="127.0.0.1", server_port=7860, **launch_kwargs())   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from apps import render
from apps._gradio import gr
from apps.handlers import Handlers
from apps.sessions import AssistantFactory, Session, close_session

TITLE = "智能文档问答助手 / Document Q&A Learning Assistant"
UPLOAD_CONCURRENCY = 8  # upload events running at once (each session's indexing is serialised)
DEFAULT_USER = "default_user"  # every entry point's default user (MemoryManager, CLI, MCP, tools)
TIER_CHOICES = [("全部 / all", "all"), ("工作记忆 / working", "working"), ("情景记忆 / episodic", "episodic"),
                ("语义记忆 / semantic", "semantic")]
FORGET_CHOICES = [("按重要性 / importance_based", "importance_based"), ("按时间 / time_based", "time_based"),
                  ("按容量 / capacity_based", "capacity_based"), ("综合 / combined", "combined")]
ADVANCED_ON = ("用 LLM 生成多种问法（MQE）和假设答案（HyDE）扩大召回 / "
               "LLM query expansion (MQE) and hypothetical answers (HyDE)")
ADVANCED_OFF = ("未配置 LLM，高级检索不可用；设置 LLM_API_KEY 或 DASHSCOPE_API_KEY 后重启即可开启 / "
                "No LLM configured: set LLM_API_KEY or DASHSCOPE_API_KEY and restart to enable it")
ADVANCED_OFF_REMOTE = ("记忆服务未配置 LLM，高级检索不可用；在运行 hello-memory serve 的环境中设置 LLM_API_KEY 或 "
                       "DASHSCOPE_API_KEY 后重启服务即可开启 / The memory service has no LLM: set LLM_API_KEY or "
                       "DASHSCOPE_API_KEY where `hello-memory serve` runs and restart it")
ASK_TIPS = ("提示：问“我之前学过什么？”或以 `/recall` 开头，会从记忆中回顾你的学习过程。 / "
            "Tip: ask “what did I learn before?” or start with `/recall` to search your learning memory.")
CSS = """
.hm-cite { margin: 4px 0; border: 1px solid var(--border-color-primary); border-radius: 6px; padding: 4px 8px; }
.hm-cite summary { cursor: pointer; font-weight: 600; }
.hm-cite-text { margin-top: 6px; font-size: 0.92em; }
.hm-cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(180px, 1fr)); gap: 10px; }
.hm-card { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 10px 12px;
           background: var(--block-background-fill); }
.hm-card-label { font-size: 0.85em; color: var(--body-text-color-subdued); }
.hm-card-value { font-size: 1.5em; font-weight: 700; }
.hm-meta { margin-top: 10px; font-size: 0.85em; color: var(--body-text-color-subdued); }
"""
# System fonts only: a theme's Google fonts would be fetched from the internet by the browser.
FONTS = ["Noto Sans CJK SC", "Noto Sans SC", "PingFang SC", "Microsoft YaHei", "system-ui", "sans-serif"]
MONO_FONTS = ["Noto Sans Mono CJK SC", "ui-monospace", "monospace"]


def launch_kwargs() -> dict[str, Any]:
    """Theme and CSS, which Gradio 6 takes at ``launch``."""
    return {"theme": gr.themes.Soft(font=FONTS, font_mono=MONO_FONTS), "css": CSS}


def build_app(factory: AssistantFactory) -> gr.Blocks:
    """The Blocks app over ``factory`` (which owns the settings, embedder and LLM)."""
    h = Handlers(factory)
    with gr.Blocks(title=TITLE, analytics_enabled=False) as demo:
        gr.Markdown(f"# {TITLE}\nRAG 出答案，Memory 记过程 / RAG answers, memory records the process.")
        status = gr.Markdown(elem_id="hm-status")
        session = gr.State(Session(), delete_callback=close_session)
        user = gr.Textbox(value=DEFAULT_USER, render=False, label="用户 ID / User id", elem_id="hm-user",
                          info="同一个 ID 找回你的文档和记忆；不同 ID 互相隔离 / The same id brings back your "
                               "documents and memories; different ids are isolated", scale=4)
        with gr.Tabs():
            _start_tab(h, session, user, status, demo)
            _ask_tab(h, session, user, factory.advanced_available, remote=factory.server_url is not None)
            _notes_tab(h, session, user)
            _memory_tab(h, session, user)
            _stats_tab(h, session, user)
    return demo


def _start_tab(h: Handlers, session: gr.State, user: gr.Textbox, status: gr.Markdown, demo: gr.Blocks) -> None:
    with gr.Tab("开始 / Start", id="start", elem_id="hm-tab-start"):
        with gr.Row(equal_height=True):
            user.render()
            enter = gr.Button("进入 / Enter", variant="primary", scale=1, elem_id="hm-enter")
        files = gr.File(label="上传文档（可多选：PDF、Word、PPT、Excel、Markdown、HTML、文本……）/ "
                        "Upload documents (one or more: PDF, Word, PowerPoint, Excel, Markdown, HTML, text…)",
                        file_count="multiple", elem_id="hm-upload")
        log = gr.Markdown(elem_id="hm-load-log")
        table = gr.Dataframe(headers=render.DOC_HEADERS, label="已加载的文档 / Loaded documents",
                             interactive=False, wrap=True, elem_id="hm-docs")
        with gr.Row(equal_height=True):
            pick = gr.Dropdown(label="选择要删除的文档 / Document to delete", choices=[], scale=4,
                               elem_id="hm-doc-pick")
            delete = gr.Button("删除文档 / Delete document", variant="stop", scale=1, elem_id="hm-doc-delete")
    shown = [session, status, table, pick]
    # One queue for the three: an Enter pressed while the page-load event runs is applied after it.
    enter.click(h.enter, [session, user], shown, concurrency_id="enter")
    user.submit(h.enter, [session, user], shown, concurrency_id="enter")
    demo.load(h.enter, [session, user], shown, concurrency_id="enter")
    # "multiple": a file dropped while another is indexed starts at once and queues on the session
    # (with "once", the default, Gradio dropped it silently); limited across sessions.
    files.upload(h.load, [session, user, files], [status, log, table, pick, files], show_progress="full",
                 trigger_mode="multiple", concurrency_limit=UPLOAD_CONCURRENCY)
    delete.click(h.delete_document, [session, user, pick], [log, table, pick])


def _ask_tab(h: Handlers, session: gr.State, user: gr.Textbox, advanced_available: bool, *, remote: bool) -> None:
    with gr.Tab("问答 / Ask", id="ask", elem_id="hm-tab-ask"):
        chat = gr.Chatbot(label="对话 / Chat", height=520, elem_id="hm-chat", buttons=["copy"])
        with gr.Row(equal_height=True):
            question = gr.Textbox(label="问题 / Question", scale=5, elem_id="hm-question",
                                  placeholder="例如：hello-memory 的默认向量库是什么？ / e.g. What is HyDE?")
            send = gr.Button("提问 / Ask", variant="primary", scale=1, elem_id="hm-ask")
        advanced = gr.Checkbox(label="高级检索 MQE + HyDE / Advanced search", value=False,
                               interactive=advanced_available, elem_id="hm-advanced",
                               info=ADVANCED_ON if advanced_available else ADVANCED_OFF_REMOTE if remote
                               else ADVANCED_OFF)
        gr.Markdown(ASK_TIPS)
    send.click(h.ask, [session, user, question, advanced, chat], [chat, question])
    question.submit(h.ask, [session, user, question, advanced, chat], [chat, question])


def _notes_tab(h: Handlers, session: gr.State, user: gr.Textbox) -> None:
    with gr.Tab("笔记 / Notes", id="notes", elem_id="hm-tab-notes") as tab:
        text = gr.Textbox(label="笔记 / Note", lines=4, elem_id="hm-note",
                          placeholder="记下你的理解，它会保存为语义记忆（重要性 0.8）/ "
                                      "Write what you understood; it is kept as semantic memory (importance 0.8)")
        save = gr.Button("保存笔记 / Save note", variant="primary", elem_id="hm-note-save")
        table = gr.Dataframe(headers=render.NOTE_HEADERS, label="我的笔记 / My notes", interactive=False,
                             wrap=True, elem_id="hm-notes")
    save.click(h.add_note, [session, user, text], [text, table])
    tab.select(h.list_notes, [session, user], [table])


def _memory_tab(h: Handlers, session: gr.State, user: gr.Textbox) -> None:
    with gr.Tab("记忆 / Memory", id="memory", elem_id="hm-tab-memory") as tab:
        with gr.Row(equal_height=True):
            tier = gr.Dropdown(TIER_CHOICES, value="all", label="类型 / Tier", scale=1, elem_id="hm-tier")
            query = gr.Textbox(label="搜索记忆 / Search memories", scale=3, elem_id="hm-mem-query")
            find = gr.Button("搜索 / Search", scale=1, elem_id="hm-mem-search")
            browse = gr.Button("全部 / Browse", scale=1, elem_id="hm-mem-browse")
        table = gr.Dataframe(headers=render.MEMORY_HEADERS, label="记忆 / Memories", interactive=False,
                             wrap=True, elem_id="hm-memories", column_widths=["14%", "12%", "9%", "8%", "13%", "44%"])
        with gr.Row(equal_height=True):
            mem_id = gr.Textbox(label="记忆 ID（点击表格行填入）/ Memory id (click a row)", scale=3,
                                elem_id="hm-mem-id")
            importance = gr.Slider(0, 1, value=0.5, step=0.05, label="重要性 / Importance", scale=2)
            update = gr.Button("更新重要性 / Set importance", scale=1, elem_id="hm-mem-update")
            delete = gr.Button("删除 / Delete", variant="stop", scale=1, elem_id="hm-mem-delete")
        with gr.Row():
            with gr.Column():
                strategy = gr.Dropdown(FORGET_CHOICES, value="importance_based", label="遗忘策略 / Forget strategy")
                with gr.Row():
                    threshold = gr.Slider(0, 1, value=0.1, step=0.05, label="重要性阈值 / Importance threshold")
                    max_age = gr.Number(30, label="最长天数 / Max age (days)", minimum=0)
                    capacity = gr.Number(100, label="容量 / Capacity", precision=0, minimum=0)
                forget = gr.Button("遗忘（作用于上方所选类型）/ Forget (tier chosen above)", elem_id="hm-forget")
            with gr.Column():
                with gr.Row():
                    source = gr.Dropdown(TIER_CHOICES[1:], value="working", label="从 / From")
                    target = gr.Dropdown(TIER_CHOICES[1:], value="episodic", label="到 / To")
                promote = gr.Slider(0, 1, value=0.7, step=0.05, label="整合阈值 / Consolidation threshold")
                consolidate = gr.Button("整合 / Consolidate", elem_id="hm-consolidate")
        report = gr.Markdown(elem_id="hm-mem-report")
    tab.select(h.browse, [session, user, tier], [table])
    browse.click(h.browse, [session, user, tier], [table])
    tier.change(h.search, [session, user, query, tier], [table])
    find.click(h.search, [session, user, query, tier], [table])
    query.submit(h.search, [session, user, query, tier], [table])
    table.select(h.pick, None, [mem_id, importance])
    update.click(h.update_importance, [session, user, mem_id, importance, tier], [report, table])
    delete.click(h.delete_memory, [session, user, mem_id, tier], [report, table])
    forget.click(h.forget, [session, user, strategy, threshold, max_age, capacity, tier], [report, table])
    consolidate.click(h.consolidate, [session, user, source, target, promote, tier], [report, table])


def _stats_tab(h: Handlers, session: gr.State, user: gr.Textbox) -> None:
    with gr.Tab("统计 / Stats", id="stats", elem_id="hm-tab-stats") as tab:
        cards = gr.HTML(elem_id="hm-stats")
        with gr.Row():
            refresh = gr.Button("刷新 / Refresh", elem_id="hm-stats-refresh")
            make = gr.Button("生成学习报告（JSON + Markdown）/ Generate learning report", variant="primary",
                             elem_id="hm-report")
        files = gr.File(label="学习报告下载 / Learning report downloads", file_count="multiple",
                        interactive=False, elem_id="hm-report-files")
    tab.select(h.stats, [session, user], [cards])
    refresh.click(h.stats, [session, user], [cards])
    make.click(h.report, [session, user], [files, cards])
