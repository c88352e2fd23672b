"""make_llm: which endpoint, model and key the settings select."""

from __future__ import annotations

import pytest

from hello_memory.errors import InvalidInputError
from hello_memory.llm.factory import make_llm
from hello_memory.llm.openai_compat import OpenAICompatibleLLM
from hello_memory.settings import Settings

DS = "https://dashscope.aliyuncs.com/compatible-mode/v1"


def build(tmp_path, **kw) -> OpenAICompatibleLLM:
    llm = make_llm(Settings(home=tmp_path, **kw))
    assert isinstance(llm, OpenAICompatibleLLM)
    return llm


def test_nothing_configured_gives_none(tmp_path):
    assert make_llm(Settings(home=tmp_path)) is None
    assert make_llm(Settings(home=tmp_path, llm_model="qwen-max")) is None


def test_dashscope_key_alone_selects_compatible_mode_qwen_plus(tmp_path):
    llm = build(tmp_path, dashscope_api_key="sk-ds")
    assert (llm.model, llm._base_url, llm._api_key) == ("qwen-plus", DS, "sk-ds")
    assert build(tmp_path, dashscope_api_key="sk-ds", llm_model="qwen-max").model == "qwen-max"
    intl = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    assert build(tmp_path, dashscope_api_key="sk-ds", dashscope_base_url=intl)._base_url == intl


def test_llm_settings_win_over_dashscope(tmp_path):
    llm = build(tmp_path, llm_api_key="sk-oa", dashscope_api_key="sk-ds")
    assert (llm.model, llm._base_url, llm._api_key) == ("gpt-4o-mini", None, "sk-oa")
    llm = build(
        tmp_path, llm_base_url="http://127.0.0.1:8000/v1", llm_model="qwen2.5", dashscope_api_key="sk-ds"
    )
    assert (llm.model, llm._base_url, llm._api_key) == ("qwen2.5", "http://127.0.0.1:8000/v1", None)
    assert llm._timeout == 60.0


def test_dashscope_base_url_borrows_the_dashscope_key(tmp_path):
    llm = build(tmp_path, llm_base_url=DS, dashscope_api_key="sk-ds")
    assert (llm.model, llm._api_key) == ("qwen-plus", "sk-ds")


def test_foreign_base_url_needs_a_model(tmp_path):
    with pytest.raises(InvalidInputError, match="LLM_MODEL"):
        make_llm(Settings(home=tmp_path, llm_base_url="http://127.0.0.1:8000/v1"))


def test_environment_names_are_read(tmp_path, monkeypatch):
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-env")
    monkeypatch.setenv("LLM_MODEL", "qwen-turbo")
    llm = build(tmp_path)
    assert (llm.model, llm._api_key) == ("qwen-turbo", "sk-env")
