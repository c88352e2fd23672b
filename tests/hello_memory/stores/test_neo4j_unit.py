"""Neo4jGraphStore without a server: the graph contract on a fake driver, the Cypher and parameters
it sends (never user text in a query), schema creation, driver lifecycle, error wrapping, and the
skip/fail policy of ``pytest -m integration`` when there is no Docker engine.

The fake driver answers each of the store's fixed statements with a Python model of what that
statement does, so the contract suite checks the adapter's logic (validation, transaction
layout, traversal, ordering, batching); the Cypher itself runs against a real Neo4j in
``tests/integration``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

neo4j = pytest.importorskip("neo4j")

from hello_memory.errors import InvalidInputError, MissingDependencyError, StoreError  # noqa: E402
from hello_memory.language.extraction import entity_id  # noqa: E402
from hello_memory.settings import Settings  # noqa: E402
from hello_memory.stores.graph import neo4j_cypher as cy  # noqa: E402
from hello_memory.stores.graph.base import GraphStore  # noqa: E402
from hello_memory.stores.graph.neo4j import Neo4jGraphStore  # noqa: E402
from hello_memory.testing.graph_store import GraphStoreContract, link_chain, link_names  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
URI = "bolt://graph.invalid:7687"
DATA_QUERIES = {
    cy.DELETE_RELATIONS,
    cy.DELETE_MEMORY,
    cy.LINK_ENTITIES,
    cy.LINK_RELATIONS,
    cy.DELETE_ORPHANS,
    cy.START_ENTITIES,
    cy.NEXT_LAYER,
    cy.MENTIONS_OF,
    cy.FIND_BY_NAME,
    cy.COUNTS,
    *cy.FORGET_USER,
}
READ_QUERIES = {cy.START_ENTITIES, cy.NEXT_LAYER, cy.MENTIONS_OF, cy.FIND_BY_NAME, cy.COUNTS}


# -- a fake server: what each fixed statement does, modelled in Python -------------------------


@dataclass
class FakeGraph:
    """The server's data, shared by every driver opened on it (so it survives a reopen)."""

    entities: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # (user, id) -> props
    memories: set[tuple[str, str]] = field(default_factory=set)  # (user, memory)
    mentions: set[tuple[str, str, str]] = field(default_factory=set)  # (user, memory, entity)
    relations: set[tuple[str, str, str, str, str]] = field(default_factory=set)  # (user, mem, src, type, dst)

    def rows_of(self, user: str) -> int:
        return sum(
            1
            for rows in (self.entities, self.memories, self.mentions, self.relations)
            for key in rows
            if key[0] == user
        )

    def execute(self, query: str, p: dict[str, Any]) -> list[dict[str, Any]]:
        if query in cy.SCHEMA:
            return []
        handler = _HANDLERS.get(query)
        assert handler is not None, f"unexpected query sent: {query!r}"
        return handler(self, p)

    def delete_relations(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        self.relations = {r for r in self.relations if r[:2] != (p["user_id"], p["memory_id"])}
        return []

    def delete_memory(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        key = (p["user_id"], p["memory_id"])
        if key not in self.memories:
            return []
        previous = [m[2] for m in self.mentions if m[:2] == key]
        self.mentions = {m for m in self.mentions if m[:2] != key}
        self.memories.discard(key)
        return [{"previous": previous}]

    def link_entities(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        user = p["user_id"]
        self.memories.add((user, p["memory_id"]))
        for row in p["entities"]:
            props = self.entities.setdefault(
                (user, row["id"]), {"name": row["name"], "norm_name": row["norm_name"], "type": row["type"]}
            )
            if props["type"] == p["generic"] and row["type"] != p["generic"]:
                props["type"] = row["type"]
            self.mentions.add((user, p["memory_id"], row["id"]))
        return []

    def link_relations(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        user = p["user_id"]
        for rel in p["relations"]:
            if (user, rel["source"]) in self.entities and (user, rel["target"]) in self.entities:
                self.relations.add((user, p["memory_id"], rel["source"], rel["type"], rel["target"]))
        return []

    def delete_orphans(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        user = p["user_id"]
        for eid in p["entity_ids"]:
            if (user, eid) in self.entities and not any(m[0] == user and m[2] == eid for m in self.mentions):
                del self.entities[(user, eid)]
                self.relations = {r for r in self.relations if not (r[0] == user and eid in (r[2], r[4]))}
        return []

    def start_entities(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        user = p["user_id"]
        return [
            {"id": e, "name": self.entities[(user, e)]["name"]}
            for e in p["entity_ids"]
            if (user, e) in self.entities
        ]

    def next_layer(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        user, frontier = p["user_id"], set(p["frontier"])
        found = {
            other
            for u, _, src, _, dst in self.relations
            if u == user
            for this, other in ((src, dst), (dst, src))
            if this in frontier
        }
        return [{"id": e, "name": self.entities[(user, e)]["name"]} for e in sorted(found)]

    def mentions_of(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        wanted = set(p["entity_ids"])
        return [
            {"memory_id": m, "entity_id": e} for u, m, e in self.mentions if u == p["user_id"] and e in wanted
        ]

    def find_by_name(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"key": key, "id": eid, "name": props["name"]}
            for key in p["keys"]
            for (u, eid), props in self.entities.items()
            if u == p["user_id"] and props["norm_name"] == key
        ]

    def counts(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        user = p["user_id"]
        return [
            {
                "entities": sum(1 for u, _ in self.entities if u == user),
                "relations": sum(1 for r in self.relations if r[0] == user),
                "mentions": sum(1 for m in self.mentions if m[0] == user),
            }
        ]

    def forget_memories(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        batch = sorted(m for m in self.memories if m[0] == p["user_id"])[: p["batch"]]
        for key in batch:
            self.memories.discard(key)
            self.mentions = {m for m in self.mentions if m[:2] != key}
        return [{"deleted": len(batch)}]

    def forget_entities(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        batch = sorted(e for e in self.entities if e[0] == p["user_id"])[: p["batch"]]
        for user, eid in batch:
            del self.entities[(user, eid)]
            self.mentions = {m for m in self.mentions if not (m[0] == user and m[2] == eid)}
            self.relations = {r for r in self.relations if not (r[0] == user and eid in (r[2], r[4]))}
        return [{"deleted": len(batch)}]


_HANDLERS: dict[str, Callable[[FakeGraph, dict[str, Any]], list[dict[str, Any]]]] = {
    cy.DELETE_RELATIONS: FakeGraph.delete_relations,
    cy.DELETE_MEMORY: FakeGraph.delete_memory,
    cy.LINK_ENTITIES: FakeGraph.link_entities,
    cy.LINK_RELATIONS: FakeGraph.link_relations,
    cy.DELETE_ORPHANS: FakeGraph.delete_orphans,
    cy.START_ENTITIES: FakeGraph.start_entities,
    cy.NEXT_LAYER: FakeGraph.next_layer,
    cy.MENTIONS_OF: FakeGraph.mentions_of,
    cy.FIND_BY_NAME: FakeGraph.find_by_name,
    cy.COUNTS: FakeGraph.counts,
    cy.FORGET_USER[0]: FakeGraph.forget_memories,
    cy.FORGET_USER[1]: FakeGraph.forget_entities,
}


@dataclass(frozen=True)
class Call:
    """One statement the store sent: ``mode`` is "run" (auto-commit), "read" or "write"."""

    query: str
    params: dict[str, Any]
    mode: str
    database: str


class FakeResult:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def data(self) -> list[dict[str, Any]]:
        return self._rows

    def consume(self) -> None:
        return None


class FakeTx:
    def __init__(self, session: FakeSession, mode: str) -> None:
        self._session, self._mode = session, mode

    def run(self, query: str, parameters: dict[str, Any] | None = None) -> FakeResult:
        return self._session.send(query, parameters or {}, self._mode)


class FakeSession:
    def __init__(self, driver: FakeDriver, database: str) -> None:
        self._driver, self._database = driver, database

    def __enter__(self) -> FakeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def send(self, query: str, params: dict[str, Any], mode: str) -> FakeResult:
        self._driver.calls.append(Call(query, params, mode, self._database))
        if self._driver.failures:
            raise self._driver.failures.pop(0)
        return FakeResult(self._driver.graph.execute(query, params))

    def run(self, query: str, parameters: dict[str, Any] | None = None) -> FakeResult:
        return self.send(query, parameters or {}, "run")

    def execute_read(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(FakeTx(self, "read"), *args)

    def execute_write(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(FakeTx(self, "write"), *args)


class FakeDriver:
    """Records every statement; ``failures`` are raised, in order, by the next statements."""

    def __init__(self, graph: FakeGraph | None = None) -> None:
        self.graph = graph or FakeGraph()
        self.calls: list[Call] = []
        self.failures: list[BaseException] = []
        self.closed = 0

    def session(self, *, database: str) -> FakeSession:
        return FakeSession(self, database)

    def close(self) -> None:
        self.closed += 1

    def data_calls(self) -> list[Call]:
        return [c for c in self.calls if c.query not in cy.SCHEMA]


def neo4j_error(code: str, message: str) -> Exception:
    """A server error as the driver raises it (the hydrate helper moved in driver 6)."""
    error_cls: Any = neo4j.exceptions.Neo4jError
    hydrate = getattr(error_cls, "_hydrate_neo4j", None) or error_cls.hydrate
    error: Exception = hydrate(code=code, message=message)
    return error


@pytest.fixture
def driver() -> FakeDriver:
    return FakeDriver()


@pytest.fixture
def store(driver: FakeDriver) -> Iterator[Neo4jGraphStore]:
    s = Neo4jGraphStore(URI, password="pw", driver=driver)
    yield s
    s.close()


# -- the contract on the fake --------------------------------------------------------------------


class TestNeo4jGraphStoreOnFakeDriver(GraphStoreContract):
    persistent = True

    @pytest.fixture
    def graph_store(self) -> Iterator[Neo4jGraphStore]:
        self.fake = FakeGraph()
        s = Neo4jGraphStore(URI, password="pw", driver=FakeDriver(self.fake))
        yield s
        s.close()

    def reopen(self, graph_store: GraphStore) -> GraphStore:
        graph_store.close()
        return Neo4jGraphStore(URI, password="pw", driver=FakeDriver(self.fake))

    def stored_rows(self, graph_store: GraphStore, user_id: str) -> int:
        return self.fake.rows_of(user_id)  # memory nodes included: forget_user must remove them too


# -- the statements sent -------------------------------------------------------------------------

HOSTILE_USER = "u'\"`}) MATCH (n) DETACH DELETE n //"
HOSTILE_MEMORY = "m`}) RETURN 1 UNION MATCH (x) RETURN x //"
HOSTILE_NAMES = ['O\'Brien "the `tick`"', "})-[:X]->(y) DETACH DELETE y", "CALL dbms.killQueries() //"]
HOSTILE_TYPE = "likes`]->(z) SET z.pwned = true //"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def test_user_text_only_ever_travels_as_parameters(store, driver):
    ids = {n: entity_id(HOSTILE_USER, n) for n in HOSTILE_NAMES}
    a, b, c = ids.values()
    store.link(
        HOSTILE_USER, HOSTILE_MEMORY, [(e, n, HOSTILE_TYPE) for n, e in ids.items()], [(a, b, HOSTILE_TYPE)]
    )
    store.link(HOSTILE_USER, HOSTILE_MEMORY, [(a, HOSTILE_NAMES[0], "person")], [])
    assert [n.name for n in store.neighbours(HOSTILE_USER, [a, c])] == [HOSTILE_NAMES[0]]
    assert store.find_entities(HOSTILE_USER, HOSTILE_NAMES) == [(a, HOSTILE_NAMES[0])]
    assert store.memories_mentioning(HOSTILE_USER, [a]) == {HOSTILE_MEMORY: [a]}
    store.unlink_memory(HOSTILE_USER, HOSTILE_MEMORY)
    assert store.forget_user(HOSTILE_USER) == store.counts(HOSTILE_USER)

    sent = driver.data_calls()
    assert {c.query for c in sent} == DATA_QUERIES  # every statement was exercised, and only those
    hostile = [HOSTILE_USER, HOSTILE_MEMORY, HOSTILE_TYPE, *HOSTILE_NAMES]
    for call in driver.calls:
        assert call.query in DATA_QUERIES or call.query in cy.SCHEMA
        for text in hostile:
            assert text not in call.query
    passed = {s for c in sent for s in _strings(c.params)}
    assert set(hostile) <= passed


def test_every_statement_is_a_constant_without_user_text():
    for query in (*cy.SCHEMA, *DATA_QUERIES):
        assert "{}" not in query and "%s" not in query and "`" not in query
        assert "'" not in query and '"' not in query  # no string literals at all: values are parameters


def test_link_sends_one_write_transaction_with_parameters(store, driver):
    a, b = entity_id("u1", "Alice"), entity_id("u1", "Paris")
    store.link(
        "u1",
        "m1",
        [(a, " Alice ", "person"), (b, "Paris", ""), (a, "alice", "concept")],
        [(a, b, "lives_in")],
    )
    key = {"user_id": "u1", "memory_id": "m1"}
    entities = [
        {"id": a, "name": "Alice", "norm_name": "alice", "type": "person"},
        {"id": b, "name": "Paris", "norm_name": "paris", "type": "concept"},
    ]
    assert driver.data_calls() == [
        Call(cy.DELETE_RELATIONS, key, "write", "neo4j"),
        Call(cy.DELETE_MEMORY, key, "write", "neo4j"),
        Call(cy.LINK_ENTITIES, {**key, "entities": entities, "generic": "concept"}, "write", "neo4j"),
        Call(
            cy.LINK_RELATIONS,
            {**key, "relations": [{"source": a, "target": b, "type": "lives_in"}]},
            "write",
            "neo4j",
        ),
    ]


def test_relink_deletes_orphans_among_the_previous_entities(store, driver):
    ids = link_names(store, "u1", "m1", ["a", "b"], [("a", "b", "likes")])
    driver.calls.clear()
    link_names(store, "u1", "m1", ["a"])
    orphan_calls = [c for c in driver.calls if c.query == cy.DELETE_ORPHANS]
    assert len(orphan_calls) == 1
    assert sorted(orphan_calls[0].params["entity_ids"]) == sorted(ids.values())
    assert store.counts("u1") == {"entities": 1, "relations": 0, "mentions": 1}


def test_unlink_sends_only_deletes(store, driver):
    store.unlink_memory("u1", "never")
    assert [c.query for c in driver.data_calls()] == [cy.DELETE_RELATIONS, cy.DELETE_MEMORY]
    assert {c.mode for c in driver.data_calls()} == {"write"}


def test_reads_run_in_read_transactions(store, driver):
    ids = link_chain(store, "u1")
    driver.calls.clear()
    store.neighbours("u1", [ids["a"]], max_hops=3)
    store.memories_mentioning("u1", [ids["a"]])
    store.find_entities("u1", ["a"])
    store.counts("u1")
    assert {c.query for c in driver.calls} == READ_QUERIES
    assert {c.mode for c in driver.calls} == {"read"}


def test_neighbours_query_once_per_hop_and_stop_early(store, driver):
    ids = link_chain(store, "u1")  # a-b-c-d
    driver.calls.clear()
    store.neighbours("u1", [ids["a"]], max_hops=10)
    layers = [c for c in driver.calls if c.query == cy.NEXT_LAYER]
    assert [c.params["frontier"] for c in layers] == [[ids["a"]], [ids["b"]], [ids["c"]], [ids["d"]]]
    driver.calls.clear()
    assert store.neighbours("u1", []) == [] and driver.calls == []
    assert store.neighbours("u1", [entity_id("u1", "zzz")], max_hops=5) == []
    assert [c.query for c in driver.calls] == [cy.START_ENTITIES]


def test_lookups_with_nothing_to_look_up_send_nothing(store, driver):
    assert store.memories_mentioning("u1", []) == {}
    assert store.find_entities("u1", ["", "   "]) == []
    assert driver.calls == []


def test_forget_user_deletes_in_batches(store, driver, monkeypatch):
    monkeypatch.setattr(cy, "DELETE_BATCH", 2)
    link_chain(store, "u1")  # 3 memories, 4 entities
    driver.calls.clear()
    assert store.forget_user("u1") == {"entities": 4, "relations": 3, "mentions": 6}
    forget = [c for c in driver.calls if c.query in cy.FORGET_USER]
    assert [(cy.FORGET_USER.index(c.query), c.params["batch"]) for c in forget] == [
        (0, 2),
        (0, 2),
        (1, 2),
        (1, 2),
        (1, 2),
    ]
    assert driver.graph.rows_of("u1") == 0


def test_invalid_links_write_nothing(store, driver):
    a = entity_id("u1", "a")
    bad: list[tuple[Any, ...]] = [
        ("", "m1", [(a, "a", "concept")], []),
        ("u1", "", [(a, "a", "concept")], []),
        ("u1", "m1", [(a, "   ", "concept")], []),
        ("u1", "m1", [("", "a", "concept")], []),
        ("u1", "m1", [(a, "a", "concept")], [(a, entity_id("u1", "b"), "likes")]),
        ("u1", "m1", [(a, "a", "concept")], [(a, a, "")]),
    ]
    for args in bad:
        with pytest.raises(InvalidInputError):
            store.link(*args)
    with pytest.raises(InvalidInputError):
        store.neighbours("u1", [a], max_hops=-1)
    assert driver.calls == []


# -- schema and lifecycle ------------------------------------------------------------------------


def test_schema_is_idempotent_ddl_sent_once_per_driver_before_any_query(store, driver):
    assert all(" IF NOT EXISTS " in s for s in cy.SCHEMA)
    for _ in range(3):
        store.counts("u1")
        link_names(store, "u1", "m1", ["a"])
    schema_calls = [c for c in driver.calls if c.query in cy.SCHEMA]
    assert [c.query for c in schema_calls] == list(cy.SCHEMA)
    assert driver.calls[: len(cy.SCHEMA)] == schema_calls
    assert {c.mode for c in schema_calls} == {"run"}  # DDL runs in auto-commit transactions
    other = FakeDriver(driver.graph)  # a new driver creates the schema again (idempotently)
    with Neo4jGraphStore(URI, driver=other) as reopened:
        reopened.counts("u1")
    assert [c.query for c in other.calls][: len(cy.SCHEMA)] == list(cy.SCHEMA)


def test_a_schema_rule_created_concurrently_is_not_an_error(store, driver):
    driver.failures.append(neo4j_error("Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists", "exists"))
    assert store.counts("u1") == {"entities": 0, "relations": 0, "mentions": 0}
    assert len([c for c in driver.calls if c.query in cy.SCHEMA]) == len(cy.SCHEMA)


def test_a_failed_schema_creation_is_retried_on_next_use(store, driver):
    driver.failures.append(neo4j.exceptions.ServiceUnavailable("server restarting"))
    with pytest.raises(StoreError):
        store.counts("u1")
    assert store.counts("u1")["entities"] == 0
    assert [c.query for c in driver.calls].count(cy.SCHEMA[0]) == 2


def test_the_database_is_passed_to_every_session():
    driver = FakeDriver()
    with Neo4jGraphStore(URI, database="graphs", driver=driver) as s:
        s.counts("u1")
        link_names(s, "u1", "m1", ["a"])
    assert {c.database for c in driver.calls} == {"graphs"}


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any], FakeDriver]]:
    """Drivers built by ``neo4j.GraphDatabase.driver``, with their arguments."""
    made: list[tuple[str, dict[str, Any], FakeDriver]] = []

    def fake_driver(uri: str, **kwargs: Any) -> FakeDriver:
        made.append((uri, kwargs, FakeDriver()))
        return made[-1][2]

    monkeypatch.setattr(neo4j.GraphDatabase, "driver", fake_driver)
    return made


def test_init_is_lazy_and_the_driver_is_built_once(built):
    s = Neo4jGraphStore(URI, username="app", password="pw", timeout=7)
    assert built == []
    s.counts("u1")
    s.find_entities("u1", ["a"])
    assert len(built) == 1
    uri, kwargs, _ = built[0]
    assert uri == URI
    assert kwargs == {"auth": ("app", "pw"), "connection_timeout": 7.0, "max_transaction_retry_time": 7.0}
    s.close()


def test_no_password_means_no_auth(built):
    with Neo4jGraphStore(URI) as s:
        s.counts("u1")
    assert built[0][1]["auth"] is None


def test_close_is_idempotent_closes_its_own_driver_and_refuses_further_use(built):
    s = Neo4jGraphStore(URI, password="pw")
    s.close()  # never connected: nothing to close
    assert built == []
    s = Neo4jGraphStore(URI, password="pw")
    s.counts("u1")
    s.close()
    s.close()
    assert built[0][2].closed == 1
    with pytest.raises(StoreError, match="closed"):
        s.counts("u1")
    with pytest.raises(StoreError, match="closed"):
        s.link("u1", "m1", [], [])


def test_context_manager_closes(built):
    with Neo4jGraphStore(URI, password="pw") as s:
        s.counts("u1")
    assert built[0][2].closed == 1


def test_an_injected_driver_is_left_open(store, driver):
    store.counts("u1")
    store.close()
    assert driver.closed == 0


def test_constructor_validates_its_arguments():
    for kwargs in ({"database": ""}, {"timeout": 0}):
        with pytest.raises(InvalidInputError):
            Neo4jGraphStore(URI, **kwargs)
    with pytest.raises(InvalidInputError):
        Neo4jGraphStore("")


def test_without_the_extra_the_error_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "neo4j", None)
    s = Neo4jGraphStore(URI, password="pw")  # init does not import
    with pytest.raises(MissingDependencyError, match=r"hello-memory\[neo4j\]"):
        s.counts("u1")
    s.close()


def test_settings_with_a_neo4j_uri_open_this_store_lazily(tmp_path, built):
    from hello_memory.stores.open import _open_graph

    settings = Settings(
        home=tmp_path,
        neo4j_uri=URI,
        neo4j_username="app",
        neo4j_password=SecretStr("pw"),
        neo4j_database="mem",
    )
    graph = _open_graph(settings, tmp_path)
    assert isinstance(graph, Neo4jGraphStore) and isinstance(graph, GraphStore)
    assert (graph.backend, graph.uri, graph.database) == ("neo4j", URI, "mem")
    assert built == []
    graph.counts("u1")
    assert built[0][1]["auth"] == ("app", "pw")
    graph.close()


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (
            neo4j.exceptions.ServiceUnavailable("Couldn't connect to graph.invalid:7687"),
            ["cannot reach", "docker compose"],
        ),
        (neo4j.exceptions.SessionExpired("session expired"), ["neo4j failed to", "session expired"]),
        (lambda: neo4j_error("Neo.ClientError.Security.Unauthorized", "bad credentials"), ["NEO4J_PASSWORD"]),
        (
            lambda: neo4j_error("Neo.ClientError.Statement.SyntaxError", "bad syntax"),
            ["neo4j failed to count"],
        ),
        (lambda: neo4j_error("Neo.TransientError.General.OutOfMemoryError", "oom"), ["neo4j failed to"]),
    ],
    ids=["unavailable", "expired", "auth", "syntax", "transient"],
)
def test_driver_errors_become_store_errors(store, driver, error, words):
    exc = error() if callable(error) else error
    store.counts("u1")  # schema done: the next statement fails
    driver.failures.append(exc)
    with pytest.raises(StoreError) as info:
        store.counts("u1")
    assert info.value.__cause__ is exc
    for word in words:
        assert word in str(info.value)


def test_a_bad_uri_fails_on_first_use_as_a_store_error():
    s = Neo4jGraphStore("http+nope://graph.invalid", password="pw")
    with pytest.raises(StoreError, match="connect") as info:
        s.counts("u1")
    assert isinstance(info.value.__cause__, neo4j.exceptions.ConfigurationError)
    s.close()


def test_an_unreachable_server_is_a_store_error_that_says_what_to_do():
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = Neo4jGraphStore(f"bolt://127.0.0.1:{port}", password="pw", timeout=2)  # the real driver
    with store, pytest.raises(StoreError, match="cannot reach Neo4j") as info:
        store.counts("u1")
    assert isinstance(info.value.__cause__, neo4j.exceptions.ServiceUnavailable)
    assert "docker compose" in str(info.value)


def test_errors_that_are_not_the_drivers_pass_through(store, driver):
    store.counts("u1")
    driver.failures.append(KeyError("a bug"))
    with pytest.raises(KeyError):
        store.counts("u1")


# -- the integration suite's skip policy ---------------------------------------------------------


@pytest.mark.parametrize("required", [False, True], ids=["optional", "required"])
def test_integration_tests_skip_without_docker_and_fail_when_services_are_required(required):
    env = {k: v for k, v in os.environ.items() if k != "HELLO_MEMORY_REQUIRE_SERVICES"}
    env["DOCKER_HOST"] = "unix:///nonexistent/hello-memory/docker.sock"  # no engine, whatever the machine
    if required:
        env["HELLO_MEMORY_REQUIRE_SERVICES"] = "1"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "integration",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/integration",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert "no Docker engine" in out
    if required:
        assert proc.returncode == 1, out
        assert "error" in summary and "passed" not in summary and "skipped" not in summary, summary
    else:
        assert proc.returncode == 0, out
        assert "skipped" in summary and "passed" not in summary and "error" not in summary, summary
