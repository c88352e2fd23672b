"""CJK-aware text helpers: token estimates and lexical tokenisation.

Token estimate: one token per CJK character, one per whitespace-separated run
of other text. Lexical tokens (for BM25 and TF-IDF): Latin words lower-cased and Snowball-stemmed,
Chinese as jieba words plus character bigrams (bigrams recover what the segmenter splits
differently in query and document).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from hello_memory.pace import pace

# CJK Unified Ideographs, Extension A-E, Compatibility Ideographs, plus kana and hangul so that
# Japanese/Korean text is not counted as a single "word".
_CJK_RANGES = (
    (
        0x3001,
        0x303F,
    ),  # CJK symbols and punctuation (not U+3000, a space) (。、「」…): one token each, like the characters
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3400, 0x4DBF),  # extension A
    (0x4E00, 0x9FFF),  # unified
    (0xAC00, 0xD7AF),  # hangul syllables
    (0xF900, 0xFAFF),  # compatibility
    (0xFF00, 0xFFEF),  # full-width forms (，！？：)
    (0x20000, 0x2CEAF),  # extensions B-E
)
_CJK_CLASS = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _CJK_RANGES)
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")
# A token for the estimate: a single CJK char, or a run of non-space, non-CJK characters.
_EST_TOKEN = re.compile(f"[{_CJK_CLASS}]|[^\\s{_CJK_CLASS}]+")
_LETTER_RANGES = tuple(r for r in _CJK_RANGES if r[0] not in (0x3001, 0xFF00))
_CJK_RUN = re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _LETTER_RANGES) + "]+")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

_STOPWORDS_EN = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
_STOPWORDS_ZH = frozenset(
    [
        "的",
        "了",
        "和",
        "是",
        "在",
        "我",
        "你",
        "他",
        "她",
        "它",
        "们",
        "这",
        "那",
        "吗",
        "呢",
        "吧",
        "啊",
        "也",
        "都",
        "就",
        "与",
        "及",
        "之",
    ]
)


# Full-width punctuation (，！？：；（） …) is kept: NFKC would make it ASCII, and Chinese text would
# lose the sentence ends the chunker cuts at ("!" counts only before whitespace, "！" anywhere).
_KEEP_WIDE = re.compile(r"[\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]+")


def normalize_text(text: str) -> str:
    """NFKC, except full-width punctuation: compatibility characters become the ones people type.

    PDF text often holds Kangxi radicals (U+2F42 ⽂ for 文), compatibility ideographs and
    ligatures (U+FB01 ﬁ), which a query typed on a keyboard never matches.

    Example:
        >>> normalize_text("\u2f42档的ﬁle，ＡＢＣ！")
        '文档的file，ABC！'
    """
    if unicodedata.is_normalized("NFKC", text):
        return text
    out, pos = [], 0
    for m in _KEEP_WIDE.finditer(text):
        out.append(unicodedata.normalize("NFKC", text[pos : m.start()]))
        out.append(m.group())
        pos = m.end()
    out.append(unicodedata.normalize("NFKC", text[pos:]))
    return "".join(out)


def is_cjk(ch: str) -> bool:
    """True if the single character ``ch`` is a CJK ideograph, kana or hangul syllable."""
    return bool(_CJK_CHAR.fullmatch(ch))


def estimate_tokens(text: str) -> int:
    """CJK-aware token estimate: CJK characters count one each, other runs of non-space one each."""
    return sum(1 for _ in _EST_TOKEN.finditer(text))


def iter_token_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) character spans of the estimate's tokens, in order."""
    for m in _EST_TOKEN.finditer(text):
        yield m.start(), m.end()


def cjk_ratio(text: str) -> float:
    """Share of CJK characters among non-space characters (0 for empty text)."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return 0.0
    return sum(1 for c in chars if _CJK_CHAR.match(c)) / len(chars)


def detect_language(text: str) -> str:
    """``"zh"`` when CJK dominates, ``"en"`` when Latin dominates, ``"mixed"`` otherwise."""
    r = cjk_ratio(text)
    if r >= 0.5:
        return "zh"
    return "en" if r < 0.1 else "mixed"


_jieba_lock = threading.Lock()
_jieba: Any = None


def _segmenter() -> Any:
    """Initialise jieba once (it prints to stderr and builds a prefix dict on first use)."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import logging

                import jieba

                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba = jieba
    return _jieba


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def _latin_tokens(text: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(text)]
    words = [w for w in words if w not in _STOPWORDS_EN]
    return list(_stemmer().stemWords(words)) if words else []


def _cjk_tokens(run: str) -> list[str]:
    out: list[str] = []
    if len(run) == 1:
        return [] if run in _STOPWORDS_ZH else [run]
    for w in _segmenter().lcut(run, HMM=False):
        if w not in _STOPWORDS_ZH:
            out.append(w)
    out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


def lexical_tokens(text: str) -> list[str]:
    """Tokens for lexical relevance: stemmed Latin words, jieba words + bigrams for CJK runs."""
    pace()  # a write tokenises every item it stores (hello_memory.pace)
    tokens: list[str] = []
    pos = 0
    for m in _CJK_RUN.finditer(text):
        pace()  # a 200,000-character memory has thousands of runs: 0.4 s of jieba (hello_memory.pace)
        tokens.extend(_latin_tokens(text[pos : m.start()]))
        tokens.extend(_cjk_tokens(m.group()))
        pos = m.end()
    tokens.extend(_latin_tokens(text[pos:]))
    return tokens
