"""EthLink MAC transmitter: frame bodies and LCWs onto 64-bit XGMII (spec §4, §5).

Ref: spec §4 (FCS), §5 (start word, /T/, inter-frame gap, LCW), §7 (the sequence number in the
start word). The word-level mapping is drawn in docs/mac.md.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.crc.catalog import CRC8_SMBUS, CRC32_ETHERNET
from amaranth.lib.wiring import In, Out

from ..compose import forward
from ..counters import CounterBank, Counters
from ..params import Flag, IntRange, Param, parameters
from ..stream import keep_count
from ..wire import PREAMBLE_OCTET, SFD, FrameClass, XgmiiControl, XgmiiWordLayout
from .crc import OctetCrc
from .layouts import LCW_PAYLOAD_BITS, LcwEvents, LcwLayout, MacTxFrameLayout, MacTxUserLayout

__all__ = ["MacTx", "IFG", "LCW_IN_FRAME", "MIN_IFG", "MAX_IFG", "gap_words", "lcw_lanes",
           "MacTxSequencer", "StartWord", "LcwWord", "FcsStep", "TailWords"]

MIN_IFG = 4
MAX_IFG = 64
FCS_OCTETS = 4

#: Ref: spec §5 — the gap is at least 4 octets.
IFG = Param("inter-frame gap in octets", IntRange(MIN_IFG, MAX_IFG))
LCW_IN_FRAME = Param("1: LCWs may also go between two words of a frame", Flag())


def gap_words(t_lane, ifg):
    """Whole words needed after the word with /T/ in lane ``t_lane`` before an /S/ word, so that
    at least ``ifg`` octets lie from /T/ (inclusive) to /S/ (exclusive)."""
    return max(0, -(-(ifg - (8 - t_lane)) // 8))


def _word(lanes):
    """``(data, ctrl)`` values of eight lanes, each an ``(octet value, is_control)`` pair."""
    return Cat(*(octet for octet, _ in lanes)), Cat(*(Const(int(c), 1) for _, c in lanes))


def _ctl(code):
    """A control lane: ``code`` with its control flag."""
    return (Const(code, 8), 1)


def lcw_lanes(m, crc8, lcw_type, payload, name):
    """The eight lanes of an LCW word: 0x5C (control), type, p0…p4 (big-endian), crc8."""
    # Ref: spec §5 — lanes 1…7 = type, p0…p4, crc8 over type…p4 (CRC-8 poly 0x07, init 0).
    octets = [lcw_type] + [payload[LCW_PAYLOAD_BITS - 8 * (k + 1):LCW_PAYLOAD_BITS - 8 * k]
                           for k in range(5)]
    covered = Cat(*octets)
    crc = crc8.next_state(m, Const(crc8.initial, crc8.width), covered, 6, name)
    return ([(Const(XgmiiControl.LCW, 8), 1)] + [(o, 0) for o in octets]
            + [(crc8.output(crc), 0)])


def _mac_tx_members(fill=False):
    return {
        "i": In(stream.Signature(MacTxFrameLayout())),
        "lcw": In(stream.Signature(LcwLayout())),
        **({"fill": In(LcwEvents())} if fill else {}),
        "abort": In(1),
        "in_frame": Out(1),
        "txd": Out(64, init=int.from_bytes(bytes([XgmiiControl.IDLE]) * 8, "little")),
        "txc": Out(8, init=0xFF),
        "count": Out(Counters(MacTx.COUNTERS)),
    }


@parameters(ifg=IFG, lcw_in_frame=LCW_IN_FRAME)
class MacTx(wiring.Component):
    """Send frame bodies and link control words as 64-bit XGMII words.

    Behaviour (Ref: spec §4, §5):

    * A frame is sent as the start word ``/S/ 55 55 C Q1 Q2 Q3 D5`` (``/S/`` in lane 0 only;
      Q1 = {class, seq[19:16]}, Q2 = seq[15:8], Q3 = seq[7:0], C = CRC-8 of Q1…Q3, class 0xE
      when ``user.sequenced`` of the first beat is set, else 0x5 with C Q1…Q3 = ``55 55 55
      55``), the body
      octets, the FCS (IEEE CRC-32 of the body, least significant octet first), then ``/T/`` in
      whatever lane follows, ``/I/`` to the end of that word.
    * **Void frames (spec v1.1 §7).** When the last beat has ``user.void``, the FCS is sent
      bitwise inverted (``count_void_frames``): the receiver drops the frame without a NACK.
      Nothing else changes (same words, same timing).
    * From ``/T/`` (inclusive) to the next ``/S/`` (exclusive) there are at least ``ifg``
      octets; the words after the ``/T/`` word count 8 octets each, LCW words included. There
      is no deficit idle count: a frame always starts in lane 0, so the gap is ``ifg`` rounded
      up to the lane-0 boundary.
    * An LCW from ``lcw`` is one whole word (0x5C control, type, p0…p4, crc8). It takes a free
      gap word; when a frame is waiting and no gap word is free it still goes before the
      ``/S/`` (one word), but never two in a row ahead of a waiting frame. With
      ``lcw_in_frame`` it is also sent between two words of a frame (never two in a row inside
      a frame), so it waits at most one word.
    * Producer contract: once a frame's first beat is taken, its other beats are offered every
      cycle ``i.ready`` is high. The first beat is taken in the cycle the start word is chosen;
      between the first and the last beat ``i.ready`` is low only for an in-frame LCW word;
      after the last beat it is low for the tail word (and the FCS spill word, if any) and the
      gap. A missing beat (underrun) ends the frame with the abort word (``/E/ /T/ /I/ …``, all
      control) in place of the beat that was due, counts ``count_underruns``, and the rest of
      that frame's beats up to ``last`` are taken and thrown away.
    * **Fill** (``fill=True``, with ``lcw_in_frame``): a missing beat inside a frame is
      replaced by an LCW word instead (spec §5: an LCW may go between any two words of a
      frame) and the frame goes on with the beat when it comes: an LCW waiting on ``lcw`` if
      there is one, else the word on ``fill`` (``count_fills``), as many words in a row as
      the gap lasts. ``fill`` must be harmless to send any number of times (the link end
      gives its newest LLR acknowledgement, docs/mac.md); while ``fill.valid`` is low a
      missing beat is an underrun as above.
    * ``abort`` ends the frame on the wire with the abort word (``count_aborts``); the next beat
      on ``i`` is the first beat of a new frame. While ``abort`` is high no beat is taken and no
      frame starts. When ``in_frame`` is low it has no other effect.

    Members
    -------
    i : In(stream.Signature(MacTxFrameLayout()))
        Frame bodies (OEFH + TH + payload, no FCS), 8 octets per beat, ``user.seq`` and
        ``user.sequenced`` read on the first beat, ``user.void`` on the last; a 0-octet body is
        one beat with ``keep`` = 0.
    lcw : In(stream.Signature(LcwLayout()))
        Link control words to send.
    fill : In(LcwEvents())
        Only with ``fill=True``: the LCW that replaces a missing beat (sent, not taken: it
        stays offered).
    abort : In(1)
        End the frame on the wire now (a one-cycle strobe).
    in_frame : Out(1)
        High while ``txd`` carries a frame's ``/S/`` word and its words up to (not including)
        the ``/T/`` or abort word: exactly the cycles in which ``abort`` ends a frame.
    txd, txc : Out(64), Out(8)
        The XGMII word (registered): lane i is ``txd[8i+7:8i]``, its control flag ``txc[i]``.
    count : Out(Counters)
        ``frames`` completed with ``/T/``, their body ``octets``, frames ended by ``abort``
        (``aborts``) or by an underrun (``underruns``), ``lcws`` sent, ``fills`` (words of
        ``fill`` sent in place of a missing beat), ``void_frames`` (frames completed with the
        inverted FCS, also in ``frames``). Saturating;
        ``octets`` catches up 1 cycle after ``frames``.

    Latency: a first beat offered while the MAC is idle, the gap is met and no LCW is waiting
    is taken at once and gives the ``/S/`` word on ``txd`` 1 cycle later; every beat's word
    (for the last beat, the word holding its octets) is on ``txd`` 2 cycles after the beat is
    taken (the beat waits one cycle in a register, so that the FCS is finished from registers
    in the second cycle). ``abort`` (or the cycle of a missing beat) → abort word on ``txd``:
    1 cycle. ``lcw`` offered between frames → LCW word on ``txd``: 1 cycle.

    Throughput: full line rate. A frame of L body octets takes exactly
    1 + ceil((L + 5) / 8) words up to and including its ``/T/`` word, then the gap
    (``gap_words``); back-to-back frames lose no other cycle. ``i.ready`` and ``lcw.ready``
    depend combinationally on ``i.valid``, ``lcw.valid`` and ``abort`` (rule 4).
    """

    COUNTERS = ("frames", "octets", "aborts", "underruns", "lcws", "fills", "void_frames")

    def __init__(self, ifg=12, lcw_in_frame=1, *, fill=False):
        self._ifg = ifg
        self._lcw_in_frame = bool(lcw_in_frame)
        if fill and not lcw_in_frame:
            raise ValueError("fill needs lcw_in_frame: a fill word is an LCW inside a frame")
        self._fill = fill
        super().__init__(_mac_tx_members(fill))

    def elaborate(self, platform):
        # The sequencer holds every register and picks the word each cycle; the other parts
        # are combinational: the start and LCW words, the FCS over the beat being taken
        # (stage 1), and the tail words of the staged last beat (stage 2).
        m = Module()
        m.submodules.sequencer = sequencer = MacTxSequencer(self._ifg, self._lcw_in_frame,
                                                            self._fill)
        m.submodules.start_word = start_word = StartWord()
        m.submodules.lcw_word = lcw_word = LcwWord()
        m.submodules.fcs_step = fcs_step = FcsStep()
        m.submodules.tail_words = tail_words = TailWords(self._ifg)
        wiring.connect(m, sequencer.start, start_word.io)
        wiring.connect(m, sequencer.lcw_word, lcw_word.io)
        wiring.connect(m, sequencer.fcs, fcs_step.io)
        wiring.connect(m, sequencer.tail, tail_words.io)
        forward(m, self, sequencer, self.signature)
        return m


def WordRequest(source):
    """Ask a word builder for the word made from ``source`` (a shape): ``source`` out, the
    word back in the same cycle."""
    return wiring.Signature({"source": Out(source), "word": In(XgmiiWordLayout())})


def FcsRequest():
    """Ask :class:`FcsStep` for the CRC after one beat: the CRC so far ``crc``, the beat's
    ``data`` and its count of valid octets ``octets`` out; the CRC after 8 octets ``full`` and
    after ``octets`` octets ``end`` back in the same cycle."""
    return wiring.Signature({"crc": Out(32), "data": Out(64), "octets": Out(range(9)),
                             "full": In(32), "end": In(32)})


def _gap_shape():
    return range(gap_words(0, MAX_IFG) + 2)


def TailRequest():
    """Ask :class:`TailWords` for the words that end a frame: the last beat's octets ``data``
    and count ``octets``, the CRC after the whole body ``crc`` out; the ``first`` and ``spill``
    words and the ``gap`` (whole words after the /T/ word) back in the same cycle."""
    return wiring.Signature({"data": Out(64), "octets": Out(range(9)), "crc": Out(32),
                             "first": In(XgmiiWordLayout()), "spill": In(XgmiiWordLayout()),
                             "gap": In(_gap_shape())})


class StartWord(wiring.Component):
    """Build a frame's start word from its first beat's ``user``.

    ``/S/ 55 55 C Q1 Q2 Q3 D5`` (``/S/`` in lane 0 only): Q1 = {class, seq[19:16]}, Q2 =
    seq[15:8], Q3 = seq[7:0] and C = CRC-8 of Q1…Q3, class 0xE when ``sequenced``; else
    class 0x5 and C Q1 Q2 Q3 = ``55 55 55 55`` (Ref: spec v1.1 §5, §7).

    Members
    -------
    io : In(WordRequest(MacTxUserLayout))

    Latency: combinational. Throughput: one word per cycle.
    """
    def __init__(self):
        super().__init__({"io": In(WordRequest(MacTxUserLayout()))})

    def elaborate(self, platform):
        m = Module()
        user = self.io.source
        seq = user.seq
        q1 = Mux(user.sequenced, Cat(seq[16:20], Const(FrameClass.SEQUENCED, 4)),
                 PREAMBLE_OCTET)
        q2 = Mux(user.sequenced, seq[8:16], PREAMBLE_OCTET)
        q3 = Mux(user.sequenced, seq[0:8], PREAMBLE_OCTET)
        # Ref: spec v1.1 §5 — C: the LCW's CRC-8 over Q1 Q2 Q3 (a 24-bit XOR network).
        crc8 = OctetCrc(CRC8_SMBUS, 3)
        q_crc = crc8.next_state(m, Const(crc8.initial, crc8.width), Cat(q1, q2, q3), 3,
                                "start_check")
        check = Mux(user.sequenced, crc8.output(q_crc), PREAMBLE_OCTET)
        # Ref: spec §5 — /S/ P P C Q1 Q2 Q3 SFD, /S/ in lane 0.
        start_d, start_c = _word([_ctl(XgmiiControl.START)]
                                 + [(Const(PREAMBLE_OCTET, 8), 0)] * 2 + [(check, 0)]
                                 + [(q1, 0), (q2, 0), (q3, 0), (Const(SFD, 8), 0)])
        m.d.comb += [self.io.word.data.eq(start_d), self.io.word.ctrl.eq(start_c)]
        return m


class LcwWord(wiring.Component):
    """Build the word of a link control word: 0x5C (control), type, p0…p4, crc8
    (:func:`lcw_lanes`, Ref: spec §5).

    Members
    -------
    io : In(WordRequest(LcwLayout))

    Latency: combinational. Throughput: one word per cycle.
    """
    def __init__(self):
        super().__init__({"io": In(WordRequest(LcwLayout()))})

    def elaborate(self, platform):
        m = Module()
        crc8 = OctetCrc(CRC8_SMBUS, 6)
        lcw = self.io.source
        lcw_d, lcw_c = _word(lcw_lanes(m, crc8, lcw.type, lcw.payload, "lcw_crc8"))
        m.d.comb += [self.io.word.data.eq(lcw_d), self.io.word.ctrl.eq(lcw_c)]
        return m


class FcsStep(wiring.Component):
    """Advance the FCS (IEEE CRC-32) over the beat being taken.

    ``full`` is the CRC after all 8 octets (one fixed matrix: the running register of a frame's
    full beats); ``end`` after the beat's ``octets`` valid octets (one of 8 matrices for 0…7,
    the 8-octet tree for 8: the register of the frame's last beat).

    Members
    -------
    io : In(FcsRequest)

    Latency: combinational. Throughput: one word per cycle.
    """
    def __init__(self):
        super().__init__({"io": In(FcsRequest())})

    def elaborate(self, platform):
        m = Module()
        fcs = OctetCrc(CRC32_ETHERNET, 8)
        io = self.io
        n = io.octets
        crc_full = fcs.next_state(m, io.crc, io.data, 8, "fcs_full")
        crc_end = Signal(32, name="fcs_end")
        with m.Switch(n):
            for count in range(8):
                with m.Case(count):
                    m.d.comb += crc_end.eq(fcs.next_state(m, io.crc, io.data, count, "fcs_end"))
            with m.Default():
                m.d.comb += crc_end.eq(crc_full)        # a full last beat: the 8-octet tree
        m.d.comb += [io.full.eq(crc_full), io.end.eq(crc_end)]
        return m


class TailWords(wiring.Component):
    """Build the words that end a frame from its last beat of n octets: body[0:n], the FCS
    (least significant octet first), ``/T/``, ``/I/`` to the end of the word; over one word
    (n <= 3) or two (the second is the FCS spill word). ``gap`` is the whole words then needed
    before the next ``/S/`` for ``ifg`` octets from ``/T/`` (Ref: spec §4, §5).

    Members
    -------
    io : In(TailRequest)

    Latency: combinational (from registers in :class:`MacTxSequencer`, so no path runs from
    the CRC trees into the output word). Throughput: one frame end per cycle.
    """
    def __init__(self, ifg):
        self._ifg = ifg
        super().__init__({"io": In(TailRequest())})

    def elaborate(self, platform):
        m = Module()
        fcs = OctetCrc(CRC32_ETHERNET, 8)
        io = self.io
        fcs_value = Signal(32, name="fcs_value")
        m.d.comb += fcs_value.eq(fcs.output(io.crc))
        # Whole signals, assigned only in the switch: constant ones become small ROMs.
        tail_d = [Signal(64, name=f"tail{k}_data") for k in range(2)]
        tail_c = [Signal(8, name=f"tail{k}_ctrl") for k in range(2)]
        tail_gap = Signal.like(io.gap, name="tail_gap")
        body_octets = [io.data[8 * j:8 * j + 8] for j in range(8)]
        fcs_octets = [fcs_value[8 * j:8 * j + 8] for j in range(4)]
        with m.Switch(io.octets):
            for count in range(9):
                with m.Case(count):
                    # Ref: spec §4, §5 — the FCS follows the body, /T/ follows the FCS.
                    lanes = ([(o, 0) for o in body_octets[:count]]
                             + [(o, 0) for o in fcs_octets] + [_ctl(XgmiiControl.TERMINATE)])
                    lanes += [_ctl(XgmiiControl.IDLE)] * (16 - len(lanes))
                    for k in range(2):
                        d, c = _word(lanes[8 * k:8 * k + 8])
                        m.d.comb += [tail_d[k].eq(d), tail_c[k].eq(c)]
                    m.d.comb += tail_gap.eq(gap_words((count + 4) % 8, self._ifg))
        m.d.comb += [io.first.data.eq(tail_d[0]), io.first.ctrl.eq(tail_c[0]),
                     io.spill.data.eq(tail_d[1]), io.spill.ctrl.eq(tail_c[1]),
                     io.gap.eq(tail_gap)]
        return m


class MacTxSequencer(wiring.Component):
    """Choose the XGMII word of each cycle: LCW, start word, body, tail, abort or idle.

    :class:`MacTx`'s behaviour, producer contract and timing, with the words built by the
    other parts: it takes the beats, holds the two stages (the beat taken waits one cycle in a
    register while the CRC register advances over it; the tail words are built from registers
    a cycle later), counts the gap, places LCWs and aborts, and counts. Its ``elaborate`` is
    longer than ~120 lines because it is one state machine: each branch decides, for the same
    cycle, the word, whether a beat is taken, the gap and the counts; apart, each of these
    decisions would need the whole state again.

    Members
    -------
    i, lcw, fill, abort, in_frame, txd, txc, count
        As :class:`MacTx` (``fill`` only with ``fill=True``).
    start : Out(WordRequest(MacTxUserLayout))
        The start word of the beat on ``i`` (:class:`StartWord`).
    lcw_word : Out(WordRequest(LcwLayout))
        The word of the LCW on ``lcw`` (:class:`LcwWord`).
    fcs : Out(FcsRequest)
        The CRC over the beat on ``i`` (:class:`FcsStep`).
    tail : Out(TailRequest)
        The tail words of the staged last beat (:class:`TailWords`).

    Latency: as :class:`MacTx` (``txd``/``txc`` are its registers). Throughput: as
    :class:`MacTx`, full line rate.
    """
    def __init__(self, ifg, lcw_in_frame, fill=False):
        self._ifg = ifg
        self._lcw_in_frame = lcw_in_frame
        self._fill = fill
        super().__init__({
            **_mac_tx_members(fill),
            "start": Out(WordRequest(MacTxUserLayout())),
            "lcw_word": Out(WordRequest(LcwLayout())),
            "fcs": Out(FcsRequest()),
            "tail": Out(TailRequest()),
        })

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)

        fcs = OctetCrc(CRC32_ETHERNET, 8)
        beat = self.i.payload
        idle = Const(XgmiiControl.IDLE, 8)

        # Two stages: a beat is taken in the cycle its word (or, for the first beat, the start
        # word) is chosen and waits one cycle in `stage_data`; the CRC register is advanced over
        # it in that same cycle. The last beat's tail words are built one cycle later from
        # registers only (the body octets in `stage_data`, their count in `stage_octets`, the
        # finished CRC in `crc_last`), so no path runs from the CRC trees into the output word.
        IDLE, FRAME, TAIL, SPILL, DISCARD = range(5)
        state = Signal(range(5), name="state")
        crc = Signal(32, name="fcs_crc", init=fcs.initial)     # after the full beats taken
        crc_last = Signal(32, name="fcs_last")      # after the whole body (last beat taken)
        gap_left = Signal(_gap_shape(), name="gap_left")
        prev_lcw = Signal(name="prev_lcw")   # the word on txd is an LCW word
        # Body octets of the current frame's beats before the staged one: the staged beat's
        # count is added when the next beat is taken, so no adder runs from a beat's `keep`
        # (straight out of the LLR's replay buffer in a link end) into a register.
        frame_len = Signal(16, name="frame_len")
        stage_data = Signal(64, name="stage_data")          # the beat taken, not yet sent
        stage_octets = Signal(range(9), name="stage_octets")  # its octet count
        stage_void = Signal(name="stage_void")      # the staged last beat ends a void frame
        taken_len = frame_len + stage_octets        # body octets up to the staged beat
        # The octet count is added one cycle late: keeps its adder off the word path.
        octets_en = Signal(name="octets_en")
        octets_add = Signal.like(frame_len, name="octets_add")
        m.d.sync += octets_en.eq(0)
        counters["octets"].add(m, octets_add, octets_en)
        m.d.comb += self.in_frame.eq((state == FRAME) | (state == TAIL) | (state == SPILL))

        n = Signal(range(9), name="beat_octets")
        m.d.comb += n.eq(keep_count(beat.keep, 8))
        m.d.comb += [
            self.start.source.eq(beat.user),
            self.lcw_word.source.eq(self.lcw.payload),
            self.fcs.crc.eq(crc), self.fcs.data.eq(beat.data), self.fcs.octets.eq(n),
            self.tail.data.eq(stage_data), self.tail.octets.eq(stage_octets),
            self.tail.crc.eq(crc_last),
        ]
        start, lcw_word, tail = self.start.word, self.lcw_word.word, self.tail
        crc_full, crc_end = self.fcs.full, self.fcs.end
        abort_d, abort_c = _word([_ctl(XgmiiControl.ERROR), _ctl(XgmiiControl.TERMINATE)]
                                 + [_ctl(XgmiiControl.IDLE)] * 6)

        word_d = Signal(64, name="word_data")
        word_c = Signal(8, name="word_ctrl")
        m.d.comb += [word_d.eq(idle.replicate(8)), word_c.eq(0xFF)]
        gap_ok = gap_left == 0

        def send(d, c):
            m.d.comb += [word_d.eq(d), word_c.eq(c)]

        def send_lcw():
            send(lcw_word.data, lcw_word.ctrl)
            m.d.comb += self.lcw.ready.eq(1)
            m.d.sync += prev_lcw.eq(1)
            counters["lcws"].increment(m, 1)

        def send_fill():
            # The fill word is built by the LCW builder from `fill` instead of `lcw`; it is
            # not taken (it may be sent again), and the beat goes first once it comes.
            m.d.comb += self.lcw_word.source.eq(self.fill.payload)
            send(lcw_word.data, lcw_word.ctrl)
            m.d.sync += prev_lcw.eq(1)
            counters["fills"].increment(m, 1)

        def take(first):
            # Stage 1: take the beat on `i`; it goes on the wire next cycle (or its tail does).
            m.d.comb += self.i.ready.eq(1)
            # Ref: spec v1.1 §7 — a void frame ends with the inverse of its FCS: inverting the
            # register inverts the value (the output mapping is a bit permutation and an XOR).
            void = beat.last & beat.user.void
            m.d.sync += [crc.eq(crc_full), crc_last.eq(Mux(void, ~crc_end, crc_end)),
                         stage_data.eq(beat.data), stage_octets.eq(n), stage_void.eq(void),
                         frame_len.eq(0 if first else taken_len),
                         state.eq(Mux(beat.last, TAIL, FRAME))]

        def end_frame(gap):
            # The CRC register is back at its initial value for the next frame's first beat,
            # which may be taken in the very next cycle.
            m.d.sync += [state.eq(IDLE), gap_left.eq(gap), crc.eq(fcs.initial),
                         octets_en.eq(1), octets_add.eq(taken_len)]
            counters["frames"].increment(m, 1)
            counters["void_frames"].increment(m, stage_void)

        def send_abort(counter):
            send(abort_d, abort_c)
            counters[counter].increment(m, 1)
            # Ref: spec §5 — the abort word's /T/ is in lane 1; the gap counts from it.
            m.d.sync += [gap_left.eq(gap_words(1, self._ifg)), crc.eq(fcs.initial)]

        m.d.sync += prev_lcw.eq(0)
        with m.Switch(state):
            with m.Case(IDLE, DISCARD):
                startable = (state == IDLE) & self.i.valid & gap_ok & ~self.abort
                # Gap words count down whatever they carry (idle or LCW).
                m.d.sync += gap_left.eq(Mux(gap_ok, 0, gap_left - 1))
                with m.If(self.lcw.valid & ~(startable & prev_lcw)):
                    send_lcw()
                with m.Elif(startable):
                    # The start word goes out while the first beat waits in the stage.
                    send(start.data, start.ctrl)
                    take(first=True)
                with m.If(state == DISCARD):
                    # Rest of an underrun frame: take and drop its beats up to `last`.
                    m.d.comb += self.i.ready.eq(~self.abort)
                    with m.If(self.abort | (self.i.valid & beat.last)):
                        m.d.sync += state.eq(IDLE)
            with m.Case(FRAME):
                # `stage_data` holds a body beat that is not the last one.
                with m.If(self.abort):
                    send_abort("aborts")
                    m.d.sync += state.eq(IDLE)
                if self._lcw_in_frame:
                    with m.Elif(self.lcw.valid & ~prev_lcw):
                        send_lcw()
                with m.Elif(self.i.valid):
                    send(stage_data, 0)
                    take(first=False)
                if self._fill:
                    # A missing beat: an LCW in its place, the frame goes on (spec §5).
                    with m.Elif(self.lcw.valid):
                        send_lcw()
                    with m.Elif(self.fill.valid):
                        send_fill()
                with m.Else():
                    # Underrun: the producer broke its contract; the frame cannot go on (the
                    # staged beat is dropped, the abort word goes out in its place).
                    send_abort("underruns")
                    m.d.sync += state.eq(DISCARD)
            with m.Case(TAIL):
                # `stage_data` holds the last beat, `crc` the finished CRC.
                with m.If(self.abort):
                    send_abort("aborts")
                    m.d.sync += state.eq(IDLE)
                if self._lcw_in_frame:
                    with m.Elif(self.lcw.valid & ~prev_lcw):
                        send_lcw()
                with m.Else():
                    send(tail.first.data, tail.first.ctrl)
                    with m.If(stage_octets >= 4):
                        m.d.sync += state.eq(SPILL)
                    with m.Else():
                        end_frame(tail.gap)
            with m.Case(SPILL):
                with m.If(self.abort):
                    send_abort("aborts")
                    m.d.sync += state.eq(IDLE)
                if self._lcw_in_frame:
                    with m.Elif(self.lcw.valid & ~prev_lcw):
                        send_lcw()
                with m.Else():
                    send(tail.spill.data, tail.spill.ctrl)
                    end_frame(tail.gap)

        m.d.sync += [self.txd.eq(word_d), self.txc.eq(word_c)]
        return m
