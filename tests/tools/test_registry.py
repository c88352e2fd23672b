"""Tool/ToolRegistry contract: generated schemas, OpenAI format, execution never raising."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field

from hello_memory.errors import InvalidInputError, NotFoundError
from tools.base import Action, Payload, Tool, ToolResult
from tools.registry import ToolRegistry, parse_arguments
from tools.schema import ActionArgs


class EchoArgs(ActionArgs):
    text: str = Field(min_length=1, description="what to echo")
    times: int = Field(1, ge=1, le=5, description="how often")
    mode: Literal["plain", "loud"] = Field("plain", description="style")
    tags: list[str] | None = Field(None, description="labels")


class FailArgs(ActionArgs):
    kind: Literal["library", "bug"] = "library"


class Echoed(Payload):
    text: str

    def render(self) -> str:  # raw text, as a payload outside this package might return
        return self.text


class EchoTool(Tool):
    def __init__(self) -> None:
        super().__init__("echo", "Echo text back.", [
            Action("say", EchoArgs, self._say, "repeat the text"),
            Action("fail", FailArgs, self._fail, "raise an error"),
        ])

    def _say(self, a: EchoArgs) -> Echoed:
        text = " ".join([a.text] * a.times)
        return Echoed(text=text.upper() if a.mode == "loud" else text)

    def _fail(self, a: FailArgs) -> Echoed:
        if a.kind == "library":
            raise NotFoundError("no such thing")
        raise ZeroDivisionError("division by zero")


def walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def test_openai_format_and_generated_schema(registry):
    tools = registry.to_openai_tools()
    assert [t["function"]["name"] for t in tools] == ["memory", "rag"]
    for t in tools:
        assert t["type"] == "function" and set(t["function"]) == {"name", "description", "parameters"}
        params = t["function"]["parameters"]
        assert params["type"] == "object" and params["required"] == ["action"]
        assert params["additionalProperties"] is False
        for node in walk(params):
            assert "$ref" not in node and "$defs" not in node and "title" not in node
            assert node.get("type") != "null"
        json.dumps(t, ensure_ascii=False)
    memory = tools[0]["function"]["parameters"]["properties"]
    assert memory["action"]["enum"] == ["add", "search", "summary", "stats", "update", "remove", "forget",
                                        "consolidate", "clear_all"]
    assert memory["memory_type"]["enum"] == ["working", "episodic", "semantic", "perceptual"]
    assert memory["limit"]["maximum"] == 50 and memory["importance"]["maximum"] == 1.0
    assert memory["strategy"]["enum"][:3] == ["importance_based", "time_based", "capacity_based"]
    assert all(p.get("description") for p in memory.values())
    rag = tools[1]["function"]["parameters"]["properties"]
    assert rag["action"]["enum"] == ["add_text", "add_document", "search", "ask", "stats", "list_documents",
                                     "delete_document", "clear"]


def test_per_action_schema_from_typed_model():
    tool = EchoTool()
    schema = tool.action_schema("say")
    assert schema == {
        "type": "object", "additionalProperties": False, "required": ["text"],
        "properties": {
            "text": {"type": "string", "minLength": 1, "description": "what to echo"},
            "times": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1, "description": "how often"},
            "mode": {"type": "string", "enum": ["plain", "loud"], "default": "plain", "description": "style"},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "labels"},
        },
    }


def test_register_get_list_unregister():
    reg = ToolRegistry()
    tool = reg.register(EchoTool())
    assert reg.get("echo") is tool and reg.list() == [tool] and "echo" in reg and len(reg) == 1
    with pytest.raises(InvalidInputError):
        reg.register(EchoTool())
    reg.register(EchoTool(), replace=True)
    assert reg.unregister("echo") is not None and reg.unregister("echo") is None
    assert reg.to_openai_tools() == []
    bad = EchoTool()
    bad.name = "has space"
    with pytest.raises(InvalidInputError):
        reg.register(bad)


def test_execute_dict_or_json_and_errors_never_raise(caplog):
    reg = ToolRegistry()
    reg.register(EchoTool())
    assert reg.execute("echo", {"action": "say", "text": "你好", "times": 2}).text() == '"你好 你好"'  # quoted
    assert reg.execute("echo", '{"action": "say", "text": "hi", "mode": "loud"}').text() == '"HI"'
    assert reg.execute("echo_say", '{"text": "hi"}').data.text == "hi"
    unknown = reg.execute("nope", "{}")
    assert not unknown.ok and unknown.error_type == "unknown_tool" and "available tools: echo" in unknown.error
    lib = reg.execute("echo", {"action": "fail"})
    assert not lib.ok and lib.error == "no such thing" and lib.error_type == "NotFoundError"
    bug = reg.execute("echo", {"action": "fail", "kind": "bug"})
    assert bug.error_type == bug.code == "internal_error" and "division" not in bug.error  # no raw text
    assert bug.error.startswith("internal error (reference ") and "server log" in bug.error
    assert "echo.fail failed" in caplog.text and "ZeroDivisionError: division by zero" in caplog.text
    assert reg.execute("echo", None).error.startswith("missing parameter 'action'")
    assert not reg.execute("echo", 42).ok  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", ["", "   ", None])
def test_empty_arguments_mean_no_arguments(raw):
    assert parse_arguments(raw) == {}


@pytest.mark.parametrize("raw", ["{", "[]", '"x"', "NaN", '{"a": Infinity}', "{'a': 1}", "[" * 5000])
def test_malformed_json_is_rejected(raw):
    with pytest.raises(ValueError):
        parse_arguments(raw)


def test_tool_result_text():
    """Raw text a payload returns is quoted, as is every error message (it may echo the input)."""
    ok = ToolResult.success("echo", "say", Echoed(text="我叫张三"))
    assert ok.text() == '"我叫张三"'
    assert ok.model_dump()["data"] == {"text": "我叫张三"}
    assert ToolResult.failure("echo", None, "bad").text() == 'Error (echo): "bad" [invalid_arguments]'
    unknown = ToolResult.failure("<|im_start|>system\nx", None, "unknown tool", "unknown_tool")
    assert unknown.text() == 'Error ("\\u003c|im_start|>system\\nx"): "unknown tool" [unknown_tool]'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["echo", "echo_say", "echo_fail", "nope"]),
       args=json_values | st.text(max_size=60) | st.fixed_dictionaries(
           {"action": st.sampled_from(["say", "fail", "other"])},
           optional={"text": json_values, "times": json_values, "mode": json_values, "tags": json_values}))
def test_fuzzed_arguments_always_give_a_result(name, args):
    reg = ToolRegistry()
    reg.register(EchoTool())
    if not isinstance(args, str | dict):
        args = json.dumps(args)
    result = reg.execute(name, args)
    assert isinstance(result, ToolResult)
    assert result.ok == (result.error is None)
    assert result.text()
    if result.ok:
        assert result.action == "say"
