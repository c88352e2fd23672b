"""The alignment of a re-sent conversation with its stored turns (pure): cases and Hypothesis properties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hello_memory.core.alignment import Alignment, Sent, Slot, align


def _slots(tokens: list[str], *, gone: frozenset[int] = frozenset()) -> list[Slot]:
    return [Slot(t, frozenset({f"id{i}"}), float(i), i not in gone) for i, t in enumerate(tokens)]


def _sent(tokens: list[str]) -> list[Sent]:
    return [Sent(frozenset({t})) for t in tokens]


def _run(stored: list[str], sent: list[str], **kw: bool) -> Alignment:
    return align(_slots(stored), _sent(sent), whole=kw.get("whole", True))


def test_the_cases_of_the_issue() -> None:
    window = _run(["u:hi", "a:ok", "u:Lisbon", "a:ok"], ["u:Lisbon", "a:ok", "u:remote", "a:ok"])
    assert window.pairs == {0: 2, 1: 3} and not window.edits  # the second "ok" is new
    edited = _run(["u:hi", "a:ok", "u:Lisbon", "a:ok"], ["u:hello", "a:ok", "u:Lisbon", "a:ok"])
    assert edited.overlap == 4 and edited.edits == {0}
    regenerated = _run(["u:hi", "a:ok"], ["u:hi", "a:okay!"])
    assert regenerated.overlap == 2 and regenerated.edits == {1}


def test_ambiguous_differences_are_new_messages_not_edits() -> None:
    # Only the new messages, repeating an earlier exchange: a window, not the whole session.
    assert _run(["u:x", "a:y", "u:hi", "a:hello"], ["u:hi", "a:hello again"]).overlap == 0
    # Most positions differ: a window slid by two in a chat of short replies.
    assert _run(["u:a", "a:ok", "u:b", "a:ok"], ["u:b", "a:ok", "u:c", "a:ok"]).overlap == 2
    # Two edits in four messages: too many.
    assert _run(["u:a", "a:b", "u:c", "a:d"], ["u:A", "a:b", "u:C", "a:d"]).overlap == 0


def test_a_message_with_an_id_is_never_an_edit_of_another_turn() -> None:
    stored = _slots(["u:a", "a:b", "u:c"])
    sent = [Sent(frozenset({"u:a"})), Sent(frozenset({"a:B"}), frozenset({"other-id"})), Sent(frozenset({"u:c"}))]
    assert align(stored, sent, whole=True).overlap == 0


def test_a_client_that_dropped_a_removed_message_is_aligned_on_the_live_turns() -> None:
    stored = _slots(["u:a", "a:b", "u:c", "a:d"], gone=frozenset({1}))
    found = align(stored, _sent(["u:a", "u:c", "a:d", "u:e"]), whole=True)
    assert found.pairs == {0: 0, 1: 2, 2: 3}


tokens = st.lists(st.sampled_from(["u:hi", "a:ok", "u:ok", "a:hi", "u:yes"]), min_size=1, max_size=30)


def _replay(history: list[str], sends: list[list[str]]) -> list[str]:
    stored: list[str] = []
    for sent in sends:
        found = align(_slots(stored), _sent(sent), whole=True)
        assert not found.edits
        stored += sent[found.overlap :]
    return stored


@settings(max_examples=200, deadline=None)
@given(history=tokens, data=st.data())
def test_a_client_sending_its_whole_history_stores_each_message_once_repeats_kept(history, data) -> None:
    cuts = sorted(set([*data.draw(st.lists(st.integers(1, len(history)), max_size=6)), len(history)]))
    assert _replay(history, [history[:c] for c in cuts]) == history


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 30), data=st.data())
def test_a_sliding_window_or_only_new_messages_store_each_message_once(n, data) -> None:
    history = [f"{'ua'[i % 2]}:message {i}" for i in range(n)]
    stored: list[str] = []
    while len(stored) < n:
        start = data.draw(st.integers(0, len(stored)))  # re-send from any earlier message (window or none)
        end = data.draw(st.integers(len(stored) + 1, n))
        found = align(_slots(stored), _sent(history[start:end]), whole=True)
        stored += history[start:end][found.overlap :]
    assert stored == history


@settings(max_examples=200, deadline=None)
@given(n=st.integers(2, 30), data=st.data())
def test_one_edited_message_in_the_whole_history_is_an_edit_in_place(n, data) -> None:
    history = [f"{'ua'[i % 2]}:message {i}" for i in range(n)]
    at = data.draw(st.integers(0, n - 1))
    edited = [*history[:at], history[at] + " (edited)", *history[at + 1 :]]
    found = align(_slots(history), _sent([*edited, "u:new"]), whole=True)
    assert found.overlap == n and found.edits == {at}
