"""``python stuck_service.py HOME DRAIN_SECONDS``: a service whose writes of texts containing ``STUCK``
never end (their embedding waits forever), to test that shutdown honours ``drain_timeout``."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from apps.service.server import serve
from apps.service.settings import ServiceSettings
from hello_memory import Settings
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder


class StuckEmbedder(DeterministicFakeEmbedder):
    """The fake embedder; a passage containing ``STUCK`` never finishes embedding."""

    def _embed_batch(self, batch: list[str], kind: str):
        if kind != "query" and any("STUCK" in t for t in batch):
            threading.Event().wait()
        return super()._embed_batch(batch, kind)


if __name__ == "__main__":
    home, drain = Path(sys.argv[1]), float(sys.argv[2])
    serve(Settings(home=home), ServiceSettings(port=0, drain_timeout=drain), embedder=StuckEmbedder())
