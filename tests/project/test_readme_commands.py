"""The README's two commands are what CI runs, literally, and plain ``pytest`` imports the real packages."""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _readme_command(after: str) -> str:
    """The first fenced bash block following the paragraph that starts with ``after``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(after)
    block = re.search(r"```bash\n(.*?)\n```", text[start:], re.S)
    assert block is not None, f"no bash block after {after!r} in README.md"
    lines = [ln for ln in block.group(1).splitlines() if ln.strip()]
    assert len(lines) == 1, f"the README's command after {after!r} must be one line, got {lines}"
    return lines[0].strip()


def _ci_lines() -> list[str]:
    return [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]


def test_ci_runs_the_readme_test_command_literally():
    command = _readme_command("Install and run the tests")
    assert command in _ci_lines(), f".ci/run must run the README's test command as written: {command}"


def test_ci_runs_no_other_test_command():
    runs = [ln for ln in _ci_lines() if re.search(r"\bpytest\b", ln) and not ln.startswith("#")]
    assert runs == [_readme_command("Install and run the tests")], runs


def test_the_test_command_lints_and_type_checks_before_testing():
    steps = _readme_command("Install and run the tests").split(" && ")
    assert steps == ["pip install -e '.[dev]'", "ruff check .", "mypy", "pytest"], steps
    assert " && ".join(steps) in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_readme_main_command_installs_and_runs_the_app():
    command = _readme_command("Install and run the main job")
    assert command.startswith("pip install -e '.[") and command.endswith("hello-memory app"), command


def test_plain_pytest_imports_the_real_packages():
    """Under plain ``pytest`` the test folders (tests/hello_memory, ...) must not shadow the packages."""
    import apps
    import benchmarks
    import hello_memory
    import rag
    import tools

    for module in (hello_memory, rag, tools, apps, benchmarks):
        assert module.__file__ is not None, f"{module.__name__} resolved to a namespace package: {module.__path__}"
        assert Path(module.__file__).resolve().parent == ROOT / module.__name__


# -- the README's Python snippets run and show what they promise ------------------------------------
def _python_blocks(heading: str) -> list[str]:
    """The fenced python blocks of the README section ``heading`` (up to the next heading)."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    blocks: list[str] = []
    fence: list[str] | None = None
    for line in lines[start + 1:]:
        if fence is None and line.startswith("#"):
            break
        if line.startswith("```"):
            if fence is not None and line == "```":
                if fence[0] == "```python":
                    blocks.append("\n".join(fence[1:]))
                fence = None
            else:
                fence = [line]
        elif fence is not None:
            fence.append(line)
    return blocks


def _run_python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HELLO_MEMORY_", "QDRANT_", "NEO4J_", "LLM_"))}
    clean.pop("DASHSCOPE_API_KEY", None)
    clean.update({"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **env})
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=clean, capture_output=True, text=True,
                          timeout=600)


def _guide_pdf(folder: Path) -> Path:
    """The ``guide.pdf`` the snippets index: a one-page PDF about resetting a password."""
    canvas = pytest.importorskip("reportlab.pdfgen.canvas", reason="writing a PDF needs reportlab")
    pytest.importorskip("markitdown", reason="reading a PDF needs: pip install 'hello-memory[docs]'")
    path = folder / "guide.pdf"
    pdf = canvas.Canvas(str(path))
    pdf.drawString(72, 720, "Account help")
    pdf.drawString(72, 700, "To reset your password, open Settings and choose Reset password.")
    pdf.save()
    return path


def test_the_first_snippet_shows_the_context_it_promises(tmp_path):
    """Before (issue 27 §5) ``build_context("what is the user learning?")`` printed an empty text: the
    memory added next to it said nothing the relevance floor could take as evidence (default e5)."""
    [first] = _python_blocks("## Use it")
    out = _run_python(first, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert "我叫张三，是一名 Python 开发者" in lines[0], out.stdout  # the search hit, with its breakdown
    context = out.stdout[out.stdout.index("<memory_evidence>"):] if "<memory_evidence>" in out.stdout else ""
    assert "RAG" in context and "[episodic memory," in context, out.stdout


def test_the_conversation_snippet_stores_turns_with_their_speakers(tmp_path):
    [snippet] = _python_blocks("### Store chat history: add the conversation")
    out = _run_python(snippet, tmp_path, HELLO_MEMORY_EMBEDDER="tfidf")
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert "('Caroline: I went to a LGBTQ support group yesterday.', ['Caroline'])" in lines[0], out.stdout
    assert "('It sounds like a meaningful step.', ['assistant'])" in lines[0], out.stdout
    assert lines[1].endswith("Caroline: I went to a LGBTQ support group yesterday."), out.stdout


def test_the_resend_snippet_stores_what_is_new_edits_in_place_and_keeps_the_removal(tmp_path):
    [snippet] = _python_blocks("#### Sending the chat again: what is new, edits, removals")
    out = _run_python(snippet, tmp_path, HELLO_MEMORY_EMBEDDER="tfidf")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == ["['hello', 'ok', 'ok', 'thanks']", "True 2"], out.stdout


def test_the_rag_snippet_answers_from_the_document(tmp_path):
    _guide_pdf(tmp_path)
    [snippet] = _python_blocks("### RAG over your documents")
    out = _run_python(snippet, tmp_path, HELLO_MEMORY_EMBEDDER="tfidf")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Settings" in out.stdout and "[1]" in out.stdout, out.stdout


class _ChatCompletions(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that answers every chat completion with one sentence."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "fake",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "你好，张三！我记住了。"}}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_the_agent_snippet_runs_on_an_openai_compatible_llm(tmp_path):
    pytest.importorskip("openai", reason="the agent's LLM client needs: pip install 'hello-memory[openai]'")
    (tmp_path / "docs").mkdir()
    [snippet] = _python_blocks("### Register the tools on an agent")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ChatCompletions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        out = _run_python(snippet, tmp_path, HELLO_MEMORY_EMBEDDER="tfidf", LLM_BASE_URL=url, LLM_API_KEY="k",
                          LLM_MODEL="fake")
    finally:
        server.shutdown()
    assert out.returncode == 0 and "你好，张三" in out.stdout, out.stderr[-3000:]


def test_the_service_snippet_runs_against_a_service(tmp_path):
    pytest.importorskip("fastapi", reason="the service needs: pip install 'hello-memory[service]'")
    from hello_memory.client.discovery import read_service_file

    _guide_pdf(tmp_path)
    [snippet] = _python_blocks("## Share one memory: the service")
    home = tmp_path / "served"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HELLO_MEMORY_", "QDRANT_", "NEO4J_", "LLM_"))}
    env.update({"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    service = subprocess.Popen([sys.executable, "-m", "apps.service", "--home", str(home), "--port", "0",
                                "--embedder", "tfidf"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        record = None
        for _ in range(600):
            record = read_service_file(home)
            if record is not None or service.poll() is not None:
                break
            time.sleep(0.1)
        assert record is not None, "the service did not start"
        out = _run_python(snippet.replace("http://127.0.0.1:8765", record.url), tmp_path)
    finally:
        service.terminate()
        service.wait(60)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "我叫张三，是一名 Python 开发者", out.stdout


def test_the_async_snippets_run_in_process_and_through_a_service(tmp_path):
    local, remote = _python_blocks("### Async")
    out = _run_python(local, tmp_path, HELLO_MEMORY_EMBEDDER="tfidf")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "我叫张三，是一名 Python 开发者 2", out.stdout
    pytest.importorskip("fastapi", reason="the service needs: pip install 'hello-memory[service]'")
    from tests.apps.service.service_runner import running_service

    with running_service(tmp_path / "served") as service:
        out = _run_python(remote.replace("http://127.0.0.1:8765", service.url), tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "张三住在杭州，喜欢喝龙井茶", out.stdout
