"""Every ``--help`` text reads as plain text: no reStructuredText markup leaks into it."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from apps.cli import app

COMMANDS = [[], ["add"], ["search"], ["stats"], ["forget"], ["export"], ["import"], ["reindex"], ["demo"],
            ["mcp"], ["app"], ["serve"], ["docs"], ["docs", "add"], ["docs", "list"], ["docs", "remove"],
            ["docs", "ask"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "hello-memory")
def test_help_has_no_rst_markup(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "``" not in result.output and ":class:" not in result.output and ":func:" not in result.output
