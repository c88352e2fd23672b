""".docx conversion and the XML tool chain it rests on (lxml + BeautifulSoup + mammoth + MarkItDown)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rag import docx as docx_module
from rag.convert import convert

CHINESE = "检索增强生成结合了信息检索与文本生成。"
OMML = "http://schemas.openxmlformats.org/officeDocument/2006/math"


def make_docx(path: Path, *, equation: bool = False) -> Path:
    pytest.importorskip("docx", reason="python-docx builds the fixture")
    pytest.importorskip("markitdown", reason="MarkItDown converts .docx")
    import docx
    from docx.oxml import parse_xml

    doc = docx.Document()
    doc.add_heading("Retrieval Notes", 1)
    doc.add_paragraph("English body text.")
    doc.add_heading("中文部分", 2)
    para = doc.add_paragraph(CHINESE)
    if equation:  # x² as Office Math, the markup MarkItDown's pre-processing turns into LaTeX
        para._p.append(parse_xml(
            f'<m:oMath xmlns:m="{OMML}"><m:sSup><m:e><m:r><m:t>x</m:t></m:r></m:e>'
            "<m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath>"))
    doc.save(str(path))
    return path


def test_the_installed_xml_tool_chain_keeps_namespace_prefixes() -> None:
    """The canary: a release of lxml or BeautifulSoup that drops prefixes fails here, by name."""
    pytest.importorskip("bs4", reason="BeautifulSoup comes with MarkItDown's docx extra")
    docx_module.xml_round_trip_keeps_prefixes.cache_clear()
    assert docx_module.xml_round_trip_keeps_prefixes(), (
        f"BeautifulSoup's xml builder drops namespace prefixes with {docx_module.toolchain_versions()}: "
        "MarkItDown's DOCX pre-processing breaks; bound the release in pyproject.toml (see the lxml comment)")


@pytest.mark.parametrize("keeps_prefixes", [True, False], ids=["markitdown", "without-preprocessing"])
def test_docx_converts_on_either_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      keeps_prefixes: bool) -> None:
    path = make_docx(tmp_path / "notes.docx")
    if keeps_prefixes and not docx_module.xml_round_trip_keeps_prefixes():
        pytest.skip("the installed tool chain drops prefixes (the canary above fails)")
    monkeypatch.setattr("rag.convert.xml_round_trip_keeps_prefixes", lambda: keeps_prefixes)
    doc = convert(path)
    assert "# Retrieval Notes" in doc.markdown and "## 中文部分" in doc.markdown
    assert CHINESE in doc.markdown and doc.title == "Retrieval Notes"


def test_equations_become_latex_when_the_tool_chain_allows(tmp_path: Path) -> None:
    if not docx_module.xml_round_trip_keeps_prefixes():
        pytest.skip("the installed tool chain drops prefixes (the canary above fails)")
    assert "$x^{2}$" in convert(make_docx(tmp_path / "math.docx", equation=True)).markdown


def test_without_preprocessing_equations_are_left_out_and_a_warning_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    path = make_docx(tmp_path / "math.docx", equation=True)
    monkeypatch.setattr("rag.convert.xml_round_trip_keeps_prefixes", lambda: False)
    with caplog.at_level(logging.WARNING, logger="rag.docx"):
        doc = convert(path)
    assert CHINESE in doc.markdown
    assert any("equations" in r.getMessage() and "lxml" in r.getMessage() for r in caplog.records)


def test_a_damaged_document_part_is_a_conversion_error_on_the_fallback_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zipfile

    from hello_memory.errors import ConversionError

    good = make_docx(tmp_path / "good.docx")
    bad = tmp_path / "bad.docx"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            body = b"<not xml" if item.filename == "word/document.xml" else src.read(item)
            dst.writestr(item, body)
    monkeypatch.setattr("rag.convert.xml_round_trip_keeps_prefixes", lambda: False)
    with pytest.raises(ConversionError, match="corrupt or unreadable DOCX"):
        convert(bad)
