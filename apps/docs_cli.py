"""``hello-memory docs``: index files, list, remove and ask a knowledge base from the command line.

The knowledge base is the user's own (``docs_<user>``, where the app files its uploads) unless
``--namespace`` names another; like every command, it goes through the memory service when one is
configured or owns the data directory, else it opens the directory itself.

Example (a shell)::

    hello-memory docs add notes/ guide.pdf
    hello-memory docs ask "How often should tomatoes be watered?"
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from hello_memory.cli import ApiKey, Home, Server, User, _fail
from hello_memory.errors import HelloMemoryError, StoreLockedError
from rag.api import RAGAPI

docs = typer.Typer(no_args_is_help=True, help="Index documents and ask them (the user's knowledge base).")
Namespace = Annotated[
    str | None, typer.Option("--namespace", help="knowledge base (default: the user's, docs_<user>, as the app)")
]


def _kb(home: Path | None, user: str, namespace: str | None, server: str | None, api_key: str | None) -> RAGAPI:
    """The knowledge base the command was pointed at: a service's, else the data directory's."""
    from hello_memory import Settings
    from hello_memory.client.discovery import locked_home, service_url
    from rag.namespaces import default_namespace

    settings = Settings() if home is None else Settings(home=home)
    url = service_url(settings, server)
    if url is not None:
        from rag.remote import RemoteRAG

        if namespace is None and api_key and user == "default_user":  # the key's own user
            from hello_memory.client.remote import RemoteMemory

            with RemoteMemory(url, api_key=api_key) as me:
                user = me.identity().user_id
        return RemoteRAG(url, namespace=namespace or default_namespace(user), api_key=api_key)
    from rag import RAGPipeline

    try:
        return RAGPipeline(settings, namespace=namespace or default_namespace(user))
    except StoreLockedError as e:
        raise locked_home(settings.home) from e


def files_of(paths: list[Path]) -> Iterator[Path]:
    """The files named, and the documents under the folders named: recursively, sorted, of the formats
    the converter reads, hidden files and hello-memory data directories left out."""
    from rag.convert import SUPPORTED_EXTENSIONS

    for p in paths:
        if not p.is_dir():
            yield p
            continue
        for f in sorted(p.rglob("*")):
            rel = f.relative_to(p)
            if f.is_file() and f.suffix.lower().lstrip(".") in SUPPORTED_EXTENSIONS and not _hidden(rel) \
                    and not any((p / part / "LOCK").exists() for part in _parents(rel)):
                yield f


def _parents(relative: Path) -> list[Path]:
    """``a``, ``a/b`` for ``a/b/c.md``: the folders a file is under, relative to the folder named."""
    return [Path(*relative.parts[: i + 1]) for i in range(len(relative.parts) - 1)]


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


@docs.command("add")
def add(
    paths: Annotated[list[Path], typer.Argument(help="files, or folders to index every file under")],
    namespace: Namespace = None,
    home: Home = None,
    user: User = "default_user",
    server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """Index files (PDF, Word, PowerPoint, Excel, HTML, Markdown, text, code); one line per file.

    A file that cannot be converted is reported and skipped; the exit code is 2 if any was.
    """
    from tqdm import tqdm

    failed = 0
    try:
        with _kb(home, user, namespace, server, api_key) as kb:
            for path in files_of(paths):
                bar = tqdm(desc=path.name, unit="passage", leave=False, disable=not sys.stderr.isatty())
                try:
                    report = kb.add_document(path, progress=_advance(bar))
                except HelloMemoryError as e:
                    failed += 1
                    typer.secho(f"skipped {path}: {e}", fg=typer.colors.YELLOW, err=True)
                    continue
                finally:
                    bar.close()
                typer.echo(f"indexed {path}: {report.chunks} chunks (document {report.document_id})")
    except HelloMemoryError as e:
        _fail(e)
    if failed:
        raise typer.Exit(2)


def _advance(bar: Any) -> Callable[[int, int], None]:
    """A progress callback that moves ``bar`` (a tqdm bar) to ``done`` of ``total`` passages."""

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return progress


@docs.command("list")
def list_documents(
    namespace: Namespace = None, home: Home = None, user: User = "default_user", server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """List the indexed documents: id, chunks, source."""
    try:
        with _kb(home, user, namespace, server, api_key) as kb:
            found = kb.list_documents()
            name = kb.namespace
    except HelloMemoryError as e:
        _fail(e)
    if not found:
        typer.echo(f"no documents in {name}")
    for d in found:
        typer.echo(f"{d.document_id}\t{d.chunks} chunks\t{d.source_path or ''}")


@docs.command("remove")
def remove(
    document_id: str, namespace: Namespace = None, home: Home = None, user: User = "default_user",
    server: Server = None, api_key: ApiKey = None,
) -> None:
    """Remove one document (all its chunks) by the id `docs list` shows."""
    try:
        with _kb(home, user, namespace, server, api_key) as kb:
            removed = kb.delete_document(document_id)
    except HelloMemoryError as e:  # NotFoundError for an id the knowledge base does not hold
        _fail(e)
    typer.echo(f"removed {document_id} ({removed} chunks)")


@docs.command("ask")
def ask(
    question: str,
    limit: Annotated[int, typer.Option("--limit", "-n", help="passages to answer from")] = 5,
    namespace: Namespace = None, home: Home = None, user: User = "default_user", server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """Answer a question from the documents, with numbered sources (extractive without an LLM)."""
    try:
        with _kb(home, user, namespace, server, api_key) as kb:
            answer = kb.ask(question, limit=limit)
    except HelloMemoryError as e:
        _fail(e)
    typer.echo(answer.answer)
    for c in answer.citations:
        where = " > ".join(x for x in (c.source_path or c.document_id, c.heading_path) if x)
        typer.echo(f"[{c.n}] {where} (score {c.score:.3f})")
