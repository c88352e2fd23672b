"""Import Gradio with its usage analytics off (it must be set before the first import)."""

from __future__ import annotations

import os

# Gradio reads this at import; analytics would phone home from a local, possibly offline, demo.
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

import gradio as gr

__all__ = ["gr"]
