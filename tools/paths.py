"""Folders a tool may read: a model's ``file_path`` is checked before the file system is touched.

A model's input is not trusted: without a check, ``file_path`` turns a tool into a reader (RAG)
or an existence-and-hash oracle (a perceptual memory's SHA-256) of any file on the machine. A
path is accepted only inside the allowed folders — the working directory when none are given —
first by its spelling (no file-system access for a path outside them), then after resolving
symlinks. A relative path is tried against the working directory, then against each allowed
folder, so ``./docs/x.txt`` (from the working directory) and ``x.txt`` (inside ``docs/``) both work.

Example:
    >>> roots = FileRoots(["/srv/docs"], cwd="/srv")
    >>> str(roots.resolve("docs/guide.md")), str(roots.resolve("guide.md"))
    ('/srv/docs/guide.md', '/srv/docs/guide.md')
    >>> roots.resolve("/etc/passwd")
    Traceback (most recent call last):
    ...
    hello_memory.errors.InvalidInputError: file_path "/etc/passwd" is outside the allowed folders (/srv/docs)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from hello_memory.errors import InvalidInputError
from tools.schema import short


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


class FileRoots:
    """The folders a tool reads from, and the check of a model's ``file_path`` against them.

    Args:
        roots: allowed folders; ``None`` means the working directory, ``[]`` no file at all.
        cwd: the working directory relative paths are read from (default: the current one).
    """

    def __init__(self, roots: Sequence[str | Path] | None, *, cwd: str | Path | None = None) -> None:
        self.cwd = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
        given = [self.cwd] if roots is None else [Path(os.path.abspath(Path(r).expanduser())) for r in roots]
        self.roots = [r.resolve() for r in given]
        self._spelled = list(dict.fromkeys([*given, *self.roots]))  # a root may itself be a symlink

    def describe(self) -> str:
        """One sentence for a tool description: where paths are read from and what is allowed."""
        if not self.roots:
            return "Reading files is disabled for this tool."
        allowed = ", ".join(str(r) for r in self.roots)
        return (f"file_path may be absolute or relative to the working directory ({self.cwd}) or to an "
                f"allowed folder; only files inside {allowed} can be read.")

    def resolve(self, file_path: str, field: str = "file_path") -> Path:
        """The real path of ``file_path`` inside the allowed folders.

        Raises:
            InvalidInputError: the path is outside every allowed folder (also through a symlink),
                or not a usable path (NUL bytes, a symlink loop). The message is the same whether
                the file exists or not.
        """
        if not self.roots:
            raise InvalidInputError(f"{field}: this tool may not read files", field=field)
        try:
            raw = Path(file_path).expanduser()
            tries = [raw] if raw.is_absolute() else [self.cwd / raw, *(root / raw for root in self.roots)]
            inside = [Path(os.path.normpath(t)) for t in tries]
            inside = [t for t in dict.fromkeys(inside) if _inside(t, self._spelled)]  # no FS access yet
            real = [r for r in (t.resolve() for t in inside) if _inside(r, self.roots)]
        except (OSError, ValueError, RuntimeError) as e:  # NUL bytes, symlink loops
            raise InvalidInputError(f"{field} {short(file_path)} is not a usable path", field=field) from e
        if not real:
            allowed = ", ".join(str(r) for r in self.roots)
            raise InvalidInputError(f"{field} {short(file_path, 200)} is outside the allowed folders "
                                    f"({allowed})", field=field)
        return next((r for r in real if r.exists()), real[0])
