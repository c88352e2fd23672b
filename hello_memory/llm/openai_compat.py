"""Chat completions from any OpenAI-compatible endpoint (OpenAI, DashScope, vLLM, Ollama, ...)."""

from __future__ import annotations

import logging
import threading
from typing import Any

from hello_memory._lazy import require
from hello_memory.errors import InvalidInputError, LLMError
from hello_memory.llm.base import ChatLLM, ChatRequest, LLMResponse, ToolCall

logger = logging.getLogger(__name__)

DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"
DASHSCOPE_DEFAULT_MODEL = "qwen-plus"
# Local servers (vLLM, Ollama, llama.cpp) ignore the key but the SDK insists on one.
_NO_KEY = "not-needed"


class OpenAICompatibleLLM(ChatLLM):
    """An :class:`~hello_memory.llm.base.LLMClient` over the official ``openai`` SDK.

    Sends ``chat.completions`` requests, with native function calling when ``tools`` is given,
    and turns the first choice into an :class:`LLMResponse`. Any SDK error (HTTP status,
    timeout, connection) becomes :class:`LLMError` carrying the provider's message, as does a
    reply with neither text nor tool calls. The SDK retries 429/5xx itself (``max_retries``).

    The SDK client is built on first use, or passed in (tests pass one whose ``http_client``
    has a mock transport). Needs the ``openai`` extra.

    Args:
        model: model name, e.g. ``"qwen-plus"``.
        base_url: endpoint; ``None`` for api.openai.com. DashScope compatible mode is
            ``https://dashscope.aliyuncs.com/compatible-mode/v1``.
        api_key: key for the endpoint. ``None`` with a ``base_url`` sends a placeholder (local
            servers need none); ``None`` without one lets the SDK read ``OPENAI_API_KEY``.
        timeout: seconds per request.
        client: a pre-built ``openai.OpenAI``.
        max_retries: SDK retries on 429, 5xx and connection errors.

    Example:
        >>> llm = OpenAICompatibleLLM("qwen-plus", base_url=DASHSCOPE_BASE_URL, api_key="sk-...")
        >>> llm.name
        'openai-compatible:qwen-plus'
        >>> llm.complete([{"role": "user", "content": "hi"}]).content  # doctest: +SKIP
        'Hello! How can I help you today?'
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        client: Any = None,
        max_retries: int = 2,
    ) -> None:
        if not model:
            raise InvalidInputError("an LLM model name is required", field="model")
        self._model = model
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = timeout
        self._max_retries = max_retries
        self._client = client
        self._owns_client = client is None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``"openai-compatible:<model>"``."""
        return f"openai-compatible:{self._model}"

    @property
    def model(self) -> str:
        """The model requested on every call."""
        return self._model

    def _complete(self, request: ChatRequest) -> LLMResponse:
        """Send ``request`` as one ``chat.completions`` call and parse the first choice.

        Raises:
            LLMError: the request failed, or the reply is empty.
            MissingDependencyError: the ``openai`` extra is not installed.
        """
        openai = require("openai", "openai")
        kwargs: dict[str, Any] = {
            "model": self._model,
            "messages": request.messages,
            "temperature": request.temperature,
        }
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        if request.tools:
            kwargs["tools"] = request.tools
        try:
            resp = self._sdk().chat.completions.create(**kwargs)
        except openai.APIStatusError as e:
            raise LLMError(f"{self.name}: HTTP {e.status_code}: {_provider_message(e)}") from e
        except openai.OpenAIError as e:
            raise LLMError(f"{self.name}: {type(e).__name__}: {e}") from e
        return self._parse(resp)

    def close(self) -> None:
        """Close the SDK client if this object created it."""
        with self._lock:
            if self._client is not None and self._owns_client:
                self._client.close()
                self._client = None

    def _sdk(self) -> Any:
        with self._lock:
            if self._client is None:
                openai = require("openai", "openai")
                key = self._api_key or (_NO_KEY if self._base_url else None)
                try:
                    self._client = openai.OpenAI(
                        api_key=key,
                        base_url=self._base_url,
                        timeout=self._timeout,
                        max_retries=self._max_retries,
                    )
                except openai.OpenAIError as e:  # no key given and none in OPENAI_API_KEY
                    raise LLMError(f"{self.name}: cannot create the OpenAI client: {e}") from e
            return self._client

    def _parse(self, resp: Any) -> LLMResponse:
        choices = getattr(resp, "choices", None)
        if not choices:
            raise LLMError(f"{self.name}: the response has no choices")
        choice = choices[0]
        msg = choice.message
        calls = [
            ToolCall(id=tc.id or f"call_{i}", name=tc.function.name, arguments=tc.function.arguments or "{}")
            for i, tc in enumerate(msg.tool_calls or [])
            if getattr(tc, "function", None) is not None
        ]
        content = msg.content or ""
        if not content and not calls:
            reason = getattr(choice, "finish_reason", None)
            raise LLMError(f"{self.name}: empty reply (finish_reason={reason!r})")
        logger.debug("%s replied: %s chars, %s tool calls", self.name, len(content), len(calls))
        return LLMResponse(
            content=content, tool_calls=calls, model=getattr(resp, "model", None) or self._model
        )


def _provider_message(e: Any) -> str:
    """The provider's own error text (``{"error": {"message": ...}}`` or the SDK's summary)."""
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        inner: dict[str, Any] = err if isinstance(err, dict) else body
        if inner.get("message"):
            code = inner.get("code")
            return f"{inner['message']} ({code})" if code else str(inner["message"])
    return str(getattr(e, "message", e))
