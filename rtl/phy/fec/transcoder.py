"""FEC sublayer transcoding: XGMII words ↔ 257-bit blocks ↔ the 258 message symbols of an
RS(272,258) codeword.

Ref: spec §5 (XGMII words), §6 (the block format). The bit order, the word-type codes
(:class:`~ethlink.rtl.wire.FecWordType`) and the layout of a non-data word are the project's
choice, stated in docs/fec-transcoding.md:

* a DATA word (eight data lanes) is its 64 bits ``data[63:0]``; any other word is 60 bits, the
  4-bit type then 56 payload bits (lanes 1…7 for START and LCW, the k data octets before
  ``/T/`` for TERM_k, zeros for IDLE and ERROR);
* a block of four words: bit 0 = 1 and the four DATA words at bits 1, 65, 129, 193 when all
  four are DATA; else bit 0 = 0, bit 1 + w = "word w is DATA", and the words in order from
  bit 5, zeros to bit 256;
* block i of a message is message bits 257i…257i+256, bits 2570…2579 are zero, and symbol s is
  message bits 10s…10s+9 (symbol bit i = message bit 10s + i).

Every field starts at a bit ≡ 1 (mod 4) of its block (5 + 60w + 4·(DATA words before w), or
1 + 64w), so a word's place in its block is one of a few nibble offsets, and the place of a beat
in the message is fixed by its index: both are muxes on small indices, not shifters.
"""

from amaranth.hdl import Module, Signal, Cat, C, Const, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...counters import CounterBank, Counters
from ...params import parameters
from ...wire import FecWordType, XgmiiControl, XgmiiWordLayout
from .gf import K, SYMBOL_BITS
from .symbols import DecodedLayout, SymbolLayout, beats_for, SYMBOLS_PER_BEAT

__all__ = ["XgmiiToSymbols", "SymbolsToXgmii", "WordCoder", "WordDecoder"]

WORDS_PER_BLOCK = 4
BLOCK_BITS = 257
BLOCKS = 10                           # blocks (of 4 words) per message: 40 words
USED_BITS = BLOCKS * BLOCK_BITS       # 2570 of the 2580 message bits; the last 10 are zero
CODE_BITS = 64                        # a word's field: 64 bits (DATA) or 60 bits (4 + 56)
TYPE_BITS = 4

assert K * SYMBOL_BITS == USED_BITS + 10


def _beat_blocks(symbols_per_beat):
    """``[(first, last)]`` per beat of a message: the blocks whose bits the beat carries.
    A beat of padding only (P = 1: symbol 257) gets ``(BLOCKS, BLOCKS - 1)``: no block."""
    bits = SYMBOL_BITS * symbols_per_beat
    table = []
    for beat in range(beats_for(K, symbols_per_beat)):
        lo, hi = bits * beat, min(bits * (beat + 1), USED_BITS)
        table.append((BLOCKS, BLOCKS - 1) if lo >= USED_BITS
                     else (lo // BLOCK_BITS, (hi - 1) // BLOCK_BITS))
    return table


def _ring_slots(blocks_needed):
    """Block buffers of a ring: the least divisor of :data:`BLOCKS` holding ``blocks_needed``,
    so block j of every message lives in slot j mod R."""
    return next(n for n in range(1, BLOCKS + 1) if BLOCKS % n == 0 and n >= blocks_needed)


def _beat_window(slots, beat, symbols_per_beat):
    """Message bits of ``beat`` (zero past bit 2569) as slices of the ring ``slots``."""
    bits = SYMBOL_BITS * symbols_per_beat
    lo, hi = bits * beat, min(bits * (beat + 1), USED_BITS)
    pieces = []
    for block in range(lo // BLOCK_BITS, (hi - 1) // BLOCK_BITS + 1) if lo < hi else ():
        start = block * BLOCK_BITS
        pieces.append(slots[block % len(slots)][max(lo, start) - start:
                                                min(hi, start + BLOCK_BITS) - start])
    return Cat(*pieces, C(0, bits - sum(len(p) for p in pieces)))


def _mux_tree(select, values):
    """``values[select]`` as a balanced tree of 2-way muxes on the bits of ``select``."""
    def tree(items, bit):
        if len(items) == 1:
            return items[0]
        half = 1 << bit
        if len(items) <= half:
            return tree(items, bit - 1)
        return Mux(select[bit], tree(items[half:], bit - 1), tree(items[:half], bit - 1))
    return tree(list(values), max(len(values) - 1, 1).bit_length() - 1)


class WordCoder(wiring.Component):
    """Give the 64-bit block field of one XGMII word (combinational).

    Ref: spec §5, §6. DATA (``ctrl`` = 0): the word's 64 data bits. Otherwise the 4-bit
    :class:`FecWordType` and 56 payload bits: START (``/S/`` in lane 0, lanes 1…7 data) and
    LCW (0x5C in lane 0, lanes 1…7 data) carry lanes 1…7; TERM_k (k data lanes, ``/T/`` in lane
    k, ``/I/`` after it) carries its k data octets, zeros after; IDLE (eight ``/I/``) and ERROR
    (every other word) carry zeros. Bits 63:60 of a control word's field are 0.

    Members
    -------
    word : In(XgmiiWordLayout)
    code : Out(64)
        The field as it goes into the block (60 bits used by a control word).
    is_data : Out(1)
        The word is DATA (a 64-bit field).
    error : Out(1)
        The word fits no type and is sent as ERROR.
    """
    word: In(XgmiiWordLayout())
    code: Out(CODE_BITS)
    is_data: Out(1)
    error: Out(1)

    def elaborate(self, platform):
        m = Module()
        data, ctrl = self.word.data, self.word.ctrl
        octet = [data[8 * i:8 * i + 8] for i in range(8)]

        def control(lane, character):
            return ctrl[lane] & (octet[lane] == character)

        # idle_after[k]: every lane after k holds /I/.
        idle_after = [Signal(name=f"idle_after{k}") for k in range(8)]
        m.d.comb += idle_after[7].eq(1)
        for k in reversed(range(7)):
            m.d.comb += idle_after[k].eq(idle_after[k + 1] & control(k + 1, XgmiiControl.IDLE))
        # Ref: spec §5 — /T/ in any lane, after data, followed by idles to the end of the word.
        term = Signal(8)
        for k in range(8):
            m.d.comb += term[k].eq((ctrl[:k] == 0 if k else 1)
                                   & control(k, XgmiiControl.TERMINATE) & idle_after[k])
        lane0_only = ctrl == 0b0000_0001
        start = Signal()
        lcw = Signal()
        idle = Signal()
        m.d.comb += [
            start.eq(lane0_only & (octet[0] == XgmiiControl.START)),
            lcw.eq(lane0_only & (octet[0] == XgmiiControl.LCW)),
            idle.eq(control(0, XgmiiControl.IDLE) & idle_after[0]),
            self.is_data.eq(ctrl == 0),
        ]
        # TERM_k keeps data octet i when i < k; TERM_k is the code k.
        term_keep = Cat(*(term[i + 1:] != 0 for i in range(7)))
        term_code = Cat(*(Cat(*(term[k] for k in range(8) if k >> bit & 1)).any()
                          for bit in range(3)))
        term_octets = Cat(*(Mux(term_keep[i], octet[i], 0) for i in range(7)))

        with m.If(self.is_data):
            m.d.comb += self.code.eq(data)
        with m.Elif(start | lcw):
            m.d.comb += self.code.eq(Cat(Mux(start, C(FecWordType.START, TYPE_BITS),
                                             C(FecWordType.LCW, TYPE_BITS)), data[8:]))
        with m.Elif(term.any()):
            m.d.comb += self.code.eq(Cat(term_code, C(0, 1), term_octets))
        with m.Elif(idle):
            m.d.comb += self.code.eq(FecWordType.IDLE)
        with m.Else():
            # Ref: spec §6 — a word that fits no type (and /E/ anywhere) is sent as ERROR.
            m.d.comb += [self.code.eq(FecWordType.ERROR), self.error.eq(1)]
        return m


class WordDecoder(wiring.Component):
    """Turn a 64-bit block field back into its XGMII word (combinational).

    Ref: spec §5, §6. DATA: the 64 bits with ``ctrl`` = 0. A control field by its type: IDLE →
    eight ``/I/``; ERROR → eight ``/E/``; START → ``/S/`` and the seven payload octets; LCW →
    0x5C (control) and the seven payload octets; TERM_k → the first k payload octets, ``/T/``,
    ``/I/`` to the end. An unused type code gives eight ``/E/`` and raises ``unknown``; so does
    ``error`` (uncorrectable codeword, invalid block header), without ``unknown``.

    Members
    -------
    code : In(64)
    is_data : In(1)
    error : In(1)
        Give eight ``/E/`` whatever the field says.
    word : Out(XgmiiWordLayout)
    unknown : Out(1)
        The field's type code is unused (and ``error`` is low).
    """
    code: In(CODE_BITS)
    is_data: In(1)
    error: In(1)
    word: Out(XgmiiWordLayout())
    unknown: Out(1)

    def elaborate(self, platform):
        m = Module()
        code = self.code[:TYPE_BITS]
        payload = [self.code[TYPE_BITS + 8 * i:TYPE_BITS + 8 * i + 8] for i in range(7)]

        def control_word(character):
            return Cat(Const(character, 8).replicate(8), C(0xFF, 8))

        def lane0_control_word(character):
            return Cat(C(character, 8), *payload, C(0b0000_0001, 8))

        # TERM_k, lane i: data octet i before lane k, /T/ in lane k, /I/ after it (lane 7
        # is never before lane k).
        term_k = code[:3]
        term_control = [Mux(term_k == i, XgmiiControl.TERMINATE, XgmiiControl.IDLE)
                        for i in range(8)]
        term_data = Cat(*(Mux(term_k > i, payload[i], term_control[i]) for i in range(7)),
                        term_control[7])
        term_ctrl = Cat(*(term_k <= i for i in range(7)), C(1, 1))

        with m.If(self.error):
            m.d.comb += self.word.eq(control_word(XgmiiControl.ERROR))
        with m.Elif(self.is_data):
            m.d.comb += self.word.eq(Cat(self.code, C(0, 8)))
        with m.Elif(code <= FecWordType.TERM_7):
            m.d.comb += self.word.eq(Cat(term_data, term_ctrl))
        with m.Elif(code == FecWordType.IDLE):
            m.d.comb += self.word.eq(control_word(XgmiiControl.IDLE))
        with m.Elif(code == FecWordType.START):
            m.d.comb += self.word.eq(lane0_control_word(XgmiiControl.START))
        with m.Elif(code == FecWordType.LCW):
            m.d.comb += self.word.eq(lane0_control_word(XgmiiControl.LCW))
        with m.Else():
            # Ref: spec §6 — ERROR, and an unknown type code, give /E/.
            m.d.comb += [self.word.eq(control_word(XgmiiControl.ERROR)),
                         self.unknown.eq(code != FecWordType.ERROR)]
        return m


@parameters(symbols_per_beat=SYMBOLS_PER_BEAT)
class XgmiiToSymbols(wiring.Component):
    """Transcode XGMII words into RS(272,258) messages: 40 words → 258 symbols.

    Every 4 words on ``i`` make a 257-bit block and every 10 blocks (40 words) a message of 258
    symbols on ``o``: ``ceil(258/P)`` beats, ``last`` on the final one, the symbols past the
    258th zero. Ref: spec §6; the mapping is in docs/fec-transcoding.md. A word that fits no
    type (see :class:`WordCoder`) is sent as ERROR and counted. The first word after reset
    starts a message; words are never dropped.

    Structure: each word is coded as it is taken and held until its block's four words are
    in; the block is then packed (each word at one of a few nibble offsets) into a ring of
    R block buffers (R = 2 for P ≤ 25, else 5), and each beat is the fixed window of the
    message that its index names, picked from the ring by a mux tree on the beat index.

    Members
    -------
    i : In(stream.Signature(XgmiiWordLayout))
        XGMII words.
    o : Out(stream.Signature(SymbolLayout(P)))
        Messages for the RS(272,258) encoder.
    count : Out(Counters)
        ``error_words``: words sent as ERROR because they fit no type (``/E/`` anywhere included).

    Latency: a beat is valid 3 cycles after the word that completes the last block it
    carries (pack, then load ``o``), if the beats before it are out: from idle, a message's
    first beat is valid 6 cycles after its first word. At P ≥ 7 with ``o`` always ready, the
    last beat of every message is valid 3 + n cycles after its last word, n = the beats after
    the first one carrying block 9 (P = 8: n = 4, 7 cycles).

    Throughput: at P ≥ 7, one word per cycle for ever (40 words in 40 cycles, ``ceil(258/P)``
    beats out); at P < 7 the symbol side is the bottleneck: one beat per cycle, and ``i``
    waits. ``i.ready`` and ``o.valid`` depend on registers only; ``o`` is a register.
    """
    def __init__(self, symbols_per_beat=8):
        self.symbols_per_beat = symbols_per_beat
        super().__init__({
            "i": In(stream.Signature(XgmiiWordLayout())),
            "o": Out(stream.Signature(SymbolLayout(symbols_per_beat))),
            "count": Out(Counters(["error_words"])),
        })

    def elaborate(self, platform):
        m = Module()
        P = self.symbols_per_beat
        table = _beat_blocks(P)
        beats = len(table)
        ring = _ring_slots(max(last - first + 1 for first, last in table))

        errors = CounterBank(m, self.count).error_words

        # --- words → fields, held until the block is complete --------------------------------
        m.submodules.coder = coder = WordCoder()
        m.d.comb += coder.word.eq(self.i.payload)
        codes = [Signal(CODE_BITS, name=f"code{w}") for w in range(WORDS_PER_BLOCK)]
        is_data = Signal(WORDS_PER_BLOCK)
        word_index = Signal(range(WORDS_PER_BLOCK))
        pending = Signal()            # the four fields of a block are held, not yet packed

        slots = [Signal(BLOCK_BITS, name=f"slot{s}") for s in range(ring)]
        filled = Signal(range(ring + 1))      # blocks in the ring not yet fully sent
        write_slot = Signal(range(ring))
        write = Signal()
        m.d.comb += [
            write.eq(pending & (filled < ring)),
            self.i.ready.eq(~pending | write),
        ]
        with m.If(write):
            m.d.sync += [pending.eq(0), write_slot.eq(Mux(write_slot == ring - 1, 0,
                                                          write_slot + 1))]
        with m.If(self.i.valid & self.i.ready):
            for w in range(WORDS_PER_BLOCK):
                with m.If(word_index == w):
                    m.d.sync += [codes[w].eq(coder.code), is_data[w].eq(coder.is_data)]
            m.d.sync += word_index.eq(word_index + 1)
            with m.If(word_index == WORDS_PER_BLOCK - 1):
                m.d.sync += pending.eq(1)
            errors.increment(m, coder.error)

        # --- pack the block into the ring slot of its index ----------------------------------
        block = self._pack(m, codes, is_data)
        for s in range(ring):
            with m.If(write & (write_slot == s)):
                m.d.sync += slots[s].eq(block)

        # --- beats: the message window of the beat index -------------------------------------
        beat = Signal(range(beats))
        need = Signal(range(ring + 1))        # blocks the beat carries, all must be in
        frees = Signal(range(ring + 1))       # blocks whose last bits the beat carries
        window = Signal(SYMBOL_BITS * P)
        firsts = [first for first, _ in table] + [BLOCKS]
        with m.Switch(beat):
            for b, (first, last) in enumerate(table):
                with m.Case(b):
                    m.d.comb += [need.eq(last - first + 1), frees.eq(firsts[b + 1] - first)]
        m.d.comb += window.eq(_mux_tree(beat, [_beat_window(slots, b, P) for b in range(beats)]))

        emit = Signal()
        m.d.comb += emit.eq((~self.o.valid | self.o.ready) & (filled >= need))
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(emit):
            m.d.sync += [
                self.o.valid.eq(1),
                self.o.payload.data.eq(window),
                self.o.payload.last.eq(beat == beats - 1),
                beat.eq(Mux(beat == beats - 1, 0, beat + 1)),
            ]
        m.d.sync += filled.eq(filled + write - Mux(emit, frees, 0))
        return m

    @staticmethod
    def _pack(m, codes, is_data):
        """The 257-bit block of four fields (combinational). Word w goes to nibble
        15w + n of the word area, n = DATA words before it; with four DATA words n = w, the
        area is the four fields back to back, and bit 0 = 1 takes the place of the flags."""
        area_bits = CODE_BITS * WORDS_PER_BLOCK
        placed = []
        for w, code in enumerate(codes):
            shifted = Signal(area_bits, name=f"placed{w}")
            if w == 0:
                m.d.comb += shifted.eq(code)
            else:
                before = Signal(range(w + 1), name=f"data_before{w}")
                m.d.comb += before.eq(sum(is_data[v] for v in range(w)))
                with m.Switch(before):
                    for n in range(w + 1):
                        with m.Case(n):
                            m.d.comb += shifted.eq(code << (4 * (15 * w + n)))
            placed.append(shifted)
        area = Signal(area_bits)
        m.d.comb += area.eq(placed[0] | placed[1] | placed[2] | placed[3])
        block = Signal(BLOCK_BITS)
        # Ref: spec §6 — bit 0 = 1: four DATA words; else bit 0 = 0 and a flag per word.
        m.d.comb += block.eq(Mux(is_data.all(), Cat(C(1, 1), area),
                                 Cat(C(0, 1), is_data, area[:area_bits - 4])))
        return block


@parameters(symbols_per_beat=SYMBOLS_PER_BEAT)
class SymbolsToXgmii(wiring.Component):
    """Transcode RS(272,258) messages back into XGMII words: 258 symbols → 40 words.

    Each message of ``ceil(258/P)`` beats on ``i`` gives 40 words on ``o`` (ten 257-bit blocks
    of four words; the 10 padding bits and symbols past the 258th are ignored). Ref: spec §6;
    the mapping is in docs/fec-transcoding.md, the word decoding in :class:`WordDecoder`.

    * ``i.payload.user.uncorrectable``: the codeword was uncorrectable. Its 40 words become
      ``/E/``, and it is counted once (on its first beat). The decoder sets the flag on every
      beat of a codeword; a block takes the OR of the flags of the beats it came in.
    * A word with an unused type code becomes ``/E/`` and is counted; so are the four words of
      a block with bit 0 = 0 and all four flags set (there is no room for four DATA words).
    * The block frames by counting beats: a ``last`` that disagrees with the count is counted
      in ``count_framing_errors`` and changes nothing else.

    Structure: each beat's bits go to their fixed places in a ring of R block buffers (R = 2
    for P ≤ 25, else 5); a complete block is unpacked in one cycle into its four 64-bit fields
    (each from one of a few nibble offsets), which leave as words one per cycle.

    Members
    -------
    i : In(stream.Signature(DecodedLayout(P)))
        Decoded messages.
    o : Out(stream.Signature(XgmiiWordLayout))
        XGMII words.
    count : Out(Counters)
        ``unknown_types``: words turned into ``/E/`` because their type code is unused or
        their block header is invalid (not counted inside an uncorrectable codeword);
        ``uncorrectable``: codewords flagged uncorrectable, whose 40 words became ``/E/``;
        ``framing_errors``: beats whose ``last`` disagrees with the beat count.

    Latency: from idle, a message's first word is valid 3 + ``floor(256/(10P))`` cycles after
    its first beat (P = 8: 6 cycles): a block's first word is valid 3 cycles after the beat that
    completes it (count it complete, unpack, decode), if the words before it are out.

    Throughput: at P ≥ 7, one word per cycle for ever (a message's 40 words in 40 cycles; the
    ring then fills and ``i`` waits 40 − ``ceil(258/P)`` cycles per message); at P < 7 ``i``
    is the bottleneck: one beat per cycle, and ``o`` waits. ``i.ready`` and ``o.valid`` depend
    on registers only; ``o`` is a register.
    """
    def __init__(self, symbols_per_beat=8):
        self.symbols_per_beat = symbols_per_beat
        super().__init__({
            "i": In(stream.Signature(DecodedLayout(symbols_per_beat))),
            "o": Out(stream.Signature(XgmiiWordLayout())),
            "count": Out(Counters(("unknown_types", "uncorrectable", "framing_errors"))),
        })

    def elaborate(self, platform):
        m = Module()
        P = self.symbols_per_beat
        bits = SYMBOL_BITS * P
        table = _beat_blocks(P)
        beats = len(table)
        # A block leaves the ring when it is unpacked, so the ring need only hold the blocks
        # one beat touches: the beat that completes block j + 1 and starts block j + 2 waits
        # for block j to be unpacked, at the latest as block j - 1's last word goes out.
        ring = _ring_slots(max(last - first + 1 for first, last in table))

        counters = CounterBank(m, self.count)
        unknown, uncorrectable = counters.unknown_types, counters.uncorrectable
        framing = counters.framing_errors

        slots = [Signal(BLOCK_BITS, name=f"slot{s}") for s in range(ring)]
        bad = Signal(ring)                    # per slot: its codeword was uncorrectable
        complete = Signal(range(ring + 1))    # complete blocks in the ring, not yet unpacked

        # --- beats → their fixed places in the ring ------------------------------------------
        beat = Signal(range(beats))
        need = Signal(range(ring + 1))        # blocks the beat writes to
        completes = Signal(range(ring + 1))   # blocks whose last bits the beat carries
        firsts = [first for first, _ in table] + [BLOCKS]
        flag = self.i.payload.user.uncorrectable
        accept = Signal()
        m.d.comb += [self.i.ready.eq(complete + need <= ring),
                     accept.eq(self.i.valid & self.i.ready)]
        with m.Switch(beat):
            for b, (first, last) in enumerate(table):
                with m.Case(b):
                    m.d.comb += [need.eq(last - first + 1),
                                 completes.eq(firsts[b + 1] - first)]
                    with m.If(accept):
                        self._write_beat(m, slots, bad, self.i.payload.data, flag, b, bits)
        with m.If(accept):
            m.d.sync += beat.eq(Mux(beat == beats - 1, 0, beat + 1))
            framing.increment(m, self.i.payload.last != (beat == beats - 1))
            uncorrectable.increment(m, flag & (beat == 0))

        # --- complete block → its four fields, held while its words go out ------------------
        read_slot = Signal(range(ring))
        block = Signal(BLOCK_BITS)
        block_bad = Signal()
        with m.Switch(read_slot):
            for s in range(ring):
                with m.Case(s):
                    m.d.comb += [block.eq(slots[s]), block_bad.eq(bad[s])]
        unpacked = self._unpack(m, block)

        fields = [Signal(CODE_BITS, name=f"field{w}") for w in range(WORDS_PER_BLOCK)]
        is_data = Signal(WORDS_PER_BLOCK)
        held = Signal()               # the fields of a block are held
        held_bad = Signal()           # its codeword was uncorrectable
        held_header_bad = Signal()    # bit 0 = 0 with four flags set
        word_index = Signal(range(WORDS_PER_BLOCK))

        # --- held fields → words, one per cycle ------------------------------------------------
        m.submodules.decoder = decoder = WordDecoder()
        with m.Switch(word_index):
            for w in range(WORDS_PER_BLOCK):
                with m.Case(w):
                    m.d.comb += [decoder.code.eq(fields[w]), decoder.is_data.eq(is_data[w])]
        m.d.comb += decoder.error.eq(held_bad | held_header_bad)

        emit = Signal()
        load = Signal()
        m.d.comb += [
            emit.eq((~self.o.valid | self.o.ready) & held),
            # The next block is unpacked as the last word of the held one goes out.
            load.eq((~held | (emit & (word_index == WORDS_PER_BLOCK - 1))) & (complete != 0)),
        ]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(emit):
            m.d.sync += [self.o.valid.eq(1), self.o.payload.eq(decoder.word),
                         word_index.eq(word_index + 1)]
            unknown.increment(m, ~held_bad & (held_header_bad | decoder.unknown))
            with m.If(word_index == WORDS_PER_BLOCK - 1):
                m.d.sync += held.eq(0)
        with m.If(load):
            m.d.sync += [
                *(f.eq(v) for f, v in zip(fields, unpacked["fields"], strict=True)),
                is_data.eq(unpacked["is_data"]),
                held.eq(1), held_bad.eq(block_bad), held_header_bad.eq(unpacked["header_bad"]),
                read_slot.eq(Mux(read_slot == ring - 1, 0, read_slot + 1)),
            ]
        m.d.sync += complete.eq(complete + Mux(accept, completes, 0) - load)
        return m

    @staticmethod
    def _write_beat(m, slots, bad, data, flag, beat, bits):
        """Store the message bits of ``beat`` (``data``) in the slots of their blocks."""
        lo, hi = bits * beat, min(bits * (beat + 1), USED_BITS)
        for block in range(lo // BLOCK_BITS, (hi - 1) // BLOCK_BITS + 1) if lo < hi else ():
            start = block * BLOCK_BITS
            s = block % len(slots)
            first, end = max(lo, start), min(hi, start + BLOCK_BITS)
            m.d.sync += slots[s][first - start:end - start].eq(data[first - lo:end - lo])
            # A block's flag starts with the beat that carries its bit 0.
            m.d.sync += bad[s].eq(flag if first == start else bad[s] | flag)

    @staticmethod
    def _unpack(m, block):
        """The four 64-bit fields of ``block``, their DATA flags and whether the header is
        invalid (combinational). Word w starts at bit 1 + 64w when bit 0 is set, else at
        5 + 60w + 4n, n = DATA words before it: a (w + 2)-way mux per word."""
        all_data = block[0]
        flags = block[1:1 + WORDS_PER_BLOCK]
        padded = Cat(block, C(0, CODE_BITS))          # zeros past bit 256
        fields = []
        for w in range(WORDS_PER_BLOCK):
            field = Signal(CODE_BITS, name=f"unpacked{w}")
            mixed = Signal(CODE_BITS, name=f"unpacked{w}_mixed")    # when bit 0 = 0
            if w == 0:
                m.d.comb += mixed.eq(padded[5:][:CODE_BITS])
            else:
                before = Signal(range(w + 1), name=f"data_before{w}")
                m.d.comb += before.eq(sum(flags[v] for v in range(w)))
                with m.Switch(before):
                    for n in range(w + 1):
                        with m.Case(n):
                            m.d.comb += mixed.eq(padded[5 + 60 * w + 4 * n:][:CODE_BITS])
            m.d.comb += field.eq(Mux(all_data, padded[1 + 64 * w:][:CODE_BITS], mixed))
            fields.append(field)
        header_bad = Signal()
        m.d.comb += header_bad.eq(~all_data & (flags == 0b1111))
        return {"fields": fields, "is_data": Mux(all_data, 0b1111, flags),
                "header_bad": header_bad}
