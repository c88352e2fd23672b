"""The floor probe's data (issue 35): per set and language, 50 everyday memories of one user, questions
each answered by one of them in other words, and off-topic questions with and without a time word.

Two independent sets (``a``, ``b``: another person, other memories, other questions), English and
Chinese, written for hello-memory (``benchmarks/data/floor_probe/{set}_{lang}.tsv``; none of their
lines is in the floor's calibration corpus, ``hello_memory/data/null_*.tsv``): one is tuned on and the
other reported on (:mod:`benchmarks.floor_probe`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "floor_probe"
SETS = ("a", "b")
LANGS = ("en", "zh")
#: When every probe question is asked (a Friday evening); memories are made ``days`` before, at 08:00.
ASKED = datetime(2025, 6, 20, 18, 0, tzinfo=timezone.utc)
KINDS = ("plain", "time")  # off-topic questions without and with a time word


@dataclass(frozen=True, slots=True)
class ProbeMemory:
    """One stored memory: its probe id, age in days at :data:`ASKED`, and text."""

    key: str
    days: int
    text: str

    @property
    def created_at(self) -> datetime:
        """When it was said: ``days`` before :data:`ASKED`, at 08:00."""
        return ASKED - timedelta(days=self.days, hours=10)


@dataclass(frozen=True, slots=True)
class ProbeQuestion:
    """A question: ``target`` is the memory that answers it (``None``: off-topic, of ``kind``)."""

    text: str
    target: str | None
    kind: str = "answerable"


@dataclass(frozen=True, slots=True)
class ProbeSet:
    """One set in one language."""

    name: str
    lang: str
    memories: tuple[ProbeMemory, ...]
    questions: tuple[ProbeQuestion, ...]

    @property
    def answerable(self) -> list[ProbeQuestion]:
        """The questions one memory answers."""
        return [q for q in self.questions if q.target is not None]

    def off_topic(self, kind: str | None = None) -> list[ProbeQuestion]:
        """The off-topic questions (of ``kind``: ``plain`` or ``time``)."""
        return [q for q in self.questions if q.target is None and kind in (None, q.kind)]


@cache
def load(name: str, lang: str) -> ProbeSet:
    """Set ``name`` (``a``/``b``) in ``lang`` (``en``/``zh``).

    Example:
        >>> s = load("a", "zh")
        >>> len(s.memories), len(s.answerable), len(s.off_topic("plain")), len(s.off_topic("time"))
        (50, 50, 20, 20)
    """
    memories: list[ProbeMemory] = []
    questions: list[ProbeQuestion] = []
    for line in (DATA / f"{name}_{lang}.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        tag, *fields = line.split("\t")
        if tag == "M":
            memories.append(ProbeMemory(fields[0], int(fields[1]), fields[2]))
        elif tag == "Q":
            questions.append(ProbeQuestion(fields[1], fields[0]))
        elif tag == "O" and fields[0] in KINDS:
            questions.append(ProbeQuestion(fields[1], None, fields[0]))
        else:
            raise ValueError(f"{name}_{lang}.tsv: not a probe line: {line!r}")
    keys = {m.key for m in memories}
    unknown = [q.target for q in questions if q.target is not None and q.target not in keys]
    if unknown:
        raise ValueError(f"{name}_{lang}.tsv: questions name unknown memories {unknown}")
    return ProbeSet(name, lang, tuple(memories), tuple(questions))
