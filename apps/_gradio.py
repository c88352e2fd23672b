"""Import Gradio with its usage analytics off (it must be set before the first import)."""

from __future__ import annotations

import os

from hello_memory.errors import MissingDependencyError

# Gradio reads this at import; analytics would phone home from a local, possibly offline, demo.
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

try:
    import gradio as gr
except ImportError as e:  # pragma: no cover - exercised by a bare install
    raise MissingDependencyError("gradio", "demo") from e

__all__ = ["gr"]
