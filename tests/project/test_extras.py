"""The README's install commands are enough for the commands it then tells the user to run.

Each section's ``pip install -e '.[X]'`` is checked by running its commands with every installed
distribution outside ``hello-memory[X]`` (and what that pulls in) hidden from imports. Before
(issue 27 §5), the service section installed ``[service]`` and then pointed an MCP client at
``hello-memory mcp``, which needs the ``tools`` extra: ``error: ... pip install 'hello-memory[tools]'``.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+ (tomllib)")
requirements = pytest.importorskip("packaging.requirements")
utils = pytest.importorskip("packaging.utils")

ROOT = Path(__file__).resolve().parents[2]

# Runs the CLI with an import hook that refuses top-level modules of distributions not in argv[1].
HIDE_OTHERS = """
import sys, json, importlib.metadata as md
from packaging.utils import canonicalize_name as canon
allowed = set(json.loads(sys.argv[1]))
owners = md.packages_distributions()
class OnlyTheExtras:
    def find_spec(self, name, path=None, target=None):
        dists = owners.get(name) if path is None else None
        if dists and not any(canon(d) in allowed for d in dists):
            raise ModuleNotFoundError(f"No module named {name!r} (outside the README's extras)", name=name)
sys.meta_path.insert(0, OnlyTheExtras())
from apps.cli import main
sys.argv = ["hello-memory", *sys.argv[2:]]
main()
"""


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(title)
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def _extras(section: str) -> list[str]:
    found = re.findall(r"pip install -e '\.\[([\w,-]+)\]'", section)
    assert found, "no pip install line in the README section"
    return found[0].split(",")


def _closure(extras: Iterable[str]) -> set[str]:
    """Distributions ``pip install -e '.[extras]'`` installs: hello-memory's requirements (from this
    checkout's pyproject.toml) and, recursively, theirs (from the installed metadata)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    todo = list(project["dependencies"])
    wanted = set(extras)
    while wanted:  # the extras may name other extras of hello-memory ("all", "dev")
        extra = wanted.pop()
        for spec in project["optional-dependencies"][extra]:
            req = requirements.Requirement(spec)
            if utils.canonicalize_name(req.name) == "hello-memory":
                wanted |= req.extras
            else:
                todo.append(spec)
    seen = {"hello-memory"}
    while todo:
        req = requirements.Requirement(todo.pop())
        name = utils.canonicalize_name(req.name)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if name in seen:
            continue
        seen.add(name)
        try:
            deps = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue  # not installed here: nothing of it can be imported anyway
        for dep in deps:
            dreq = requirements.Requirement(dep)
            if dreq.marker is None or any(dreq.marker.evaluate({"extra": e}) for e in ("", *req.extras)):
                todo.append(str(dreq).split(";")[0] if dreq.marker is not None else dep)
    return seen


def _run(extras: list[str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HELLO_MEMORY_EMBEDDER": "tfidf", "GRADIO_ANALYTICS_ENABLED": "False"}
    allowed = json.dumps(sorted(_closure(extras)))
    return subprocess.run([sys.executable, "-c", HIDE_OTHERS, allowed, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, input="")


def test_the_hook_hides_what_the_extras_do_not_install(tmp_path):
    """The check itself: with only the base install, ``mcp`` names the tools extra."""
    out = _run([], "mcp", "--home", str(tmp_path / "data"), cwd=tmp_path)
    assert out.returncode == 2 and "pip install 'hello-memory[tools]'" in out.stderr, out.stderr[-2000:]


def test_the_service_section_installs_what_serve_and_mcp_import(tmp_path):
    section = _section("## Share one memory: the service")
    extras = _extras(section)
    assert "hello-memory mcp" in section and "hello-memory serve" in section
    out = _run(extras, "mcp", "--home", str(tmp_path / "data"), cwd=tmp_path)  # stdin at its end: exits 0
    assert out.returncode == 0, (extras, out.stderr[-2000:])
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = _run(extras, "serve", "--home", str(tmp_path / "served"), "--port", str(port), cwd=tmp_path)
    assert out.returncode == 2 and "pip install" not in out.stderr and f":{port}" in out.stderr, out.stderr[-2000:]


def test_the_first_command_installs_what_the_app_imports(tmp_path):
    extras = _extras(_section("## Two commands on a fresh machine"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = _run(extras, "app", "--home", str(tmp_path / "data"), "--port", str(port), cwd=tmp_path)
    # Gradio is imported before the port is checked: a missing one would say "pip install"
    assert out.returncode == 2 and "pip install" not in out.stderr and f":{port}" in out.stderr, out.stderr[-2000:]
