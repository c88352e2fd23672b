"""LLM clients for tests: a scripted one that records every call, and one that always fails."""

from __future__ import annotations

import copy
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hello_memory.errors import LLMError
from hello_memory.llm.base import ChatLLM, ChatRequest, LLMResponse, Message

Reply = LLMResponse | str | Callable[[list[Message]], LLMResponse | str]
Predicate = Callable[[str], bool] | str


@dataclass(frozen=True, slots=True)
class LLMCall(ChatRequest):
    """One recorded ``complete`` call: ``messages``, ``tools``, ``temperature``, ``max_tokens``.

    The messages are deep copies (and so are the tools, for :class:`ScriptedLLM`).
    """

    @property
    def last_user_message(self) -> str:
        """Text of the last ``user`` message of the call."""
        return last_user_text(self.messages)


def last_user_text(messages: Sequence[Message]) -> str:
    """Text of the last ``user`` message ("" if none); list-of-parts content is joined."""
    for msg in reversed(messages):
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


class ScriptedLLM(ChatLLM):
    """A deterministic :class:`~hello_memory.llm.base.LLMClient` for tests.

    Replies come from a script, in order; each entry is an :class:`LLMResponse`, a string (the
    content), or a callable taking the messages and returning either. When the script runs out,
    ``default`` is returned if given, else :class:`LLMError` is raised, so an unexpected call
    fails the test. :meth:`by_rules` builds one that answers by matching the last user message
    instead. Every call is recorded in :attr:`calls`.

    Example:
        >>> llm = ScriptedLLM(["first", "second"])
        >>> llm.complete([{"role": "user", "content": "hi"}]).content
        'first'
        >>> llm.calls[0].last_user_message, llm.remaining
        ('hi', 1)
    """

    def __init__(
        self, responses: Sequence[Reply] = (), *, default: str | None = None, name: str = "scripted"
    ) -> None:
        self._script: deque[Reply] = deque(responses)
        self._rules: list[tuple[Callable[[str], bool], Reply]] | None = None
        self._default = default
        self._name = name
        self._lock = threading.Lock()
        self.calls: list[LLMCall] = []

    @classmethod
    def by_rules(
        cls, rules: Sequence[tuple[Predicate, Reply]], *, default: str | None = None, name: str = "scripted"
    ) -> ScriptedLLM:
        """Answer with the reply of the first rule whose predicate accepts the last user message.

        A predicate is a callable on the message text, or a string meaning "contains this".
        Rules are not used up. No matching rule: ``default``, else :class:`LLMError`.

        Example:
            >>> llm = ScriptedLLM.by_rules([("expand", "q1\\nq2"), (lambda t: "hypo" in t, "a passage")])
            >>> llm.complete([{"role": "user", "content": "please expand: cats"}]).content
            'q1\\nq2'
        """
        llm = cls(default=default, name=name)
        llm._rules = [(_as_predicate(p), reply) for p, reply in rules]
        return llm

    @property
    def name(self) -> str:
        """``"scripted"`` unless another name was given."""
        return self._name

    @property
    def remaining(self) -> int:
        """Scripted replies not yet used (0 for a rule-based instance)."""
        return len(self._script)

    def _complete(self, request: ChatRequest) -> LLMResponse:
        """Record the call and return the next scripted (or first matching) reply."""
        call = LLMCall(
            copy.deepcopy(request.messages), copy.deepcopy(request.tools), request.temperature, request.max_tokens
        )
        with self._lock:
            self.calls.append(call)
            reply = self._next(call)
        if callable(reply):
            reply = reply(copy.deepcopy(call.messages))
        return reply if isinstance(reply, LLMResponse) else LLMResponse(content=reply, model=self._name)

    def _next(self, call: LLMCall) -> Reply:
        if self._rules is not None:
            text = call.last_user_message
            for accepts, reply in self._rules:
                if accepts(text):
                    return reply
        elif self._script:
            return self._script.popleft()
        if self._default is not None:
            return self._default
        what = "no rule matched" if self._rules is not None else "script exhausted"
        raise LLMError(
            f"ScriptedLLM: {what} at call {len(self.calls)}; last user message: {call.last_user_message!r}"
        )


class FailingLLM(ChatLLM):
    """Raises :class:`LLMError` on every call (records the calls like :class:`ScriptedLLM`).

    Example:
        >>> FailingLLM().complete([{"role": "user", "content": "hi"}])
        Traceback (most recent call last):
        ...
        hello_memory.errors.LLMError: FailingLLM: provider unavailable
    """

    def __init__(self, message: str = "provider unavailable") -> None:
        self._message = message
        self.calls: list[LLMCall] = []

    @property
    def name(self) -> str:
        """``"failing"``."""
        return "failing"

    def _complete(self, request: ChatRequest) -> LLMResponse:
        """Record the call, then raise :class:`LLMError`."""
        self.calls.append(
            LLMCall(copy.deepcopy(request.messages), request.tools, request.temperature, request.max_tokens)
        )
        raise LLMError(f"FailingLLM: {self._message}")


def _as_predicate(p: Predicate) -> Callable[[str], bool]:
    if isinstance(p, str):
        needle = p
        return lambda text: needle in text
    return p
