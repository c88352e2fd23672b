"""SIGTERM with an operation that never ends: the service exits within ``drain_timeout`` (plus start-up
slack), leaves nothing half-written and releases the data directory (issue 27 §1)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import httpx
from service_runner import REPO, start_service

from hello_memory import MemoryManager, Settings
from hello_memory.client.discovery import SERVICE_FILE

sys.path.insert(0, str(REPO / "tests" / "reliability"))
from rel_scan import memory_problems

DRAIN = 1.0
SLACK = 30.0  # interpreter exit and a loaded machine; without the fix the process never exits


def _running(url: str) -> int:
    with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
        return int(json.loads(response.read())["running"])


def test_shutdown_exits_within_the_drain_timeout_with_an_operation_still_running(tmp_path: Path):
    home = tmp_path / "data"
    script = str(Path(__file__).with_name("stuck_service.py"))
    running = start_service(home, command=[sys.executable, script, str(home), str(DRAIN)])
    with httpx.Client(base_url=running.url, timeout=30) as client:
        assert client.post("/v1/memories", json={"content": "a memory that is kept",
                                                 "memory_type": "episodic"}).status_code == 201

    answer: dict[str, httpx.Response] = {}

    def stuck() -> None:
        with contextlib.suppress(httpx.HTTPError):  # without an answer the test fails below
            answer["response"] = httpx.post(
                f"{running.url}/v1/memories", json={"content": "STUCK forever", "memory_type": "episodic"}, timeout=120
            )

    client = threading.Thread(target=stuck, daemon=True)
    client.start()
    deadline = time.monotonic() + 30
    while _running(running.url) == 0:
        assert time.monotonic() < deadline, "the stuck write never started"
        time.sleep(0.05)
    running.proc.send_signal(signal.SIGTERM)
    try:
        code = running.proc.wait(timeout=DRAIN + SLACK)
    except subprocess.TimeoutExpired:
        running.kill()
        raise AssertionError(f"still running {DRAIN + SLACK} s after SIGTERM:\n{running.output()}") from None
    assert code == 0, running.output()
    assert "still running after the drain timeout" in running.output()
    assert "Traceback" not in running.output(), running.output()
    client.join(10)
    assert answer["response"].status_code == 503  # answered before the exit, not dropped
    assert "shutting down" in answer["response"].json()["error"]["message"]
    assert not (home / SERVICE_FILE).exists()
    with MemoryManager(Settings(home=home, embedder="tfidf")) as mm:  # the data directory was released
        assert [m.content for m in mm.get_all()] == ["a memory that is kept"]
        assert memory_problems(mm.bundle.home, mm.bundle.vectors) == []
