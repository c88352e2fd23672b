"""``hello-memory docs add|list|remove|ask``: on a data directory, and through a memory service."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from apps.cli import app

WRAPPED = ("# Garden\n\nTomatoes need deep watering twice a week during the summer months, and the\n"
           "soil should dry slightly between waterings.\n\n## Pests\n\nAphids gather under the leaves.\n")
ENV = {"HELLO_MEMORY_EMBEDDER": "tfidf"}


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["docs", *args], env=ENV)
    return result.exit_code, result.output


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "garden.md").write_text(WRAPPED, encoding="utf-8")
    (docs / "sub" / "notes.txt").write_text("Basil likes warm sun and moist soil.", encoding="utf-8")
    (docs / "sub" / "photo.raw").write_bytes(b"\x00\x01")  # not a document: left out of a folder
    (docs / ".hidden.md").write_text("secret", encoding="utf-8")
    return docs


def _cycle(folder: Path, *where: str) -> None:
    code, out = run("add", str(folder), *where)
    assert code == 0, out
    assert out.count("indexed ") == 2 and "photo.raw" not in out and "hidden" not in out
    code, out = run("list", *where)
    assert code == 0 and "garden.md" in out and "notes.txt" in out
    garden = next(line.split("\t")[0] for line in out.splitlines() if "garden.md" in line)
    code, out = run("ask", "How often should tomatoes be watered?", *where)
    assert code == 0, out
    assert "twice a week during the summer months, and the soil should dry slightly" in out
    assert "[1]" in out and "garden.md > Garden" in out
    code, out = run("ask", "What is the capital of Peru?", *where)
    assert code == 0 and "do not contain an answer" in out and "[1]" not in out  # no answer, no sources
    code, out = run("remove", garden, *where)
    assert code == 0 and f"removed {garden}" in out
    code, out = run("list", *where)
    assert "garden.md" not in out and "notes.txt" in out
    code, out = run("remove", garden, *where)
    assert code == 2 and "no document" in out


def test_docs_commands_on_a_data_directory(folder: Path, tmp_path: Path) -> None:
    _cycle(folder, "--home", str(tmp_path / "data"), "--user", "alice")
    from rag import RAGPipeline

    with RAGPipeline(home=tmp_path / "data", namespace="docs_alice") as kb:  # the app's knowledge base
        assert [d.source_path.endswith("notes.txt") for d in kb.list_documents()] == [True]


def test_a_file_that_cannot_be_converted_is_reported_and_the_rest_indexed(folder: Path, tmp_path: Path) -> None:
    bad = folder / "broken.pdf"
    bad.write_bytes(b"not a pdf")
    code, out = run("add", str(bad), str(folder / "garden.md"), "--home", str(tmp_path / "data"))
    assert code == 2 and "skipped" in out and "broken.pdf" in out and "indexed" in out


def test_docs_commands_through_the_service(folder: Path, service) -> None:
    _cycle(folder, "--server", service.url, "--user", "bob")
