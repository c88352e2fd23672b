"""Dataset loaders for the retrieval harness, by name.

Example:
    >>> from pathlib import Path
    >>> from benchmarks.datasets import DATASETS
    >>> sorted(DATASETS)
    ['docs_qa', 'locomo', 'longmemeval', 'madial']
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.datasets.base import Doc, Match, Query, RetrievalTask

DATASETS = ("docs_qa", "locomo", "longmemeval", "madial")

__all__ = ["DATASETS", "Doc", "Match", "Query", "RetrievalTask", "load_task"]


def load_task(name: str, data: Path, *, split: str | None = None, lang: str = "zh") -> RetrievalTask:
    """Load dataset ``name`` from ``data`` (its file or directory).

    Args:
        name: one of :data:`DATASETS`.
        data: the dataset's file or directory (e.g. ``../shared/data/locomo``).
        split: LongMemEval split, ``oracle`` (default, pooled) or ``s``.
        lang: MADial-Bench language, ``zh`` or ``en``.

    Raises:
        ValueError: for an unknown dataset, split or language.
        FileNotFoundError: when the data is not where ``data`` points.
    """
    if not data.exists():
        raise FileNotFoundError(f"dataset path {data} does not exist; pass --data PATH")
    if name == "locomo":
        from benchmarks.datasets import locomo

        return locomo.load(data)
    if name == "longmemeval":
        from benchmarks.datasets import longmemeval

        return longmemeval.load(data, split or "oracle")
    if name == "madial":
        from benchmarks.datasets import madial

        return madial.load(data, lang)
    if name == "docs_qa":
        from benchmarks.datasets import docs_qa

        return docs_qa.load(data)
    raise ValueError(f"unknown dataset {name!r}; choose one of {DATASETS}")
