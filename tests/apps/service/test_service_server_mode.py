"""The memory service in server mode (QDRANT_URL): it writes nothing locally, not even its SERVICE file.

Two replicas need a real Qdrant (qdrant-client's local mode locks its path to one process), so the
scaled-out case is in ``tests/integration``; here one service on local mode proves the statelessness.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from service_runner import REPO, ready, service_env

from hello_memory.client.remote import RemoteMemory
from hello_memory.stores.records.base import RecordQuery
from hello_memory.stores.records.qdrant import QdrantRecordStore


def test_a_server_mode_service_keeps_no_data_directory(tmp_path: Path) -> None:
    home, log = tmp_path / "never", tmp_path / "service.log"
    cmd = [sys.executable, "-m", "apps.service", "--home", str(home), "--port", "0", "--embedder", "tfidf"]
    env = service_env(QDRANT_URL=str(tmp_path / "qdrant"))
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        url = ""
        deadline = time.monotonic() + 120
        while not url and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            found = re.search(r"hello-memory serve: Qdrant at \S+ at (http://\S+) ", log.read_text())
            url = found.group(1) if found and ready(found.group(1)) else ""
            time.sleep(0.2)
        assert url, log.read_text()
        with RemoteMemory(url, user_id="alice") as mm:
            item = mm.add("Alice lives in Paris", memory_type="semantic")
            assert [h.item.id for h in mm.search("where does Alice live", limit=1)] == [item.id]
            assert mm.stats().entities > 0
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0, log.read_text()
    assert not home.exists()  # no LOCK, no SQLite, no SERVICE file
    with QdrantRecordStore(path=str(tmp_path / "qdrant")) as records:
        assert [m.content for m in records.scan("alice", RecordQuery())] == ["Alice lives in Paris"]
