"""The README's two commands are what CI runs, literally, and plain ``pytest`` imports the real packages."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_command(after: str) -> str:
    """The first fenced bash block following the paragraph that starts with ``after``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(after)
    block = re.search(r"```bash\n(.*?)\n```", text[start:], re.S)
    assert block is not None, f"no bash block after {after!r} in README.md"
    lines = [ln for ln in block.group(1).splitlines() if ln.strip()]
    assert len(lines) == 1, f"the README's command after {after!r} must be one line, got {lines}"
    return lines[0].strip()


def _ci_lines() -> list[str]:
    return [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]


def test_ci_runs_the_readme_test_command_literally():
    command = _readme_command("Install and run the tests")
    assert command in _ci_lines(), f".ci/run must run the README's test command as written: {command}"


def test_ci_runs_no_other_test_command():
    runs = [ln for ln in _ci_lines() if re.search(r"\bpytest\b", ln) and not ln.startswith("#")]
    assert runs == [_readme_command("Install and run the tests")], runs


def test_the_test_command_lints_and_type_checks_before_testing():
    steps = _readme_command("Install and run the tests").split(" && ")
    assert steps == ["pip install -e '.[dev]'", "ruff check .", "mypy", "pytest"], steps
    assert " && ".join(steps) in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_readme_main_command_installs_and_runs_the_app():
    command = _readme_command("Install and run the main job")
    assert command.startswith("pip install -e '.[") and command.endswith("hello-memory app"), command


def test_plain_pytest_imports_the_real_packages():
    """Under plain ``pytest`` the test folders (tests/hello_memory, ...) must not shadow the packages."""
    import apps
    import benchmarks
    import hello_memory
    import rag
    import tools

    for module in (hello_memory, rag, tools, apps, benchmarks):
        assert module.__file__ is not None, f"{module.__name__} resolved to a namespace package: {module.__path__}"
        assert Path(module.__file__).resolve().parent == ROOT / module.__name__
