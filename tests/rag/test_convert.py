"""Document conversion: every supported format built in tmp_path, and every refusal."""

from __future__ import annotations

import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from hello_memory.errors import ConversionError
from rag.chunking import chunk_markdown
from rag.convert import ConvertedDocument, convert, recover_headings

CHINESE = "检索增强生成结合了信息检索与文本生成。"


def need(module: str) -> None:
    pytest.importorskip(module, reason=f"{module} is needed to build or read this fixture")


def refused(path: Path, *words: str, **kwargs: int) -> ConversionError:
    with pytest.raises(ConversionError) as info:
        convert(path, **kwargs)
    message = str(info.value).lower()
    assert all(w.lower() in message for w in words), message
    assert info.value.path == str(path)
    return info.value


# ---- fixtures built in tmp_path -------------------------------------------------------------


def make_docx(path: Path) -> Path:
    need("docx")
    import docx

    doc = docx.Document()
    doc.add_heading("Retrieval Notes", 1)
    doc.add_paragraph("English body text.")
    doc.add_heading("中文部分", 2)
    doc.add_paragraph(CHINESE)
    doc.save(str(path))
    return path


def make_xlsx(path: Path) -> Path:
    need("openpyxl")
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sales"
    ws.append(["fruit", "qty"])
    ws.append(["apple", 3])
    wb.save(str(path))
    return path


def make_pptx(path: Path) -> Path:
    need("pptx")
    import pptx

    deck = pptx.Presentation()
    for title, body in [("Quarterly Review", "Revenue grew"), ("Next Steps", "Hire more")]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    deck.save(str(path))
    return path


def make_pdf(path: Path, lines: list[list[str]], *, font: str = "Helvetica", **canvas_kwargs: object) -> Path:
    need("reportlab")
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), **canvas_kwargs)
    c.setTitle("Sample Paper")
    for page in lines:
        c.setFont(font, 12)
        for i, line in enumerate(page):
            c.drawString(72, 800 - 20 * i, line)
        c.showPage()
    c.save()
    return path


def cjk_font() -> str | None:
    """ReportLab's built-in Adobe CID font (no font file needed), when it can be registered."""
    try:
        from reportlab.pdfbase import pdfmetrics
        from reportlab.pdfbase.cidfonts import UnicodeCIDFont

        pdfmetrics.registerFont(UnicodeCIDFont("STSong-Light"))
    except Exception:
        return None
    return "STSong-Light"


PAPER = [["1 Introduction", "We study retrieval.", "1.1 Background", "Prior work exists."],
         ["2 Methods", "We chunk documents.", "2.3.4 Details", "Fine print here."]]


@pytest.fixture(scope="module")
def zip_bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A docx-named zip whose document.xml inflates to 600 MiB of zeros (about 0.6 MB on disk)."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.docx"
    block = bytes(1 << 20)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w", force_zip64=True) as member:
            for _ in range(600):
                member.write(block)
    return path


# ---- formats --------------------------------------------------------------------------------


def test_docx_headings_and_chinese(tmp_path: Path) -> None:
    need("markitdown")
    doc = convert(make_docx(tmp_path / "notes.docx"))
    assert isinstance(doc, ConvertedDocument) and doc.format == "docx"
    assert "# Retrieval Notes" in doc.markdown and "## 中文部分" in doc.markdown
    assert CHINESE in doc.markdown and doc.title == "Retrieval Notes"
    assert chunk_markdown(doc.markdown)[-1].heading_path == "Retrieval Notes > 中文部分"


def test_xlsx_becomes_a_table(tmp_path: Path) -> None:
    need("markitdown")
    doc = convert(make_xlsx(tmp_path / "sales.xlsx"))
    assert doc.format == "xlsx" and "## Sales" in doc.markdown and "| apple | 3 |" in doc.markdown


def test_pptx_slides_and_page_count(tmp_path: Path) -> None:
    need("markitdown")
    doc = convert(make_pptx(tmp_path / "deck.pptx"))
    assert doc.format == "pptx" and doc.pages == 2
    assert "# Quarterly Review" in doc.markdown and "Hire more" in doc.markdown


def test_pdf_recovers_numbered_headings_and_pages(tmp_path: Path) -> None:
    need("markitdown")
    doc = convert(make_pdf(tmp_path / "paper.pdf", PAPER))
    assert doc.format == "pdf" and doc.pages == 2 and doc.title == "Sample Paper"
    for heading in ["# 1 Introduction", "## 1.1 Background", "# 2 Methods", "### 2.3.4 Details"]:
        assert f"\n{heading}\n" in f"\n{doc.markdown}\n"
    assert "\f" not in doc.markdown
    paths = [c.heading_path for c in chunk_markdown(doc.markdown, chunk_tokens=8, overlap_tokens=2)]
    assert "2 Methods > 2.3.4 Details" in paths


def test_pdf_with_chinese_headings(tmp_path: Path) -> None:
    need("markitdown")
    need("reportlab")
    font = cjk_font()
    if font is None:
        pytest.skip("no CJK font for reportlab; Chinese headings are covered by recover_headings tests")
    pages = [["第二章 方法", "我们使用了新的方法。", "2.1 数据集", "数据来自公开来源。"]]
    doc = convert(make_pdf(tmp_path / "zh.pdf", pages, font=font))
    assert "# 第二章 方法" in doc.markdown and "## 2.1 数据集" in doc.markdown


def test_html_csv(tmp_path: Path) -> None:
    need("markitdown")
    html = tmp_path / "page.html"
    html.write_text("<html><head><title>Page</title></head><body><h2>Part</h2><p>Hello <b>web</b></p>"
                    "<script>var x = 1;</script></body></html>", encoding="utf-8")
    doc = convert(html)
    assert (doc.format, doc.title) == ("html", "Page")
    assert "## Part" in doc.markdown and "**web**" in doc.markdown and "var x" not in doc.markdown
    csv = tmp_path / "t.csv"
    csv.write_text("name,城市\nAda,北京\n", encoding="utf-8")
    assert "| Ada | 北京 |" in convert(csv).markdown


@pytest.mark.parametrize(("name", "content", "fmt", "expected"), [
    ("data.json", '{"k": [1, 2]}', "json", '```json\n{"k": [1, 2]}\n```\n'),
    ("data.xml", "<r><a>1</a></r>\n", "xml", "```xml\n<r><a>1</a></r>\n```\n"),
    ("tool.py", 'def f():\n    return "```"\n', "code", '````python\ndef f():\n    return "```"\n````\n'),
    ("run.sh", "# comment\necho hi\n", "code", "```bash\n# comment\necho hi\n```\n"),
    ("notes.txt", "plain\r\ntext\n", "text", "plain\ntext\n"),
    ("doc.md", "\ufeff# Title\n\nBody", "markdown", "# Title\n\nBody"),
])
def test_text_formats_are_read_directly(
    tmp_path: Path, name: str, content: str, fmt: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8"))
    doc = convert(path)
    assert (doc.format, doc.markdown) == (fmt, expected)
    assert doc.title == ("Title" if fmt == "markdown" else None)


def test_code_fence_keeps_hash_lines_out_of_headings(tmp_path: Path) -> None:
    path = tmp_path / "script.py"
    path.write_text("# not a heading\nprint(1)\n", encoding="utf-8")
    assert {c.heading_path for c in chunk_markdown(convert(path).markdown)} == {""}


@pytest.mark.parametrize("encoding", ["gb18030", "utf-16", "utf-8-sig"])
def test_chinese_text_in_other_encodings_is_accepted(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "zh.txt"
    path.write_bytes(f"标题\n\n{CHINESE}".encode(encoding))
    assert convert(path).markdown == f"标题\n\n{CHINESE}"


def test_image_metadata_offline_or_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need("PIL")
    need("markitdown")
    from PIL import Image

    path = tmp_path / "pic.png"
    Image.new("RGB", (12, 7), "red").save(path)
    if shutil.which("exiftool"):
        assert convert(path).markdown == "ImageSize: 12x7"
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    refused(path, "exiftool", "cloud")
    (tmp_path / "a.wav").write_bytes(b"RIFF....WAVE")
    refused(tmp_path / "a.wav", "exiftool")


# ---- refusals -------------------------------------------------------------------------------


def test_missing_directory_device_fifo_empty_and_too_large(tmp_path: Path) -> None:
    refused(tmp_path / "nope.txt", "does not exist")
    (tmp_path / "folder.md").mkdir()
    refused(tmp_path / "folder.md", "directory")
    if Path("/dev/null").exists():
        refused(Path("/dev/null"), "not a regular file")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.txt")
        refused(tmp_path / "pipe.txt", "not a regular file")
    (tmp_path / "empty.txt").write_bytes(b"")
    refused(tmp_path / "empty.txt", "empty")
    (tmp_path / "big.txt").write_text("x" * 2000)
    refused(tmp_path / "big.txt", "over the limit", max_bytes=1000)
    (tmp_path / "blank.md").write_text(" \n\n\t")
    refused(tmp_path / "blank.md", "no text content")


@pytest.mark.parametrize("name", ["archive.rar", "photo.gif", "Makefile", "old.doc"])
def test_unsupported_extensions(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("content")
    refused(tmp_path / name, "unsupported file extension")


@pytest.mark.parametrize(("content", "why"), [
    (bytes(range(256)) * 8, "nul"),
    (b"caf\xe9 \x80\x80 \xff plain", "neither valid utf-8 nor gb18030"),
    (bytes([1, 2, 3, 4, 5, 6, 7, 8, 14, 15]) * 30 + b"tail", "control characters"),
    (b"\xff\xfe" + b"\x00\xd8" + b"A\x00", "invalid"),
])
@pytest.mark.parametrize("name", ["blob.txt", "blob.md", "blob.py", "page.html"])
def test_binary_content_under_text_extensions(tmp_path: Path, name: str, content: bytes, why: str) -> None:
    (tmp_path / name).write_bytes(content)
    refused(tmp_path / name, "binary content", why)


@pytest.mark.parametrize("fmt", ["pdf", "docx", "xlsx", "pptx"])
def test_corrupt_documents(tmp_path: Path, fmt: str) -> None:
    need("markitdown")
    good = {"pdf": lambda p: make_pdf(p, PAPER), "docx": make_docx, "xlsx": make_xlsx, "pptx": make_pptx}
    data = good[fmt](tmp_path / f"good.{fmt}").read_bytes()
    rng = __import__("random").Random(7)
    for label, blob in [("truncated", data[: len(data) // 2]), ("head", data[:300]),
                        ("random", bytes(rng.randrange(256) for _ in range(4000)))]:
        path = tmp_path / f"{label}.{fmt}"
        path.write_bytes(blob)
        assert "corrupt" in refused(path, fmt).reason


def test_office_zip_without_main_part_and_encrypted_container(tmp_path: Path) -> None:
    path = tmp_path / "other.docx"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("hello.txt", "hi")
    refused(path, "corrupt docx", "word/document.xml")
    (tmp_path / "old.xls").write_bytes(b"PK\x03\x04 not an OLE2 file")
    refused(tmp_path / "old.xls", "corrupt xls")
    enc = tmp_path / "locked.xlsx"
    enc.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    refused(enc, "password-protected")


def test_encrypted_pdf(tmp_path: Path) -> None:
    need("markitdown")
    refused(make_pdf(tmp_path / "locked.pdf", PAPER, encrypt="secret"), "encrypted pdf", "password")


def test_zip_bombs_are_refused_before_parsing(zip_bomb: Path, tmp_path: Path) -> None:
    assert zip_bomb.stat().st_size < 5 * 1024 * 1024
    refused(zip_bomb, "zip bomb", "600 mib")
    dense = tmp_path / "dense.xlsx"
    with zipfile.ZipFile(dense, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("xl/workbook.xml", bytes(40 << 20))
    refused(dense, "zip bomb", "compression ratio")


def test_missing_markitdown_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docx_path = make_docx(tmp_path / "x.docx")
    pdf_path = make_pdf(tmp_path / "x.pdf", PAPER)
    monkeypatch.setitem(sys.modules, "markitdown", None)
    monkeypatch.setitem(sys.modules, "pdfminer.pdfdocument", None)
    for path in (docx_path, pdf_path):
        error = refused(path, "not installed", "hello-memory[docs]")
        assert error.extra == "docs"


# ---- heading recovery -----------------------------------------------------------------------


def test_recover_headings_numbered_and_chinese() -> None:
    text = ("第一章 绪论\n本章介绍背景。\n一、研究动机\n（一）问题定义\n1.1 背景\n正文。\f"
            "2 Related Work\nSee 3 apples.\n2.1. Dense Retrieval\n第3节 实验\n")
    assert recover_headings(text).split("\n\n") == [
        "# 第一章 绪论", "本章介绍背景。", "## 一、研究动机", "### （一）问题定义", "## 1.1 背景", "正文。",
        "# 2 Related Work", "See 3 apples.", "## 2.1. Dense Retrieval", "## 第3节 实验"]


@pytest.mark.parametrize("line", [
    "1 This line is a full sentence that ends with a period.",
    "3 apples and 4 pears",
    "1.2 Introduction ........................ 7",
    "2024 Annual Report",
    "12345 Main Street",
    "0 Preface",
    "1 " + "Long " * 30,
    "一、这是一个完整的句子。",
    "第一条 为了规范管理，制定本办法。",
])
def test_recover_headings_leaves_prose_alone(line: str) -> None:
    assert recover_headings(f"before\n{line}\nafter") == f"before\n{line}\nafter"


# -- NFKC: compatibility characters of extracted text match what people type ----------------------
KANGXI = "本\u2f42档介绍\u2f83\u2f8f的ﬁle格式，共三章！"  # ⽂ (文), ⾃ (自), ⾏ (行), the fi ligature


def test_converted_text_is_nfkc_normalised_with_full_width_punctuation_kept(tmp_path):
    path = tmp_path / "radicals.txt"
    path.write_text(f"# \u2f42档\n\n{KANGXI}\n", encoding="utf-8")
    doc = convert(path)
    assert doc.markdown == "# 文档\n\n本文档介绍自行的file格式，共三章！\n" and doc.title == "文档"


def test_queries_and_documents_meet_whatever_the_compatibility_spelling(tmp_path):
    from hello_memory.embedders.hashing import HashingTfidfEmbedder
    from rag import RAGPipeline

    path = tmp_path / "radicals.txt"
    path.write_text(KANGXI, encoding="utf-8")
    with RAGPipeline(home=tmp_path / "data", namespace="kb", embedder=HashingTfidfEmbedder(4096)) as p:
        p.add_document(path)
        p.add_text("普通的文档写法。", document_id="plain")
        p.add_text("今天天气很好，适合散步。", document_id="other")
        typed = {h.document_id for h in p.search("文档", limit=5, min_score=0.05).hits}
        pasted = {h.document_id for h in p.search("\u2f42档", limit=5, min_score=0.05).hits}
    assert len(typed) == 2 and "other" not in typed and pasted == typed
