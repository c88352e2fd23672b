"""The wheel's packages are the five packages: never a data directory that sits in the checkout.

Before, ``include = ["hello_memory*", ...]`` also matched ``hello_memory_data`` (the default data
directory, created wherever the app or the CLI runs) and packaged it with its sub-folders.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import setuptools

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+ (tomllib)")

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hello_memory", "rag", "tools", "apps", "benchmarks")


def _found(where: Path) -> set[str]:
    """The packages setuptools finds under ``where`` with the project's own configuration."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    find = config["tool"]["setuptools"]["packages"]["find"]
    finder = setuptools.find_namespace_packages if find.get("namespaces", True) else setuptools.find_packages
    return set(finder(where=str(where), include=find.get("include", ["*"]), exclude=find.get("exclude", [])))


def test_data_directories_are_not_packaged(tmp_path):
    for package in PACKAGES:
        (tmp_path / package / "sub").mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("", encoding="utf-8")
        (tmp_path / package / "sub" / "__init__.py").write_text("", encoding="utf-8")
    for data in ("hello_memory_data/vectors/rag_passages", "apps/hello_memory_data/vectors", "rag_data_x"):
        (tmp_path / data).mkdir(parents=True)
    found = _found(tmp_path)
    assert found == {*PACKAGES, *(f"{p}.sub" for p in PACKAGES)}, sorted(found)


def test_the_checkout_packages_every_module_folder():
    found = _found(ROOT)
    assert set(PACKAGES) <= found and "hello_memory.stores" in found and "apps" in found
    assert not {p for p in found if p.split(".")[0] not in PACKAGES}, sorted(found)


@pytest.mark.parametrize("path", [".venv/bin/python", "venv/lib/site.py", "hello_memory_data/records.db"])
def test_local_environments_and_data_are_ignored_by_git(path):
    """Before (issue 27 §5) a ``python -m venv .venv`` in the checkout showed up as untracked files."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT, capture_output=True)
    assert out.returncode == 0, f"{path} is not ignored by .gitignore"
