"""Relation triggers of the rule-based extractor and their pairing with subjects and objects."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hello_memory.language._extraction import words
from hello_memory.language._extraction.mentions import (
    CJK,
    EN_WORD,
    Span,
    en_spans,
    find_speaker,
    is_content_word,
    lemma,
    overlaps,
    zh_spans,
)


@dataclass(frozen=True, slots=True)
class Trigger:
    """A relation cue; ``obj`` bounds the object for circumfix cues ("在 X 工作")."""

    start: int
    end: int
    relation: str
    obj: tuple[int, int] | None = None
    pronoun: str | None = None  # an implicit subject ("my favourite X is")


Triple = tuple[Span, str, Span]


_CLAUSE_BREAK = re.compile(r"[，,。！？!?；;：:、\n()（）\"“”]")
_SENT_BREAK = re.compile(r"[。！？!?；;\n]|\.(?=\s|$)")
_ZH_PRONOUN = re.compile(r"(?P<self>我)(?!们)|(?P<third>[他她])(?!们)")
_EN_PRONOUN = re.compile(r"\b(?:(?P<self>I)|(?P<third>[Hh]e|[Ss]he))\b")
# After an object, another object joined by "and" / "和" gets the same subject and relation.
_COORD = re.compile(r"\s*,?\s*(?:and|or|&|和|与|跟|以及|还有|、)\s*")
# Text between one relation and the next trigger that keeps the previous subject ("..., and lives in").
_CONJ = re.compile(
    r"\b(?:and|but|also|then|still|too|now|usually|often|really|always|sometimes|currently)\b"
    r"|并且|而且|同时|平时|平常|经常|常常|一直|特别|非常|总是|通常|偶尔|现在|目前|还|也|并|又|但是|但|很|都|就|最",
    re.I,
)


def _compile(table: list[tuple[str, str]], flags: int = 0) -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile(p, flags), rel) for p, rel in table]


# Order matters: earlier cues win where matches overlap ("不喜欢" before "喜欢", "最喜欢的…是" before "是").
_ZH_TRIGGERS = _compile(
    [
        (r"不喜欢|不爱|讨厌|厌恶|反感", "dislikes"),
        (r"最喜欢的[^，。！？；,.!?;]{0,8}?是", "likes"),
        (r"喜欢|喜爱|热爱|钟爱|爱好是", "likes"),
        (r"居住在|住在|生活在|定居在|定居于|住于|搬到了?|搬去了?", "lives_in"),
        (r"就职于|任职于|工作于|供职于", "works_at"),
        (r"在(?P<obj>[^，。！？；,.!?;\s在]{1,15}?)(?:工作|上班|任职|实习)", "works_at"),
        (r"在(?P<obj>[^，。！？；,.!?;\s在]{1,15}?)(?:居住|生活)", "lives_in"),
        (r"拥有|养了|养着|(?<![没所还只])有(?![时点些人没趣意的])", "has"),
        (r"(?<![但可还就只总于要而或若正真不像])是(?![否不])", "is"),
    ]
)
_EN_TRIGGERS = _compile(
    [
        (
            r"\b(?:do|does|did)(?: not|n't|n’t) (?:like|love|enjoy)\b|\bnever (?:liked?|loved?|enjoyed)\b"
            r"|\b(?:dislike[sd]?|hate[sd]?|detests?|can['’]t stand)\b",
            "dislikes",
        ),
        (r"(?:['’]s|\b(?P<pronoun>my|his|her))\s+favou?rite\s+[a-z ]{1,30}?\s+(?:is|are|was)\b", "likes"),
        (
            r"\b(?:like[sd]?|love[sd]?|enjoy(?:s|ed)?|adore[sd]?|prefers?|preferred)\b|(?:['’]m|\bam) into\b",
            "likes",
        ),
        (
            r"\b(?:live[sd]?|living|reside[sd]?|residing)\s+in\b|\b(?:move[sd]?|moving)\s+to\b|\bbased\s+in\b",
            "lives_in",
        ),
        (r"\bwork(?:s|ed|ing)?\s+(?:at|for)\b|\bemployed\s+(?:at|by)\b", "works_at"),
        (r"\b(?:has|have|had|owns?|owned)\b", "has"),
        (r"(?:\b(?:is|am|was)|['’]m)\s+(?:a|an|the)\b", "is"),
    ],
    re.IGNORECASE,
)


def analyse(text: str) -> tuple[list[Span], list[Triple]]:
    """Mention spans of ``text`` and the (subject, relation, object) triples its triggers state."""
    who, body = find_speaker(text)
    lang = "zh" if CJK.search(text) else "en"
    triggers = _triggers(text[body:], lang, body)
    masked = [(s, e) for t in triggers for s, e in _parts(t)]
    spans = zh_spans(text, body, masked) if lang == "zh" else en_spans(text, body, masked)
    if who:
        spans.insert(0, who)
    subjects = sorted([s for s in spans if not s.weak] + _pronouns(text, lang, body), key=lambda s: s.start)
    triples = _pair(text, lang, triggers, spans, subjects, masked, who)
    objects = [o for _, _, o in triples]
    covered = [s for s in spans for o in objects if o.start <= s.start and s.end <= o.end and o is not s]
    spans = [s for s in spans if s not in covered]  # "green" inside the object "green tea"
    spans.extend(o for o in objects if o not in spans)
    return spans, triples


def sentence_index(text: str) -> list[int]:
    """Start offsets of the sentences after the first (for bisecting a position to its sentence)."""
    return [m.end() for m in _SENT_BREAK.finditer(text)]


def _triggers(text: str, lang: str, offset: int) -> list[Trigger]:
    found: list[Trigger] = []
    for pattern, relation in _ZH_TRIGGERS if lang == "zh" else _EN_TRIGGERS:
        for m in pattern.finditer(text):
            start, end = m.start() + offset, m.end() + offset
            if any(start < t.end and t.start < end for t in found):
                continue
            obj = m.span("obj") if "obj" in pattern.groupindex else None
            pron = m.group("pronoun") if "pronoun" in pattern.groupindex else None
            obj = (obj[0] + offset, obj[1] + offset) if obj else None
            found.append(Trigger(start, end, relation, obj, pron.lower() if pron else None))
    return sorted(found, key=lambda t: t.start)


def _parts(t: Trigger) -> list[tuple[int, int]]:
    return [(t.start, t.obj[0]), (t.obj[1], t.end)] if t.obj else [(t.start, t.end)]


def _pronouns(text: str, lang: str, body: int) -> list[Span]:
    """Pronoun mentions, typed "pronoun:self" (I, 我) or "pronoun:third" (he, she, 他, 她)."""
    pattern = _ZH_PRONOUN if lang == "zh" else _EN_PRONOUN
    return [
        Span(m.start(), m.end(), m.group(), "pronoun:" + ("self" if m.group("self") else "third"))
        for m in pattern.finditer(text, body)
    ]


def _resolve(kind: str, pos: int, spans: list[Span], speaker: Span | None, said: list[Triple]) -> Span | None:
    """I/my -> the speaker or "user"; he/she -> the last person before, preferring one with a stated fact."""
    if kind in ("self", "my"):
        return Span(pos, pos, speaker.name if speaker else "user", "person")
    people = [s for s in spans if s.type == "person" and s.start < pos]
    subjects = {s.name for s, _, _ in said}
    known = [p for p in people if p.name in subjects] or people
    return known[-1] if known else None


def _pair(
    text: str,
    lang: str,
    triggers: list[Trigger],
    spans: list[Span],
    subjects: list[Span],
    masked: list[tuple[int, int]],
    speaker: Span | None,
) -> list[Triple]:
    """Give each trigger a subject (inherited across "and", else nearest before) and its objects."""
    out: list[Triple] = []
    prev: tuple[Span, int] | None = None
    for t in triggers:
        if t.pronoun:
            subject = _resolve(t.pronoun, t.start, spans, speaker, out)
        elif prev and _continues(text[prev[1] : t.start]):
            subject = prev[0]
        else:
            subject = _subject(text, lang, t, subjects)
            if subject and subject.type.startswith("pronoun:"):
                subject = _resolve(subject.type[8:], subject.start, spans, speaker, out)
        objects = _objects(text, lang, t, spans, masked) if subject else []
        said = [(subject, t.relation, o) for o in objects if subject and o.name != subject.name]
        _retype(spans, said)
        out.extend(said)
        prev = (subject, max(objects[-1].end, t.end)) if subject and objects else None
    return out


def _continues(gap: str) -> bool:
    return not _SENT_BREAK.search(gap) and not any(ch.isalnum() for ch in _CONJ.sub("", gap))


def _subject(text: str, lang: str, t: Trigger, subjects: list[Span]) -> Span | None:
    before = [s for s in subjects if s.end <= t.start]
    if not before:
        return None
    s = max(before, key=lambda c: (c.end, -c.start))
    gap = text[s.end : t.start]
    if _CLAUSE_BREAK.search(gap):
        return None
    if lang == "zh":
        return s if len(gap.strip()) <= 4 else None
    gap_words = [w.lower() for w in re.findall(r"[A-Za-z]+", gap)]
    return s if len(gap_words) <= 2 and not set(gap_words) & words.EN_BLOCK_GAP else None


def _objects(
    text: str, lang: str, t: Trigger, spans: list[Span], masked: list[tuple[int, int]]
) -> list[Span]:
    if t.obj:
        inside = [s for s in spans if t.obj[0] <= s.start and s.end <= t.obj[1] and not s.weak]
        return inside[-1:]
    first = _object_at(text, lang, t.end, spans, masked, 6, t.relation)
    out = [first] if first else []
    while out and len(out) < 3:
        m = _COORD.match(text, out[-1].end)
        nxt = _object_at(text, lang, m.end(), spans, masked, 1, t.relation) if m else None
        if not nxt:
            break
        out.append(nxt)
    return out


def _object_at(
    text: str,
    lang: str,
    pos: int,
    spans: list[Span],
    masked: list[tuple[int, int]],
    max_gap: int,
    relation: str,
) -> Span | None:
    if lang == "en":
        return _en_object(text, pos, spans, masked)
    after = [s for s in spans if s.start >= pos]
    if not after:
        return None
    s = min(after, key=lambda c: c.start)
    gap = text[pos : s.start]
    if len(gap.strip()) > max_gap or _CLAUSE_BREAK.search(gap) or overlaps(pos, s.start, masked):
        return None
    while relation in ("is", "has") and text.startswith("的", s.end):  # "清华大学的教授": the head noun
        head = next((c for c in spans if c.start == s.end + 1), None)
        if head is None:
            break
        s = head
    return s


def _en_object(text: str, pos: int, spans: list[Span], masked: list[tuple[int, int]]) -> Span | None:
    """The name or the short noun phrase right after ``pos`` ("green tea", "Acme Corp")."""
    picked: list[re.Match[str]] = []
    cur = pos
    for m in EN_WORD.finditer(text, pos):
        low = m.group().lower()
        if text[cur : m.start()].strip() or overlaps(m.start(), m.end(), masked):
            break
        cur = m.end()
        name = next((s for s in spans if s.start == m.start() and s.proper), None)
        if name and not picked:
            return name
        if not picked and low in words.DETERMINERS:
            continue
        if name or m.group() != low or not is_content_word(low, 3):
            break
        picked.append(m)
        if len(picked) == 3:
            break
    if not picked:
        return None
    start, end = picked[0].start(), picked[-1].end()
    return Span(start, end, lemma(text[start:end]), "concept")


def _retype(spans: list[Span], triples: list[Triple]) -> None:
    """Objects of lives_in are places, objects of works_at organisations (for every mention)."""
    for _, rel, obj in triples:
        kind = {"lives_in": "place", "works_at": "organization"}.get(rel)
        if kind and obj.type in ("concept", "person") and obj.name != "user":
            for s in spans:
                if s.name.casefold() == obj.name.casefold():
                    s.type = kind
            obj.type = kind
