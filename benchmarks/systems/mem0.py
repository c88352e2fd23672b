"""Optional peer: mem0, only when ``import mem0`` works (it is not a dependency).

mem0's default configuration calls an LLM and OpenAI embeddings, which this harness does not
use; a judge-free, offline mem0 configuration is left for when the peer comparison is needed.
"""

from __future__ import annotations

from benchmarks.systems.base import SystemContext, SystemUnavailableError


class Mem0System:
    """Placeholder that explains why mem0 is skipped."""

    handles_documents = False

    def __init__(self, *, context: SystemContext | None = None) -> None:
        try:
            import mem0  # noqa: F401
        except ImportError as e:
            raise SystemUnavailableError(
                "mem0 is not installed (pip install mem0ai); skipping the peer"
            ) from e
        raise SystemUnavailableError(
            "mem0 is installed but needs an LLM/embedding endpoint by default; no offline adapter yet"
        )
