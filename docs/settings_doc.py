"""Write docs/settings.md from the two settings classes: ``python docs/settings_doc.py``.

The table groups every setting under the comment heading it sits under in ``hello_memory/settings.py``
(library) or in the service's class, with its environment variable, default and description;
``tests/project/test_settings_doc.py`` fails when the page and the classes disagree.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FIRST = "\n".join([
    "# Settings",
    "",
    "Every setting is an environment variable (or a `Settings(...)` / `ServiceSettings(...)` argument);",
    "a bad value stops every command in one line naming the variable. **The few that matter first:**",
    "",
    "| variable | what it does | default |",
    "|---|---|---|",
    "| `HELLO_MEMORY_HOME` | the data directory (embedded stores) | `./hello_memory_data` |",
    "| `QDRANT_URL`, `NEO4J_URI` (+ `NEO4J_PASSWORD`) | server mode: the memory lives in Qdrant and Neo4j, "
    "no local state | unset (embedded) |",
    "| `LLM_BASE_URL` + `LLM_API_KEY` + `LLM_MODEL`, or `DASHSCOPE_API_KEY` | an LLM for generated "
    "answers, MQE/HyDE, extraction, summaries | unset (extractive answers) |",
    "| `HELLO_MEMORY_EMBEDDER` | `auto` (offline e5), `e5`, `sentence-transformers`, `dashscope`, "
    "`tfidf` | `auto` |",
    "| `HELLO_MEMORY_SERVER_URL` (+ `HELLO_MEMORY_API_KEY`) | use a running memory service instead of a "
    "data directory | unset |",
    "| `HELLO_MEMORY_SERVICE_HOST`, `HELLO_MEMORY_SERVICE_PORT`, `HELLO_MEMORY_SERVICE_KEYS_FILE` | where "
    "`hello-memory serve` listens and whom it admits | `127.0.0.1`, `8765`, none |",
    "",
    "Everything else, by area (generated from the settings classes by `python docs/settings_doc.py`):",
    "",
])


def _env(prefix: str, name: str, field: Any) -> str:
    alias = field.validation_alias
    names = [f"{prefix}{name}".upper()]
    if alias is not None:
        choices = getattr(alias, "choices", [alias])
        names = [str(c).upper() for c in choices]
    return ", ".join(f"`{n}`" for n in names)


def _default(field: Any) -> str:
    if field.default_factory is not None:
        return "(computed)"
    value = field.default
    if value is None or str(value) == "PydanticUndefined":
        return "unset"
    return f"`{value}`"


def _groups(source: Path, names: list[str]) -> list[tuple[str, list[str]]]:
    """Field names under each ``# heading`` comment of the class body, in source order."""
    out: list[tuple[str, list[str]]] = [("general", [])]
    for line in source.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^    # ([a-zA-Z].*)$", line)
        field = re.match(r"^    ([a-z0-9_]+):", line)
        if heading:
            out.append((re.sub(r"\s*\(.*\)$", "", heading.group(1)), []))
        elif field and field.group(1) in names:
            out[-1][1].append(field.group(1))
    return [(h, fs) for h, fs in out if fs]


def render() -> str:
    """The whole page."""
    from apps.service.settings import ServiceSettings
    from hello_memory.settings import Settings

    parts = [FIRST]
    for title, cls, source in (
        ("Library (`HELLO_MEMORY_…`)", Settings, ROOT / "hello_memory/settings.py"),
        ("Memory service (`HELLO_MEMORY_SERVICE_…`)", ServiceSettings, ROOT / "apps/service/settings.py"),
    ):
        prefix = cls.model_config.get("env_prefix", "")
        fields = cls.model_fields
        parts.append(f"\n## {title}\n")
        for heading, names in _groups(source, list(fields)):
            parts.append(f"\n### {heading}\n\n| variable | default | description |\n|---|---|---|")
            for name in names:
                f = fields[name]
                desc = (f.description or "").replace("|", "\\|")
                parts.append(f"| {_env(prefix, name, f)} | {_default(f)} | {desc} |")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    (ROOT / "docs" / "settings.md").write_text(render(), encoding="utf-8")
