"""The test kit's DeterministicFakeEmbedder and FailingEmbedder."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hello_memory.embedders.base import Embedder
from hello_memory.errors import EmbeddingError
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder, FailingEmbedder, fake_vector


def test_fake_is_deterministic_normalised_and_records_calls():
    e = DeterministicFakeEmbedder(dimension=16)
    assert isinstance(e, Embedder) and e.name == "fake-sha256:16" and e.dimension == 16
    a = e.embed(["same", "other", "same"], kind="query")
    assert a.shape == (3, 16) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(a[0], a[2]) and not np.allclose(a[0], a[1])
    assert np.array_equal(a[0], e.embed(["same"], kind="passage")[0])
    assert [(c.texts, c.kind) for c in e.calls] == [
        (("same", "other", "same"), "query"),
        (("same",), "passage"),
    ]
    assert e.embed([]).shape == (0, 16)


def test_fake_vector_is_stable_across_processes():
    code = (
        "from hello_memory.testing.fake_embedder import fake_vector\n"
        "print(fake_vector('稳定 text', 8).tobytes().hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == fake_vector("稳定 text", 8).tobytes().hex()


def test_failing_embedder_modes():
    with pytest.raises(EmbeddingError):
        FailingEmbedder().embed(["anything"])
    poison = FailingEmbedder(fail_on="poison")
    assert poison.embed(["fine"]).shape == (1, 32)
    with pytest.raises(EmbeddingError):
        poison.embed(["fine", "contains poison"])
    later = FailingEmbedder(succeed_calls=2)
    later.embed(["a"])
    later.embed(["b"])
    with pytest.raises(EmbeddingError, match="boom"):
        later.embed(["c"])
    assert len(later.calls) == 3
    assert later.name == DeterministicFakeEmbedder().name
    assert np.array_equal(poison.embed(["x"]), DeterministicFakeEmbedder().embed(["x"]))
