"""Pathological documents cost memory and time bounded like ordinary text (real e5 embedder).

Each input is indexed in a fresh subprocess that reports its peak RSS (``VmHWM``). Before the
bounds (RELIABILITY.md, "Correctness pass"): a 300,000-character single word peaked at 2.0 GB, a
2 MB one-line file at 2.0 GB with 0 of 92 passages embedded after 300 s, a DOCX of one long run
at 2.1 GB. Ordinary text of 300,000 characters peaks at about 0.5 GB.
"""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEAK_MB = 800  # generous: ordinary text of the same size peaks at ~500 MB
WORKER = r"""
import json, sys, time
from hello_memory import Settings
from rag import RAGPipeline
kind, home, path = sys.argv[1:4]
with RAGPipeline(Settings(home=home, embedder="e5"), namespace="x") as p:
    started = time.perf_counter()
    report = p.add_text("a" * 300_000, document_id="word") if kind == "word" else p.add_document(path)
    seconds = time.perf_counter() - started
    passages = p.bundle.vectors.count("rag_passages")
    found = len(p.search("aaaa" if kind == "word" else "QUJD", limit=3).hits)
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork and exec, so a child of a 2 GB pytest
# process would report 2 GB whatever it did; VmHWM is this process image's own peak.
with open("/proc/self/status") as fh:
    peak = next(int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM:")) / 1024
print(json.dumps({"chunks": report.chunks, "passages": passages, "found": found,
                  "seconds": round(seconds, 1), "peak_mb": round(peak)}))
"""


def _index(kind: str, tmp_path: Path, path: Path | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    out = subprocess.run([sys.executable, "-c", WORKER, kind, str(tmp_path / "data"), str(path or "")],
                         capture_output=True, text=True, timeout=280, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    print(kind, figures)  # the figures RELIABILITY.md quotes (pytest -s)
    return figures


def _blob(size: int) -> str:
    return base64.b64encode(random.Random(0).randbytes(size * 3 // 4)).decode()


def test_a_300000_character_word(tmp_path):
    f = _index("word", tmp_path)
    assert f["peak_mb"] < PEAK_MB
    assert f["passages"] >= f["chunks"] >= 10 and f["found"] >= 1


def test_a_2_mb_one_line_file(tmp_path):
    path = tmp_path / "blob.txt"
    path.write_text(_blob(2_000_000), encoding="ascii")
    f = _index("file", tmp_path, path)
    assert f["peak_mb"] < PEAK_MB
    assert f["passages"] >= f["chunks"] >= 80  # every chunk embedded


def test_a_docx_of_one_long_run(tmp_path):
    docx = pytest.importorskip("docx", reason="python-docx writes the DOCX: pip install python-docx")
    pytest.importorskip("markitdown", reason="DOCX conversion needs: pip install 'hello-memory[docs]'")
    doc = docx.Document()
    doc.add_paragraph(_blob(2_000_000))
    path = tmp_path / "blob.docx"
    doc.save(str(path))
    f = _index("file", tmp_path, path)
    assert f["peak_mb"] < PEAK_MB
    assert f["passages"] >= f["chunks"] >= 80
