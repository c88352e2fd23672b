"""A data directory held by another process, with no live service for it: the CLI, MCP and the app
fail with one line naming the holder (its pid and command line) and the fix (serve it, or --server)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_runner import REPO, service_env, start_service

from apps.sessions import AssistantFactory, Session
from hello_memory import Settings
from hello_memory.client.discovery import SERVICE_FILE, connect_memory
from hello_memory.errors import StoreLockedError

MARK = "a-script-holding-the-home"
SECRET = "k-secret-0123456789"  # on the holder's command line: never in a message
_HOLDER = """
import sys
from hello_memory import MemoryManager, Settings
mm = MemoryManager(Settings(home=sys.argv[1], embedder="tfidf"), user_id="holder")
print("ready", flush=True)
sys.stdin.readline()
mm.close()
"""


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A data directory a second process holds (a plain script, not a service); its pid."""
    home = tmp_path / "data"
    argv = [sys.executable, "-c", textwrap.dedent(_HOLDER), str(home), MARK, "--api-key", SECRET]
    proc = subprocess.Popen(argv, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=service_env())
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.communicate()
    try:
        yield home, proc.pid
    finally:
        proc.kill()
        proc.wait(60)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=180,
                          input="", env=service_env())


def _says_who_and_what_to_do(text: str, home: Path, pid: int) -> None:
    assert f"in use by another process (held by pid {pid}: " in text and MARK in text, text
    assert f"hello-memory serve --home {home}" in text and "--server URL" in text, text
    assert SECRET not in text and "--api-key ***" in text


CLI = ["-c", "from apps.cli import main; main()"]


@pytest.mark.parametrize("command", [
    [*CLI, "search", "tea"], [*CLI, "add", "tea"], [*CLI, "export"], [*CLI, "mcp"], [*CLI, "app", "--port", "0"],
    ["-m", "tools.mcp_server"],
], ids=["search", "add", "export", "mcp", "app", "python -m tools.mcp_server"])
def test_a_held_home_without_a_service_names_its_holder_and_the_fix(held, command):
    home, pid = held
    out = _run(*command, "--home", str(home))
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1, out.stderr
    _says_who_and_what_to_do(out.stderr, home, pid)


def test_serve_on_a_held_home_names_the_holder_and_says_to_stop_it(held):
    home, pid = held
    out = _run(*CLI, "serve", "--home", str(home), "--port", "0")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out
    assert f"held by pid {pid}: " in out.stderr and MARK in out.stderr and SECRET not in out.stderr
    assert "stop that process, then start the service again" in out.stderr


def test_the_library_and_the_apps_sessions_say_the_same(held):
    home, pid = held
    settings = Settings(home=home, embedder="tfidf")
    with pytest.raises(StoreLockedError) as err:
        connect_memory(settings)
    assert err.value.holder is not None and err.value.holder.startswith(f"pid {pid}: ")
    _says_who_and_what_to_do(str(err.value), home, pid)
    factory = AssistantFactory(settings)
    with pytest.raises(StoreLockedError) as err:  # the app's sessions open the directory lazily
        factory.assistant(Session(), "alice")
    _says_who_and_what_to_do(str(err.value), home, pid)


def test_a_service_that_does_not_answer_for_the_home_is_named_as_one(tmp_path):
    running = start_service(tmp_path / "data")
    try:
        (running.home / SERVICE_FILE).unlink()  # e.g. still starting: it advertises once it listens
        out = _run(*CLI, "stats", "--home", str(running.home))
        assert out.returncode == 2, out
        assert f"held by pid {running.proc.pid}: " in out.stderr and "apps.service" in out.stderr
        assert "memory service that does not answer" in out.stderr and "retry" in out.stderr
    finally:
        assert running.stop() == 0, running.output()
