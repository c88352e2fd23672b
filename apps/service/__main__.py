"""``python -m apps.service --home DIR [--host H] [--port P] ...``: the same as ``hello-memory serve``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from hello_memory.errors import HelloMemoryError

EMBEDDERS = ("auto", "e5", "sentence-transformers", "dashscope", "tfidf")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and serve; returns the exit code (2 for a clear error)."""
    from apps.service.server import serve
    from apps.service.settings import ServiceSettings
    from hello_memory import Settings

    ap = argparse.ArgumentParser(prog="python -m apps.service", description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=None, help="data directory")
    ap.add_argument("--host", default=None, help="interface to bind (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=None, help="port (default 8765; 0 = any free port)")
    ap.add_argument("--keys-file", type=Path, default=None, help="JSON file of API keys")
    ap.add_argument("--allow-root", action="append", type=Path, default=None,
                    help="folder whose files clients may index by path (repeatable)")
    ap.add_argument("--embedder", choices=EMBEDDERS, default=None, help="override HELLO_MEMORY_EMBEDDER")
    ap.add_argument("--log-level", default="warning", help="log level (logs go to stderr)")
    args = ap.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port), ("keys_file", args.keys_file),
                                   ("allowed_roots", args.allow_root)) if v is not None}
    try:
        settings = Settings() if args.embedder is None else Settings(embedder=args.embedder)
        serve(settings, ServiceSettings(**overrides), home=args.home, log_level=args.log_level.lower())
    except HelloMemoryError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
