"""The on-disk cache of the built e5 ONNX model: a new process starts without rebuilding it."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hello_memory.embedders import _e5_cache
from hello_memory.embedders._e5_local import LocalE5

ROOT = Path(__file__).resolve().parents[3]


def _count(monkeypatch) -> list[int]:
    from hello_memory.embedders import _e5_onnx

    calls: list[int] = []
    real = _e5_onnx.build_model
    monkeypatch.setattr(_e5_onnx, "build_model", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_the_model_is_built_once_then_read_and_gives_the_same_vectors(tmp_path, monkeypatch):
    calls = _count(monkeypatch)
    texts = ["hello world", "你好，世界"]
    cold = LocalE5(cache_dir=tmp_path).passage(texts)
    warm = LocalE5(cache_dir=tmp_path).passage(texts)
    assert calls == [1] and len(list(tmp_path.glob("e5-onnx-*.bin"))) == 1
    np.testing.assert_array_equal(cold, warm)
    np.testing.assert_allclose(LocalE5(cache_dir=None).passage(texts), warm, atol=1e-6)
    assert calls == [1, 1]  # cache_dir=None builds


def test_a_damaged_cache_file_is_rebuilt(tmp_path, monkeypatch):
    calls = _count(monkeypatch)
    LocalE5(cache_dir=tmp_path)
    (entry,) = tmp_path.glob("e5-onnx-*.bin")
    good = entry.read_bytes()
    entry.write_bytes(good[: len(good) // 2])  # a torn write, a full disk
    LocalE5(cache_dir=tmp_path).query("still works")
    assert calls == [1, 1] and entry.read_bytes() == good
    assert (entry.parent / (entry.name + ".sha256")).read_text() == hashlib.sha256(good).hexdigest()


def test_an_unwritable_cache_directory_only_costs_the_build(tmp_path, monkeypatch):
    calls = _count(monkeypatch)
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    assert LocalE5(cache_dir=blocked / "cache").query("works").shape == (384,)
    assert calls == [1]


def test_new_weights_are_a_new_entry(tmp_path):
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"v1")
    first = _e5_cache.cached("t", {"w": _e5_cache.file_identity(weights)}, lambda: b"one", directory=tmp_path)
    os.utime(weights, ns=(1, 1))  # reinstalled: another modification time
    second = _e5_cache.cached("t", {"w": _e5_cache.file_identity(weights)}, lambda: b"two", directory=tmp_path)
    assert (first, second) == (b"one", b"two") and len(list(tmp_path.glob("t-*.bin"))) == 2


def test_a_process_with_a_warm_cache_does_not_import_onnx(tmp_path):
    """``import onnx`` (1.4 s) plus the build cost every CLI call 1.5 s before the cache."""
    script = ("import sys; from hello_memory.embedders.e5 import E5Embedder; "
              "E5Embedder().embed(['warm'], kind='query'); print('onnx' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=240)
            for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["True", "False"], [r.stderr[-2000:] for r in runs]
    assert list((tmp_path / "hello-memory").glob("e5-onnx-*.bin"))


@pytest.mark.parametrize("bad", ["", "not-a-hex-digest"])
def test_a_missing_or_wrong_digest_is_a_miss(tmp_path, bad):
    _e5_cache.cached("t", {}, lambda: b"data", directory=tmp_path)
    (digest,) = tmp_path.glob("t-*.bin.sha256")
    digest.write_text(bad)
    assert _e5_cache.cached("t", {}, lambda: b"rebuilt", directory=tmp_path) == b"rebuilt"


def test_the_vocabulary_tables_come_from_the_cache_and_give_the_same_ids(tmp_path, monkeypatch):
    from hello_memory.embedders._e5_tokenizer import E5Tokenizer

    built: list[int] = []
    real = E5Tokenizer.__init__

    def counting(self, *a, **k):
        built.append(1)
        real(self, *a, **k)

    monkeypatch.setattr(E5Tokenizer, "__init__", counting)
    cold, warm = LocalE5(cache_dir=tmp_path), LocalE5(cache_dir=tmp_path)
    assert built == [1] and len(list(tmp_path.glob("e5-vocab-*.bin"))) == 1
    texts = ["Transformer 模型使用自注意力机制", "  spaces   and ▁ marks ", "ＡＢＣ ①② ﬁ", "a" * 300]
    assert [warm.tokenizer.content_ids(t) for t in texts] == [cold.tokenizer.content_ids(t) for t in texts]
    assert [warm.tokenizer.content_ids(t) for t in texts] == [warm.tokenizer.reference_ids(t) for t in texts]
