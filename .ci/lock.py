"""Write ``constraints.txt``: the installed version of every package ``hello-memory[dev]`` needs.

Run it after a green ``.ci/run`` (``python .ci/lock.py``): the file is then the set of versions the
README's test command last passed with, and ``pip install -e '.[demo]' -c constraints.txt``
reproduces that install when a new upstream release breaks the unpinned one.
``python .ci/lock.py --diff`` prints the installed packages whose version differs from the file
(what a failing run installed that the last green one did not).
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

LOCK = Path(__file__).resolve().parent.parent / "constraints.txt"


def closure(root: str, extras: set[str]) -> dict[str, str]:
    """Installed name -> version of ``root[extras]`` and everything it requires, recursively."""
    seen: dict[str, str] = {}
    todo = [(root, frozenset(extras))]
    visited: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, wanted = todo.pop()
        if (canonicalize_name(name), wanted) in visited:
            continue
        visited.add((canonicalize_name(name), wanted))
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        # a local label (torch's "+cpu") is not on PyPI; "==2.13.0" still matches the local build
        seen[canonicalize_name(dist.metadata["Name"])] = dist.version.split("+")[0]
        for line in dist.requires or []:
            req = Requirement(line)
            envs = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, frozenset(req.extras)))
    return seen


def main() -> int:
    pins = closure("hello-memory", {"dev"})
    pins.pop("hello-memory", None)
    if "--diff" in sys.argv:
        locked = dict(line.split("==") for line in LOCK.read_text().split("\n") if "==" in line)
        changed = [f"{n} {locked.get(n, '(new)')} -> {v}" for n, v in sorted(pins.items()) if locked.get(n) != v]
        print("installed versions that differ from constraints.txt:", ", ".join(changed) or "none")
        return 0
    header = ("# Versions the README's test command last passed with (python .ci/lock.py after a green\n"
              "# .ci/run; Python 3.11, Linux x86_64). Reproduce that install:\n"
              "#   pip install -e '.[demo]' -c constraints.txt\n")
    LOCK.write_text(header + "".join(f"{n}=={v}\n" for n, v in sorted(pins.items())))
    print(f"wrote {len(pins)} pins to {LOCK}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
