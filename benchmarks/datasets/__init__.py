"""Dataset loaders for the retrieval harness, by name.

Example:
    >>> from pathlib import Path
    >>> from benchmarks.datasets import DATASETS
    >>> sorted(DATASETS)
    ['docs_qa', 'locomo', 'longmemeval', 'madial']
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.datasets.base import DEFAULT_SPLIT, Doc, Match, Query, RetrievalTask

DATASETS = ("docs_qa", "locomo", "longmemeval", "madial")

__all__ = ["DATASETS", "Doc", "Match", "Query", "RetrievalTask", "load_task"]


def load_task(
    name: str, data: Path, *, split: str | None = None, lang: str = "zh", roles: str = "user"
) -> RetrievalTask:
    """Load dataset ``name`` from ``data`` (its file or directory).

    Args:
        name: one of :data:`DATASETS`.
        data: the dataset's file or directory (e.g. ``../shared/data/locomo``).
        split: which split to read from a directory: ``locomo_<split>.json``,
            ``qa_<split>.json`` (docs_qa), ``MADial-Bench-<lang>-dialogue-<split>.json`` (default
            ``dev``); LongMemEval ``oracle`` (pooled, default), ``s`` or any
            ``longmemeval_<split>.json[.gz]``. Held-out splits are new files with other names.
        lang: MADial-Bench language, ``zh`` or ``en``.
        roles: LongMemEval turns to index, ``user`` or ``both`` (user and assistant).

    Raises:
        ValueError: for an unknown dataset or language, or a split that is not a plain name.
        FileNotFoundError: when the data is not where ``data`` points (the message lists what is).
    """
    if not data.exists():
        raise FileNotFoundError(f"dataset path {data} does not exist; pass --data PATH")
    if name == "locomo":
        from benchmarks.datasets import locomo

        return locomo.load(data, split or DEFAULT_SPLIT)
    if name == "longmemeval":
        from benchmarks.datasets import longmemeval

        return longmemeval.load(data, split, roles)
    if name == "madial":
        from benchmarks.datasets import madial

        return madial.load(data, lang, split or DEFAULT_SPLIT)
    if name == "docs_qa":
        from benchmarks.datasets import docs_qa

        return docs_qa.load(data, split=split or DEFAULT_SPLIT)
    raise ValueError(f"unknown dataset {name!r}; choose one of {DATASETS}")
