"""Start the real memory service (``python -m apps.service``) in a subprocess on a free loopback port."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hello_memory.client.discovery import read_service_file

REPO = Path(__file__).resolve().parents[3]
KEYS = {"alice": "k-alice-0123456789", "bob": "k-bob-0123456789", "admin": "k-admin-0123456789"}


@dataclass
class RunningService:
    """A service subprocess and where it listens."""

    url: str
    home: Path
    proc: subprocess.Popen
    log: Path

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        """Signal the service and wait for it to exit; its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError(f"service did not stop after {sig}:\n{self.output()}") from None

    def kill(self) -> None:
        """SIGKILL, no cleanup of any kind."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)

    def output(self) -> str:
        """What the service printed so far."""
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""


def service_env(**extra: str) -> dict[str, str]:
    """The environment of a child process running this worktree's code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HELLO_MEMORY_", "QDRANT_", "NEO4J_", "LLM_"))}
    env.pop("DASHSCOPE_API_KEY", None)
    env.update({"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "GRADIO_ANALYTICS_ENABLED": "False"})
    env.update(extra)
    return env


def ready(url: str, timeout: float = 1.0) -> bool:
    """True when ``/ready`` answers 200."""
    try:
        with urllib.request.urlopen(f"{url}/ready", timeout=timeout) as response:
            return response.status == 200 and json.loads(response.read())["status"] == "ready"
    except OSError:
        return False


STARTED = re.compile(r"hello-memory serve: .* at (http://\S+) \(")


def start_service(
    home: Path,
    *,
    embedder: str = "tfidf",
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 120,
    command: list[str] | None = None,
) -> RunningService:
    """Start ``python -m apps.service --home HOME --port 0`` (or ``command``) and wait until it is ready.

    With ``QDRANT_URL`` in ``env`` (server mode) the service keeps no data directory: ``home`` is
    not created, and the URL is read from the line the service prints instead of ``SERVICE``.
    """
    server_mode = "QDRANT_URL" in (env or {})
    if not server_mode:
        home.mkdir(parents=True, exist_ok=True)
    home.parent.mkdir(parents=True, exist_ok=True)
    log = home.parent / f"{home.name}-service-{time.monotonic_ns()}.log"
    cmd = command or [sys.executable, "-m", "apps.service", "--home", str(home), "--port", "0",
                      "--embedder", embedder, *args]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=service_env(**(env or {})))
    running = RunningService(url="", home=home, proc=proc, log=log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"service exited with {proc.returncode}:\n{running.output()}")
        url = _printed_url(running) if server_mode else _advertised_url(home, proc.pid)
        if url is not None and ready(url):
            running.url = url
            return running
        time.sleep(0.1)
    running.kill()
    raise AssertionError(f"service not ready within {timeout} s:\n{running.output()}")


@contextmanager
def running_service(home: Path, **options: object) -> Iterator[RunningService]:
    """:func:`start_service` until the ``with`` ends; then it must stop cleanly (exit code 0)."""
    running = start_service(home, **options)  # type: ignore[arg-type]
    try:
        yield running
    finally:
        assert running.stop() == 0, running.output()


def _advertised_url(home: Path, pid: int) -> str | None:
    record = read_service_file(home)
    return record.url if record is not None and record.pid == pid else None


def _printed_url(running: RunningService) -> str | None:
    found = STARTED.search(running.output())
    return found.group(1) if found else None
