"""Build the configured LLM client, or ``None`` when no endpoint is configured."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hello_memory.errors import InvalidInputError
from hello_memory.llm.base import LLMClient

if TYPE_CHECKING:
    from hello_memory.settings import Settings

logger = logging.getLogger(__name__)

OPENAI_DEFAULT_MODEL = "gpt-4o-mini"


def make_llm(settings: Settings) -> LLMClient | None:
    """The LLM client that ``settings`` describe; ``None`` when ``settings.llm_configured()`` is false.

    ``LLM_BASE_URL`` / ``LLM_API_KEY`` / ``LLM_MODEL`` win. Without them, ``DASHSCOPE_API_KEY``
    selects DashScope's OpenAI-compatible mode (``settings.dashscope_base_url``) with
    ``LLM_MODEL`` or ``qwen-plus``. Nothing connects here.

    Rules for the generic endpoint: no ``LLM_BASE_URL`` means api.openai.com (model defaults to
    ``gpt-4o-mini``); a DashScope ``LLM_BASE_URL`` defaults to ``qwen-plus`` and may borrow
    ``DASHSCOPE_API_KEY``; any other ``LLM_BASE_URL`` needs ``LLM_MODEL``.

    Raises:
        InvalidInputError: ``LLM_BASE_URL`` points at a non-DashScope server and ``LLM_MODEL`` is unset.

    Example:
        >>> from hello_memory.settings import Settings
        >>> make_llm(Settings(dashscope_api_key="sk-test")).name
        'openai-compatible:qwen-plus'
        >>> make_llm(Settings()) is None
        True
    """
    if not settings.llm_configured():
        return None
    from hello_memory.llm.openai_compat import DASHSCOPE_DEFAULT_MODEL, OpenAICompatibleLLM

    llm_key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    ds_key = settings.dashscope_api_key.get_secret_value() if settings.dashscope_api_key else None
    base_url = settings.llm_base_url
    if base_url is None and llm_key is None:  # only DASHSCOPE_API_KEY
        base_url = settings.dashscope_base_url
    is_dashscope = base_url is not None and "dashscope" in base_url
    if settings.llm_model:
        model = settings.llm_model
    elif is_dashscope:
        model = DASHSCOPE_DEFAULT_MODEL
    elif base_url is None:
        model = OPENAI_DEFAULT_MODEL
    else:
        raise InvalidInputError(f"LLM_BASE_URL {base_url!r} is set but LLM_MODEL is not", field="llm_model")
    api_key = llm_key or (ds_key if is_dashscope else None)
    logger.debug("LLM: model %s at %s", model, base_url or "api.openai.com")
    return OpenAICompatibleLLM(model, base_url=base_url, api_key=api_key, timeout=settings.llm_timeout)
