"""A bad setting is one line naming it and what it accepts, exit 2, at every entry point.

Before (issue 27 §5), ``HELLO_MEMORY_FUSION=bogus hello-memory stats``, a broken
``HELLO_MEMORY_SERVICE_API_KEYS``, ``--port 99999`` or ``HELLO_MEMORY_EMBEDDER=""`` printed pydantic's
46–55-line traceback (141 lines with Typer's boxes) and exited 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apps.cli import app

ROOT = Path(__file__).resolve().parents[2]

# (environment variable, value, what the line must say it accepts)
LIBRARY = [
    ("HELLO_MEMORY_FUSION", "bogus", "one of convex, rrf, dense"),
    ("HELLO_MEMORY_EMBEDDER", "", "one of auto, e5, sentence-transformers, dashscope, tfidf"),
    ("HELLO_MEMORY_RELEVANCE_FLOOR", "maybe", "true or false"),
    ("LLM_TIMEOUT", "soon", "a number above 0"),
]
SERVICE = [
    ("HELLO_MEMORY_SERVICE_API_KEYS", '{"k-secret": }', 'a JSON object {"<key>": "<user id>"}'),
    ("HELLO_MEMORY_SERVICE_API_KEYS", '["k-secret"]', 'a JSON object {"<key>": "<user id>"}'),
    ("HELLO_MEMORY_SERVICE_PORT", "abc", "an integer from 0 to 65535"),
]
COMMANDS = [["stats"], ["add", "x"], ["search", "x"], ["export"], ["demo"], ["reindex", "--graph"],
            ["serve", "--port", "0"], ["mcp"], ["app", "--port", "0"]]


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """The ``hello-memory`` command in an empty working directory: nothing may appear there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HELLO_MEMORY_EMBEDDER", "tfidf")
    runner = CliRunner()

    def invoke(*args: str):
        out = runner.invoke(app, list(args))
        return out, [ln for ln in out.output.splitlines() if ln.strip()]

    return invoke


def _one_line(out, lines: list[str]) -> str:
    assert out.exit_code == 2 and len(lines) == 1, (out.exit_code, out.output, out.exception)
    assert lines[0].startswith("error: ") and "Traceback" not in out.output
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_names_a_bad_library_setting_in_one_line(cli, tmp_path, monkeypatch, command):
    monkeypatch.setenv("HELLO_MEMORY_FUSION", "bogus")
    line = _one_line(*cli(*command))
    assert "HELLO_MEMORY_FUSION='bogus'" in line and "one of convex, rrf, dense" in line, line
    assert list(tmp_path.iterdir()) == []  # refused before anything was opened


@pytest.mark.parametrize(("name", "value", "accepts"), LIBRARY, ids=[c[0] for c in LIBRARY])
def test_each_bad_library_setting_says_what_it_accepts(cli, monkeypatch, name, value, accepts):
    monkeypatch.setenv(name, value)
    line = _one_line(*cli("stats"))
    assert f"{name}={value!r}" in line and accepts in line, line


@pytest.mark.parametrize(("name", "value", "accepts"), SERVICE, ids=["bad json", "a list", "a word"])
def test_each_bad_service_setting_says_what_it_accepts(cli, tmp_path, monkeypatch, name, value, accepts):
    monkeypatch.setenv(name, value)
    line = _one_line(*cli("serve", "--home", str(tmp_path / "data")))
    assert name in line and accepts in line, line
    assert "k-secret" not in line  # API keys are secrets: never echoed
    assert list(tmp_path.iterdir()) == []


def test_a_port_out_of_range_says_the_range(cli, tmp_path):
    line = _one_line(*cli("serve", "--home", str(tmp_path / "data"), "--port", "99999"))
    assert "port=99999" in line and "an integer from 0 to 65535" in line, line
    line = _one_line(*cli("app", "--home", str(tmp_path / "data"), "--port", "99999"))
    assert "port" in line and "0 to 65535" in line, line
    assert list(tmp_path.iterdir()) == []


def test_the_module_entry_points_say_it_in_one_line_too(tmp_path, monkeypatch, capsys):
    """``python -m apps``, ``python -m apps.service`` and ``python -m tools.mcp_server``."""
    from apps.app import main as app_main
    from apps.service.__main__ import main as service_main
    from tools.mcp_server import main as mcp_main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HELLO_MEMORY_EMBEDDER", "")
    assert app_main(["--port", "0"]) == 2
    assert service_main(["--port", "0"]) == 2
    with pytest.raises(SystemExit) as exited:
        mcp_main([])
    assert exited.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(ln.startswith("error: HELLO_MEMORY_EMBEDDER=''") for ln in lines), lines
    assert list(tmp_path.iterdir()) == []


def test_the_installed_command_prints_no_traceback(tmp_path):
    """The real process: Typer's pretty traceback (141 lines for one bad variable) is gone."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HELLO_MEMORY_FUSION": "bogus"}
    out = subprocess.run([sys.executable, "-m", "apps.cli", "stats"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "", out
    assert out.stderr.strip().splitlines() == [
        "error: HELLO_MEMORY_FUSION='bogus' is not valid: expected one of convex, rrf, dense"], out.stderr


def test_python_callers_get_the_library_error_with_the_field():
    """``Settings(...)`` raises :class:`InvalidInputError` (a ``ValueError``), naming the field."""
    from apps.service.settings import ServiceSettings
    from hello_memory import InvalidInputError, Settings

    with pytest.raises(InvalidInputError, match=r"^fusion='nope' is not valid: expected one of") as e:
        Settings(fusion="nope")
    assert e.value.field == "fusion"
    with pytest.raises(InvalidInputError, match=r"dense_weight=2\.0 is not valid: expected a number from 0 to 1"):
        Settings(dense_weight=2.0)
    with pytest.raises(InvalidInputError, match="api_keys is not valid") as e:
        ServiceSettings(api_keys={"k-secret": 5})
    assert "k-secret" not in str(e.value) and e.value.field == "api_keys"
