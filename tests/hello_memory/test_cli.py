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


def test_search_leaves_out_what_is_below_the_floor_unless_asked_and_then_marks_it(run, monkeypatch):
    """Issue 35 §1: below-floor hits were printed unmarked, their scores out of the list's order."""
    monkeypatch.setenv("HELLO_MEMORY_FLOOR_COSINE", "0.99")  # only shared words clear the floor
    for text in ("Alex was born on 3 May 2015", "My dentist appointment is on Friday at 3pm",
                 "We adopted a puppy called Oscar from the shelter", "I turned 30 that spring"):
        run("add", text)
    out = run("search", "When was Alex born?")
    lines = out.output.splitlines()
    assert out.exit_code == 0 and "Alex was born" in lines[0]
    assert not any(word in out.output for word in ("dentist", "puppy", "turned 30"))
    assert "3 more below the relevance floor" in out.output
    out = run("search", "When was Alex born?", "--all")
    below = [ln for ln in out.output.splitlines() if "below floor" in ln]
    assert len(below) == 3 and "Alex" not in "".join(below)
    scores = [float(ln.split()[0]) for ln in below]
    assert scores == sorted(scores, reverse=True)
    hits = json.loads(run("search", "When was Alex born?", "--json").output)
    assert [h["breakdown"]["below_floor"] for h in hits] == [0.0]


def test_errors_are_one_line_and_exit_2(run):
    out = run("add", "   ")
    assert out.exit_code == 2 and "error:" in out.output and "Traceback" not in out.output
    out = run("forget", "--strategy", "nonsense")
    assert out.exit_code == 2 and "unknown forget strategy" in out.output


# -- every command reaches the memory it was pointed at, or says why not ----------------------------
@pytest.fixture
def bare(tmp_path, monkeypatch):
    """The CLI in an empty working directory, without --home: nothing may appear there."""
    from hello_memory.client import transport

    monkeypatch.setenv("HELLO_MEMORY_EMBEDDER", "tfidf")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(transport, "BACKOFF", 0.001)
    (tmp_path / "dump.jsonl").write_text('{"kind": "hello-memory-export", "format": 1}\n', encoding="utf-8")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


EVERY_COMMAND = [["add", "x"], ["search", "x"], ["stats"], ["forget"], ["export"], ["export", "--full"],
                 ["export", "--full", "-o", "out.jsonl"], ["import", "dump.jsonl"], ["reindex", "--graph"], ["demo"]]


@pytest.mark.parametrize("command", EVERY_COMMAND, ids=" ".join)
def test_a_command_pointed_at_an_unreachable_service_fails_in_one_line(bare, tmp_path, command):
    out = bare(*command, "--server", "http://127.0.0.1:9")
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert out.exit_code == 2 and len(lines) == 1, out.output
    assert lines[0].startswith("error: cannot reach the memory service at http://127.0.0.1:9"), out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.jsonl"]  # no ./hello_memory_data, no out.jsonl


READS = [["search", "x"], ["stats"], ["forget"], ["export"], ["export", "--full", "-o", "out.jsonl"],
         ["reindex", "--graph"]]


@pytest.mark.parametrize("command", READS, ids=" ".join)
@pytest.mark.parametrize("home", ["default", "missing", "empty"])
def test_a_command_on_a_home_without_memory_creates_nothing_and_says_so(bare, tmp_path, command, home):
    """exit 2 "no memory at <home>": an empty backup with exit 0 is how a typo in --home went unnoticed."""
    where = {"default": [], "missing": ["--home", str(tmp_path / "nowhere")],
             "empty": ["--home", str(tmp_path / "empty")]}[home]
    (tmp_path / "empty").mkdir()
    out = bare(*command, *where)
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert out.exit_code == 2 and len(lines) == 1, out.output
    named = {"default": tmp_path / "hello_memory_data", "missing": tmp_path / "nowhere", "empty": tmp_path / "empty"}
    assert lines[0].startswith(f"error: no memory at {named[home]}: "), out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.jsonl", "empty"]
    assert list((tmp_path / "empty").iterdir()) == []


def test_writes_still_create_their_home_and_reads_then_find_it(bare, tmp_path):
    out = bare("import", "dump.jsonl", "--home", "fresh")  # an import is a write: its target may be new
    assert out.exit_code == 0 and "imported 0 memories" in out.output and (tmp_path / "fresh").is_dir(), out.output
    out = bare("add", "Alice lives in Paris", "--type", "semantic")
    assert out.exit_code == 0 and (tmp_path / "hello_memory_data").is_dir(), out.output
    out = bare("export", "--full", "-o", "out.jsonl")
    assert out.exit_code == 0 and "exported 1 memories to out.jsonl" in out.output, out.output
    out = bare("reindex", "--graph")
    assert out.exit_code == 0 and "graph rebuilt: 1 semantic memories of 1 users" in out.output, out.output


@pytest.mark.parametrize(("command", "skipped"), [("search", ["h2", "httpx._main", "trio"]),
                                                  ("serve", ["httpx._main"]), ("mcp", ["httpx._main"])])
def test_the_process_skips_only_what_its_command_never_uses(command, skipped):
    """The memory commands talk HTTP/1.1 to a service; ``serve``, ``mcp`` and ``app`` keep HTTP/2 and trio."""
    import subprocess
    import sys

    code = ("import sys; from hello_memory.cli import skip_unused_imports\n"
            f"skip_unused_imports(['hello-memory', {command!r}])\n"
            "print(sorted(m for m in ('h2', 'httpx._main', 'trio') if m in sys.modules and sys.modules[m] is None))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == str(skipped), out.stderr
