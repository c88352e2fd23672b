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
    """A fake CPU clock: each engine call advances it by that engine's configured cost."""
    now = [0.0]
    monkeypatch.setattr(_e5_choice.time, "process_time", lambda: now[0])

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


def test_winner_is_the_engine_that_embeds_passages_fastest():
    # the AVX2 machine without VNNI: numpy embeds passages faster (queries stay on onnx)
    avx2 = {"onnx": Timing(67.0, 19.6), "numpy": Timing(93.0, 30.0)}
    assert winner(avx2) == "numpy"
    assert winner({"onnx": Timing(90.0, 5.0), "numpy": Timing(93.0, 30.0)}) == "numpy"  # queries do not count
    vnni = {"onnx": Timing(62.0, 9.5), "numpy": Timing(48.0, 27.0)}
    assert winner(vnni) == "onnx"
    assert winner({"onnx": Timing(50.0, 10.0), "numpy": Timing(50.0, 10.0)}) == "onnx"  # a tie: first


def test_the_faster_engine_is_chosen_cached_and_handed_over_loaded(tmp_path, clock):
    loads: list[str] = []
    speeds = {"onnx": (0.6, 0.02), "numpy": (0.3, 0.03)}  # numpy embeds the batch in less CPU time

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


def test_the_verdict_counts_cpu_time_not_the_elapsed_time_other_processes_stretch(tmp_path, clock, monkeypatch):
    """A busy machine stretches elapsed time unevenly (it once made the 3x slower query engine win):
    the choice reads this process's CPU time only, so wall-clock delays change nothing."""
    wall = [0.0]

    def stretched() -> float:  # another process's load: elapsed time jumps by seconds between calls
        wall[0] += 7.0
        return wall[0]

    monkeypatch.setattr(_e5_choice.time, "perf_counter", stretched)
    monkeypatch.setattr(_e5_choice.time, "monotonic", stretched)

    def load(engine: str) -> _Model:
        return clock(_Model(engine, 0.5 if engine == "onnx" else 0.8, 0.01))

    assert choose(load, threads=None, variant="original", cache_dir=None)[0] == "onnx"


def test_queries_run_on_onnx_whatever_engine_embeds_passages(tmp_path, monkeypatch):
    monkeypatch.setattr(_e5_choice, "winner", lambda timings: "numpy")
    e5 = E5Embedder(cache_dir=tmp_path)
    q = e5.embed(["where does she work now?"], kind="query")
    assert (e5.engine, e5.query_engine) == ("numpy", "onnx")
    onnx = E5Embedder(engine="onnx", cache_dir=None).embed(["where does she work now?"], kind="query")
    np.testing.assert_allclose(q, onnx, atol=1e-6)  # the query vector is onnx's
    p = e5.embed(["went hiking by the lake"])
    numpy_p = E5Embedder(engine="numpy", cache_dir=None).embed(["went hiking by the lake"])
    np.testing.assert_allclose(p, numpy_p, atol=1e-6)  # the passage vector is numpy's
