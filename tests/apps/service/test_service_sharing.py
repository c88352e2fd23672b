"""Sharing by default: with a service owning the data directory, the CLI, an MCP stdio client and the app
all use it (without it they would get StoreLockedError) and see each other's writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from service_runner import REPO, service_env

from hello_memory import MemoryManager, Settings
from hello_memory.client.discovery import SERVICE_FILE, find_service, read_service_file, write_service_file
from hello_memory.errors import StoreLockedError

pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

USER = "sharer"
CLI_FACT = "The CLI wrote that the project is called hello-memory"
MCP_FACT = "The MCP client noted that Qdrant Edge runs in process"
APP_NOTE = "The app's note says consolidation promotes important memories"
DOC = "# Sharing\n\nOne service owns the data directory and every client goes through it."


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from apps.cli import main; main()", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=env or service_env())


async def _mcp_session(home: Path) -> dict:
    params = StdioServerParameters(command=sys.executable, cwd=str(REPO), env=service_env(),
                                   args=["-m", "tools.mcp_server", "--home", str(home), "--user", USER,
                                         "--namespace", f"docs_{USER}"])
    out: dict = {}
    with anyio.fail_after(120):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            out["search"] = await session.call_tool("memory_search", {"query": "what is the project called"})
            out["add"] = await session.call_tool("memory_add", {"content": MCP_FACT, "memory_type": "semantic"})
            out["doc"] = await session.call_tool("rag_add_text", {"text": DOC, "source": "sharing.md"})
    return out


def _text(result) -> str:
    return result.content[0].text


def test_cli_mcp_and_app_share_one_service(service):
    home = service.home
    with pytest.raises(StoreLockedError):  # the directory itself is the service's
        MemoryManager(Settings(home=home, embedder="tfidf"))

    added = cli("add", CLI_FACT, "--type", "semantic", "--home", str(home), "--user", USER)
    assert added.returncode == 0, added.stderr
    cli_id = added.stdout.split()[-1]

    out = anyio.run(_mcp_session, home)
    assert CLI_FACT in _text(out["search"]) and cli_id in _text(out["search"])
    assert "Stored semantic memory" in _text(out["add"]) and "error" not in _text(out["doc"]).lower()

    from apps.app import create_app
    from apps.sessions import Session

    _, factory = create_app(Settings(home=home, embedder="tfidf"))
    try:
        assert factory.server_url == service.url
        la = factory.assistant(Session(), USER)
        assert {CLI_FACT, MCP_FACT} <= {h.item.content for h in la.memory.search("project Qdrant", limit=10)}
        la.add_note(APP_NOTE)
        reply = la.ask("Who owns the data directory?")
        assert reply.route == "rag" and reply.citations and "sharing.md" in reply.citations[0].source_path
        assert [d.file_name for d in la.list_documents()] == ["sharing.md"]
    finally:
        factory.close_all()

    found = cli("search", "what does the app's note say about consolidation", "--home", str(home), "--user", USER,
                "--json")
    assert found.returncode == 0, found.stderr
    assert APP_NOTE in [h["item"]["content"] for h in json.loads(found.stdout)]
    stats = cli("stats", "--home", str(home), "--user", USER)
    assert stats.returncode == 0 and "semantic" in stats.stdout
    exported = cli("export", "--home", str(home), "--user", USER)
    contents = {json.loads(line)["content"] for line in exported.stdout.splitlines()}
    assert {CLI_FACT, MCP_FACT, APP_NOTE} <= contents


def test_server_flag_and_environment_reach_a_service_of_another_home(service, tmp_path):
    other_home = tmp_path / "unused"
    added = cli("add", "sent with --server", "--home", str(other_home), "--user", USER, "--server", service.url)
    assert added.returncode == 0, added.stderr
    env = service_env(HELLO_MEMORY_SERVER_URL=service.url)
    found = cli("search", "sent with --server", "--home", str(other_home), "--user", USER, "--json", env=env)
    assert "sent with --server" in found.stdout
    assert not other_home.exists()  # nothing was opened locally


def test_unreachable_server_is_one_clear_line(tmp_path):
    result = cli("stats", "--server", "http://127.0.0.1:9", "--home", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and "hello-memory serve" in result.stderr


def test_a_stale_service_file_is_ignored(tmp_path):
    home = tmp_path / "data"
    home.mkdir()
    write_service_file(home, "http://127.0.0.1:9")  # our own pid: alive, but nothing listens there
    assert find_service(home) is None
    record = read_service_file(home)
    assert record is not None
    dead = record.model_copy(update={"pid": 2**22 + 12345})
    (home / SERVICE_FILE).write_text(dead.model_dump_json(), encoding="utf-8")
    assert find_service(home) is None
    (home / SERVICE_FILE).write_text("{not json", encoding="utf-8")
    assert find_service(home) is None
    added = cli("add", "written locally", "--home", str(home))  # falls back to the directory itself
    assert added.returncode == 0, added.stderr
    with MemoryManager(Settings(home=home, embedder="tfidf")) as mm:
        assert [i.content for i in mm.get_all(memory_type="episodic")] == ["written locally"]


def test_a_service_file_of_another_home_is_not_believed(service, tmp_path):
    home = tmp_path / "copy"
    home.mkdir()
    (home / SERVICE_FILE).write_bytes((service.home / SERVICE_FILE).read_bytes())  # a copied directory
    assert find_service(service.home) == service.url
    assert find_service(home) is None


def test_a_second_service_on_a_served_home_is_one_clear_error(service):
    result = subprocess.run([sys.executable, "-m", "apps.service", "--home", str(service.home), "--port", "0",
                             "--embedder", "tfidf"], cwd=REPO, capture_output=True, text=True, timeout=120,
                            env=service_env())
    assert result.returncode == 2 and "in use by another process" in result.stderr
    assert f"held by pid {service.proc.pid}: " in result.stderr
    assert "a memory service already serves it" in result.stderr
    assert "Traceback" not in result.stderr
    assert read_service_file(service.home).pid == service.proc.pid  # the running one is still advertised


def test_no_keys_and_a_public_host_is_refused(tmp_path):
    result = cli("serve", "--home", str(tmp_path / "data"), "--host", "0.0.0.0", "--port", "0")
    assert result.returncode == 2 and "without API keys" in result.stderr
    assert not (tmp_path / "data").exists()


def test_a_busy_port_is_one_clear_error(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "apps.service", "--home", str(tmp_path / "data"), "--port",
                                 str(port), "--embedder", "tfidf"], cwd=REPO, capture_output=True, text=True,
                                timeout=120, env=service_env())
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "choose another port with --port" in lines[0], lines
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data").exists()  # refused before the stores were opened


def test_the_demo_runs_through_the_service(service):
    result = cli("demo", "--home", str(service.home))
    assert result.returncode == 0, result.stderr
    assert f"memory: {service.url}" in result.stdout and "hashing-tfidf" in result.stdout
    assert "search: 张三是做什么的？" in result.stdout and "<memory_evidence>" in result.stdout


def test_a_cli_call_through_the_service_imports_no_store(service):
    """Start-up is most of a CLI call through a service (issue 27 §5: 1.1–1.3 s of CPU for a 21 ms
    search): ``--home`` used to import the store module (numpy, SQLite adapters, the registry) to
    check the path, ``import httpx`` its own command line (rich, click, pygments), and httpcore
    HTTP/2 and trio where installed."""
    heavy = ("numpy", "hello_memory.stores.open", "hello_memory.stores.records.sqlite", "hello_memory.manager",
             "rag.pipeline", "rich", "pygments", "h2", "hpack", "trio")
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: print('loaded:', [m for m in {heavy!r} if sys.modules.get(m) is not None]"
            ", file=sys.stderr))\n"
            "from apps.cli import main\nsys.argv = ['hello-memory', *sys.argv[1:]]\nmain()")
    out = subprocess.run([sys.executable, "-c", code, "search", "anything", "--home", str(service.home)], cwd=REPO,
                         capture_output=True, text=True, timeout=120, env=service_env())
    assert out.returncode == 0, out.stderr[-2000:]
    assert "loaded: []" in out.stderr, out.stderr[-2000:]
