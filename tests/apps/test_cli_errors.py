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


def test_mcp_without_the_tools_extra_is_one_line_with_the_pip_command(tmp_path):
    out = _cli(tmp_path, "mcp", hide="mcp")
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-3000:]
    assert "pip install 'hello-memory[tools]'" in lines[0]
    assert not (tmp_path / "data").exists()
