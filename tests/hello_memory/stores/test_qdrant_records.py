"""What the Qdrant record store adds to the contract: vectors, collection checks, failures mid-write."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from hello_memory.errors import (
    DimensionMismatchError,
    EmbedderMismatchError,
    InvalidInputError,
    StoreError,
)
from hello_memory.stores.records.base import RecordWrite
from hello_memory.stores.records.qdrant import QdrantRecordStore
from hello_memory.stores.records.qdrant_lexical import SessionContext
from hello_memory.testing.record_store import ALICE, BOB, T0, entry, memory

DIM = 4


@pytest.fixture
def client() -> Iterator[QdrantClient]:
    c = QdrantClient(":memory:")
    yield c
    c.close()


@pytest.fixture
def store(client: QdrantClient) -> QdrantRecordStore:
    return QdrantRecordStore(client=client, embedder="fake", dimension=DIM)


def vec(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def fail_on(store: QdrantRecordStore, monkeypatch: pytest.MonkeyPatch, action: str, times: int = 1) -> None:
    """Make the store's next ``times`` client calls named ``action`` fail like a dropped connection."""
    real = store._conn.call
    left = {"n": times}

    def call(act: str, method: str, *args: Any, **kwargs: Any) -> Any:
        if act == action and left["n"] > 0:
            left["n"] -= 1
            raise StoreError(f"qdrant failed to {act}: connection reset")
        return real(act, method, *args, **kwargs)

    monkeypatch.setattr(store._conn, "call", call)


@pytest.mark.filterwarnings("ignore:Failed to obtain server version")
def test_init_is_lazy_and_a_dead_server_is_a_store_error() -> None:
    store = QdrantRecordStore(url="http://127.0.0.1:9", timeout=1, retries=0)  # nothing listens on port 9
    with pytest.raises(StoreError) as info:
        store.read(ALICE, [memory("x").id])
    assert isinstance(info.value.__cause__, Exception)
    store.close()


def test_dense_vectors_are_stored_with_the_record(store: QdrantRecordStore) -> None:
    a, b, theirs = memory("a"), memory("b", kind="semantic"), memory("c", user=BOB)
    store.apply([RecordWrite(a, vector=vec(1, 0, 0, 0)), RecordWrite(b, vector=vec(0, 2, 0, 0))])
    store.apply([RecordWrite(theirs, vector=vec(1, 0, 0, 0))])
    assert store.dense_search(ALICE, vec(1, 0.1, 0, 0), limit=5).keys() == {a.id, b.id}
    assert list(store.dense_search(ALICE, vec(1, 0, 0, 0), limit=1)) == [a.id]
    assert store.dense_search(ALICE, vec(1, 0, 0, 0), limit=5, types=["semantic"]).keys() == {b.id}
    np.testing.assert_allclose(store.dense_vectors(ALICE, [b.id, theirs.id])[b.id], [0, 1, 0, 0], atol=1e-6)
    assert theirs.id not in store.dense_vectors(ALICE, [theirs.id])
    # an update without a vector keeps it; a soft delete drops it; a restore brings a new one
    store.apply([RecordWrite(a.model_copy(update={"importance": 0.9}), expected_version=1)])
    assert a.id in store.dense_search(ALICE, vec(1, 0, 0, 0), limit=5)
    store.apply([RecordWrite(a.model_copy(update={"deleted_at": T0}), expected_version=2)])
    assert a.id not in store.dense_search(ALICE, vec(1, 0, 0, 0), limit=5)
    assert store.dense_vectors(ALICE, [a.id]) == {}
    store.apply([RecordWrite(a, expected_version=3, vector=vec(0, 0, 1, 0))])
    assert list(store.dense_search(ALICE, vec(0, 0, 1, 0), limit=1)) == [a.id]


def test_bad_vectors_are_refused_before_anything_is_written(store: QdrantRecordStore) -> None:
    good = memory("good")
    for bad, error in ((vec(1, 0, 0), DimensionMismatchError), (vec(0, 0, 0, 0), InvalidInputError)):
        with pytest.raises(error):
            store.apply([RecordWrite(good, vector=vec(1, 0, 0, 0)), RecordWrite(memory("bad"), vector=bad)])
    with pytest.raises(InvalidInputError):
        store.apply([RecordWrite(good, vector=np.full(DIM, np.nan, np.float32))])
    assert store.read(ALICE, [good.id]) == {}
    with pytest.raises(InvalidInputError):
        store.apply([RecordWrite(memory("huge", metadata={"n": 2**70}))])


def test_a_store_without_an_embedder_refuses_vectors(client: QdrantClient) -> None:
    plain = QdrantRecordStore(client=client, prefix="plain")
    with pytest.raises(InvalidInputError):
        plain.apply([RecordWrite(memory("x"), vector=vec(1, 0, 0, 0))])
    plain.apply([RecordWrite(memory("x"))])
    with pytest.raises(InvalidInputError):
        plain.dense_search(ALICE, vec(1, 0, 0, 0), limit=3)


def test_another_embedder_or_dimension_is_refused(client: QdrantClient, store: QdrantRecordStore) -> None:
    store.apply([RecordWrite(memory("x"), vector=vec(1, 0, 0, 0))])
    with pytest.raises(EmbedderMismatchError) as info:
        QdrantRecordStore(client=client, embedder="other", dimension=DIM).ids(ALICE)
    assert (info.value.stored, info.value.requested) == ("fake", "other")
    with pytest.raises(DimensionMismatchError) as dims:
        QdrantRecordStore(client=client, embedder="fake", dimension=DIM * 2).ids(ALICE)
    assert (dims.value.expected, dims.value.got) == (DIM, DIM * 2)
    assert len(QdrantRecordStore(client=client).ids(ALICE)) == 1  # a reader without an embedder may open it
    QdrantRecordStore(client=client, prefix="novec").ids(ALICE)
    with pytest.raises(EmbedderMismatchError):
        QdrantRecordStore(client=client, prefix="novec", embedder="fake", dimension=DIM).ids(ALICE)


def test_a_collection_hello_memory_did_not_create_is_refused(client: QdrantClient) -> None:
    client.create_collection("hm_records", vectors_config={})
    with pytest.raises(StoreError, match="not created by hello-memory"):
        QdrantRecordStore(client=client).ids(ALICE)


def test_the_collection_keeps_its_context_window_and_encoding(
    client: QdrantClient, caplog: pytest.LogCaptureFixture
) -> None:
    QdrantRecordStore(client=client, context_window=2).ids(ALICE)
    with caplog.at_level(logging.WARNING):
        later = QdrantRecordStore(client=client, context_window=0)
        later.ids(ALICE)
    assert later._context.window == 2 and "keeps lexical context window 2" in caplog.text


def test_history_survives_a_failure_after_the_record_write(
    store: QdrantRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = memory("v1")
    store.apply([RecordWrite(item, history=(entry(item, "add"),))])
    fail_on(store, monkeypatch, "write history")
    with pytest.raises(StoreError):
        store.apply(
            [
                RecordWrite(
                    item.model_copy(update={"content": "v2"}),
                    expected_version=1,
                    history=(entry(item, "update"),),
                )
            ]
        )
    # the record write landed: its history entry is visible from the record's outbox
    assert store.read(ALICE, [item.id])[item.id].version == 2
    assert [h.event for h in store.history(item.id, ALICE)] == ["add", "update"]
    store.apply(
        [
            RecordWrite(
                item.model_copy(update={"content": "v3"}),
                expected_version=2,
                history=(entry(item, "update", 1),),
            )
        ]
    )
    assert [h.event for h in store.history(item.id, ALICE)] == ["add", "update", "update"]
    outbox = store._point(item.id).payload["outbox"]
    assert outbox == []  # the next write carried the unflushed entry over and flushed both


def test_a_failed_upsert_changes_nothing_and_a_retry_works(
    store: QdrantRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = memory("v1")
    store.apply([RecordWrite(item)])
    write = RecordWrite(
        item.model_copy(update={"content": "v2"}), expected_version=1, history=(entry(item, "update"),)
    )
    fail_on(store, monkeypatch, "write a memory")
    with pytest.raises(StoreError):
        store.apply([write])
    got = store.read(ALICE, [item.id])[item.id]
    assert (got.version, got.item.content, store.history(item.id, ALICE)) == (1, "v1", [])
    store.apply([write])
    assert store.read(ALICE, [item.id])[item.id].item.content == "v2"


def test_an_insert_retried_after_a_lost_reply_is_a_no_op(
    store: QdrantRecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upsert landed but the reply was lost (the read-back failed): the retry stores nothing twice."""
    item = memory("once")
    write = RecordWrite(item, history=(entry(item, "add"),))
    real = store._conn.call
    calls = {"n": 0}

    def lose_read_back(act: str, method: str, *args: Any, **kwargs: Any) -> Any:
        if act == "retrieve":
            calls["n"] += 1
            if calls["n"] == 2:  # the read-back after the upsert
                raise StoreError("qdrant failed to retrieve: timed out")
        return real(act, method, *args, **kwargs)

    monkeypatch.setattr(store._conn, "call", lose_read_back)
    with pytest.raises(StoreError):
        store.apply([write])
    monkeypatch.undo()
    (again,) = store.apply([write])
    assert again.version == 1 and store.ids(ALICE) == [item.id]
    assert [h.event for h in store.history(item.id, ALICE)] == ["add"]


def test_a_failed_context_refresh_is_logged_and_rebuild_repairs_it(
    store: QdrantRecordStore,
    client: QdrantClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    windowed = QdrantRecordStore(client=client, prefix="win", context_window=1)
    question = memory("What should we cook for dinner?", session_id="s", minutes=0)
    windowed.apply([RecordWrite(question)])
    fail_on(windowed, monkeypatch, "update lexical vectors")
    answer = memory("Lasagna sounds perfect", session_id="s", minutes=1)
    with caplog.at_level(logging.WARNING):
        windowed.apply([RecordWrite(answer)])  # the record write stands
    assert "refreshing the lexical context" in caplog.text
    found = windowed.lexical_search(ALICE, ["lasagna"], types=None, limit=5)
    assert set(found) == {answer.id}  # the question's document lacks the reply's words
    assert windowed.rebuild_lexical() == 2
    assert set(windowed.lexical_search(ALICE, ["lasagna"], types=None, limit=5)) == {answer.id, question.id}


def test_session_documents_follow_inserts_in_the_middle(client: QdrantClient) -> None:
    store = QdrantRecordStore(client=client, context_window=1)
    first, last = memory("alpha", session_id="s", minutes=0), memory("gamma", session_id="s", minutes=2)
    store.apply([RecordWrite(first), RecordWrite(last)])
    assert set(store.lexical_search(ALICE, ["gamma"], types=None, limit=5)) == {first.id, last.id}
    middle = memory("beta", session_id="s", minutes=1)
    store.apply([RecordWrite(middle)])
    assert set(store.lexical_search(ALICE, ["gamma"], types=None, limit=5)) == {middle.id, last.id}
    assert set(store.lexical_search(ALICE, ["alpha"], types=None, limit=5)) == {first.id, middle.id}
    context = SessionContext(store._conn, "records", "lexical", 1)
    assert [t.id for t in context.turns(ALICE, "s")] == [first.id, middle.id, last.id]


def test_payload_holds_the_whole_record(store: QdrantRecordStore, client: QdrantClient) -> None:
    item = memory("Alice likes tea", kind="semantic", metadata={"k": "v"}, tags=["t"])
    store.apply([RecordWrite(item, vector=vec(1, 1, 0, 0))])
    (point,) = client.retrieve("hm_records", [item.id], with_payload=True)
    assert point.payload["record"]["content"] == "Alice likes tea"
    assert point.payload["record"]["metadata"] == {"k": "v"}
    assert point.payload["user_id"] == ALICE and point.payload["memory_type"] == "semantic"
    assert point.payload["created_ts"] == pytest.approx((T0 + timedelta(0)).timestamp())


def test_a_foreign_memory_cannot_be_touched_through_markers(store: QdrantRecordStore) -> None:
    theirs = memory("bob's", user=BOB)
    store.apply([RecordWrite(theirs)])
    store.record_access(ALICE, [theirs.id], T0)
    store.mark(ALICE, [theirs.id], "purge")  # type: ignore[arg-type]
    assert store.unsettled() == []
    assert store.read(BOB, [theirs.id])[theirs.id].item.access_count == 0


def test_server_collections_get_payload_indexes(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a server (not local mode) the filter keys get payload indexes, ``user_id`` as the tenant."""
    created: list[tuple[str, str, Any]] = []
    store = QdrantRecordStore(":memory:")
    monkeypatch.setattr(type(store._conn), "is_local", property(lambda self: False))
    real = store._conn.call

    def call(act: str, method: str, *args: Any, **kwargs: Any) -> Any:
        if method == "create_payload_index":
            created.append((args[0], args[1], args[2]))
            return None
        return real(act, method, *args, **kwargs)

    monkeypatch.setattr(store._conn, "call", call)
    store.ids(ALICE)
    keys = {(c, k) for c, k, _ in created}
    for key in ("user_id", "memory_type", "session_id", "pending", "fact_keys", "created_ts", "deleted_ts"):
        assert ("hm_records", key) in keys
    assert ("hm_record_history", "memory_id") in keys
    tenant = next(kind for c, k, kind in created if (c, k) == ("hm_records", "user_id"))
    assert isinstance(tenant, models.KeywordIndexParams) and tenant.is_tenant


def test_a_second_client_on_a_local_path_is_a_clear_store_error(tmp_path: Path) -> None:
    first = QdrantRecordStore(path=str(tmp_path / "q"))
    first.ids(ALICE)
    second = QdrantRecordStore(path=str(tmp_path / "q"))
    with pytest.raises(StoreError, match="already accessed by another instance"):
        second.ids(ALICE)
    first.close()
    second.close()


def test_a_very_long_memory_is_stored_and_found(store: QdrantRecordStore) -> None:
    text = "用户每天早上都去公园跑步，然后喝一杯绿茶。" * 4000 + " zeppelin"  # ~84k characters
    item = memory(text)
    store.apply([RecordWrite(item, vector=vec(1, 2, 3, 4))])
    assert store.read(ALICE, [item.id])[item.id].item.content == text
    assert list(store.lexical_search(ALICE, ["zeppelin"], types=None, limit=3)) == [item.id]
