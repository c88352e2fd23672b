"""Through a memory service, the app reports the service's LLM (which answers), not its own settings'."""

from __future__ import annotations

import pytest
from service_runner import start_service

from apps.handlers import status_markdown
from apps.sessions import AssistantFactory, Session
from hello_memory import Settings
from hello_memory.client.remote import RemoteMemory
from hello_memory.testing.fake_embedder import DeterministicFakeEmbedder
from hello_memory.testing.fake_llm import ScriptedLLM

SERVICE_LLM = {"LLM_BASE_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "service-model", "LLM_API_KEY": "k"}


@pytest.fixture(scope="module")
def llm_service(tmp_path_factory):
    """A service configured with an LLM (never called here: nothing is asked that needs it)."""
    running = start_service(tmp_path_factory.mktemp("llm-svc") / "data", env=SERVICE_LLM)
    yield running
    assert running.stop() == 0, running.output()


def _factory(url: str, tmp_path, llm=None) -> AssistantFactory:
    settings = Settings(home=tmp_path / "app-home", embedder="tfidf")
    return AssistantFactory(settings, embedder=DeterministicFakeEmbedder(8), llm=llm, server_url=url)


def test_an_app_without_an_llm_on_a_service_with_one_offers_the_services(llm_service, tmp_path):
    with RemoteMemory(llm_service.url) as mm:
        assert mm.identity().llm == "openai-compatible:service-model"
    factory = _factory(llm_service.url, tmp_path)
    assert factory.llm is None  # the app's own settings have none
    assert factory.answering_llm == "openai-compatible:service-model" and factory.advanced_available
    la = factory.assistant(Session(), "alice")
    try:
        assert la.answering_llm == "openai-compatible:service-model" and la.advanced_available
        assert la.stats().llm == "openai-compatible:service-model"
        line = status_markdown(la, remote=True)
        assert "service-model" in line and "memory service" in line
    finally:
        factory.close_all()


def test_an_app_with_an_llm_on_a_service_without_one_says_answers_are_extractive(service, tmp_path):
    factory = _factory(service.url, tmp_path, llm=ScriptedLLM(name="app-own-llm"))
    assert factory.answering_llm is None and not factory.advanced_available
    la = factory.assistant(Session(), "bob")
    try:
        assert not la.advanced_available and la.stats().llm is None
        line = status_markdown(la, remote=True)
        assert "app-own-llm" not in line and "the memory service has no LLM" in line
        reply = la.ask("what is in my documents?", advanced=True)
        assert not reply.advanced and reply.mode != "llm"
    finally:
        factory.close_all()


def test_in_process_the_line_is_the_apps_own_llm(tmp_path):
    settings = Settings(home=tmp_path / "local", embedder="tfidf")
    factory = AssistantFactory(settings, embedder=DeterministicFakeEmbedder(8), llm=ScriptedLLM(name="own"))
    la = factory.assistant(Session(), "carol")
    try:
        assert factory.answering_llm == la.answering_llm == la.stats().llm == "own"
        assert "LLM own" in status_markdown(la) and "memory service" not in status_markdown(la)
    finally:
        factory.close_all()
