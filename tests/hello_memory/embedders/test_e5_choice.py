"""The e5 engine chosen per processor: measured once, cached, and the winner is what runs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hello_memory.embedders import _e5_choice
from hello_memory.embedders._e5_choice import CANDIDATES, Timing, choose, winner
from hello_memory.embedders.e5 import E5Embedder
from hello_memory.errors import EmbeddingError


class _Model:
    """An engine stand-in whose speed is set: ``delay`` seconds per passage batch and per query."""

    def __init__(self, name: str, batch_s: float, query_s: float) -> None:
        self.name, self.batch_s, self.query_s = name, batch_s, query_s
        self.calls = 0

    def passage(self, texts):
        self.calls += 1
        return np.zeros((len(texts), 4))

    def query(self, texts):
        self.calls += 1
        return np.zeros((len(texts), 4))


@pytest.fixture
def clock(monkeypatch):
    """A fake perf_counter: each engine call advances it by that engine's configured cost."""
    now = [0.0]
    monkeypatch.setattr(_e5_choice.time, "perf_counter", lambda: now[0])

    def instrument(model: _Model) -> _Model:
        p, q = model.passage, model.query

        def passage(texts):
            now[0] += model.batch_s
            return p(texts)

        def query(texts):
            now[0] += model.query_s
            return q(texts)

        model.passage, model.query = passage, query  # type: ignore[method-assign]
        return model

    return instrument


def test_winner_is_the_engine_that_does_the_workload_soonest():
    # the AVX2 machine without VNNI: numpy embeds passages faster, onnx answers queries faster
    avx2 = {"onnx": Timing(67.0, 19.6), "numpy": Timing(93.0, 30.0)}
    assert winner(avx2) == "numpy"
    vnni = {"onnx": Timing(62.0, 9.5), "numpy": Timing(48.0, 27.0)}
    assert winner(vnni) == "onnx"
    assert winner({"onnx": Timing(50.0, 10.0), "numpy": Timing(50.0, 10.0)}) == "onnx"  # a tie: first


def test_the_faster_engine_is_chosen_cached_and_handed_over_loaded(tmp_path, clock):
    loads: list[str] = []
    speeds = {"onnx": (0.6, 0.02), "numpy": (0.3, 0.03)}  # numpy: 0.3 + 6·0.03 < 0.6 + 6·0.02

    def load(engine: str) -> _Model:
        loads.append(engine)
        return clock(_Model(engine, *speeds[engine]))

    engine, model = choose(load, threads=None, variant="original", cache_dir=tmp_path)
    assert (engine, model.name, loads) == ("numpy", "numpy", list(CANDIDATES))
    (entry,) = tmp_path.glob("e5-engine-*.bin")
    saved = json.loads(entry.read_bytes())
    assert saved["engine"] == "numpy" and saved["timings"]["numpy"]["query_ms"] == pytest.approx(30.0)
    # another process on the same machine: the verdict without loading or measuring anything
    again, model = choose(load, threads=None, variant="original", cache_dir=tmp_path)
    assert (again, model, loads) == ("numpy", None, list(CANDIDATES))
    # another thread setting is another verdict
    choose(load, threads=1, variant="original", cache_dir=tmp_path)
    assert len(loads) == 4 and len(list(tmp_path.glob("e5-engine-*.bin"))) == 2


def test_an_engine_that_cannot_load_is_not_a_candidate(tmp_path, clock):
    def load(engine: str) -> _Model:
        if engine == "onnx":
            raise ImportError("No module named 'onnxruntime'")
        return clock(_Model(engine, 1.0, 1.0))

    engine, model = choose(load, threads=None, variant="original", cache_dir=None)
    assert engine == "numpy" and model is not None and model.calls == 0  # nothing to compare: no measuring


def test_no_engine_loading_is_one_clear_error(tmp_path, monkeypatch):
    def load(engine: str):
        raise ImportError(f"no {engine}")

    monkeypatch.setattr(E5Embedder, "_create_local", lambda self, backend: load(backend))
    with pytest.raises(EmbeddingError, match="HELLO_MEMORY_E5_ENGINE"):
        E5Embedder(cache_dir=tmp_path).embed(["x"])


def test_a_damaged_verdict_is_measured_again(tmp_path, clock):
    def load(engine: str) -> _Model:
        return clock(_Model(engine, 0.5 if engine == "onnx" else 1.0, 0.01))

    choose(load, threads=None, variant="original", cache_dir=tmp_path)
    (entry,) = tmp_path.glob("e5-engine-*.bin")
    (digest,) = tmp_path.glob("e5-engine-*.bin.sha256")
    entry.write_bytes(b'{"engine": "torch"}')
    import hashlib

    digest.write_text(hashlib.sha256(entry.read_bytes()).hexdigest())  # valid digest, unknown engine
    engine, model = choose(load, threads=None, variant="original", cache_dir=tmp_path)
    assert engine == "onnx" and model is not None


def test_auto_runs_a_real_engine_with_the_same_vectors(tmp_path):
    auto = E5Embedder(cache_dir=tmp_path)
    assert auto.engine == "auto"
    texts = ["今天天气很好", "The weather is nice today"]
    got = auto.embed(texts)
    assert auto.engine in CANDIDATES
    fixed = E5Embedder(engine=auto.engine, cache_dir=tmp_path).embed(texts)
    other = E5Embedder(engine=next(e for e in CANDIDATES if e != auto.engine), cache_dir=tmp_path).embed(texts)
    np.testing.assert_allclose(got, fixed, atol=1e-6)
    assert float(np.min(np.sum(got * other, axis=1))) >= 0.9997
    assert E5Embedder(cache_dir=tmp_path).embed(["x"]).shape == (1, 384)  # second one: from the cache
