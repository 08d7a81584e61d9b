"""Tests of the FEC transcoding model (sim/models/transcode.py): the worked vector of
docs/fec-transcoding.md, the word types, the block layout bit by bit, and the receive rules.

Pure pytest: no simulator.
"""

import random
import re
from pathlib import Path

import pytest

from ethlink.rtl.wire import FecWordType, XgmiiControl
from ethlink.sim.models import llr_ack
from ethlink.sim.models.transcode import (
    BLOCK_BITS, ERROR_WORD, IDLE_WORD, MESSAGE_SYMBOLS, WORDS_PER_MESSAGE, XgmiiWord,
    as_received, classify, decode_block, decode_symbols, encode_block, encode_word,
    encode_words, frame_words, garbage_word, lcw_word, start_word, term_word, type_offset,
    with_bits, xgmii_stream,
)

DOC = Path(__file__).resolve().parents[1] / "docs" / "fec-transcoding.md"


def doc_vector():
    """``(words, blocks, symbols)`` of the worked vector on the docs page."""
    text = DOC.read_text()
    words = [(int(n), XgmiiWord(int(data, 16), int(ctrl, 16)), kind) for n, data, ctrl, kind in
             re.findall(r"^ *w(\d+) +([0-9a-f]{16}) +([0-9a-f]{2}) +(\w+)$", text, re.M)]
    blocks = [(int(n), int(value.replace("_", ""), 16)) for n, value in
              re.findall(r"^ *block (\d): +0x([0-9a-f_]+)$", text, re.M)]
    symbols = []
    for first, line in re.findall(r"^ *s(\d{3}): +((?:[0-9a-f]{3} ?)+)$", text, re.M):
        assert int(first) == len(symbols), f"symbol line s{first} out of order"
        symbols += [int(s, 16) for s in line.split()]
    return words, blocks, symbols


def test_doc_vector():
    words, blocks, symbols = doc_vector()
    assert [n for n, _, _ in words] == list(range(WORDS_PER_MESSAGE))
    for n, word, kind in words:
        word_type = classify(word)
        assert (word_type.name if word_type is not None else "DATA") == kind, f"word {n}"
    words = [word for _, word, _ in words]
    assert [n for n, _ in blocks] == list(range(10))
    for n, block in blocks:
        assert encode_block(words[4 * n:4 * n + 4]) == block, f"block {n}"
    assert len(symbols) == MESSAGE_SYMBOLS
    assert encode_words(words) == symbols
    assert decode_symbols(symbols) == ([as_received(w) for w in words], 0)


# --- words ----------------------------------------------------------------------------------

def lanes(*items):
    """A word from eight lanes: an int is a data octet, a string names a control character."""
    control = {"I": XgmiiControl.IDLE, "S": XgmiiControl.START, "T": XgmiiControl.TERMINATE,
               "E": XgmiiControl.ERROR, "L": XgmiiControl.LCW}
    return XgmiiWord.from_lanes([(control[i], 1) if isinstance(i, str) else (i, 0)
                                 for i in items])


def test_word_types():
    assert classify(XgmiiWord(0x0123456789ABCDEF, 0)) is None
    assert classify(IDLE_WORD) == FecWordType.IDLE
    assert classify(start_word()) == FecWordType.START
    assert classify(lcw_word(llr_ack(0x12345))) == FecWordType.LCW
    for k in range(8):
        assert classify(term_word(bytes(range(1, k + 1)))) == FecWordType(k)
    # /E/ in every lane is ERROR as well: the receiver gives back the same word.
    assert classify(ERROR_WORD) == FecWordType.ERROR


@pytest.mark.parametrize("word", [
    lanes(1, "S", 3, 4, 5, 6, 7, 8),        # /S/ outside lane 0
    lanes(1, 2, "L", 4, 5, 6, 7, 8),        # LCW marker outside lane 0
    lanes(1, 2, "T", "I", 0x07, "I", "I", "I"),   # /T/ followed by a data octet
    lanes(1, 2, "T", "I", "E", "I", "I", "I"),    # /T/ followed by /E/
    lanes("T", "T", "I", "I", "I", "I", "I", "I"),  # two /T/
    lanes("S", 1, 2, 3, 4, 5, "E", 7),      # /E/ inside a start word
    lanes("I", "I", "I", "E", "I", "I", "I", "I"),  # /E/ among idles
    lanes("I", 1, 2, 3, 4, 5, 6, 7),        # /I/ then data
    lanes(1, 2, 3, 4, "I", "I", "I", "I"),  # data then /I/ without /T/
    lanes("L", 1, 2, 3, 4, 5, 6, "I"),      # LCW with a control octet
    XgmiiWord(0x07070707070707FD, 0x7F),    # /T/ followed by data 0x07 in lane 7
], ids=str)
def test_words_that_fit_no_type_are_error(word):
    assert classify(word) == FecWordType.ERROR
    assert encode_word(word) == (False, FecWordType.ERROR, 60)
    assert as_received(word) == ERROR_WORD


def test_control_word_fields():
    # Ref: the LLR_ACK word of docs/wire-formats.md: data 0x0A0000503412015C, ctrl 0x01.
    lcw = lcw_word(llr_ack(0x12345))
    assert lcw == XgmiiWord(0x0A0000503412015C, 0x01)
    assert encode_word(lcw) == (False, 0xA | 0x0A0000503412_01 << 4, 60)
    assert encode_word(start_word(seq=0x12345)) == (False, 0x9 | 0xD54523E1E85555 << 4, 60)
    assert encode_word(term_word(b"\x36\xd9")) == (False, 0x2 | 0xD936 << 4, 60)
    assert encode_word(term_word(b"")) == (False, 0x0, 60)
    assert encode_word(IDLE_WORD) == (False, 0x8, 60)


def test_garbage_words_are_error():
    rng = random.Random(1)
    for _ in range(2000):
        assert classify(garbage_word(rng)) == FecWordType.ERROR


# --- blocks and messages ------------------------------------------------------------------

def test_all_data_block():
    words = [XgmiiWord(0x1111111111111111 * (w + 1), 0) for w in range(4)]
    block = encode_block(words)
    assert block & 1 == 1
    for w in range(4):
        assert (block >> (1 + 64 * w)) & (2 ** 64 - 1) == words[w].data
    assert block >> BLOCK_BITS == 0


@pytest.mark.parametrize("pattern", range(15))
def test_mixed_block_layout(pattern):
    """Bit 0 = 0, the flags, then each word at 5 + its predecessors' widths, zero-padded."""
    data = [XgmiiWord(0xA5A5A5A5A5A5A5A5 ^ w, 0) for w in range(4)]
    words = [data[w] if pattern >> w & 1 else IDLE_WORD for w in range(4)]
    block = encode_block(words)
    assert block & 0x1F == pattern << 1
    offset = 5
    for w in range(4):
        width = 64 if pattern >> w & 1 else 60
        expected = data[w].data if pattern >> w & 1 else FecWordType.IDLE
        assert (block >> offset) & ((1 << width) - 1) == expected
        offset += width
    assert block >> offset == 0 and offset <= BLOCK_BITS
    assert decode_block(block) == (words, 0)


def test_message_padding_and_symbol_order():
    words = [XgmiiWord(2 ** 64 - 1, 0)] * WORDS_PER_MESSAGE
    symbols = encode_words(words)
    # All ones but the 10 padding bits: the last symbol is zero.
    assert symbols[:-1] == [0x3FF] * (MESSAGE_SYMBOLS - 1) and symbols[-1] == 0
    # Symbol bit i is message bit 10s + i: message bit 0 is block 0's bit 0.
    one_word = [XgmiiWord(1, 0)] + [XgmiiWord(0, 0)] * (WORDS_PER_MESSAGE - 1)
    assert encode_words(one_word)[:2] == [0b11, 0]


@pytest.mark.parametrize("seed", range(3))
def test_round_trip(seed):
    rng = random.Random(seed)
    words = xgmii_stream(rng, 40 * 20, lcw=0.1, garbage=0.05)
    for n in range(0, len(words), WORDS_PER_MESSAGE):
        message = words[n:n + WORDS_PER_MESSAGE]
        assert decode_symbols(encode_words(message)) == ([as_received(w) for w in message], 0)


def test_stream_is_realistic():
    rng = random.Random(4)
    words = xgmii_stream(rng, 4000)
    assert len(words) % WORDS_PER_MESSAGE == 0
    kinds = {classify(w) for w in words}
    assert kinds == set(FecWordType) - {FecWordType.ERROR} | {None}
    # Ref: spec §5 — at least 12 octets from /T/ (inclusive) to the next /S/.
    gap = None
    for word in words:
        kind = classify(word)
        if kind is not None and kind <= FecWordType.TERM_7:
            gap = 8 - kind
        elif kind == FecWordType.IDLE and gap is not None:
            gap += 8
        elif kind == FecWordType.START:
            assert gap is None or gap >= 12
            gap = None


def test_frame_words():
    words = frame_words(bytes(range(19)), seq=5)
    assert [classify(w) for w in words] == [FecWordType.START, None, None, FecWordType.TERM_3]
    assert words[-1] == lanes(16, 17, 18, "T", "I", "I", "I", "I")


# --- receive rules ------------------------------------------------------------------------

def test_unknown_type_codes_give_error():
    words = [start_word(), XgmiiWord(5, 0), IDLE_WORD, term_word(b"ab")] + \
        [IDLE_WORD] * (WORDS_PER_MESSAGE - 4)
    for code in range(0xB, 0xF):
        symbols = with_bits(encode_words(words), type_offset(words, 2), code, 4)
        got, unknown = decode_symbols(symbols)
        assert unknown == 1
        assert got == words[:2] + [ERROR_WORD] + words[3:]


def test_invalid_header_gives_four_errors():
    words = [XgmiiWord(n, 0) for n in range(WORDS_PER_MESSAGE)]
    symbols = with_bits(encode_words(words), BLOCK_BITS * 3, 0b11110, 5)
    got, unknown = decode_symbols(symbols)
    assert unknown == 4
    assert got == words[:12] + [ERROR_WORD] * 4 + words[16:]


def test_uncorrectable_gives_forty_errors():
    words = [IDLE_WORD] * WORDS_PER_MESSAGE
    assert decode_symbols(encode_words(words), uncorrectable=True) == \
        ([ERROR_WORD] * WORDS_PER_MESSAGE, 0)


def test_received_term_ignores_payload_past_k():
    """TERM_k's payload octets from k on are padding; a receiver ignores them."""
    words = [term_word(b"\x01")] + [IDLE_WORD] * (WORDS_PER_MESSAGE - 1)
    symbols = with_bits(encode_words(words), type_offset(words, 0) + 4 + 8, 0xFF, 8)
    assert decode_symbols(symbols) == (words, 0)
