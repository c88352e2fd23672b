"""One default data directory and one default user across the app, the CLI, MCP, tools and the library.

Before, the app's user was ``learner`` and everything else ``default_user``: notes taken in the
app were missing from ``hello-memory search`` on the same data directory.
"""

from __future__ import annotations

import inspect

import typer

from hello_memory import MemoryManager, Settings


def _default(fn: object, name: str) -> object:
    value = inspect.signature(fn).parameters[name].default  # type: ignore[arg-type]
    return value.default if isinstance(value, typer.models.OptionInfo) else value


def test_every_entry_point_defaults_to_the_same_user_and_directory():
    from apps import cli as apps_cli
    from apps.ui import DEFAULT_USER
    from hello_memory import cli
    from tools import mcp_server

    users = {
        "MemoryManager": _default(MemoryManager.__init__, "user_id"),
        "app": DEFAULT_USER,
        "cli add": _default(cli.add, "user"),
        "cli search": _default(cli.search, "user"),
        "cli stats": _default(cli.stats, "user"),
        "cli export": _default(cli.export, "user"),
        "mcp command": _default(apps_cli.mcp, "user"),
        "mcp serve": _default(mcp_server.serve, "user_id"),
    }
    assert set(users.values()) == {"default_user"}, users
    assert Settings().home.as_posix() == "hello_memory_data"  # cwd-relative, for all of them
