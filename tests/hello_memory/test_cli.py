"""The hello-memory CLI on a real data directory (tfidf embedder for speed)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from hello_memory.cli import app


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("HELLO_MEMORY_EMBEDDER", "tfidf")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [*args[:1], "--home", str(tmp_path / "d"), *args[1:]])

    return invoke


def test_add_search_stats_export_forget(run, tmp_path):
    out = run("add", "张三喜欢喝龙井茶", "--type", "semantic", "--importance", "0.9")
    assert out.exit_code == 0 and "added semantic memory" in out.output
    memory_id = out.output.split()[-1]
    assert len(memory_id) == 36
    run("add", "unimportant detail", "--importance", "0.05")
    out = run("search", "龙井茶")
    assert out.exit_code == 0 and "张三喜欢喝龙井茶" in out.output and memory_id in out.output
    out = run("search", "龙井茶", "--json")
    assert json.loads(out.output)[0]["item"]["id"] == memory_id
    out = run("stats")
    assert "2 memories" in out.output and "semantic" in out.output
    target = tmp_path / "export.jsonl"
    out = run("export", "--output", str(target))
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert {r["content"] for r in rows} == {"张三喜欢喝龙井茶", "unimportant detail"}
    out = run("forget", "--strategy", "importance_based", "--threshold", "0.1")
    assert "forgot 1 memories (restorable)" in out.output


def test_errors_are_one_line_and_exit_2(run):
    out = run("add", "   ")
    assert out.exit_code == 2 and "error:" in out.output and "Traceback" not in out.output
    out = run("forget", "--strategy", "nonsense")
    assert out.exit_code == 2 and "unknown forget strategy" in out.output
