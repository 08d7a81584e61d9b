"""Golden model of the FEC sublayer's transcoding (spec §6): 40 XGMII words ↔ ten 257-bit
blocks ↔ the 258 ten-bit message symbols of one RS(272,258) codeword.

Ref: spec §5 (XGMII words), §6 (the block format). The spec leaves the bit order, the word-type
codes and the layout of a non-data word to the project; docs/fec-transcoding.md states them
and this module is their executable form:

* Everything is LSB-first: a field of n bits placed at offset o puts its bit i at offset o + i.
* A word is one of DATA (all eight lanes data) or a control word of a
  :class:`~ethlink.rtl.wire.FecWordType`; anything else is sent as ERROR
  (:func:`classify`).
* A DATA word is its 64 bits ``data[63:0]`` (lane 0 octet first). A control word is 60 bits:
  the 4-bit type, then 56 payload bits: lanes 1…7 for START and LCW, the k data octets before
  ``/T/`` (then zeros) for TERM_k, zeros for IDLE and ERROR.
* A block of four words: if all four are DATA, bit 0 = 1 and the four words follow at 1, 65,
  129, 193. Otherwise bit 0 = 0, bit 1 + w = 1 when word w is DATA, and the words follow from
  bit 5 in order, 64 or 60 bits each, zeros to bit 256.
* Block i of a message is message bits 257i…257i+256; bits 2570…2579 are zero. Symbol s is
  message bits 10s…10s+9 (bit i of the symbol = message bit 10s + i).

This module shares no code with the gateware (``rtl/phy/fec/transcoder.py``); the two meet only
in the wire formats of ``rtl/wire.py``.
"""

from typing import NamedTuple

from ...rtl.wire import (
    PREAMBLE, PREAMBLE_OCTET, SFD, FecWordType, FrameClass, LcwType, XgmiiControl,
)
from .frame import random_frame
from .lcw import credit_update, llr_ack, make_lcw, sen, start_check

__all__ = [
    "XgmiiWord", "IDLE_WORD", "ERROR_WORD", "WORDS_PER_BLOCK", "BLOCK_BITS",
    "BLOCKS_PER_MESSAGE", "WORDS_PER_MESSAGE", "MESSAGE_SYMBOLS", "MESSAGE_BITS",
    "classify", "encode_word", "encode_block", "decode_block", "message_value", "encode_words",
    "decode_symbols", "as_received", "type_offset", "with_bits",
    "start_word", "lcw_word", "term_word", "data_words", "frame_words", "garbage_word",
    "random_lcw_word", "xgmii_stream",
]

WORDS_PER_BLOCK = 4
BLOCK_BITS = 257
BLOCKS_PER_MESSAGE = 10
WORDS_PER_MESSAGE = WORDS_PER_BLOCK * BLOCKS_PER_MESSAGE        # 40
MESSAGE_SYMBOLS = 258
SYMBOL_BITS = 10
MESSAGE_BITS = MESSAGE_SYMBOLS * SYMBOL_BITS                   # 2580, the last 10 are zero

DATA_WORD_BITS = 64
TYPE_BITS = 4
PAYLOAD_BITS = 56
CONTROL_WORD_BITS = TYPE_BITS + PAYLOAD_BITS                    # 60
HEADER_BITS = 1 + WORDS_PER_BLOCK                               # bit 0 and the four flags

_OCTET = 0xFF


class XgmiiWord(NamedTuple):
    """One XGMII word: lane i is ``data[8i+7:8i]``, control flag ``ctrl`` bit i (spec §5)."""
    data: int
    ctrl: int

    @classmethod
    def from_lanes(cls, lanes):
        """The word of eight lanes, each an ``(octet, is_control)`` pair, lane 0 first."""
        lanes = list(lanes)
        if len(lanes) != 8:
            raise ValueError(f"an XGMII word has 8 lanes, not {len(lanes)}")
        data = sum(octet << (8 * i) for i, (octet, _) in enumerate(lanes))
        ctrl = sum(int(bool(is_control)) << i for i, (_, is_control) in enumerate(lanes))
        return cls(data, ctrl)

    def lanes(self):
        """``[(octet, is_control)]`` of the eight lanes, lane 0 first."""
        return [((self.data >> (8 * i)) & _OCTET, (self.ctrl >> i) & 1) for i in range(8)]

    def __str__(self):
        return " ".join(f"{'/' if c else ' '}{o:02x}" for o, c in self.lanes())


IDLE_WORD = XgmiiWord.from_lanes([(XgmiiControl.IDLE, 1)] * 8)
ERROR_WORD = XgmiiWord.from_lanes([(XgmiiControl.ERROR, 1)] * 8)


# --- classification and the 64/60-bit word codes ------------------------------------------------

def classify(word):
    """``None`` for a DATA word, else the :class:`FecWordType` the word is sent as.

    Ref: spec §5, §6 — START is ``/S/`` in lane 0 followed by seven data octets, LCW is 0x5C in
    lane 0 followed by seven data octets, TERM_k is k data octets, ``/T/`` in lane k and
    ``/I/`` in every lane after it, IDLE is eight ``/I/``. Any other word (a control character
    in an unexpected lane, ``/T/`` followed by anything but ``/I/``, ``/E/`` anywhere, ...) is
    ERROR.
    """
    lanes = word.lanes()
    if word.ctrl == 0:
        return None
    first_control = next(i for i, (_, c) in enumerate(lanes) if c)
    head_octet = lanes[first_control][0]
    data_before = all(not c for _, c in lanes[:first_control])
    rest_idle = all(c and o == XgmiiControl.IDLE for o, c in lanes[first_control + 1:])
    rest_data = all(not c for _, c in lanes[1:])
    if first_control == 0 and rest_data:
        if head_octet == XgmiiControl.START:
            return FecWordType.START
        if head_octet == XgmiiControl.LCW:
            return FecWordType.LCW
    if data_before and rest_idle:
        if head_octet == XgmiiControl.TERMINATE:
            return FecWordType(FecWordType.TERM_0 + first_control)
        if head_octet == XgmiiControl.IDLE and first_control == 0:
            return FecWordType.IDLE
    return FecWordType.ERROR


def _is_term(word_type):
    return word_type is not None and FecWordType.TERM_0 <= word_type <= FecWordType.TERM_7


def encode_word(word):
    """``(is_data, value, bits)``: the word's code in the block, ``bits`` wide (64 or 60)."""
    word_type = classify(word)
    if word_type is None:
        return True, word.data, DATA_WORD_BITS
    if word_type in (FecWordType.START, FecWordType.LCW):
        payload = word.data >> 8                                  # lanes 1…7
    elif _is_term(word_type):
        payload = word.data & ((1 << (8 * word_type)) - 1)        # the k octets before /T/
    else:
        payload = 0
    return False, int(word_type) | (payload << TYPE_BITS), CONTROL_WORD_BITS


def _decode_control(value):
    """``(word, known)`` for the 60-bit code of a control word."""
    code, payload = value & 0xF, value >> TYPE_BITS
    octets = [(payload >> (8 * i)) & _OCTET for i in range(7)]
    if code <= FecWordType.TERM_7:
        k = code
        lanes = ([(o, 0) for o in octets[:k]] + [(XgmiiControl.TERMINATE, 1)]
                 + [(XgmiiControl.IDLE, 1)] * (7 - k))
        return XgmiiWord.from_lanes(lanes), True
    if code == FecWordType.START:
        return XgmiiWord.from_lanes([(XgmiiControl.START, 1)] + [(o, 0) for o in octets]), True
    if code == FecWordType.LCW:
        return XgmiiWord.from_lanes([(XgmiiControl.LCW, 1)] + [(o, 0) for o in octets]), True
    if code == FecWordType.IDLE:
        return IDLE_WORD, True
    return ERROR_WORD, code == FecWordType.ERROR


def as_received(word):
    """The word a receiver gives back for ``word`` sent through the FEC sublayer: the word
    itself, or ``/E/`` in every lane when it is sent as ERROR."""
    return ERROR_WORD if classify(word) == FecWordType.ERROR else word


# --- blocks and messages ------------------------------------------------------------------------

def encode_block(words):
    """The 257-bit block (an int, bit k = block bit k) of four words."""
    if len(words) != WORDS_PER_BLOCK:
        raise ValueError(f"a block is {WORDS_PER_BLOCK} words, not {len(words)}")
    codes = [encode_word(word) for word in words]
    if all(is_data for is_data, _, _ in codes):
        block, offset = 1, 1
    else:
        block = sum(int(is_data) << (1 + w) for w, (is_data, _, _) in enumerate(codes))
        offset = HEADER_BITS
    for _, value, bits in codes:
        block |= value << offset
        offset += bits
    assert offset <= BLOCK_BITS
    return block


def decode_block(block):
    """``(words, unknown)``: the four words of a 257-bit block, and how many of them became
    ``/E/`` because they could not be decoded (an unused type code, or a block whose bit 0 is
    0 with all four flags set, which has no room for four DATA words)."""
    def field(offset, bits):
        return (block >> offset) & ((1 << bits) - 1)

    if block & 1:
        return [XgmiiWord(field(1 + 64 * w, 64), 0) for w in range(WORDS_PER_BLOCK)], 0
    flags = [field(1 + w, 1) for w in range(WORDS_PER_BLOCK)]
    if all(flags):
        return [ERROR_WORD] * WORDS_PER_BLOCK, WORDS_PER_BLOCK
    words, unknown, offset = [], 0, HEADER_BITS
    for is_data in flags:
        if is_data:
            words.append(XgmiiWord(field(offset, DATA_WORD_BITS), 0))
            offset += DATA_WORD_BITS
        else:
            word, known = _decode_control(field(offset, CONTROL_WORD_BITS))
            words.append(word)
            unknown += not known
            offset += CONTROL_WORD_BITS
    return words, unknown


def message_value(words):
    """The 2580-bit message (an int, bit k = message bit k) of 40 words."""
    if len(words) != WORDS_PER_MESSAGE:
        raise ValueError(f"a message is {WORDS_PER_MESSAGE} words, not {len(words)}")
    return sum(encode_block(words[WORDS_PER_BLOCK * i:WORDS_PER_BLOCK * (i + 1)])
               << (BLOCK_BITS * i) for i in range(BLOCKS_PER_MESSAGE))


def encode_words(words):
    """The 258 message symbols (ints, symbol 0 first) of 40 XGMII words."""
    value = message_value(words)
    return [(value >> (SYMBOL_BITS * s)) & ((1 << SYMBOL_BITS) - 1)
            for s in range(MESSAGE_SYMBOLS)]


def type_offset(words, index):
    """Message bit of the type field of word ``index`` of the 40 ``words`` (a control word):
    where a test puts an unused code."""
    block = index // WORDS_PER_BLOCK
    codes = [encode_word(word) for word in words[WORDS_PER_BLOCK * block:][:WORDS_PER_BLOCK]]
    if codes[index % WORDS_PER_BLOCK][0]:
        raise ValueError(f"word {index} is a DATA word: it has no type field")
    offset = HEADER_BITS + sum(bits for _, _, bits in codes[:index % WORDS_PER_BLOCK])
    return BLOCK_BITS * block + offset


def with_bits(symbols, offset, value, bits):
    """``symbols`` with message bits ``offset``…``offset + bits - 1`` set to ``value``."""
    message = sum(s << (SYMBOL_BITS * i) for i, s in enumerate(symbols))
    mask = ((1 << bits) - 1) << offset
    message = (message & ~mask) | (value << offset)
    return [(message >> (SYMBOL_BITS * s)) & ((1 << SYMBOL_BITS) - 1)
            for s in range(len(symbols))]


def decode_symbols(symbols, uncorrectable=False):
    """``(words, unknown)``: the 40 words of 258 message symbols, and the number of words that
    became ``/E/`` as undecodable (see :func:`decode_block`). An ``uncorrectable`` codeword
    gives 40 ``/E/`` words and ``unknown`` = 0: the codeword is counted, not its words."""
    if len(symbols) != MESSAGE_SYMBOLS:
        raise ValueError(f"a message is {MESSAGE_SYMBOLS} symbols, not {len(symbols)}")
    if uncorrectable:
        return [ERROR_WORD] * WORDS_PER_MESSAGE, 0
    value = sum(s << (SYMBOL_BITS * i) for i, s in enumerate(symbols))
    words, unknown = [], 0
    for i in range(BLOCKS_PER_MESSAGE):
        block_words, block_unknown = decode_block(
            (value >> (BLOCK_BITS * i)) & ((1 << BLOCK_BITS) - 1))
        words += block_words
        unknown += block_unknown
    return words, unknown


# --- realistic XGMII word sequences (spec §5) ----------------------------------------------------

def start_word(cls=FrameClass.SEQUENCED, seq=0):
    """``/S/ P P C Q1 Q2 Q3 SFD`` for frame class ``cls`` and LLR sequence number ``seq``
    (C: CRC-8 of Q1..Q3 for class 0xE, else 0x55; spec v1.1 §5)."""
    q = PREAMBLE.pack(p0=0, p1=0, c=0, cls=cls, seq=seq, sfd=0)[3:6]
    check = start_check(q) if cls == FrameClass.SEQUENCED else PREAMBLE_OCTET
    preamble = PREAMBLE.pack(p0=PREAMBLE_OCTET, p1=PREAMBLE_OCTET, c=check,
                             cls=cls, seq=seq, sfd=SFD)
    return XgmiiWord.from_lanes([(XgmiiControl.START, 1)] + [(o, 0) for o in preamble])


def lcw_word(octets):
    """The LCW word: 0x5C in lane 0, then the seven LCW octets ``type p0…p4 crc8``."""
    if len(octets) != 7:
        raise ValueError(f"an LCW carries 7 octets, not {len(octets)}")
    return XgmiiWord.from_lanes([(XgmiiControl.LCW, 1)] + [(o, 0) for o in octets])


def term_word(octets):
    """The word that ends a frame: its last ``k`` < 8 octets, ``/T/`` in lane k, ``/I/`` after."""
    k = len(octets)
    if k > 7:
        raise ValueError(f"a terminate word carries at most 7 octets, not {k}")
    return XgmiiWord.from_lanes([(o, 0) for o in octets] + [(XgmiiControl.TERMINATE, 1)]
                                + [(XgmiiControl.IDLE, 1)] * (7 - k))


def data_words(octets):
    """All-data words of ``octets`` (a multiple of 8), lane 0 first."""
    if len(octets) % 8:
        raise ValueError(f"{len(octets)} octets do not fill whole words")
    return [XgmiiWord(int.from_bytes(bytes(octets[i:i + 8]), "little"), 0)
            for i in range(0, len(octets), 8)]


def frame_words(octets, cls=FrameClass.SEQUENCED, seq=0):
    """A frame on XGMII: the start word, the frame ``octets`` in data words, then the word
    with ``/T/`` (TERM_k, k = len(octets) mod 8)."""
    whole = len(octets) - len(octets) % 8
    return ([start_word(cls, seq)] + data_words(octets[:whole])
            + [term_word(octets[whole:])])


def random_lcw_word(rng):
    """An LCW word of a random defined type with a valid crc8."""
    kind = rng.randrange(4)
    if kind == 0:
        octets = llr_ack(rng.randrange(1 << 20))
    elif kind == 1:
        octets = credit_update(rng.randrange(8), rng.randrange(1 << 20))
    elif kind == 2:
        octets = sen(rng.randrange(1 << 12), rng.randrange(2), rng.randrange(256),
                     rng.randrange(256))
    else:
        octets = make_lcw(LcwType.PING, token=rng.randrange(1 << 40))
    return lcw_word(octets)


#: Control characters a corrupted word may carry: the defined ones and a few that are not.
_CONTROLS = [c.value for c in XgmiiControl] + [0x00, 0x9C, 0xFF]


def garbage_word(rng):
    """A word that fits no type, so it is sent as ERROR: a start or LCW marker outside lane 0,
    ``/T/`` followed by data or by a control character other than ``/I/``, ``/E/`` anywhere,
    an unknown control character, or random control flags."""
    while True:
        lanes = [(rng.randrange(256), 0) for _ in range(8)]
        kind = rng.randrange(6)
        if kind == 0:          # /S/ or LCW marker in a lane other than 0
            lanes[rng.randrange(1, 8)] = (rng.choice([XgmiiControl.START, XgmiiControl.LCW]), 1)
        elif kind == 1:        # /T/ followed by something other than /I/
            k = rng.randrange(7)
            lanes[k] = (XgmiiControl.TERMINATE, 1)
            for i in range(k + 1, 8):
                lanes[i] = (XgmiiControl.IDLE, 1)
            j = rng.randrange(k + 1, 8)
            lanes[j] = rng.choice([(rng.randrange(256), 0), (rng.choice(_CONTROLS), 1)])
        elif kind == 2:        # /E/ in one lane or in all
            if rng.randrange(2):
                lanes = [(XgmiiControl.ERROR, 1)] * 8
            else:
                lanes[rng.randrange(8)] = (XgmiiControl.ERROR, 1)
        elif kind == 3:        # an idle word with one lane changed
            lanes = [(XgmiiControl.IDLE, 1)] * 8
            lanes[rng.randrange(8)] = rng.choice([(rng.randrange(256), 0),
                                                  (rng.choice(_CONTROLS), 1)])
        elif kind == 4:        # lane 0 a control character that starts nothing
            lanes[0] = (rng.choice([0x00, 0x9C, XgmiiControl.IDLE, XgmiiControl.TERMINATE]), 1)
            lanes[rng.randrange(1, 8)] = (rng.randrange(256), rng.randrange(2))
        else:                  # random octets and control flags
            lanes = [(rng.randrange(256), rng.randrange(2)) for _ in range(8)]
        word = XgmiiWord.from_lanes(lanes)
        if classify(word) == FecWordType.ERROR:
            return word


def _frame_octets(rng, max_octets):
    """Frame octets: a legal EthLink frame with its FCS, or (to reach every length, hence
    every /T/ lane) a run of random octets."""
    if rng.randrange(2):
        octets = random_frame(rng, max_payload=max_octets).to_bytes()
        if len(octets) <= max_octets:
            return octets
    return rng.randbytes(rng.randrange(max_octets + 1))


def xgmii_stream(rng, words, lcw=0.05, garbage=0.0, max_frame_octets=96, ifg=12,
                 extra_idle=3):
    """About ``words`` XGMII words of realistic traffic, padded with idle words to a whole
    number of messages (40 words).

    Frames (a start word, the octets, /T/ in every lane position) with at least ``ifg`` octets
    from /T/ to the next /S/ and up to ``extra_idle`` more idle words; an LCW between frames
    or between any two words of a frame with probability ``lcw``; and with probability
    ``garbage`` any word replaced by one that fits no type (:func:`garbage_word`).
    """
    stream = []
    while len(stream) < words:
        body = frame_words(_frame_octets(rng, max_frame_octets),
                           rng.choice(list(FrameClass)), rng.randrange(1 << 20))
        for word in body:
            if rng.random() < lcw:
                stream.append(random_lcw_word(rng))
            stream.append(word)
        # Ref: spec §5 — at least ifg octets from /T/ (inclusive) to the next /S/.
        tail_octets = 8 - classify(body[-1])      # TERM_k has the value k
        stream += [IDLE_WORD] * (-(-(ifg - tail_octets) // 8) + rng.randrange(extra_idle + 1))
    stream += [IDLE_WORD] * (-len(stream) % WORDS_PER_MESSAGE)
    if garbage:
        stream = [garbage_word(rng) if rng.random() < garbage else word for word in stream]
    return stream
