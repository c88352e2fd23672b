"""Vector filters: what a :class:`~hello_memory.stores.vectors.base.Filter` means, fixed once for every backend.

:func:`compile_filter` validates a filter and reduces it to :class:`Clause` tests whose
:meth:`~Clause.matches` is the reference semantics (the in-memory store evaluates it directly).
An engine spells the clauses with its own filter classes through a :class:`FilterDialect`, and
:func:`translate` assembles them the same way for every engine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from hello_memory.errors import InvalidInputError
from hello_memory.stores.vectors.base import Filter
from hello_memory.stores.vectors.rules import INT64_MAX, INT64_MIN

# Filter keys are top-level payload fields: word characters and '-' only. '.' and '[' would be read
# as paths by Qdrant, and its JSON-path parser rejects spaces and punctuation such as ':' outright.
_FILTER_KEY = re.compile(r"^[\w-]+\Z")  # \Z: "$" would also match before a trailing newline
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Clause:
    """A test on one payload field that holds when any alternative holds (none: never holds).

    Array fields hold when any element matches, as in Qdrant. ``empty`` matches a missing field,
    ``null`` or ``[]``. ``ints`` never match floats or booleans; ``ranges`` match ints and floats
    but not booleans.
    """

    key: str
    strings: tuple[str, ...] = ()
    ints: tuple[int, ...] = ()
    bools: tuple[bool, ...] = ()
    ranges: tuple[tuple[float | None, float | None], ...] = ()
    empty: bool = False

    def matches(self, payload: dict[str, Any]) -> bool:
        """Evaluate the clause on a payload (the reference semantics)."""
        value = payload.get(self.key)
        if value is None or value == []:
            return self.empty
        values = value if isinstance(value, list) else [value]
        return any(self._matches_scalar(v) for v in values)

    def _matches_scalar(self, v: Any) -> bool:
        if isinstance(v, bool):
            return v in self.bools
        if isinstance(v, str):
            return v in self.strings
        if isinstance(v, int) and v in self.ints:
            return True
        if isinstance(v, (int, float)):
            return any((lo is None or v >= lo) and (hi is None or v <= hi) for lo, hi in self.ranges)
        return False


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    """A :class:`Filter` reduced to clauses: all of ``must`` hold and none of ``must_not``."""

    must: tuple[Clause, ...]
    must_not: tuple[Clause, ...]

    def matches(self, payload: dict[str, Any]) -> bool:
        """Evaluate on a payload (the reference semantics)."""
        return all(c.matches(payload) for c in self.must) and not any(
            c.matches(payload) for c in self.must_not
        )


def compile_filter(where: Filter | None) -> CompiledFilter | None:
    """Reduce a :class:`Filter` to clauses, validating it; ``None`` when it has no conditions.

    ``equals``/``exclude`` values: ``None`` tests for a missing/null/empty field, a float tests
    numeric equality (so ``3.0`` also matches ``3``), a list/tuple is "any of".
    """
    if where is None:
        return None
    must = [_value_clause(k, v) for k, v in where.equals.items()]
    must += [_range_clause(k, r.gte, r.lte) for k, r in where.ranges.items()]
    must_not = [_value_clause(k, v) for k, v in where.exclude.items()]
    if not must and not must_not:
        return None
    return CompiledFilter(tuple(must), tuple(must_not))


def compile_delete_filter(where: Filter) -> CompiledFilter:
    """Like :func:`compile_filter`, but refuse a filter without conditions (it would match all)."""
    compiled = compile_filter(where)
    if compiled is None:
        raise InvalidInputError(
            "delete_where needs at least one condition; use drop_collection to delete everything",
            field="where",
        )
    return compiled


def _check_key(key: object) -> str:
    if not isinstance(key, str) or not _FILTER_KEY.match(key):
        raise InvalidInputError(
            f"invalid filter key {key!r}: use a top-level payload field name", field="where"
        )
    return key


def _range_clause(key: str, gte: float | None, lte: float | None) -> Clause:
    for bound in (gte, lte):
        ok = bound is None or (
            isinstance(bound, (int, float)) and not isinstance(bound, bool) and math.isfinite(bound)
        )
        if not ok:
            raise InvalidInputError(f"range bound {bound!r} on {key!r} is not a finite number", field="where")
    return Clause(_check_key(key), ranges=((gte, lte),))


def _value_clause(key: str, value: Any) -> Clause:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    strings: list[str] = []
    ints: list[int] = []
    bools: list[bool] = []
    ranges: list[tuple[float | None, float | None]] = []
    empty = False
    for v in values:
        if v is None:
            empty = True
        elif isinstance(v, bool):
            bools.append(v)
        elif isinstance(v, str):
            strings.append(v)
        elif isinstance(v, int) and INT64_MIN <= v <= INT64_MAX:
            ints.append(v)
        elif isinstance(v, float) and math.isfinite(v):
            ranges.append((v, v))
        else:
            raise InvalidInputError(f"unsupported filter value {v!r} for {key!r}", field="where")
    return Clause(
        _check_key(key),
        tuple(dict.fromkeys(strings)),
        tuple(dict.fromkeys(ints)),
        tuple(dict.fromkeys(bools)),
        tuple(ranges),
        empty,
    )


def compiled_filter(where: Filter | CompiledFilter | None) -> CompiledFilter | None:
    """``where`` compiled (a :class:`CompiledFilter` passes as it is)."""
    return where if isinstance(where, CompiledFilter) or where is None else compile_filter(where)


class FilterDialect(Protocol[T]):
    """How one engine spells the parts of a compiled filter (``T``: its condition type)."""

    def match_value(self, key: str, value: str | int | bool) -> T:
        """``key`` equals ``value``."""
        ...

    def match_any(self, key: str, values: Sequence[str] | Sequence[int]) -> T:
        """``key`` equals one of ``values`` (two or more)."""
        ...

    def match_range(self, key: str, gte: float | None, lte: float | None) -> T:
        """``key`` is a number within the inclusive bounds."""
        ...

    def is_empty(self, key: str) -> T:
        """``key`` is missing, ``null`` or ``[]``."""
        ...

    def nothing(self) -> T:
        """A condition no point meets."""
        ...

    def any_of(self, conditions: list[T]) -> T:
        """At least one of ``conditions`` (two or more) holds."""
        ...

    def all_of(self, must: list[T] | None, must_not: list[T] | None) -> T:
        """All of ``must`` hold and none of ``must_not`` (``None``: no such conditions)."""
        ...


def translate(compiled: CompiledFilter, dialect: FilterDialect[T]) -> T:
    """Spell ``compiled`` in an engine's filter classes."""
    must = [_condition(c, dialect) for c in compiled.must]
    must_not = [_condition(c, dialect) for c in compiled.must_not]
    return dialect.all_of(must or None, must_not or None)


def _condition(clause: Clause, dialect: FilterDialect[T]) -> T:
    key = clause.key
    alts: list[T] = []
    for values in (clause.strings, clause.ints):
        if len(values) == 1:
            alts.append(dialect.match_value(key, values[0]))
        elif values:
            alts.append(dialect.match_any(key, values))
    alts += [dialect.match_value(key, b) for b in clause.bools]
    alts += [dialect.match_range(key, lo, hi) for lo, hi in clause.ranges]
    if clause.empty:
        alts.append(dialect.is_empty(key))
    if not alts:
        return dialect.nothing()  # an empty "any of": matches nothing
    return alts[0] if len(alts) == 1 else dialect.any_of(alts)
