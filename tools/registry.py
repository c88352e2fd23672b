"""ToolRegistry: register tools, describe them as OpenAI function-calling tools, execute calls.

Example:
    >>> from tools import MemoryTool, ToolRegistry
    >>> registry = ToolRegistry()
    >>> registry.register(MemoryTool(user_id="alice"))                       # doctest: +SKIP
    >>> registry.to_openai_tools()[0]["function"]["name"]                      # doctest: +SKIP
    'memory'
    >>> registry.execute("memory", '{"action": "add", "content": "我叫张三"}').ok  # doctest: +SKIP
    True
"""

from __future__ import annotations

import builtins
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from hello_memory.errors import InvalidInputError
from tools.base import Tool, ToolResult

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Arguments as a dict: a mapping as is, a JSON object string parsed ("" or None = ``{}``).

    Raises:
        ValueError: malformed JSON, ``NaN``/``Infinity``, or JSON that is not an object.
    """
    if arguments is None:
        return {}
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if not isinstance(arguments, str):
        raise ValueError(f"arguments must be a JSON object string or a dict, not {type(arguments).__name__}")
    if not arguments.strip():
        return {}
    try:
        parsed = json.loads(arguments, parse_constant=_reject_constant)
    except (json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"arguments are not valid JSON: {e}") from e
    if not isinstance(parsed, dict):
        raise ValueError(f"arguments must be a JSON object, not a JSON {type(parsed).__name__}")
    return parsed


class ToolRegistry:
    """Named tools, their OpenAI function-calling descriptions, and validated execution.

    Args:
        expand_actions: describe each action of a multi-action tool as its own function named
            ``<tool>_<action>`` (e.g. ``memory_search``) with that action's schema. Calls to
            either form are accepted by :meth:`execute` whatever this is set to.
    """

    def __init__(self, *, expand_actions: bool = False) -> None:
        self.expand_actions = expand_actions
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool, *, replace: bool = False) -> Tool:
        """Add ``tool``; a name already taken is an error unless ``replace`` is true."""
        if not _NAME.match(tool.name):
            raise InvalidInputError(f"tool name {tool.name!r} must match {_NAME.pattern}", field="name")
        if tool.name in self._tools and not replace:
            raise InvalidInputError(f"a tool named {tool.name!r} is already registered", field="name")
        self._tools[tool.name] = tool
        return tool

    def register_tool(self, tool: Tool) -> Tool:
        """Alias of :meth:`register` (the seed's spelling)."""
        return self.register(tool)

    def unregister(self, name: str) -> Tool | None:
        """Remove and return the tool called ``name`` (``None`` if there is none)."""
        return self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def list(self) -> builtins.list[Tool]:
        """Registered tools in registration order."""
        return builtins.list(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def to_openai_tools(self, *, expand_actions: bool | None = None) -> builtins.list[dict[str, Any]]:
        """Tools in OpenAI function-calling format (DashScope compatible mode accepts the same)."""
        expand = self.expand_actions if expand_actions is None else expand_actions
        out: builtins.list[dict[str, Any]] = []
        for tool in self._tools.values():
            if not expand:
                out.append(_function(tool.name, tool.description, tool.parameters))
                continue
            for action in tool.actions:
                spec = tool.action(action)
                desc = f"{spec.description} (action '{action}' of the {tool.name} tool: {tool.description})"
                out.append(_function(f"{tool.name}_{action}", desc, tool.action_schema(action)))
        return out

    def resolve(self, name: str) -> tuple[Tool, str | None] | None:
        """The tool a function name refers to, and the action when it is an expanded name."""
        tool = self._tools.get(name)
        if tool is not None:
            return tool, None
        for tool in self._tools.values():
            prefix = f"{tool.name}_"
            if name.startswith(prefix) and name[len(prefix):] in tool.actions:
                return tool, name[len(prefix):]
        return None

    def execute(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> ToolResult:
        """Run a call by function name with a dict or JSON-string arguments; never raises."""
        found = self.resolve(name) if isinstance(name, str) else None
        if found is None:
            known = ", ".join(self._tools) or "none"
            # Reported by the registry: the name asked for is input, shown only inside the quoted message.
            return ToolResult.failure("registry", None, f"unknown tool {name!r}; available tools: {known}",
                                      "unknown_tool")
        tool, action = found
        try:
            params = parse_arguments(arguments)
        except ValueError as e:
            return ToolResult.failure(tool.name, action, str(e))
        if action is not None:
            given = params.get("action", action)
            if given != action:
                return ToolResult.failure(tool.name, action, f"function {name!r} runs action {action!r}, "
                                          f"but the arguments ask for action {given!r}")
            params["action"] = action
        return tool.run(params)

    def close(self) -> None:
        """Close every registered tool."""
        for tool in self._tools.values():
            try:
                tool.close()
            except Exception:  # close the rest even if one fails
                logger.exception("closing tool %s failed", tool.name)


def _function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function",
            "function": {"name": name, "description": description, "parameters": parameters}}
