"""A short offline demonstration of every tier and lifecycle operation (``hello-memory demo``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import typer


def run_demo(home: Path | None = None, *, server: str | None = None, api_key: str | None = None) -> None:
    """Store, search, consolidate, forget and inject memories for a bilingual user.

    Runs through a memory service when ``server`` is given or one owns the data directory.
    """
    from hello_memory import Settings
    from hello_memory.client.discovery import connect_memory
    from hello_memory.stores.open import resolve_home

    settings = Settings() if home is None else Settings(home=resolve_home(home))
    echo = typer.echo
    with connect_memory(settings, user_id="demo_user", server_url=server, api_key=api_key) as mm:
        mm.clear_all()
        where = getattr(mm, "url", None) or (  # a RemoteMemory has a url; server mode has no directory
            f"Qdrant at {settings.qdrant_url}" if settings.qdrant_url else Path(settings.home).resolve()
        )
        echo(f"memory: {where}  (embedder: {mm.stats().embedder})")
        week_ago = datetime.now(timezone.utc) - timedelta(days=7)
        mm.add_many(
            [
                {"content": "我叫张三，是一名 Python 开发者", "memory_type": "semantic", "importance": 0.9},
                {"content": "张三住在杭州，喜欢喝龙井茶", "memory_type": "semantic", "importance": 0.7},
                {
                    "content": "Zhang San finished the RAG chapter of Hello-Agents",
                    "memory_type": "episodic",
                    "importance": 0.8,
                    "created_at": week_ago,
                },
                {
                    "content": "昨天学习了向量数据库 Qdrant 的基本用法",
                    "memory_type": "episodic",
                    "importance": 0.6,
                },
                {
                    "content": "正在问：如何给智能体加上长期记忆？",
                    "memory_type": "working",
                    "importance": 0.75,
                },
            ]
        )
        for query in ("张三是做什么的？", "what did Zhang San study?", "向量数据库"):
            echo(f"\nsearch: {query}")
            for h in mm.search(query, limit=3):
                terms = ", ".join(
                    f"{k}={v:.2f}" for k, v in h.breakdown.items() if k in ("sim", "recency", "graph")
                )
                mark = "  below floor" if h.below_floor else ""  # follows the relevant ones, not one of them
                echo(f"  {h.score:.3f} [{h.item.memory_type.value}] {h.item.content}  ({terms}){mark}")
        rep = mm.consolidate("working", "episodic", 0.7)
        echo(f"\nconsolidate working→episodic: {rep.count} promoted")
        mm.add("张三住在上海", memory_type="semantic", importance=0.8)
        echo("supersession: '张三住在上海' supersedes the Hangzhou fact; search '张三住在哪里':")
        for h in mm.search("张三住在哪里", memory_types=["semantic"], limit=2):
            superseded = "  (superseded)" if h.item.valid_to else ""
            echo(f"  {h.score:.3f} {h.item.content}{superseded}{'  below floor' if h.below_floor else ''}")
        block = mm.build_context("张三的学习进度", budget_tokens=120)
        echo("\ncontext block for the next LLM call:\n" + block.text)
        st = mm.stats()
        echo(
            f"\nstats: {st.total} memories {st.by_type}, graph {st.entities} entities / {st.relations} relations"
        )
