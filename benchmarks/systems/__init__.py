"""Registry of benchmarked systems: name -> ``"module:Class"`` plus default options.

A system spec on the command line is ``NAME`` or ``NAME:key=value,key=value``; values are Python
literals where they parse (``2``, ``0.7``, ``True``) and strings otherwise.

Example:
    >>> parse_spec("rrf_neighbors:window=2,fusion=convex")
    ('rrf_neighbors', {'window': 2, 'fusion': 'convex'})
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass, field
from typing import Any

from benchmarks.systems.base import RetrievalSystem, SystemContext, SystemUnavailableError

__all__ = [
    "SYSTEMS",
    "RetrievalSystem",
    "SystemContext",
    "SystemUnavailableError",
    "build_system",
    "parse_spec",
]


@dataclass(frozen=True, slots=True)
class SystemEntry:
    """Where a system lives and the options its name implies.

    Attributes:
        target: ``"module:Class"`` for memory tasks (docs are turns/memories).
        options: keyword arguments the name stands for.
        documents_target: the class for document tasks (docs_qa), when it differs.
    """

    target: str
    options: dict[str, Any] = field(default_factory=dict)
    documents_target: str | None = None


_HYBRID = "benchmarks.systems.hybrid:HybridSystem"
_HM = "benchmarks.systems.hello_memory:HelloMemorySystem"
_RAG = "benchmarks.systems.rag_pipeline:RAGPipelineSystem"

SYSTEMS: dict[str, SystemEntry] = {
    "bm25": SystemEntry(_HYBRID, {"dense": False}),
    "dense": SystemEntry(_HYBRID, {"lexical": False}),
    "rrf": SystemEntry(_HYBRID),
    "rrf_neighbors": SystemEntry(_HYBRID, {"window": 1}),
    # Exploratory preset: what measurably helped on the dev splits (see the harness report).
    "contextual": SystemEntry(
        _HYBRID,
        {
            "lexical_window": 2,
            "lexical_center": 2,
            "dense_window": 1,
            "fusion": "convex",
            "dense_weight": 0.6,
            "speaker_boost": 0.25,
            "query_view": "user_turns",
            "metadata_fields": "scene+emotion",
        },
    ),
    "hello_memory": SystemEntry(_HM, {"profile": "default"}, _RAG),
    "paper": SystemEntry(_HM, {"profile": "paper"}, _RAG),
    "mem0": SystemEntry("benchmarks.systems.mem0:Mem0System"),
    # Reference peer (pip install --no-deps hello-agents==0.2.9), same e5 embedder.
    "hello_agents": SystemEntry("benchmarks.systems.hello_agents:HelloAgentsSystem"),
}


def _literal(value: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``NAME:key=value,...`` into the name and its option overrides."""
    name, _, rest = spec.partition(":")
    options: dict[str, Any] = {}
    for part in filter(None, rest.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"system option {part!r} in {spec!r} is not key=value")
        options[key.strip()] = _literal(value.strip())
    return name, options


def build_system(
    spec: str, *, documents: bool = False, context: SystemContext | None = None
) -> RetrievalSystem:
    """Instantiate the system named by ``spec``.

    Args:
        spec: ``NAME`` or ``NAME:key=value,...`` with NAME in :data:`SYSTEMS`.
        documents: the task's docs are whole documents (use the entry's document class if any).
        context: shared harness resources (embedding cache).

    Raises:
        ValueError: unknown name or bad option syntax.
        SystemUnavailableError: the system cannot run here (missing package or API).
    """
    name, overrides = parse_spec(spec)
    if name not in SYSTEMS:
        raise ValueError(f"unknown system {name!r}; choose from {sorted(SYSTEMS)}")
    entry = SYSTEMS[name]
    target = entry.documents_target if documents and entry.documents_target else entry.target
    module, _, cls_name = target.partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    system: RetrievalSystem = cls(**{**entry.options, **overrides}, context=context or SystemContext())
    return system
