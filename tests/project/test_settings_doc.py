"""docs/settings.md is what the settings classes say (regenerate with ``python docs/settings_doc.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_settings_page_matches_the_classes() -> None:
    spec = importlib.util.spec_from_file_location("settings_doc", ROOT / "docs" / "settings_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert page == module.render(), "docs/settings.md is stale: run python docs/settings_doc.py"
    from apps.service.settings import ServiceSettings
    from hello_memory.settings import Settings

    for cls in (Settings, ServiceSettings):
        prefix = cls.model_config.get("env_prefix", "")
        for name in cls.model_fields:
            assert f"{prefix}{name}".upper() in page or name in ("api_keys",), name
