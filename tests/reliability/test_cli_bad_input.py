"""Bad input through the CLI: exit code 2, one ``error:`` line, never a traceback."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hello_memory.cli import app

ENV = {"HELLO_MEMORY_EMBEDDER": "tfidf", "HELLO_MEMORY_HOME": None}


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("cli")
    out = {"ok": root / "ok", "file": root / "a-file", "corrupt-records": root / "corrupt-records",
           "records-is-dir": root / "records-is-dir", "vectors-is-file": root / "vectors-is-file",
           "corrupt-graph": root / "corrupt-graph", "locked": root / "locked"}
    out["file"].write_text("not a directory")
    for name in ("corrupt-records", "records-is-dir", "vectors-is-file", "corrupt-graph", "locked"):
        out[name].mkdir()
    (out["corrupt-records"] / "records.db").write_bytes(b"this is not a SQLite database" * 100)
    (out["records-is-dir"] / "records.db").mkdir()
    (out["vectors-is-file"] / "vectors").write_text("a file where a folder belongs")
    (out["corrupt-graph"] / "graph.db").write_bytes(b"garbage" * 1000)
    with open(out["locked"] / "LOCK", "a+") as held:  # another open file description holds the lock
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield out


# (case id, argv with {home} placeholders, home key)
OUR_ERRORS = [
    ("add-empty", ["add", ""], "ok"),
    ("add-spaces", ["add", "   "], "ok"),
    ("add-nul", ["add", "a\x00b"], "ok"),
    ("add-surrogate", ["add", "bad \ud800"], "ok"),
    ("add-huge", ["add", "x" * 200_001], "ok"),
    ("add-importance-nan", ["add", "x", "--importance", "nan"], "ok"),
    ("add-importance-inf", ["add", "x", "--importance", "inf"], "ok"),
    ("add-importance-negative", ["add", "x", "--importance", "-1"], "ok"),
    ("add-importance-two", ["add", "x", "--importance", "2"], "ok"),
    ("add-type-bogus", ["add", "x", "--type", "bogus"], "ok"),
    ("add-type-empty", ["add", "x", "--type", ""], "ok"),
    ("add-user-empty", ["add", "x", "--user", ""], "ok"),
    ("add-user-newline", ["add", "x", "--user", "a\nb"], "ok"),
    ("add-user-long", ["add", "x", "--user", "u" * 300], "ok"),
    ("add-session-empty", ["add", "x", "--session", ""], "ok"),
    ("home-is-a-file", ["add", "x"], "file"),
    ("home-under-a-file", ["add", "x", "--home", "{home}/sub"], "file"),
    ("home-dev-null", ["add", "x", "--home", "/dev/null"], None),
    ("home-in-proc", ["add", "x", "--home", "/proc/self/hello-memory"], None),
    ("corrupt-records-db", ["add", "x"], "corrupt-records"),
    ("records-db-is-dir", ["stats"], "records-is-dir"),
    ("vectors-is-file", ["add", "x", "--type", "episodic"], "vectors-is-file"),
    ("corrupt-graph-db", ["stats"], "corrupt-graph"),
    ("locked-by-another", ["add", "x"], "locked"),
    ("search-empty", ["search", ""], "ok"),
    ("search-limit-zero", ["search", "x", "--limit", "0"], "ok"),
    ("search-limit-negative", ["search", "x", "--limit", "-1"], "ok"),
    ("search-limit-huge", ["search", "x", "--limit", "5000"], "ok"),
    ("search-type-bogus", ["search", "x", "--type", "bogus"], "ok"),
    ("search-surrogate", ["search", "\udcff"], "ok"),
    ("stats-user-empty", ["stats", "--user", ""], "ok"),
    ("forget-strategy", ["forget", "--strategy", "bogus"], "ok"),
    ("forget-threshold-nan", ["forget", "--threshold", "nan"], "ok"),
    ("forget-threshold-two", ["forget", "--threshold", "2"], "ok"),
    ("forget-age-negative", ["forget", "--max-age-days", "-1"], "ok"),
    ("forget-age-nan", ["forget", "--max-age-days", "nan"], "ok"),
    ("export-to-directory", ["export", "--output", "{home}"], "ok"),
    ("export-missing-folder", ["export", "--output", "{home}/no/such/dir/out.jsonl"], "ok"),
    ("export-user-empty", ["export", "--user", ""], "ok"),
]
USAGE_ERRORS = [
    ("no-content", ["add"]),
    ("importance-word", ["add", "x", "--importance", "high"]),
    ("limit-word", ["search", "x", "--limit", "many"]),
    ("unknown-option", ["add", "x", "--colour", "red"]),
    ("unknown-command", ["fly"]),
    ("threshold-word", ["forget", "--threshold", "low"]),
]


def _run(argv: list[str], home: Path | None) -> object:
    args = [a.replace("{home}", str(home)) for a in argv]
    if home is not None and "--home" not in args:
        args += ["--home", str(home)]
    return CliRunner().invoke(app, args, env=ENV)


@pytest.mark.parametrize(("argv", "home"), [c[1:] for c in OUR_ERRORS], ids=[c[0] for c in OUR_ERRORS])
def test_cli_bad_input_exits_2_with_an_error_line(homes: dict[str, Path], argv: list[str], home: str | None
                                                   ) -> None:
    result = _run(argv, homes[home] if home else None)
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [ln for ln in result.output.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1 and len(lines[0]) > len("error: "), result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("argv", [c[1] for c in USAGE_ERRORS], ids=[c[0] for c in USAGE_ERRORS])
def test_cli_usage_errors_exit_2_without_traceback(homes: dict[str, Path], argv: list[str]) -> None:
    result = _run(argv, homes["ok"])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert "error" in result.output.lower() and "Traceback" not in result.output


def test_cli_still_works_after_the_bad_input(homes: dict[str, Path]) -> None:
    added = _run(["add", "the CLI still works", "--type", "episodic"], homes["ok"])
    assert added.exit_code == 0, added.output
    found = _run(["search", "the CLI still works"], homes["ok"])
    assert found.exit_code == 0 and "the CLI still works" in found.output
