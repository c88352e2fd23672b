"""Mention spans for the rule-based extractor: jieba tags (Chinese), capitalised runs and content
words (English), chat-turn speakers.

Positions are character offsets into the original text, so mentions, pronouns and relation
triggers can be compared by where they occur.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hello_memory.language._extraction import words
from hello_memory.language.text import _segmenter


@dataclass(slots=True)
class Span:
    """A mention: where it is, its entity name and type."""

    start: int
    end: int
    name: str
    type: str
    weak: bool = False  # a one-character Chinese noun: used as a relation object only
    proper: bool = False  # an English capitalised name


CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
EN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'’](?![sS]\b)[A-Za-z0-9]+)*")  # "Bob's" -> "Bob"
_TITLE = re.compile(r"《([^》]{1,30})》")  # a book, film or song title
_COMMON_SUFFIX = re.compile(
    r"(?:ing|tion|sion|ness|ment|ity|ism|ies|ly|ed|ful|ous|ive|able|ible|ance|ence|ship)$"
)
_SPEAKER = re.compile(r"^\s*(?P<name>[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}|[\u3400-\u9fff]{1,4})\s*[:：]\s*")


@lru_cache(maxsize=1)
def _posseg() -> Any:
    _segmenter()  # initialises jieba quietly, once
    import jieba.posseg

    return jieba.posseg


def find_speaker(text: str) -> tuple[Span | None, int]:
    """A chat-turn speaker ("Caroline: ...", "张三：..."), and where the utterance starts."""
    m = _SPEAKER.match(text)
    if not m:
        return None, 0
    name = m.group("name")
    if name.casefold() in words.LABELS:
        return None, m.end()
    return Span(m.start("name"), m.end("name"), name, "person", proper=True), m.end()


def overlaps(start: int, end: int, masked: list[tuple[int, int]]) -> bool:
    return any(start < e and s < end for s, e in masked)


def zh_spans(text: str, body: int, masked: list[tuple[int, int]]) -> list[Span]:
    """jieba-tagged mentions, segmenting between triggers so no word straddles one ("张三住")."""
    titles = [Span(m.start(1), m.end(1), m.group(1), "concept") for m in _TITLE.finditer(text, body)]
    masked = masked + [(t.start - 1, t.end + 1) for t in titles]
    cuts = sorted(p for s, e in masked for p in (s, e))
    bounds = [body, *[c for c in cuts if c > body], len(text)]
    spans: list[Span] = []
    for lo, hi in itertools.pairwise(bounds):
        if hi <= lo or overlaps(lo, hi, masked):
            continue
        pos = lo
        for pair in _posseg().lcut(text[lo:hi]):
            spans.extend(_zh_token(pair.word, pair.flag, pos))
            pos += len(pair.word)
    return sorted(_merge(spans) + titles, key=lambda sp: sp.start)


def _zh_token(word: str, flag: str, pos: int) -> list[Span]:
    end = pos + len(word)
    if flag.startswith("nr") and len(word) >= 2 and (flag != "nr" or word[0] in words.SURNAMES):
        return [Span(pos, end, word, "person")]
    if (flag.startswith("ns") or flag == "nt") and len(word) >= 2:
        return [Span(pos, end, word, "place" if flag.startswith("ns") else "organization")]
    if flag == "eng" and len(word) >= 2 and word.lower() not in words.EN_STOP:
        return [Span(pos, end, word, "concept")]
    # jieba's dictionary tags verb-object phrases as names or nouns ("喝咖啡/nr"): keep the noun.
    if (
        flag in ("n", "nz", "vn", "nr")
        and len(word) >= 3
        and word[0] in words.ZH_VERB_PREFIX
        and _is_noun(word[1:])
    ):
        return [Span(pos + 1, end, word[1:], "concept")]
    if flag not in ("n", "nz", "vn") or word in words.ZH_STOP_NOUNS:
        return []  # an "nr" without a surname ("过敏") is jieba's mistake, not a name
    return [Span(pos, end, word, "concept", weak=len(word) == 1)]


def _is_noun(word: str) -> bool:
    return str(_posseg().dt.word_tag_tab.get(word, "")).startswith("n")


def _merge(spans: list[Span]) -> list[Span]:
    """Join touching places (北京市+朝阳区) and touching concepts (软件+工程师) into one mention."""
    out: list[Span] = []
    for s in spans:
        prev = out[-1] if out else None
        if (
            prev
            and prev.end == s.start
            and prev.type == s.type
            and not (prev.weak or s.weak)
            and (s.type == "place" or (s.type == "concept" and s.end - prev.start <= 6))
        ):
            out[-1] = Span(prev.start, s.end, prev.name + s.name, s.type)
        else:
            out.append(s)
    return out


def en_spans(text: str, body: int, masked: list[tuple[int, int]]) -> list[Span]:
    tokens = [m for m in EN_WORD.finditer(text, body) if not overlaps(m.start(), m.end(), masked)]
    spans: list[Span] = []
    i = 0
    while i < len(tokens):
        j = _name_run(text, tokens, i)
        if j > i:
            spans.extend(_name_span(text, tokens[i:j], body))
            i = j
            continue
        prev = tokens[i - 1].group().lower() if i else ""
        concept = _concept(tokens[i].group())
        # "-ing" words are activities after "went"/"a"/"of", verbs elsewhere ("Bart, hearing his ...").
        verbal = prev in words.VERB_CUES or ((concept or "").endswith("ing") and prev not in words.ING_CUES)
        if concept and not verbal:
            spans.append(Span(tokens[i].start(), tokens[i].end(), concept, "concept"))
        i += 1
    return _join_concepts(text, spans)


def _is_cap(token: str) -> bool:
    return token[0].isupper() and re.split(r"['’]", token)[0] != "I"


def _name_run(text: str, tokens: list[re.Match[str]], i: int) -> int:
    """End index of the capitalised run starting at ``i`` ("Bank of America"), or ``i``."""
    if not _is_cap(tokens[i].group()):
        return i
    j = i + 1
    while j < len(tokens):
        link = text[tokens[j - 1].end() : tokens[j].start()]
        if link == " " and _is_cap(tokens[j].group()):
            j += 1
        elif (
            link == " "
            and tokens[j].group() in words.NAME_LINKS
            and j + 1 < len(tokens)
            and text[tokens[j].end() : tokens[j + 1].start()] == " "
            and _is_cap(tokens[j + 1].group())
        ):
            j += 2
        else:
            break
    return j


def _name_span(text: str, run: list[re.Match[str]], body: int) -> list[Span]:
    if _sentence_start(text, run[0].start(), body) and run[0].group().lower() in words.EN_STOP:
        run = run[1:]
    if not run or (len(run) == 1 and run[0].group().lower() in words.CALENDAR):
        return []
    low_first = run[0].group().lower()
    if len(run) == 1 and _sentence_start(text, run[0].start(), body) and _COMMON_SUFFIX.search(low_first):
        concept = _concept(low_first)  # "Volunteering is ...", "Family moments ...": not names
        return [Span(run[0].start(), run[0].end(), concept, "concept")] if concept else []
    start, end = run[0].start(), run[-1].end()
    name = re.sub(r"['’]s$", "", text[start:end])
    low = [m.group().lower() for m in run]
    before = text[max(0, start - 12) : start].lower().split()
    if len(run) == 1 and name.isupper():
        kind = "concept"
    elif any(w in words.ORG_WORDS for w in low):
        kind = "organization"
    elif before and before[-1] in words.PLACE_CUES:
        kind = "place"
    else:
        kind = "person"
    return [Span(start, start + len(name), name, kind, proper=True)]


def _sentence_start(text: str, pos: int, body: int) -> bool:
    before = text[body:pos].rstrip(" \t")
    return not before.strip() or before[-1] in '.!?:;"“(\n'


def _concept(token: str) -> str | None:
    """A lemmatised lower-case content word, or None."""
    return lemma(token) if token == token.lower() and is_content_word(token, 3) else None


def is_content_word(low: str, min_len: int) -> bool:
    """Not a function word, number, adverb in -ly or verb form in -ed/-en."""
    if len(low) < min_len or not low.replace("-", "").isalpha() or low in words.EN_STOP:
        return False
    if low in words.DETERMINERS or (low.endswith("ly") and low not in words.LY_NOUNS):
        return False
    return not (low.endswith("ed") and not low.endswith("eed"))


def lemma(word: str) -> str:
    """Light English singularisation of the last word ("dogs" -> "dog", "parties" -> "party")."""
    head, _, last = word.rpartition(" ")
    if last in words.PLURAL_KEEP or len(last) <= 3:
        pass
    elif last.endswith("ies"):
        last = last[:-3] + "y"
    elif last.endswith(("sses", "shes", "ches", "xes")):
        last = last[:-2]
    elif last.endswith("s") and not last.endswith(("ss", "us", "is")):
        last = last[:-1]
    return f"{head} {last}" if head else last


def _join_concepts(text: str, spans: list[Span]) -> list[Span]:
    """Join up to three adjacent concept words ("support group")."""
    out: list[Span] = []
    for s in spans:
        prev = out[-1] if out else None
        if (
            prev
            and prev.type == s.type == "concept"
            and not prev.proper
            and text[prev.end : s.start] == " "
            and prev.name.count(" ") < 2
        ):
            out[-1] = Span(prev.start, s.end, f"{prev.name} {s.name}", "concept")
        else:
            out.append(s)
    return out
