"""The product's benchmark adapters fail, never skip, when the product does not import.

Before, ``test_hello_memory_adapter_round_trips_doc_ids`` and ``test_rag_pipeline_adapter_...``
caught the adapters' ``SystemUnavailableError`` (raised on any ``ImportError`` of the product) and
skipped: a broken ``rag`` or ``hello_memory.manager`` import passed the suite. Peers (mem0,
hello-agents) are optional and still skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BROKEN = "import sys, pytest; sys.modules[{module!r}] = None; sys.exit(pytest.main({args!r}))"


@pytest.mark.parametrize(("module", "test"), [
    ("hello_memory.manager", "test_hello_memory_adapter_round_trips_doc_ids"),
    ("rag", "test_rag_pipeline_adapter_returns_judgeable_spans"),
])
def test_a_broken_product_import_fails_the_adapter_test(module, test):
    args = ["-q", "-p", "no:cacheprovider", f"tests/benchmarks/test_retrieval_harness.py::{test}"]
    proc = subprocess.run([sys.executable, "-c", BROKEN.format(module=module, args=args)], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    summary = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 1 and "failed" in summary and "skipped" not in summary, proc.stdout[-2000:]
