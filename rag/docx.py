"""Word (.docx) conversion that survives a broken XML tool chain.

MarkItDown's DOCX converter first rewrites ``word/document.xml`` through BeautifulSoup's ``xml``
tree builder (equations to LaTeX, double strike-through to single) and then hands the archive to
mammoth. With lxml 6.2.0 that tree builder drops namespace prefixes (``<w:body>`` comes back as
``<body>``), so mammoth finds no body and every .docx fails ("Could not find the body element").
``pyproject.toml`` keeps lxml below 6.2 for that reason; this module makes conversion independent
of it anyway: :func:`xml_round_trip_keeps_prefixes` asks the installed BeautifulSoup + lxml once,
and when they drop prefixes the document is converted by mammoth directly, without MarkItDown's
pre-processing (equations are then left out, which a warning says), into the same HTML → Markdown
step MarkItDown uses.

``tests/rag/test_docx.py`` checks the tool chain itself, so a release that breaks it fails a test
that names the library versions rather than five tests about .docx files.

Example:
    >>> xml_round_trip_keeps_prefixes()  # doctest: +SKIP
    True
"""

from __future__ import annotations

import functools
import io
import logging
from typing import Any

from hello_memory.errors import ConversionError

logger = logging.getLogger(__name__)

__all__ = ["convert_docx_without_preprocessing", "toolchain_versions", "xml_round_trip_keeps_prefixes"]

_PROBE = '<w:document xmlns:w="urn:probe"><w:body><w:p/></w:body></w:document>'


@functools.cache
def xml_round_trip_keeps_prefixes() -> bool:
    """Whether BeautifulSoup's ``xml`` builder, on the installed lxml, keeps ``w:`` prefixes.

    Returns:
        ``True`` when a namespaced document survives a parse and a serialisation unchanged in its
        element names (what MarkItDown's DOCX pre-processing needs); ``False`` when it does not or
        BeautifulSoup/lxml cannot run at all.
    """
    try:
        from bs4 import BeautifulSoup

        return "<w:body>" in str(BeautifulSoup(_PROBE, features="xml"))
    except Exception:  # bs4 or lxml missing or broken: MarkItDown's step would fail the same way
        logger.debug("BeautifulSoup's xml builder is unavailable", exc_info=True)
        return False


def toolchain_versions() -> str:
    """``lxml X, beautifulsoup4 Y, mammoth Z, markitdown W`` as installed (for messages)."""
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for name in ("lxml", "beautifulsoup4", "mammoth", "markitdown"):
        try:
            parts.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return ", ".join(parts)


def convert_docx_without_preprocessing(data: bytes, name: str, markitdown: Any) -> str:
    """Markdown of a .docx through mammoth alone, then MarkItDown's HTML → Markdown step.

    Args:
        data: the .docx bytes (already checked to be a sound OOXML archive).
        name: the file's name, for errors.
        markitdown: the imported ``markitdown`` module (for its HTML converter).

    Returns:
        The Markdown; headings, lists, tables and underline as MarkItDown gives them, equations
        (OMML) left out.

    Raises:
        ConversionError: the document could not be read.
    """
    try:
        return _convert(data, markitdown)
    except Exception as e:  # mammoth raises whatever its parser raises on a damaged file
        reason = f"corrupt or unreadable DOCX file ({type(e).__name__}: {str(e)[:200]})"
        raise ConversionError(name, reason) from e


def _convert(data: bytes, markitdown: Any) -> str:
    import mammoth

    if _has_math(data):
        logger.warning("this .docx holds equations, which are left out: the installed %s drop XML "
                       "namespace prefixes (pip install 'lxml<6.2' restores them)", toolchain_versions())
    style_map = "\n".join(p for p in (mammoth.read_embedded_style_map(io.BytesIO(data)), "u => u") if p)
    html = mammoth.convert_to_html(io.BytesIO(data), style_map=style_map,
                                   include_embedded_style_map=False).value
    return str(markitdown.converters.HtmlConverter().convert_string(html).markdown)


def _has_math(data: bytes) -> bool:
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return any(b"oMath" in zf.read(n) for n in zf.namelist() if n.startswith("word/") and n.endswith(".xml"))
