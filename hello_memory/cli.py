"""``hello-memory`` command line: add, search, stats, forget, export, import, reindex, demo."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, NoReturn

import typer

from hello_memory.errors import HelloMemoryError, InvalidInputError

if TYPE_CHECKING:
    from hello_memory.api import MemoryAdminAPI, MemoryAPI

app = typer.Typer(add_completion=False, no_args_is_help=True, help="hello-memory: memory for LLM agents.")



def _home(value: str | None) -> Path | None:
    """``--home`` as an absolute path; an empty one is refused (it used to mean the current directory)."""
    if value is None:
        return None
    from hello_memory.stores.home import resolve_home  # not stores.open: a service needs no store

    try:
        return resolve_home(value)
    except HelloMemoryError as e:
        raise typer.BadParameter(str(e)) from e


Home = Annotated[
    Path | None,
    typer.Option("--home", help="data directory (default: HELLO_MEMORY_HOME or ./hello_memory_data)",
                 parser=_home, metavar="PATH"),
]
User = Annotated[str, typer.Option("--user", "-u", help="user id")]
WHOLE_STORE = "default_user"  # the default user of whole-store commands: through a key, the key's own
Server = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="a memory service to use (default: HELLO_MEMORY_SERVER_URL, else the "
        "service that owns the data directory, else the directory itself)",
    ),
]
ApiKey = Annotated[
    str | None, typer.Option("--api-key", envvar="HELLO_MEMORY_API_KEY", help="API key of the memory service")
]


def _manager(
    home: Path | None, user: str, server: str | None = None, api_key: str | None = None, *, existing: bool = False
) -> MemoryAPI:
    """The memory the command was pointed at: ``--server``, else HELLO_MEMORY_SERVER_URL, else the live
    service of the home, else the home's stores (``existing``: only a data directory that exists)."""
    from hello_memory import Settings
    from hello_memory.client.discovery import connect_memory

    settings = Settings() if home is None else Settings(home=home)
    return connect_memory(
        settings, user_id=user, server_url=server, api_key=api_key, existing=existing, enable_perceptual=True
    )


def _admin(mm: MemoryAPI) -> MemoryAdminAPI:
    """``mm``'s whole-store operations (``MemoryManager`` and ``RemoteMemory`` both have them)."""
    from hello_memory.api import MemoryAdminAPI

    if not isinstance(mm, MemoryAdminAPI):  # pragma: no cover - both implementations are
        raise InvalidInputError(f"{type(mm).__name__} cannot export, import or reindex")
    return mm


def _fail(e: HelloMemoryError) -> NoReturn:
    typer.secho(f"error: {e}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


@app.command()
def add(
    content: str,
    memory_type: Annotated[
        str, typer.Option("--type", "-t", help="working|episodic|semantic|perceptual")
    ] = "episodic",
    importance: Annotated[float, typer.Option("--importance", "-i")] = 0.5,
    session: Annotated[str | None, typer.Option("--session")] = None,
    home: Home = None,
    user: User = "default_user",
    server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """Store one memory and print its id."""
    try:
        with _manager(home, user, server, api_key) as mm:
            item = mm.add(content, memory_type=memory_type, importance=importance, session_id=session)
    except HelloMemoryError as e:
        _fail(e)
    typer.echo(f"added {item.memory_type.value} memory {item.id}")


@app.command()
def search(
    query: str,
    limit: Annotated[int, typer.Option("--limit", "-n")] = 5,
    memory_type: Annotated[list[str] | None, typer.Option("--type", "-t")] = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="also list the candidates below the relevance floor, marked")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    home: Home = None,
    user: User = "default_user",
    server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """Search memories; one line per hit with score and tier.

    Only the memories that cleared the relevance floor, by score; --all lists the other
    candidates after them, each marked "below floor" (docs/design.md §5).
    """
    try:
        with _manager(home, user, server, api_key, existing=True) as mm:
            hits = mm.search(query, limit=limit, memory_types=memory_type or None)
    except HelloMemoryError as e:
        _fail(e)
    relevant = [h for h in hits if not h.below_floor]
    below = [h for h in hits if h.below_floor]
    if as_json:
        shown = hits if show_all else relevant
        typer.echo(json.dumps([h.model_dump(mode="json") for h in shown], ensure_ascii=False, indent=2))
        return
    if not relevant:
        typer.echo("no matching memories")
    for h in relevant:
        typer.echo(f"{h.score:.3f}  [{h.item.memory_type.value}] {h.item.content[:100]}  ({h.item.id})")
    if below and not show_all:
        typer.echo(f"({len(below)} more below the relevance floor: --all lists them)")
    for h in below if show_all else []:
        typer.echo(f"{h.score:.3f}  below floor  [{h.item.memory_type.value}] {h.item.content[:100]}  ({h.item.id})")


@app.command()
def stats(
    home: Home = None, user: User = "default_user", server: Server = None, api_key: ApiKey = None
) -> None:
    """Counts per tier and the backends in use."""
    try:
        with _manager(home, user, server, api_key, existing=True) as mm:
            st = mm.stats()
    except HelloMemoryError as e:
        _fail(e)
    typer.echo(f"user {st.user_id}: {st.total} memories ({st.deleted} forgotten, restorable)")
    for k, v in st.by_type.items():
        typer.echo(f"  {k:<11} {v}")
    typer.echo(f"  graph: {st.entities} entities, {st.relations} relations")
    typer.echo(f"  embedder {st.embedder}, vectors {st.vector_backend}")


@app.command()
def forget(
    strategy: Annotated[str, typer.Option("--strategy", "-s")] = "importance_based",
    threshold: Annotated[float, typer.Option("--threshold")] = 0.1,
    max_age_days: Annotated[float, typer.Option("--max-age-days")] = 30,
    purge: Annotated[
        bool, typer.Option("--purge", help="delete for good instead of a restorable forget")
    ] = False,
    home: Home = None,
    user: User = "default_user",
    server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """Forget memories by importance, age, capacity or a combined policy."""
    try:
        with _manager(home, user, server, api_key, existing=True) as mm:
            report = mm.forget(strategy, threshold, max_age_days, purge=purge)
    except HelloMemoryError as e:
        _fail(e)
    typer.echo(f"forgot {report.count} memories ({'purged' if report.purged else 'restorable'})")
    for f in report.forgotten:
        typer.echo(f"  {f.id}  [{f.memory_type.value}] {f.content[:60]} — {f.reason}")


@app.command()
def export(
    output: Annotated[Path | None, typer.Option("--output", "-o", help="file (default: stdout)")] = None,
    full: Annotated[
        bool,
        typer.Option("--full", help="every user, with history (and vectors), for `hello-memory import`"),
    ] = False,
    vectors: Annotated[
        bool, typer.Option("--vectors/--no-vectors", help="with --full: include vectors")
    ] = True,
    home: Home = None,
    user: User = "default_user",
    server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """Export the user's memories as JSON Lines; --full exports the whole store to move it between modes.

    Through a service, --full exports every user the API key reaches (its own; all with the admin key).
    """
    try:
        with _manager(home, user, server, api_key, existing=True) as mm:
            if full:
                lines = _admin(mm).export_lines(vectors=vectors)
            else:
                lines = (json.dumps(i.model_dump(mode="json"), ensure_ascii=False) for i in mm.get_all())
            written = _write_lines(lines, output)
    except HelloMemoryError as e:
        _fail(e)
    if output is not None:
        typer.echo(f"exported {max(written - 1, 0) if full else written} memories to {output}")


def _write_lines(lines: Iterator[str], output: Path | None) -> int:
    """Write ``lines`` to ``output`` (stdout when ``None``) as they come; how many were written.

    The first line is read before ``output`` is opened, so a memory that cannot be reached leaves no
    file behind; an export that breaks off later removes its incomplete file.
    """
    first = next(lines, None)
    if output is None:
        return _copy(first, lines, sys.stdout)
    try:
        fh = output.open("w", encoding="utf-8")
    except OSError as e:  # a directory, a missing folder, no permission: say so, no traceback
        _cannot_write(output, e)
    try:
        with fh:
            return _copy(first, lines, fh)
    except BaseException as e:
        output.unlink(missing_ok=True)
        if isinstance(e, OSError) and not isinstance(e, HelloMemoryError):
            _cannot_write(output, e)
        raise


def _copy(first: str | None, rest: Iterable[str], out: IO[str]) -> int:
    if first is None:
        return 0
    out.write(first + "\n")
    written = 1
    for line in rest:
        out.write(line + "\n")
        written += 1
    return written


def _cannot_write(output: Path, e: OSError) -> NoReturn:
    typer.secho(f"error: cannot write {output}: {e.strerror or e}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2) from None


@app.command("import")
def import_(
    source: Annotated[Path, typer.Argument(help="a file written by `hello-memory export --full`")],
    reembed: Annotated[
        bool, typer.Option("--reembed", help="embed again when the export's embedder differs")
    ] = False,
    home: Home = None,
    server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """Import a --full export into the memory pointed at (a service, QDRANT_URL / NEO4J_URI, or --home).

    Idempotent; through a service an API key imports only its own user's memories (the admin key any).
    """
    try:
        with source.open(encoding="utf-8") as fh, _manager(home, WHOLE_STORE, server, api_key) as mm:
            done = _admin(mm).import_lines(fh, reembed=reembed)
    except HelloMemoryError as e:  # before OSError: PermissionDeniedError is one too
        _fail(e)
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        typer.secho(f"error: cannot read {source}: {reason or e}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None
    typer.echo(f"imported {done.memories} memories, counts verified ({done.reembedded} embedded again)")


@app.command()
def reindex(
    graph: Annotated[
        bool, typer.Option("--graph", help="rebuild the knowledge graph from the records")
    ] = False,
    vectors: Annotated[
        bool,
        typer.Option("--vectors", help="rebuild the embedded vector index's collections in the layout "
                     "HELLO_MEMORY_VECTOR_MEMORY names (mapped or compact); a data directory only"),
    ] = False,
    user: Annotated[
        str | None, typer.Option("--user", "-u", help="only this user (default: every user reached)")
    ] = None,
    home: Home = None,
    server: Server = None,
    api_key: ApiKey = None,
) -> None:
    """Repair derived data from the records, in the memory pointed at (a service, QDRANT_URL / NEO4J_URI, or --home).

    --graph completes pending work, then drops and re-links each user's graph from the semantic
    memories' records: it repairs a worker killed between the record and the graph write. Through
    a service, an API key rebuilds only its own user's graph. --vectors rebuilds, in a data
    directory no service holds, every vector collection whose layout is not the one
    HELLO_MEMORY_VECTOR_MEMORY names (a collection keeps the layout it was created with until then).
    """
    if graph == vectors:
        typer.secho("error: say what to rebuild: --graph or --vectors", fg=typer.colors.RED, err=True)
        raise typer.Exit(2)
    if vectors:
        _relayout(home, server, api_key)
        return
    try:
        with _manager(home, WHOLE_STORE, server, api_key, existing=True) as mm:
            done = _admin(mm).reindex_graph(user)
    except HelloMemoryError as e:
        _fail(e)
    typer.echo(
        f"graph rebuilt: {done.memories} semantic memories of {done.users} users linked "
        f"({done.recovered} pending operations completed first)"
    )


def _relayout(home: Path | None, server: str | None, api_key: str | None) -> None:
    from hello_memory.manager import MemoryManager

    try:
        with _manager(home, WHOLE_STORE, server, api_key, existing=True) as mm:
            if not isinstance(mm, MemoryManager):
                raise InvalidInputError(
                    "--vectors rebuilds the vector index of a data directory, and this one is used through a "
                    "memory service: stop the service, then run it with --home"
                )
            rebuilt = mm.relayout_vectors()
            layout = mm.settings.vector_memory
    except HelloMemoryError as e:
        _fail(e)
    typer.echo(f"vector collections in the {layout} layout; rebuilt: {', '.join(rebuilt) or 'none'}")


@app.command()
def demo(home: Home = None, server: Server = None, api_key: ApiKey = None) -> None:
    """Run a short end-to-end demonstration on the embedded defaults (no services, no keys)."""
    from hello_memory.demo import run_demo

    try:
        run_demo(home, server=server, api_key=api_key)
    except HelloMemoryError as e:
        _fail(e)


#: Modules the ``hello-memory`` process never uses, though libraries import them when installed:
#: httpx its own command line (``httpx._main``: rich, click, pygments, about 0.1 s of CPU); httpcore
#: HTTP/2 (``h2``, pulled in by qdrant-client's ``httpx[http2]``) and ``trio``, about 0.2 s more. Each
#: import is optional (the library falls back when it fails), and nothing here asks for HTTP/2 or trio.
UNUSED_IMPORTS = ("httpx._main",)
UNUSED_BY_MEMORY_COMMANDS = ("h2", "trio")
MEMORY_COMMANDS = frozenset({"add", "search", "stats", "forget", "export", "import", "reindex", "demo"})


def skip_unused_imports(argv: list[str] | None = None) -> None:
    """Keep the command's process from importing what it never uses (start-up is most of a CLI call).

    Only in the ``hello-memory`` process (its ``main``), never when the library is imported: the
    memory commands (``argv[1]``) reach a service with one synchronous HTTP/1.1 client, so they also
    skip HTTP/2 and trio; ``serve``, ``mcp`` and ``app`` keep every library as it is.
    """
    argv = sys.argv if argv is None else argv
    unused = UNUSED_IMPORTS + (UNUSED_BY_MEMORY_COMMANDS if argv[1:2] and argv[1] in MEMORY_COMMANDS else ())
    for name in unused:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


def main() -> None:
    """Console-script entry point."""
    skip_unused_imports()
    app()


if __name__ == "__main__":
    main()
