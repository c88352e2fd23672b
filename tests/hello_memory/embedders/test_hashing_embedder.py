"""HashingTfidfEmbedder: deterministic hashed TF vectors, no fitting."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from hello_memory.embedders.base import Embedder
from hello_memory.embedders.hashing import HashingTfidfEmbedder
from hello_memory.errors import InvalidInputError

TEXTS = [
    "Vector databases store embeddings",
    "向量数据库存储嵌入向量",
    "混合 mixed text 123",
    "!!!",
    "",
    "😀",
]


def digest(v: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(v, dtype="<f4").tobytes()).hexdigest()


def test_shape_dtype_norm_and_protocol():
    e = HashingTfidfEmbedder(dimension=256)
    assert isinstance(e, Embedder)
    assert e.name == "hashing-tfidf-v1:256" and e.dimension == 256
    v = e.embed(TEXTS)
    assert v.shape == (len(TEXTS), 256) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    assert e.embed([]).shape == (0, 256)


def test_deterministic_within_process_and_kind_is_ignored():
    e = HashingTfidfEmbedder()
    a = e.embed(TEXTS)
    assert np.array_equal(a, HashingTfidfEmbedder().embed(TEXTS))
    assert np.array_equal(a, e.embed(TEXTS, kind="query"))


def test_deterministic_across_processes():
    code = (
        "import hashlib, json, sys\n"
        "import numpy as np\n"
        "from hello_memory.embedders.hashing import HashingTfidfEmbedder\n"
        "v = HashingTfidfEmbedder().embed(json.loads(sys.argv[1]))\n"
        "print(hashlib.sha256(np.ascontiguousarray(v, dtype='<f4').tobytes()).hexdigest())\n"
    )
    import json

    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(TEXTS)], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == digest(HashingTfidfEmbedder().embed(TEXTS))


def test_chinese_tokens_drive_similarity():
    e = HashingTfidfEmbedder()
    q, near, far = e.embed(["向量数据库", "我们的向量数据库很快", "今天天气很好"])
    assert q @ near > 0.3
    assert q @ near > q @ far + 0.2


def test_english_stemming_matches_inflections():
    e = HashingTfidfEmbedder()
    q, near, far = e.embed(["running databases", "the database runs", "a cat sleeps"])
    assert q @ near > 0.5 > q @ far


def test_sublinear_term_frequency():
    e = HashingTfidfEmbedder(dimension=1 << 16)
    once, many = e.embed(["apple banana", "apple apple apple apple banana"])
    # with raw tf the repeated word would dominate far more (raw tf: cos 0.86; 1 + log tf: 0.93)
    assert once @ many > 0.9


def test_tokenless_and_empty_texts_get_non_zero_distinct_rows():
    e = HashingTfidfEmbedder()
    bang, quest, empty, space, emoji = e.embed(["!!!", "???", "", "   ", "😀"])
    for row in (bang, quest, empty, space, emoji):
        assert np.abs(row).sum() > 0
    assert bang @ quest < 0.99
    assert np.array_equal(empty, space)


def test_rejects_bad_input():
    with pytest.raises(InvalidInputError):
        HashingTfidfEmbedder(dimension=1)
    with pytest.raises(InvalidInputError):
        HashingTfidfEmbedder().embed("not a list")  # type: ignore[arg-type]
