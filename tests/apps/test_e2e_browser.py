"""End to end: the real app (default offline configuration) driven in headless Chromium.

Needs Debian's Chromium and CJK fonts (``apt-get install -y chromium fonts-noto-cjk``) and
``pip install playwright gradio python-docx`` — never ``playwright install``. Skips with the reason
when one is missing (fails instead under ``HELLO_MEMORY_REQUIRE_SERVICES=1``). Screenshots of every
tab go to ``artifacts/screenshots/``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from hello_memory.testing.services import service_unavailable

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
# The app runs on the embedded defaults: no server, no key leaks in from the environment.
AMBIENT = ("DASHSCOPE_API_KEY", "QDRANT_URL", "QDRANT_API_KEY", "NEO4J_URI", "LLM_BASE_URL", "LLM_API_KEY",
           "LLM_MODEL", "HELLO_MEMORY_HOME", "HELLO_MEMORY_EMBEDDER")
FACT = "hello-memory 的默认向量库是 Qdrant Edge，它在进程内运行，无需启动任何服务器。"
QUESTION = "hello-memory 的默认向量库是什么？"
NOTE = "笔记：Qdrant Edge 把向量索引放在进程内，适合离线演示。"
MS = 1000


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not found: apt-get install -y chromium fonts-noto-cjk"
    fc_list = shutil.which("fc-list")
    if fc_list is None or not subprocess.run([fc_list, ":lang=zh", "family"], capture_output=True,
                                             text=True, timeout=30).stdout.strip():
        return "no Chinese font, Chinese would render as boxes: apt-get install -y fonts-noto-cjk"
    for module, pip in (("playwright", "playwright"), ("gradio", "gradio"), ("docx", "python-docx")):
        if importlib.util.find_spec(module) is None:
            return f"{module} not installed: pip install {pip} (never run `playwright install`)"
    return None


@pytest.fixture(scope="module", autouse=True)
def _requirements() -> None:
    reason = _missing()
    if reason:
        service_unavailable(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_serving(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the app exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"the app did not serve {url} within {timeout}s:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("app")
    port, log = _free_port(), tmp / "app.log"
    env = {k: v for k, v in os.environ.items() if k not in AMBIENT and not k.startswith("HELLO_MEMORY_")}
    env |= {"GRADIO_ANALYTICS_ENABLED": "False", "GRADIO_TEMP_DIR": str(tmp / "gradio"), "PYTHONUNBUFFERED": "1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "apps", "--host", "127.0.0.1", "--port", str(port),
                                 "--home", str(tmp / "data")], cwd=ROOT, env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_serving(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        print(log.read_text(errors="replace")[-2000:])


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    import docx

    folder = tmp_path_factory.mktemp("docs")
    md = folder / "learning_guide.md"
    md.write_text("# 学习指南\n\n## 记忆类型\n\n工作记忆是短期的，情景记忆记录带时间戳的事件。\n\n"
                  "## 遗忘与整合\n\n遗忘策略包括按重要性、按时间和按容量三种。\n", encoding="utf-8")
    doc = docx.Document()
    doc.add_heading("存储后端", level=1)
    doc.add_paragraph(FACT)
    doc.add_heading("嵌入模型", level=1)
    doc.add_paragraph("默认的嵌入模型是离线运行的 multilingual-e5-small。")
    path = folder / "storage_backends.docx"
    doc.save(str(path))
    bad = folder / "setup.exe"
    bad.write_bytes(b"MZ\x90\x00not a document")
    big = folder / "big_manual.md"  # long enough to be indexing for a while (hundreds of passages)
    big.write_text("# Manual\n\n" + "\n\n".join(f"Step {i}: check valve {i} and write the reading in the "
                                                "log book before moving on to the next station." for i in
                                                range(1500)), encoding="utf-8")
    small = folder / "late_note.md"
    small.write_text("# 晚到的笔记\n\n排队上传的文件也会被索引。\n", encoding="utf-8")
    return [md, path, bad, big, small]


def _row(table, text: str):
    """Grid cells of ``table`` holding ``text``: rows of the table, never the progress overlay."""
    return table.get_by_role("gridcell").filter(has_text=text)


def _field(page, elem_id: str):
    return page.locator(f"#{elem_id} :is(textarea, input)").first


def _shoot(page, name: str, *, keep_toasts: bool = False) -> None:
    if not keep_toasts:  # toasts would cover the right of the page
        for close in page.locator("button.toast-close").all():
            close.click(timeout=2 * MS)
        page.wait_for_timeout(300)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_learning_session_in_a_real_browser(app_url: str, documents: list[Path]) -> None:
    from playwright.sync_api import expect, sync_playwright

    md, docx_path, bad, big, small = documents
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900}, locale="zh-CN")
            page.goto(app_url)
            expect(page.get_by_text("智能文档问答助手").first).to_be_visible(timeout=30 * MS)
            expect(page.locator("#hm-status")).to_contain_text("default_user", timeout=30 * MS)  # page-load event

            # 开始 / Start: a user of our own, two documents, one file that is not a document.
            _field(page, "hm-user").fill("e2e_学习者")
            page.locator("#hm-enter").click()
            expect(page.locator("#hm-status")).to_contain_text("e2e_学习者", timeout=20 * MS)
            page.locator("#hm-upload input[type=file]").set_input_files([str(md), str(docx_path)])
            docs = page.locator("#hm-docs")
            # Wait on the state (rows of the table), not on text: the progress overlay names the files too.
            expect(_row(docs, "storage_backends.docx")).not_to_have_count(0, timeout=180 * MS)
            expect(_row(docs, "learning_guide.md")).not_to_have_count(0, timeout=30 * MS)
            expect(page.locator("#hm-load-log")).to_contain_text("已加载 / Loaded", timeout=30 * MS)
            page.locator("#hm-upload input[type=file]").set_input_files([str(bad)])
            expect(page.get_by_text("不支持的文件类型").first).to_be_visible(timeout=20 * MS)
            _shoot(page, "1_start", keep_toasts=True)

            # A large file shows per-passage progress; a file dropped meanwhile queues, with a message.
            page.locator("#hm-upload input[type=file]").set_input_files([str(big)])
            expect(page.locator("#hm-load-log")).to_contain_text("段 / passages", timeout=120 * MS)
            page.locator("#hm-upload input[type=file]").set_input_files([str(big), str(small)])
            expect(page.get_by_text("已排队").first).to_be_visible(timeout=30 * MS)
            _shoot(page, "1b_queued", keep_toasts=True)
            expect(_row(docs, big.name)).not_to_have_count(0, timeout=240 * MS)
            expect(_row(docs, small.name)).not_to_have_count(0, timeout=120 * MS)

            # 问答 / Ask: an empty question is an error line, a real one is answered with its source.
            page.get_by_role("tab", name="问答 / Ask").click()
            chat = page.locator("#hm-chat")
            page.locator("#hm-ask").click()
            expect(chat).to_contain_text("请输入问题", timeout=20 * MS)
            _field(page, "hm-question").fill(QUESTION)
            page.locator("#hm-ask").click()
            expect(chat).to_contain_text("Qdrant Edge", timeout=60 * MS)
            expect(chat).to_contain_text("storage_backends.docx")
            expect(chat).to_contain_text("存储后端")
            expect(page.locator("#hm-advanced input")).to_be_disabled()
            first = chat.locator("details.hm-cite").first
            first.locator("summary").click()
            expect(first).to_contain_text("无需启动任何服务器")
            _shoot(page, "2_ask")

            # 笔记 / Notes
            page.get_by_role("tab", name="笔记 / Notes").click()
            _field(page, "hm-note").fill(NOTE)
            page.locator("#hm-note-save").click()
            expect(page.locator("#hm-notes")).to_contain_text("适合离线演示", timeout=20 * MS)
            _shoot(page, "3_notes")

            # 记忆 / Memory: the note, the loaded documents and the Q&A event are all there.
            page.get_by_role("tab", name="记忆 / Memory").click()
            memories = page.locator("#hm-memories")
            expect(memories).to_contain_text("适合离线演示", timeout=20 * MS)
            expect(memories).to_contain_text("加载了文档")
            _field(page, "hm-mem-query").fill("Qdrant Edge 进程内")
            page.locator("#hm-mem-search").click()
            expect(memories).to_contain_text("适合离线演示", timeout=20 * MS)
            # Clicking a row fills the id and importance. The visible cell: Gradio also renders hidden
            # copies of a table's cells (to size its columns).
            memories.get_by_text("适合离线演示").filter(visible=True).first.click()
            expect(_field(page, "hm-mem-id")).to_have_value(re.compile(r"^[0-9a-f-]{36}$"), timeout=10 * MS)
            page.locator("#hm-mem-update").click()
            expect(page.locator("#hm-mem-report")).to_contain_text("importance set to 0.80", timeout=20 * MS)
            _shoot(page, "4_memory")

            # 统计 / Stats and the learning report.
            page.get_by_role("tab", name="统计 / Stats").click()
            stats = page.locator("#hm-stats")
            expect(stats.locator('[data-stat="documents"]')).to_have_text("4", timeout=20 * MS)
            expect(stats.locator('[data-stat="questions"]')).to_have_text("1")
            expect(stats.locator('[data-stat="notes"]')).to_have_text("1")
            page.locator("#hm-report").click()
            files = page.locator("#hm-report-files")
            expect(files).to_contain_text(".json", timeout=20 * MS)
            expect(files).to_contain_text(".md")
            _shoot(page, "5_stats")

            # The Ask tab's tip, in both languages: a recall question lists the learning record.
            page.get_by_role("tab", name="问答 / Ask").click()
            for n, tip in enumerate(("我之前学过什么？", "What did I learn before?"), start=1):
                _field(page, "hm-question").fill(tip)
                page.locator("#hm-ask").click()
                recalled = chat.get_by_text(re.compile("From your learning memory"))
                expect(recalled).to_have_count(n, timeout=60 * MS)  # this tip's answer, not "no records"
                expect(chat).to_contain_text("适合离线演示")
                expect(chat).to_contain_text("加载了文档")
            _shoot(page, "6_recall")
        finally:
            browser.close()
