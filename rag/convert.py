"""Convert a document file to Markdown, refusing anything that is not plainly a document.

Office files, PDF, HTML and CSV go through Microsoft MarkItDown (extra ``docs``). Its converters
are called one format at a time rather than through ``MarkItDown.convert``, whose fallback chain
can read a corrupt file's bytes as text and whose audio converter uploads speech to a cloud
service. Plain text, Markdown and source code are read directly (UTF-8 with or without BOM,
UTF-16/32 with BOM, else GB18030); code, JSON and XML are wrapped in a fenced code block. Images
and audio yield their metadata through exiftool, offline; OCR, captions and transcription would
need a cloud service and are never called.

The text is NFKC-normalised (full-width punctuation kept, see
:func:`hello_memory.language.text.normalize_text`): PDF text often spells 文 as the Kangxi radical U+2F42.

Every failure is a :class:`~hello_memory.errors.ConversionError` naming the reason, and the extra
to install when a dependency is missing.

Example:
    >>> doc = convert("report.pdf")  # doctest: +SKIP
    >>> doc.format, doc.pages, doc.markdown.splitlines()[0]  # doctest: +SKIP
    ('pdf', 12, '# 1 Introduction')
"""

from __future__ import annotations

import codecs
import io
import logging
import os
import re
import shutil
import stat
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from hello_memory._lazy import require
from hello_memory.errors import ConversionError, MissingDependencyError
from hello_memory.language.text import normalize_text
from rag.docx import convert_docx_without_preprocessing, xml_round_trip_keeps_prefixes
from rag.markdown import parse_blocks, recover_headings

__all__ = ["SUPPORTED_EXTENSIONS", "ConvertedDocument", "convert", "recover_headings"]

logger = logging.getLogger(__name__)

_CODE = {
    "py": "python", "pyi": "python", "js": "javascript", "mjs": "javascript", "cjs": "javascript",
    "jsx": "jsx", "ts": "typescript", "tsx": "tsx", "java": "java", "go": "go", "rs": "rust",
    "c": "c", "h": "c", "cpp": "cpp", "cc": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp",
    "cs": "csharp", "rb": "ruby", "php": "php", "swift": "swift", "kt": "kotlin", "kts": "kotlin",
    "scala": "scala", "sh": "bash", "bash": "bash", "zsh": "zsh", "ps1": "powershell",
    "sql": "sql", "r": "r", "lua": "lua", "pl": "perl", "dart": "dart", "css": "css",
    "scss": "scss", "yaml": "yaml", "yml": "yaml", "toml": "toml", "ini": "ini", "cfg": "ini",
}
_FORMATS = {
    "pdf": "pdf", "docx": "docx", "pptx": "pptx", "xlsx": "xlsx", "xls": "xls",
    "html": "html", "htm": "html", "csv": "csv", "json": "json", "xml": "xml",
    "txt": "text", "text": "text", "md": "markdown", "markdown": "markdown",
    "jpg": "image", "jpeg": "image", "png": "image", "wav": "audio", "mp3": "audio", "m4a": "audio",
    **dict.fromkeys(_CODE, "code"),
}
_LANGUAGE = {**_CODE, "json": "json", "xml": "xml"}
SUPPORTED_EXTENSIONS = frozenset(_FORMATS)  # file extensions convert() reads, lower case, without the dot
_SUPPORTED = (
    "pdf, docx, pptx, xlsx, xls, html, htm, csv, json, xml, txt, md, jpg, png (metadata), "
    "wav, mp3, m4a (metadata) and source code (py, js, ts, java, go, rs, c, cpp, sh, yaml, toml, ...)"
)
_MARKITDOWN_CONVERTER = {
    "pdf": "PdfConverter", "docx": "DocxConverter", "pptx": "PptxConverter", "xlsx": "XlsxConverter",
    "xls": "XlsConverter", "html": "HtmlConverter", "csv": "CsvConverter", "image": "ImageConverter",
}
_OOXML_MAIN_PART = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml", "xlsx": "xl/workbook.xml"}
_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # legacy .doc/.xls and encrypted OOXML
_ZIP_MAX_UNCOMPRESSED = 500 * 1024 * 1024
_ZIP_MAX_RATIO = 200
_ZIP_RATIO_FLOOR = 10 * 1024 * 1024  # below this a high ratio is harmless (tiny XML parts)
_ZIP_MAX_MEMBERS = 10_000
# UTF-32 first: its little-endian byte-order mark starts with UTF-16's.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)
# C0/C1 control characters other than tab, line feed, vertical tab, form feed and carriage return.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_MAX_CONTROL_SHARE = 0.05
_AUDIO_FIELDS = ("Title", "Artist", "Author", "Band", "Album", "Genre", "Track", "DateTimeOriginal",
                 "CreateDate", "NumChannels", "SampleRate", "AvgBytesPerSec", "BitsPerSample")


@dataclass(frozen=True, slots=True)
class ConvertedDocument:
    """The Markdown text of one file.

    Attributes:
        markdown: the converted text, LF line endings, never empty.
        source_path: the path as given.
        format: ``pdf``, ``docx``, ``pptx``, ``xlsx``, ``xls``, ``html``, ``csv``, ``json``,
            ``xml``, ``text``, ``markdown``, ``code``, ``image`` or ``audio``.
        title: the document title when the file names one (PDF metadata, HTML ``<title>``),
            else its first level-1 heading, else ``None``.
        pages: pages of a PDF or slides of a PPTX; ``None`` for other formats.
    """

    markdown: str
    source_path: str
    format: str
    title: str | None
    pages: int | None


@dataclass(frozen=True, slots=True)
class _Output:
    markdown: str
    title: str | None = None
    pages: int | None = None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _fail(name: str, reason: str, extra: str | None = None) -> ConversionError:
    return ConversionError(name, reason, extra=extra)


def _check_file(path: Path, name: str, max_bytes: int) -> None:
    """Refuse what is not a non-empty regular file within ``max_bytes`` (without opening it)."""
    try:
        st = path.stat()
    except FileNotFoundError as e:
        raise _fail(name, "file does not exist") from e
    except OSError as e:
        raise _fail(name, f"cannot access the file ({e.strerror or e})") from e
    except ValueError as e:  # an embedded NUL byte, or a name the file system cannot encode
        raise _fail(name, f"invalid path ({e})") from e
    if stat.S_ISDIR(st.st_mode):
        raise _fail(name, "is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):  # opening a FIFO would block; devices never end
        raise _fail(name, "not a regular file (device, FIFO or socket)")
    if st.st_size == 0:
        raise _fail(name, "file is empty (0 bytes)")
    if st.st_size > max_bytes:
        raise _fail(name, f"file is {st.st_size} bytes, over the limit of {max_bytes} bytes")


def _read(path: Path, name: str, max_bytes: int) -> bytes:
    try:
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise _fail(name, f"cannot read the file ({e.strerror or e})") from e
    if not data:
        raise _fail(name, "file is empty (0 bytes)")
    if len(data) > max_bytes:
        raise _fail(name, f"file is over the limit of {max_bytes} bytes")
    return data


def _decode(data: bytes, name: str) -> str:
    """Text of ``data``; ``ConversionError("binary content ...")`` when it is not text."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError as e:
                raise _fail(name, f"binary content (invalid {encoding} after its byte-order mark)") from e
            break
    else:
        if b"\x00" in data:
            raise _fail(name, "binary content (NUL bytes)")
        text = _decode_without_bom(data, name)
    text = text.lstrip("\ufeff")
    controls = len(text) - len(_CONTROL.sub("", text))
    if "\x00" in text or controls > _MAX_CONTROL_SHARE * len(text):
        raise _fail(name, f"binary content ({controls} control characters in {len(text)})")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _decode_without_bom(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("gb18030")
    except UnicodeDecodeError as e:
        raise _fail(name, "binary content (neither valid UTF-8 nor GB18030 text)") from e


def _fence(code: str, language: str) -> str:
    """``code`` in a fenced block longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.strip(chr(10))}\n{fence}\n"


def _markitdown(name: str) -> ModuleType:
    try:
        return require("markitdown", "docs")
    except MissingDependencyError as e:
        raise _fail(name, "MarkItDown is not installed", extra="docs") from e


def _run_converter(fmt: str, data: bytes, name: str, ext: str, **kwargs: Any) -> Any:
    """Run MarkItDown's converter for ``fmt``; returns its ``DocumentConverterResult``."""
    mid = _markitdown(name)
    converter = getattr(mid.converters, _MARKITDOWN_CONVERTER[fmt])()
    info = mid.StreamInfo(extension=f".{ext}", charset="utf-8" if fmt in ("html", "csv") else None)
    try:
        return converter.convert(io.BytesIO(data), info, **kwargs)
    except mid.MissingDependencyException as e:
        raise _fail(name, f"MarkItDown's {fmt} support is not installed", extra="docs") from e
    except Exception as e:  # a converter raises whatever its parser raises on a damaged file
        raise _fail(name, f"corrupt or unreadable {fmt.upper()} file ({_describe(e)})") from e


def _tidy(markdown: str) -> str:
    """The normalisation ``MarkItDown.convert`` applies: no trailing blanks, at most one blank line."""
    lines = [line.rstrip() for line in markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


def _check_ooxml(data: bytes, name: str, fmt: str) -> None:
    """Refuse encrypted, corrupt and zip-bomb Office files before any parser inflates them."""
    label = fmt.upper()
    if data.startswith(_OLE2_MAGIC):
        raise _fail(name, f"password-protected or legacy binary Office file, not a {label} (zip) file")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as e:
        raise _fail(name, f"corrupt or truncated {label} (not a valid zip archive)") from e
    total = sum(i.file_size for i in infos)
    packed = max(1, sum(i.compress_size for i in infos))
    if len(infos) > _ZIP_MAX_MEMBERS:
        raise _fail(name, f"possible zip bomb: {len(infos)} archive members")
    if total > _ZIP_MAX_UNCOMPRESSED:
        raise _fail(name, f"possible zip bomb: {total // 2**20} MiB uncompressed (limit 500 MiB)")
    if total > _ZIP_RATIO_FLOOR and total > _ZIP_MAX_RATIO * packed:
        raise _fail(name, f"possible zip bomb: compression ratio {total // packed}:1 (limit 200:1)")
    if any(i.flag_bits & 0x1 for i in infos):
        raise _fail(name, f"encrypted {label} archive members")
    if _OOXML_MAIN_PART[fmt] not in {i.filename for i in infos}:
        raise _fail(name, f"corrupt {label}: no {_OOXML_MAIN_PART[fmt]} in the archive")


def _pdf_info(data: bytes, name: str) -> tuple[int, str | None]:
    """Page count and metadata title; refuses encrypted and unparsable PDFs."""
    if b"%PDF-" not in data[:1024]:
        raise _fail(name, "corrupt PDF (no %PDF header)")
    try:
        pdfdocument = require("pdfminer.pdfdocument", "docs", "pdfminer.six")
        from pdfminer.pdfpage import PDFPage
        from pdfminer.pdfparser import PDFParser
    except (MissingDependencyError, ImportError) as e:
        raise _fail(name, "pdfminer.six (MarkItDown's PDF support) is not installed", extra="docs") from e
    try:
        doc = pdfdocument.PDFDocument(PDFParser(io.BytesIO(data)))  # tries the empty password
        pages = sum(1 for _ in PDFPage.create_pages(doc))
    except pdfdocument.PDFEncryptionError as e:
        raise _fail(name, f"encrypted PDF: a password is required ({type(e).__name__})") from e
    except Exception as e:  # pdfminer raises assorted syntax, type and EOF errors on damaged files
        raise _fail(name, f"corrupt PDF ({_describe(e)})") from e
    if pages == 0:
        raise _fail(name, "corrupt PDF (no pages)")
    return pages, _pdf_title(doc)


def _pdf_title(doc: Any) -> str | None:
    from pdfminer.pdftypes import resolve1
    from pdfminer.utils import decode_text

    try:
        raw = resolve1(doc.info[0].get("Title")) if doc.info else None
        title = decode_text(raw) if isinstance(raw, bytes) else None
    except Exception:  # a damaged info dictionary only costs the title
        return None
    return (title or "").strip() or None


def _convert_pdf(data: bytes, name: str, ext: str) -> _Output:
    pages, title = _pdf_info(data, name)
    markdown = _tidy(recover_headings(_run_converter("pdf", data, name, ext).markdown))
    if not markdown:
        raise _fail(name, "no extractable text (a scanned PDF? OCR needs a cloud service, not enabled)")
    return _Output(markdown, title, pages)


def _convert_office(data: bytes, name: str, ext: str) -> _Output:
    fmt = _FORMATS[ext]
    if fmt == "xls":
        if not data.startswith(_OLE2_MAGIC):
            raise _fail(name, "corrupt XLS (not an OLE2 compound file)")
    else:
        _check_ooxml(data, name, fmt)
    if fmt == "docx" and not xml_round_trip_keeps_prefixes():
        markdown = _tidy(convert_docx_without_preprocessing(data, name, _markitdown(name)))
    else:
        markdown = _tidy(_run_converter(fmt, data, name, ext).markdown)
    pages = markdown.count("<!-- Slide number:") if fmt == "pptx" else None
    return _Output(markdown, None, pages)


def _convert_web(data: bytes, name: str, ext: str) -> _Output:
    text = _decode(data, name)  # refuse binary before a parser turns it into "text"
    result = _run_converter(_FORMATS[ext], text.encode("utf-8"), name, ext)
    return _Output(_tidy(result.markdown), (result.title or "").strip() or None)


def _convert_text(data: bytes, name: str, ext: str) -> _Output:
    text = _decode(data, name)
    if not text.strip():
        return _Output("")
    return _Output(_fence(text, _LANGUAGE[ext]) if ext in _LANGUAGE else text)


def _exiftool(name: str, fmt: str) -> str:
    path = shutil.which("exiftool")
    if path is None:
        raise _fail(name, f"{fmt} files need exiftool for their metadata (apt-get install "
                    "libimage-exiftool-perl); OCR, captions and transcription need a cloud service "
                    "and are not enabled")
    return path


def _convert_media(data: bytes, name: str, ext: str) -> _Output:
    fmt = _FORMATS[ext]
    tool = _exiftool(name, fmt)
    if fmt == "image":  # without an llm_client MarkItDown only reads metadata: offline
        markdown = _tidy(_run_converter("image", data, name, ext, exiftool_path=tool).markdown)
    else:
        markdown = _audio_metadata(data, name, tool)
    if not markdown:
        raise _fail(name, f"exiftool found no {fmt} metadata (corrupt or unsupported {fmt} file?)")
    return _Output(markdown)


def _audio_metadata(data: bytes, name: str, tool: str) -> str:
    _markitdown(name)
    from markitdown.converters._exiftool import exiftool_metadata  # AudioConverter would upload

    try:
        meta = exiftool_metadata(io.BytesIO(data), exiftool_path=tool)
    except Exception as e:  # exiftool missing, too old or crashing
        raise _fail(name, f"exiftool failed ({_describe(e)})") from e
    return "\n".join(f"{k}: {meta[k]}" for k in _AUDIO_FIELDS if k in meta)


_HANDLERS: dict[str, Callable[[bytes, str, str], _Output]] = {
    "pdf": _convert_pdf, "docx": _convert_office, "pptx": _convert_office, "xlsx": _convert_office,
    "xls": _convert_office, "html": _convert_web, "csv": _convert_web, "json": _convert_text,
    "xml": _convert_text, "text": _convert_text, "markdown": _convert_text, "code": _convert_text,
    "image": _convert_media, "audio": _convert_media,
}


def _first_h1(markdown: str) -> str | None:
    return next((b.title for b in parse_blocks(markdown) if b.kind == "heading" and b.level == 1), None)


def convert(path: str | Path, *, max_bytes: int = 200 * 1024 * 1024) -> ConvertedDocument:
    """Convert one file to Markdown.

    Args:
        path: the file; its extension chooses the converter.
        max_bytes: larger files are refused before they are read.

    Returns:
        The Markdown with its format, title and page count.

    Raises:
        ConversionError: the path is missing, not a regular file, empty or too large; the
            extension is not supported; the file is corrupt, encrypted, a zip bomb or binary
            content under a text extension; a dependency is missing (``extra`` names it); or
            nothing but whitespace came out.
    """
    if not isinstance(path, str | os.PathLike):
        raise _fail(repr(path), f"the path must be a str or os.PathLike, not {type(path).__name__}")
    p = Path(path)
    name = str(path)
    _check_file(p, name, max_bytes)
    ext = p.suffix.lower().lstrip(".")
    fmt = _FORMATS.get(ext)
    if fmt is None:
        raise _fail(name, f"unsupported file extension {p.suffix or '(none)'!r}; supported: {_SUPPORTED}")
    started = time.perf_counter()
    out = _HANDLERS[fmt](_read(p, name, max_bytes), name, ext)
    if not out.markdown.strip():
        raise _fail(name, "no text content after conversion")
    logger.debug("converted %s as %s: %d chars in %.3f s", name, fmt, len(out.markdown),
                 time.perf_counter() - started)
    markdown = normalize_text(out.markdown)  # PDF text: Kangxi radicals, ligatures → what people type
    title = normalize_text(out.title) if out.title else _first_h1(markdown)
    return ConvertedDocument(markdown, name, fmt, title, out.pages)
