"""JSON Schemas for tool arguments, generated from pydantic models (never written by hand).

Every action of a tool has one arguments model (:class:`ActionArgs`: ``extra="forbid"``, strict
types, ``Literal`` enums, ``Field(description=...)``). This module turns those models into the
compact, ``$ref``-free schemas that OpenAI-style function calling and MCP expect, merges the
per-action schemas of a multi-action tool into one, and explains validation errors in a sentence
the model can act on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

_DROP_KEYS = {"title"}
MAX_SEARCH_LIMIT = 50
"""Tighter than the library's limits, so a model's typo cannot ask for a thousand results."""


class ActionArgs(BaseModel):
    """Base of every action's arguments: unknown keys and type coercion ("5" for 5) are errors."""

    model_config = ConfigDict(extra="forbid", strict=True)


class NoArgs(ActionArgs):
    """Arguments of an action that takes none (``stats``, ``list_documents``)."""


class ConfirmArgs(ActionArgs):
    """Arguments of a destructive action: ``confirm`` must be true."""

    confirm: bool = Field(False, description="Must be true: permanently deletes everything this action "
                                             "covers. Only when the user asked for it.")


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of ``model``: ``$defs`` inlined, titles dropped, ``X | None`` shown as ``X``.

    Optional fields become their non-null type because leaving a key out means ``None``; this
    keeps the schema readable for models and accepted by providers that reject ``anyOf``/null.
    """
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    schema = _clean(_inline(raw, defs))
    schema.setdefault("properties", {})
    schema["type"] = "object"
    schema["additionalProperties"] = False
    return schema


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = dict(defs[ref.split("/")[-1]])
            target.update({k: v for k, v in node.items() if k != "$ref"})
            return _inline(target, defs)
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _clean(node: Any) -> Any:
    if isinstance(node, list):
        return [_clean(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _clean(v) for k, v in node.items() if k not in _DROP_KEYS}
    options = out.get("anyOf")
    if isinstance(options, list):
        non_null = [o for o in options if o != {"type": "null"}]
        if len(non_null) == 1 and len(non_null) < len(options):
            merged = dict(non_null[0])
            merged.update({k: v for k, v in out.items() if k != "anyOf"})
            out = merged
    if out.get("default", 0) is None:
        del out["default"]
    return out


def merge_action_schemas(
    schemas: Mapping[str, dict[str, Any]], descriptions: Mapping[str, str]
) -> dict[str, Any]:
    """One object schema for a multi-action tool: ``action`` (an enum) plus every action's fields.

    A field's description says which actions use it (or gives each action's own description);
    a field whose default differs between actions shows no default. Per-action required fields
    are checked when the call is validated.
    """
    action_doc = "; ".join(f"{name}: {descriptions[name]}" for name in schemas)
    props: dict[str, Any] = {
        "action": {"type": "string", "enum": list(schemas), "description": f"What to do. {action_doc}"},
    }
    docs: dict[str, dict[str, str]] = {}
    for action, schema in schemas.items():
        for field, prop in schema.get("properties", {}).items():
            docs.setdefault(field, {})[action] = prop.get("description", "")
            if field not in props:
                props[field] = {k: v for k, v in prop.items() if k != "description"}
            elif props[field].get("default") != prop.get("default"):
                props[field].pop("default", None)
    for field, by_action in docs.items():
        texts = set(by_action.values())
        if len(texts) == 1:
            text = f"{texts.pop()} (used by: {', '.join(by_action)})"
        else:
            text = "; ".join(f"{action}: {doc}" for action, doc in by_action.items())
        props[field]["description"] = text.strip()
    return {"type": "object", "properties": props, "required": ["action"], "additionalProperties": False}


def explain(error: ValidationError, allowed: Iterable[str]) -> str:
    """A one-line explanation of what was wrong with the arguments, naming each bad parameter."""
    parts: list[str] = []
    for err in error.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        kind = err["type"]
        if kind == "missing":
            parts.append(f"missing required parameter '{where}'")
        elif kind == "extra_forbidden":
            parts.append(f"unknown parameter '{where}' (allowed: {', '.join(allowed) or 'none'})")
        elif not err["loc"]:
            parts.append(str(err["msg"]).removeprefix("Value error, "))
        else:
            parts.append(f"parameter '{where}': {err['msg']} (got {short(err.get('input'))})")
    return "; ".join(parts)


def short(value: Any, limit: int = 60) -> str:
    """A short JSON-ish rendering of a rejected value for error messages."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
