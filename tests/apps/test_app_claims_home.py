"""``hello-memory app`` holds its data directory from start-up, not from the first browser session.

Before (issue 27 §5) the stores were opened by the first session: between the start and that
moment another process (a CLI command, the demo) could take the directory, and the app's first
answer was an "in use by another process" error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hello_memory import Settings
from hello_memory.stores.open import lock_holder

ROOT = Path(__file__).resolve().parents[2]


class _FakeBlocks:
    """Stands in for the Gradio app: records who holds the data directory when it is launched."""

    def __init__(self, home: Path) -> None:
        self.home, self.holder_at_launch = home, "not launched"

    def queue(self) -> _FakeBlocks:
        return self

    def launch(self, **kwargs: object) -> None:
        self.holder_at_launch = lock_holder(self.home)


def test_the_app_holds_its_data_directory_before_any_session(tmp_path, monkeypatch, fake_embedder):
    import apps.app as app_module
    from apps.sessions import AssistantFactory

    home = tmp_path / "data"
    settings = Settings(home=home)
    fake = _FakeBlocks(home)
    factories: list[AssistantFactory] = []

    def create_app(*args: object, **kwargs: object):
        factory = AssistantFactory(settings, embedder=fake_embedder)
        factories.append(factory)
        return fake, factory

    monkeypatch.setattr(app_module, "create_app", create_app)
    monkeypatch.setattr(app_module, "launch_kwargs", dict, raising=False)
    app_module.serve(home, port=0, settings=settings)
    assert fake.holder_at_launch == f"pid {os.getpid()}"  # held while no browser has opened the page
    assert lock_holder(home) is None  # and released when the app stops


def test_another_process_is_refused_while_the_app_waits_for_its_first_session(tmp_path, fake_embedder):
    from apps.sessions import AssistantFactory, Session

    home = tmp_path / "data"
    factory = AssistantFactory(Settings(home=home), embedder=fake_embedder)
    factory.claim()
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HELLO_MEMORY_EMBEDDER": "tfidf"}
        out = subprocess.run([sys.executable, "-m", "apps.cli", "add", "taken?", "--home", str(home)],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and "in use by another process" in out.stderr, out.stderr[-2000:]
        la = factory.assistant(Session(), "alice")
        assert la.memory.add("still mine").content == "still mine"  # the app's own sessions share it
    finally:
        factory.close_all()
    assert lock_holder(home) is None


def test_through_a_memory_service_the_app_claims_nothing(tmp_path, fake_embedder):
    from apps.sessions import AssistantFactory

    factory = AssistantFactory(Settings(home=tmp_path / "data"), embedder=fake_embedder,
                               server_url="http://127.0.0.1:9")
    factory.claim()
    assert not (tmp_path / "data").exists()
    factory.close_all()


@pytest.fixture(autouse=True)
def _quiet_gradio(monkeypatch):
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
