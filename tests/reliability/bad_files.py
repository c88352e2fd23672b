"""Hostile files for the RAG loader: devices, FIFOs, symlinks, corrupt Office/PDF files, zip bombs."""

from __future__ import annotations

import io
import os
import random
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

MiB = 1024 * 1024


def _docx_bytes() -> bytes:
    import docx

    buf = io.BytesIO()
    d = docx.Document()
    d.add_heading("Quarterly report", level=1)
    d.add_paragraph("Revenue grew in every region. " * 40)
    d.save(buf)
    return buf.getvalue()


def _xlsx_bytes() -> bytes:
    import openpyxl

    buf = io.BytesIO()
    wb = openpyxl.Workbook()
    for r in range(50):
        wb.active.append([f"row {r}", r, r * 1.5])
    wb.save(buf)
    return buf.getvalue()


def _pptx_bytes() -> bytes:
    import pptx

    buf = io.BytesIO()
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[1])
    slide.shapes.title.text = "Roadmap"
    prs.save(buf)
    return buf.getvalue()


def _pdf_bytes(encrypt: str | None = None) -> bytes:
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, encrypt=encrypt)
    for page in range(3):
        c.drawString(72, 720, f"Page {page}: the retention policy keeps backups for 30 days.")
        c.showPage()
    c.save()
    return buf.getvalue()


def _zip(members: dict[str, bytes], *, level: int = 9) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _ratio_bomb(main_part: str) -> bytes:
    """40 MiB of zeros deflated to ~40 KiB: a 1000:1 ratio (the real thing just goes on longer)."""
    return _zip({"[Content_Types].xml": b"<Types/>", main_part: b"\0" * (40 * MiB)})


def _members_bomb(main_part: str) -> bytes:
    members = {f"junk/{i}.xml": b"" for i in range(10_050)}
    members[main_part] = b"<x/>"
    return _zip(members, level=1)


def _lying_sizes_bomb(main_part: str) -> bytes:
    """Central directory claims 4 GiB per member while the data is tiny (a header-lying bomb)."""
    data = bytearray(_zip({"[Content_Types].xml": b"<Types/>", main_part: b"<w:document/>"}))
    pos = 0
    while (pos := data.find(b"PK\x01\x02", pos)) != -1:  # central directory entries
        struct.pack_into("<I", data, pos + 24, 0xFFFFFFF0)  # uncompressed size
        pos += 4
    return bytes(data)


def _understated_sizes_bomb(main_part: str) -> bytes:
    """Headers claim 100 bytes while the member inflates to 40 MiB (a reader must stop at the claim)."""
    data = bytearray(_zip({"[Content_Types].xml": b"<Types/>", main_part: b"\0" * (40 * MiB)}))
    for sig, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # local and central headers
        pos = 0
        while (pos := data.find(sig, pos)) != -1:
            if struct.unpack_from("<I", data, pos + offset)[0] == 40 * MiB:
                struct.pack_into("<I", data, pos + offset, 100)
            pos += 4
    return bytes(data)


def _encrypted_member(main_part: str) -> bytes:
    data = bytearray(_zip({"[Content_Types].xml": b"<Types/>", main_part: b"<x/>"}))
    pos = 0
    while (pos := data.find(b"PK\x01\x02", pos)) != -1:
        flags = struct.unpack_from("<H", data, pos + 8)[0]
        struct.pack_into("<H", data, pos + 8, flags | 0x1)  # "encrypted" bit
        pos += 4
    return bytes(data)


_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_MAIN = {"docx": "word/document.xml", "xlsx": "xl/workbook.xml", "pptx": "ppt/presentation.xml"}


def build_bad_files(root: Path) -> dict[str, Path]:
    """Create every hostile input under ``root``; returns case id -> path."""
    rng = random.Random(1234)
    noise = bytes(rng.getrandbits(8) for _ in range(4096))
    out: dict[str, Path] = {}

    def put(case: str, name: str, data: bytes) -> None:
        path = root / name
        path.write_bytes(data)
        out[case] = path

    root.mkdir(parents=True, exist_ok=True)
    put("good-md", "good.md", b"# Good\n\nA perfectly fine document.")
    put("empty-txt", "empty.txt", b"")
    put("empty-md", "empty.md", b"")
    put("whitespace-md", "blank.md", b"   \n\n\t  \r\n")
    put("binary-txt", "binary.txt", noise)
    put("nul-bytes-md", "nul.md", b"# Title\n\nsome\x00text\x00here")
    put("invalid-utf8-md", "invalid.md", b"caf\xe9 \x80\xff\x81 " * 50 + b"\xff")
    put("invalid-utf16-bom", "bom16.txt", b"\xff\xfe" + b"\x00\xd8" * 11)  # lone high surrogates
    put("control-chars-txt", "ctrl.txt", bytes(range(1, 9)) * 200 + b"abc")
    put("utf8-bom-then-binary", "bomb.md", b"\xef\xbb\xbf" + b"\xff\xfe\xfa" * 100)
    put("binary-json", "data.json", noise)
    put("binary-html", "page.html", noise)
    put("binary-csv", "table.csv", noise)
    put("binary-py", "code.py", b"\x00\x01\x02" * 300)
    put("exe-extension", "tool.exe", b"MZ" + noise)
    put("no-extension", "README", b"plain text without an extension")
    put("zip-extension", "archive.zip", _zip({"a.txt": b"hello"}))
    put("unknown-extension", "notes.xyz", b"hello")
    pdf = _pdf_bytes()
    put("random-pdf", "random.pdf", noise)
    put("header-only-pdf", "header.pdf", b"%PDF-1.7\n" + noise)
    put("truncated-pdf", "truncated.pdf", pdf[: len(pdf) // 3])
    put("encrypted-pdf", "encrypted.pdf", _pdf_bytes(encrypt="s3cret"))
    put("pdf-as-docx", "pdf.docx", pdf)
    for ext, make in (("docx", _docx_bytes), ("xlsx", _xlsx_bytes), ("pptx", _pptx_bytes)):
        good, main = make(), _MAIN[ext]
        put(f"random-{ext}", f"random.{ext}", noise)
        put(f"truncated-{ext}", f"truncated.{ext}", good[: len(good) // 2])
        put(f"empty-zip-{ext}", f"emptyzip.{ext}", _zip({}))
        put(f"no-main-part-{ext}", f"nomain.{ext}", _zip({"[Content_Types].xml": b"<Types/>"}))
        put(f"ole2-encrypted-{ext}", f"ole2.{ext}", _OLE2 + noise)
        put(f"ratio-bomb-{ext}", f"ratio.{ext}", _ratio_bomb(main))
        put(f"lying-size-bomb-{ext}", f"lying.{ext}", _lying_sizes_bomb(main))
        put(f"encrypted-member-{ext}", f"encmember.{ext}", _encrypted_member(main))
        put(f"understated-size-bomb-{ext}", f"understated.{ext}", _understated_sizes_bomb(main))
        put(f"garbage-main-part-{ext}", f"garbage.{ext}", _zip({"[Content_Types].xml": b"<Types/>",
                                                                 main: noise}))
    put("members-bomb-docx", "members.docx", _members_bomb(_MAIN["docx"]))
    put("random-xls", "random.xls", noise)
    put("ole2-junk-xls", "junk.xls", _OLE2 + noise)
    put("random-jpg", "random.jpg", noise)
    put("random-wav", "random.wav", noise)
    _special(root, out)
    return out


def _special(root: Path, out: dict[str, Path]) -> None:
    """Directories, devices, FIFOs, symlinks and a sparse oversized file."""
    (root / "adir.md").mkdir()
    out["directory"] = root / "adir.md"
    out["dev-null"] = Path("/dev/null")
    out["dev-zero"] = Path("/dev/zero")
    out["dev-urandom"] = Path("/dev/urandom")
    fifo = root / "pipe.md"
    os.mkfifo(fifo)
    out["fifo"] = fifo
    links: dict[str, tuple[str, Callable[[Path], None]]] = {
        "symlink-to-dir": ("todir.md", lambda p: p.symlink_to(root / "adir.md", target_is_directory=True)),
        "symlink-dangling": ("dangling.md", lambda p: p.symlink_to(root / "nowhere.md")),
        "symlink-to-dev-zero": ("zero.txt", lambda p: p.symlink_to("/dev/zero")),
        "symlink-to-fifo": ("tofifo.md", lambda p: p.symlink_to(fifo)),
    }
    for case, (name, make) in links.items():
        make(root / name)
        out[case] = root / name
    (root / "loop-a.md").symlink_to(root / "loop-b.md")
    (root / "loop-b.md").symlink_to(root / "loop-a.md")
    out["symlink-loop"] = root / "loop-a.md"
    out["missing"] = root / "does-not-exist.md"
    out["missing-parent"] = root / "no" / "such" / "dir.md"
    big = root / "huge.txt"
    with open(big, "wb") as f:
        f.truncate(201 * MiB)  # sparse: over the 200 MiB limit without using the disk
    out["oversized-sparse"] = big
    out["nul-in-path"] = Path(str(root / "bad") + "\x00.md")
    out["very-long-name"] = root / ("x" * 300 + ".md")
