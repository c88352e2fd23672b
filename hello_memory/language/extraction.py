"""Offline entity and relation extraction for the semantic tier (rule-based, optional LLM).

The rule-based extractor finds entity mentions (jieba part-of-speech tags for Chinese, capitalised
word runs and content words for English) and relation triggers ("住在", "works at", ...), then pairs
each trigger with the nearest subject before it and the first object after it in the same clause.
First-person pronouns become the entity ``"user"`` (or the speaker of a ``"Name: ..."`` chat turn).
Entity pairs in one sentence that no trigger links get a capped ``related_to`` edge.

Example:
    >>> ex = extract("我喜欢咖啡")
    >>> ex.relations
    [('user', 'likes', '咖啡')]
"""

from __future__ import annotations

import bisect
import json
import logging
import re
import unicodedata
import uuid
from dataclasses import dataclass, field
from typing import Any

from hello_memory.errors import InvalidInputError
from hello_memory.language._extraction import relations as rules
from hello_memory.llm.base import LLMClient

logger = logging.getLogger(__name__)

RELATION_TYPES = ("is", "likes", "dislikes", "lives_in", "works_at", "has", "related_to")
FUNCTIONAL_RELATIONS = frozenset({"is", "lives_in", "works_at"})
ENTITY_TYPES = ("person", "place", "organization", "concept")
USER_ENTITY = "user"
MAX_ENTITIES = 12
MAX_COOCCURRENCE = 10
_ENTITY_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "hello-memory:entity")


def normalise_name(name: str) -> str:
    """NFKC-normalised, case-folded name with whitespace collapsed (the entity identity key)."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def entity_id(user_id: str, name: str) -> str:
    """Stable UUID5 of (user, normalised name); the same entity of another user gets another id.

    Raises:
        InvalidInputError: ``user_id`` or the normalised ``name`` is empty.
    """
    if not user_id:
        raise InvalidInputError("user_id must not be empty", field="user_id")
    key = normalise_name(name)
    if not key:
        raise InvalidInputError(f"entity name {name!r} is empty after normalisation", field="name")
    return str(uuid.uuid5(_ENTITY_NAMESPACE, f"{user_id}\x00{key}"))


@dataclass(frozen=True, slots=True)
class Extraction:
    """Entities as (name, type) and relations as (source name, relation type, target name).

    Every relation endpoint is one of ``entities`` (compared by :func:`normalise_name`).
    """

    entities: list[tuple[str, str]] = field(default_factory=list)
    relations: list[tuple[str, str, str]] = field(default_factory=list)

    def to_links(self, user_id: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """Arguments for ``GraphStore.link``: entities as (id, name, type), relations as (src, dst, type)."""
        ents = [(entity_id(user_id, name), name, kind) for name, kind in self.entities]
        rels = [(entity_id(user_id, s), entity_id(user_id, t), rel) for s, rel, t in self.relations]
        return ents, rels


def extract(text: str) -> Extraction:
    """Rule-based entities and relations of ``text`` (Chinese, English or mixed); never calls an LLM."""
    if not text or not any(ch.isalnum() for ch in text):
        return Extraction()
    spans, triples = rules.analyse(text)
    mentions = _mentions(spans, triples)
    chosen = _choose(mentions, triples)
    relations: list[tuple[str, str, str]] = []
    for s, rel, o in triples:
        sk, ok = normalise_name(s.name), normalise_name(o.name)
        triple = (mentions[sk][0], rel, mentions[ok][0])
        if sk in chosen and ok in chosen and sk != ok and triple not in relations:
            relations.append(triple)
    relations.extend(_cooccurrence(text, spans, chosen, mentions, relations))
    return Extraction([mentions[k][:2] for k in chosen], relations)


def _mentions(spans: list[rules.Span], triples: list[rules.Triple]) -> dict[str, tuple[str, str, int]]:
    """normalised name -> (first written name, most specific type, first position)."""
    out: dict[str, tuple[str, str, int]] = {}
    endpoints = [e for s, _, o in triples for e in (s, o)]
    for span in sorted([*spans, *endpoints], key=lambda s: s.start):
        key = normalise_name(span.name)
        if not key or (span.weak and span not in endpoints):
            continue
        name, kind, pos = out.get(key, (span.name, span.type, span.start))
        out[key] = (name, span.type if kind == "concept" else kind, pos)
    return out


def _choose(mentions: dict[str, tuple[str, str, int]], triples: list[rules.Triple]) -> list[str]:
    """Relation endpoints first, then other mentions by position, at most MAX_ENTITIES; in text order."""
    chosen: list[str] = []
    for s, _, o in triples:  # whole relations, in text order, while both ends fit
        ends = [k for k in dict.fromkeys((normalise_name(s.name), normalise_name(o.name))) if k not in chosen]
        if len(chosen) + len(ends) <= MAX_ENTITIES:
            chosen.extend(ends)
    for key, _ in sorted(mentions.items(), key=lambda kv: kv[1][2]):
        if len(chosen) >= MAX_ENTITIES:
            break
        if key not in chosen:
            chosen.append(key)
    return sorted(chosen, key=lambda k: mentions[k][2])


def _cooccurrence(
    text: str,
    spans: list[rules.Span],
    chosen: list[str],
    mentions: dict[str, tuple[str, str, int]],
    stated: list[tuple[str, str, str]],
) -> list[tuple[str, str, str]]:
    """``related_to`` between mentions of one sentence (each to its next two), for unrelated pairs."""
    starts = rules.sentence_index(text)
    linked = {frozenset((s, t)) for s, _, t in stated}
    related = {normalise_name(e) for s, _, t in stated for e in (s, t)}
    by_sentence: dict[int, list[str]] = {}
    for span in sorted(spans, key=lambda s: s.start):
        key = normalise_name(span.name)
        keys = by_sentence.setdefault(bisect.bisect_right(starts, span.start), [])
        if key in chosen and not span.weak and key not in keys:
            keys.append(key)
    out: list[tuple[str, str, str]] = []
    for keys in by_sentence.values():
        for i, key in enumerate(keys):
            for other in keys[i + 1 : i + 3]:
                pair = frozenset((mentions[key][0], mentions[other][0]))
                both_related = key in related and other in related  # already 2 hops apart at most
                if pair not in linked and not both_related and len(out) < MAX_COOCCURRENCE:
                    linked.add(pair)
                    out.append((mentions[key][0], "related_to", mentions[other][0]))
    return out


EXTRACTION_PROMPT = """Extract the entities and relations stated in the user's text.
Reply with JSON only, exactly of this shape:
{"entities": [{"name": "...", "type": "person|place|organization|concept"}],
 "relations": [{"source": "...", "type": "is|likes|dislikes|lives_in|works_at|has|related_to",
                "target": "..."}]}
Rules: use the name "user" for the first person (I, me, 我); keep names as written in the text;
at most 12 entities; every relation source and target must be one of the entities; an empty text
or one without facts gives {"entities": [], "relations": []}."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
_RELATION_ALIASES = {
    "is_a": "is",
    "like": "likes",
    "love": "likes",
    "loves": "likes",
    "dislike": "dislikes",
    "hates": "dislikes",
    "live_in": "lives_in",
    "work_at": "works_at",
    "works_for": "works_at",
    "have": "has",
}


class LLMExtractor:
    """Extraction by an LLM returning JSON; any failure falls back to the rule-based :func:`extract`.

    Example:
        >>> extractor = LLMExtractor(my_llm)  # doctest: +SKIP
        >>> extractor.extract("Alice lives in Paris").relations  # doctest: +SKIP
        [('Alice', 'lives_in', 'Paris')]
    """

    def __init__(self, llm: LLMClient, *, max_tokens: int = 800) -> None:
        self._llm = llm
        self._max_tokens = max_tokens

    def extract(self, text: str) -> Extraction:
        """Entities and relations of ``text`` by the LLM, or by the rules when the LLM fails."""
        if not text or not any(ch.isalnum() for ch in text):
            return Extraction()
        messages = [{"role": "system", "content": EXTRACTION_PROMPT}, {"role": "user", "content": text}]
        try:
            reply = self._llm.complete(messages, temperature=0.0, max_tokens=self._max_tokens)
            return parse_llm_extraction(reply.content)
        except Exception as e:  # the LLM, its transport or its output: never fail the caller
            logger.warning("LLM extraction failed (%s: %s); using rule-based extraction", type(e).__name__, e)
            return extract(text)


def parse_llm_extraction(content: str) -> Extraction:
    """Strictly parse the LLM's JSON reply (an optional ```json fence is allowed).

    Raises:
        ValueError: invalid JSON, or not ``{"entities": [...], "relations": [...]}`` with string fields.
    """
    fenced = _FENCE.match(content)
    data = json.loads(fenced.group(1) if fenced else content)
    if not isinstance(data, dict) or not isinstance(data.get("entities"), list):
        raise ValueError("reply is not an object with an 'entities' list")
    if not isinstance(data.get("relations"), list):
        raise ValueError("reply has no 'relations' list")
    entities: dict[str, tuple[str, str]] = {}
    for item in data["entities"][:MAX_ENTITIES]:
        name, kind = _fields(item, "name", "type")
        kind = kind.lower() if kind.lower() in ENTITY_TYPES else "concept"
        entities.setdefault(normalise_name(name), (name.strip(), kind))
    relations: list[tuple[str, str, str]] = []
    for item in data["relations"]:
        source, rel, target = _fields(item, "source", "type", "target")
        for end in (source, target):
            entities.setdefault(normalise_name(end), (end.strip(), "concept"))
        triple = (
            entities[normalise_name(source)][0],
            _relation_type(rel),
            entities[normalise_name(target)][0],
        )
        if triple[0] != triple[2] and triple not in relations:
            relations.append(triple)
    return Extraction(list(entities.values()), relations)


def _fields(item: Any, *names: str) -> list[str]:
    """The named non-empty string fields of a JSON object, or ValueError."""
    if not isinstance(item, dict):
        raise ValueError(f"expected an object, got {type(item).__name__}")
    values = [item.get(n) for n in names]
    if not all(isinstance(v, str) and normalise_name(v) for v in values):
        raise ValueError(f"object {item!r} needs non-empty string fields {names}")
    return [str(v) for v in values]


def _relation_type(raw: str) -> str:
    """Map the LLM's relation name into RELATION_TYPES (unknown names become ``related_to``)."""
    key = "_".join(raw.lower().split())
    key = _RELATION_ALIASES.get(key, key)
    return key if key in RELATION_TYPES else "related_to"
