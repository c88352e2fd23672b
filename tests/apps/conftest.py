"""Fixtures for the learning-assistant tests: a fresh data directory, the fake embedder, documents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hello_memory import Settings

GUIDE_MD = """# 学习指南

## 记忆类型

工作记忆是短期的，情景记忆记录带时间戳的事件，语义记忆保存抽象知识。

## 遗忘与整合

遗忘策略包括按重要性、按时间和按容量三种；整合把重要的工作记忆升格为情景记忆。
"""
FACT = "hello-memory 的默认向量库是 Qdrant Edge，它在进程内运行，无需启动任何服务器。"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "data")


@pytest.fixture
def assistant(settings: Settings, fake_embedder) -> Iterator:
    from apps import LearningAssistant

    la = LearningAssistant("alice", settings, embedder=fake_embedder)
    yield la
    la.close()


@pytest.fixture
def guide_md(tmp_path: Path) -> Path:
    path = tmp_path / "docs" / "learning_guide.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text(GUIDE_MD, encoding="utf-8")
    return path


@pytest.fixture
def backend_docx(tmp_path: Path) -> Path:
    docx = pytest.importorskip("docx", reason="python-docx is needed to write a DOCX: pip install python-docx")
    pytest.importorskip("markitdown", reason="DOCX conversion needs: pip install 'hello-memory[docs]'")
    doc = docx.Document()
    doc.add_heading("存储后端", level=1)
    doc.add_paragraph(FACT)
    doc.add_heading("嵌入模型", level=1)
    doc.add_paragraph("默认的嵌入模型是离线运行的 multilingual-e5-small。")
    path = tmp_path / "docs" / "storage_backends.docx"
    path.parent.mkdir(exist_ok=True)
    doc.save(str(path))
    return path
