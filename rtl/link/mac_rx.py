"""EthLink MAC receiver: 64-bit XGMII words to frame bodies and LCWs (spec §4, §5).

Ref: spec §4 (FCS), §5 (start word, /T/, LCW, crc8), §7 (the sequence number in the start
word). The word-level mapping and the bad-input rules are in docs/mac.md.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.crc.catalog import CRC8_SMBUS, CRC32_ETHERNET
from amaranth.lib.wiring import In, Out

from ..compose import forward, members_of
from ..counters import CounterBank, Counters
from ..params import IntRange, Param, parameters
from ..stream import count_to_keep
from ..wire import MAX_BODY_OCTETS, PREAMBLE_OCTET, SFD, FrameClass, XgmiiControl
from .crc import OctetCrc
from .layouts import LCW_PAYLOAD_BITS, LcwLayout, MacRxFrameLayout, SEQ_BITS, xgmii_rx

__all__ = ["MacRx", "MAX_BODY", "XgmiiClassifier", "LcwReceiver", "FcsCheck",
           "MacRxFramer", "FrameVerdict"]

FCS_OCTETS = 4
#: Ref: spec §4 — bodies are up to MAX_BODY_OCTETS octets; a receiver may take longer ones.
MAX_BODY = Param("largest body accepted, in octets", IntRange(8, 65535))


@parameters(max_body_octets=MAX_BODY)
class MacRx(wiring.Component):
    """Receive frame bodies and link control words from 64-bit XGMII words.

    Behaviour (Ref: spec §4, §5):

    * A frame starts only on a word with ``/S/`` in lane 0, lanes 1…7 data, ``55 55`` in
      lanes 1…2 and the SFD 0xD5 in lane 7. Any other word holding ``/S/`` (in any lane) is a
      bad start (``count_bad_starts``): nothing is delivered and the words up to the next
      control word (other than an LCW) are ignored.
    * **Start check (spec v1.1 §5).** Class 0x5 in Q1 opens an unsequenced frame (C in lane
      3 is not checked). Any other class opens a sequenced frame (``user.sequenced``,
      ``user.seq`` = Q1[3:0] Q2 Q3) that is good only if the class is 0xE and C = CRC-8(Q1
      Q2 Q3); otherwise the frame is received to its end and bad like an
      FCS error (``count_start_check_errors``), so the LLR never acts on a seq it cannot
      trust: it NACKs or drops the frame as it would one with a bad FCS.
    * Inside a frame: all-data words are frame octets; a ``/T/`` word (data lanes, ``/T/``,
      ``/I/`` to the end) ends it; an LCW word (0x5C control in lane 0, lanes 1…7 data) is
      taken out and the frame continues on the next word. Any other word ends the frame as bad:
      ``count_error_chars`` if it holds ``/E/``, else ``count_truncated`` (``/I/``, a new
      ``/S/``, a malformed LCW…); such a word is then looked at as a word between frames, so a
      new ``/S/`` in lane 0 also starts the next frame.
    * A frame ended by ``/T/`` is, in this order: a runt (fewer than 4 octets,
      ``count_runts``), too long (more than ``max_body_octets`` body octets,
      ``count_too_long``), a failed start check (``count_start_check_errors``), a void frame
      (its FCS is exactly the inverse of the right one, spec v1.1 §7: ``count_void_frames``,
      not an FCS error), an FCS error (``count_fcs_errors``; both checked by the CRC-32
      residue over body and FCS, so the FCS position is not needed), or good
      (``count_frames``, ``count_octets``). A frame is known to be too long as soon as its
      octets exceed ``max_body_octets`` + 4: its last beat goes out at once and the rest is
      ignored.
    * Every frame that started delivers at least one beat and ends with exactly one ``last``
      beat; ``user.error`` on it marks a bad frame (each bad frame is counted once, by cause);
      ``user.void`` (with ``user.error``) marks a void frame. A bad frame with nothing
      delivered yet (or a runt, or an empty-bodied frame) ends with a single beat ``keep`` = 0.
      The FCS is stripped.
    * LCWs, between frames or inside one: a good crc8 gives ``lcw.valid`` for one cycle
      (``count_lcws``); a bad one is dropped (``count_lcw_crc_errors``). Idle and other words
      between frames are ignored. Reset starts between frames.
    * The line cannot be stopped: ``o`` and ``lcw`` never wait for ``ready``. Each beat (LCW) is
      valid for one cycle; one offered while ``ready`` is low is lost and counted in
      ``count_overruns`` (``count_lcw_overruns``). The consumer must keep ``ready`` high.

    Members
    -------
    rxd, rxc : In(64), In(8)
        The received XGMII word, lane i in ``rxd[8i+7:8i]``, control flag ``rxc[i]``.
    o : Out(stream.Signature(MacRxFrameLayout()))
        Frame bodies, 8 octets per beat; ``user.seq``/``user.sequenced`` (0 for an
        unsequenced frame) on every beat, ``user.error`` and ``user.void`` on the last beat.
    lcw : Out(stream.Signature(LcwLayout()))
        Received LCWs with a good crc8.
    count : Out(Counters)
        ``frames``, ``octets`` (body octets of good frames), ``bad_starts``,
        ``start_check_errors``, ``fcs_errors``, ``void_frames``,
        ``error_chars``, ``truncated``, ``too_long``, ``runts``, ``lcws``,
        ``lcw_crc_errors``, ``overruns``, ``lcw_overruns``. Saturating;
        ``octets`` catches up 1 cycle after ``frames``.

    Latency: a body word on ``rxd`` in cycle c → its beat valid on ``o`` in cycle c + 2 when it
    is not the frame's last beat (the MAC looks one word ahead to know which octets are FCS).
    The last beat (the one with ``last`` and ``user.error``) follows the ``/T/`` word by 2
    cycles, whatever the lane of ``/T/``: the FCS check is pipelined (the CRC register takes
    the ``/T/`` word in the first cycle, the check and the last beat are decided in the
    second). A bad frame ended by any other word delivers its last beat 1 cycle after that
    word. LCW word on ``rxd`` in cycle c → ``lcw.valid`` in cycle c + 1.

    Throughput: one XGMII word per cycle, every cycle, at any gap between frames (even none:
    ``/S/`` right after the ``/T/`` word); at most one ``o`` beat per cycle.
    """

    COUNTERS = ("frames", "octets", "bad_starts", "start_check_errors", "fcs_errors",
                "void_frames", "error_chars", "truncated", "too_long", "runts", "lcws",
                "lcw_crc_errors", "overruns", "lcw_overruns")

    def __init__(self, max_body_octets=MAX_BODY_OCTETS):
        self._max = max_body_octets
        super().__init__({
            "rxd": In(64),
            "rxc": In(8),
            "o": Out(stream.Signature(MacRxFrameLayout())),
            "lcw": Out(stream.Signature(LcwLayout())),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        # rxd/rxc ─▶ XgmiiClassifier ─▶ word kind ─▶ LcwReceiver ─▶ lcw
        #                                          └▶ MacRxFramer ─▶ o
        # The framer asks FcsCheck about its CRC register and FrameVerdict about a /T/ end.
        m = Module()
        m.submodules.classifier = classifier = XgmiiClassifier()
        m.submodules.lcw_receiver = lcw_receiver = LcwReceiver()
        m.submodules.fcs_check = fcs_check = FcsCheck()
        m.submodules.framer = framer = MacRxFramer(self._max)
        m.submodules.verdict = verdict = FrameVerdict(self._max)
        xgmii = members_of(self.signature, "rxd", "rxc")
        for part in (classifier, lcw_receiver, fcs_check, framer):
            forward(m, self, part, xgmii)
        wiring.connect(m, classifier.word, lcw_receiver.word, framer.word)
        wiring.connect(m, framer.fcs, fcs_check.io)
        wiring.connect(m, framer.end, verdict.end)
        wiring.connect(m, lcw_receiver.lcw, wiring.flipped(self.lcw))
        wiring.connect(m, framer.o, wiring.flipped(self.o))
        forward(m, self.count, lcw_receiver.count)
        forward(m, self.count, framer.count)
        forward(m, self.count, verdict.count)
        return m


def WordKind():
    """What the word on rxd/rxc is, this cycle (:class:`XgmiiClassifier`)."""
    return wiring.Signature({
        "is_data": Out(1), "is_lcw": Out(1), "has_error": Out(1), "has_start": Out(1),
        "good_start": Out(1), "sequenced": Out(1), "start_ok": Out(1), "seq": Out(SEQ_BITS),
        "is_term": Out(1), "term_lane": Out(range(8)),
    })


def FcsCheckRequest():
    """Ask :class:`FcsCheck` about the frame's CRC register ``crc``: the register after the
    word on rxd ``next`` back; and ``ok``: after a /T/ word in lane ``lane``, ``crc`` is that of
    a good frame; ``void``: that of a void frame (the FCS inverted)."""
    return wiring.Signature({"crc": Out(32), "lane": Out(range(8)),
                             "next": In(32), "ok": In(1), "void": In(1)})


def FrameEndRequest(octets_shape):
    """Ask :class:`FrameVerdict` about a frame ended by /T/ (second stage): ``valid`` the frame
    ends this cycle, its checks ``runt``, ``too_long``, ``start_ok``, ``fcs_ok`` and
    ``fcs_void`` (the FCS is inverted), its body ``octets`` out; ``error`` (the frame is bad) and
    ``void`` (it is a void frame, spec v1.1 §7), meaningful with ``valid``, back in the same
    cycle."""
    return wiring.Signature({"valid": Out(1), "runt": Out(1), "too_long": Out(1),
                             "start_ok": Out(1), "fcs_ok": Out(1), "fcs_void": Out(1),
                             "octets": Out(octets_shape), "error": In(1), "void": In(1)})


def _octets_shape(max_body_octets):
    return range(max_body_octets + FCS_OCTETS + 17)


def _xgmii_rx_lanes(rxd, rxc):
    return [rxd[8 * j:8 * j + 8] for j in range(8)], [rxc[j] for j in range(8)]


class XgmiiClassifier(wiring.Component):
    """Tell what the received XGMII word is.

    ``is_data``: all lanes data. ``is_lcw``: 0x5C control in lane 0, lanes 1…7 data.
    ``has_error``/``has_start``: /E/ or /S/ in any control lane. ``is_term``: /T/ in lane
    ``term_lane``, data before it and /I/ after it. ``good_start``: the start word of a frame,
    ``/S/ 55 55 C Q1 Q2 Q3 D5``; ``sequenced`` (Q1's class not 0x5), ``seq`` (Q1[3:0] Q2 Q3,
    0 unless sequenced) and ``start_ok`` (class 0x5, or class 0xE and C = CRC-8 of Q1…Q3)
    read from it (Ref: spec v1.1 §5, §7).

    Members
    -------
    rxd, rxc : In(64), In(8)
    word : Out(WordKind)

    Latency: combinational. Throughput: one word per cycle.
    """
    def __init__(self):
        super().__init__({**xgmii_rx(), "word": Out(WordKind())})

    def elaborate(self, platform):
        m = Module()
        d, c = _xgmii_rx_lanes(self.rxd, self.rxc)
        w = self.word
        m.d.comb += [
            w.is_data.eq(self.rxc == 0),
            # Ref: spec §5 — LCW: 0x5C (control) in lane 0, lanes 1…7 data.
            w.is_lcw.eq((self.rxc == 0x01) & (d[0] == XgmiiControl.LCW)),
            w.has_error.eq(Cat(*(c[j] & (d[j] == XgmiiControl.ERROR) for j in range(8))).any()),
            w.has_start.eq(Cat(*(c[j] & (d[j] == XgmiiControl.START) for j in range(8))).any()),
        ]
        is_term = Signal(name="is_term")
        t_lane = Signal(range(8), name="term_lane")
        for t in reversed(range(8)):
            # Ref: spec §5 — /T/ in any lane, /I/ to the end of the word.
            match = (self.rxc == (0xFF << t) & 0xFF) & (d[t] == XgmiiControl.TERMINATE)
            for j in range(t + 1, 8):
                match &= d[j] == XgmiiControl.IDLE
            with m.If(match):
                m.d.comb += [is_term.eq(1), t_lane.eq(t)]
        plain = d[4][4:8] == FrameClass.UNSEQUENCED
        # Ref: spec v1.1 §5 — C = CRC-8 over Q1 Q2 Q3 (the LCW's CRC, a 24-bit XOR network).
        crc8 = OctetCrc(CRC8_SMBUS, 3)
        q_crc = crc8.next_state(m, Const(crc8.initial, 8), Cat(d[4], d[5], d[6]), 3,
                                "start_check")
        class_ok = d[4][4:8] == FrameClass.SEQUENCED
        # Ref: spec §5 — /S/ P P C Q1 Q2 Q3 SFD; a class other than 0x5 is a sequenced frame,
        # trusted only with class 0xE and a good C.
        m.d.comb += [
            w.good_start.eq((self.rxc == 0x01) & (d[0] == XgmiiControl.START)
                            & (d[1] == PREAMBLE_OCTET) & (d[2] == PREAMBLE_OCTET)
                            & (d[7] == SFD)),
            w.sequenced.eq(~plain),
            w.start_ok.eq(plain | (class_ok & (crc8.output(q_crc) == d[3]))),
            w.seq.eq(Mux(plain, 0, Cat(d[6], d[5], d[4][0:4]))),
            w.is_term.eq(is_term),
            w.term_lane.eq(t_lane),
        ]
        return m


class LcwReceiver(wiring.Component):
    """Take the LCWs out of the received words: check their crc8, offer the good ones.

    An LCW word (``word.is_lcw``) with a good crc8 over lanes 1…6 (type, p0…p4) in lane 7
    gives ``lcw.valid`` for one cycle; a bad one is dropped and counted (Ref: spec §5).

    Members
    -------
    rxd, rxc : In(64), In(8)
    word : In(WordKind)
    lcw : Out(stream.Signature(LcwLayout()))
        Never waits; one offered while ``ready`` is low is lost (``lcw_overruns``).
    count : Out(Counters)
        ``lcws``, ``lcw_crc_errors``, ``lcw_overruns``.

    Latency: LCW word on ``rxd`` in cycle c → ``lcw.valid`` in cycle c + 1.
    Throughput: one LCW per cycle.
    """
    COUNTERS = ("lcws", "lcw_crc_errors", "lcw_overruns")

    def __init__(self):
        super().__init__({**xgmii_rx(), "word": In(WordKind()),
                          "lcw": Out(stream.Signature(LcwLayout())),
                          "count": Out(Counters(self.COUNTERS))})

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)
        crc8 = OctetCrc(CRC8_SMBUS, 6)
        d, _ = _xgmii_rx_lanes(self.rxd, self.rxc)
        is_lcw = self.word.is_lcw
        lcw_crc = crc8.next_state(m, Const(crc8.initial, 8), Cat(*d[1:7]), 6, "lcw_crc8")
        lcw_ok = is_lcw & (crc8.output(lcw_crc) == d[7])
        m.d.sync += [self.lcw.valid.eq(lcw_ok),
                     self.lcw.payload.type.eq(d[1]),
                     self.lcw.payload.payload.eq(Cat(*reversed(d[2:7])))]
        counters["lcws"].increment(m, lcw_ok)
        counters["lcw_crc_errors"].increment(m, is_lcw & ~lcw_ok)
        counters["lcw_overruns"].increment(m, self.lcw.valid & ~self.lcw.ready)
        assert LCW_PAYLOAD_BITS == 40
        return m


class FcsCheck(wiring.Component):
    """Advance a frame's CRC-32 register over the received word, and check it at the end.

    The register runs over every word of the frame as 8 octets, with the control lanes (those
    of the /T/ word from /T/ on) fed as zero octets: one fixed matrix, no octet count. After the
    /T/ word in lane t it holds A^(8-t)·R, where R is the register after the data octets (body
    and FCS) and A the register's step over one zero octet. A is invertible, so the frame is
    good exactly when it equals A^(8-t)·residue, a constant per lane t: ``ok`` is a compare
    with one of 8 constants (Ref: spec §4). A void frame (its FCS inverted, spec v1.1 §7)
    leaves A^(8-t)·inverse residue: ``void`` is a compare with 8 other constants.

    Members
    -------
    rxd, rxc : In(64), In(8)
    io : In(FcsCheckRequest)

    Latency: combinational. Throughput: one word per cycle.
    """
    def __init__(self):
        super().__init__({**xgmii_rx(), "io": In(FcsCheckRequest())})

    def elaborate(self, platform):
        m = Module()
        fcs = OctetCrc(CRC32_ETHERNET, 8)
        _, c = _xgmii_rx_lanes(self.rxd, self.rxc)
        crc, io = self.io.crc, self.io
        lane_mask = Cat(*((~c[j]).replicate(8) for j in range(8)))
        m.d.comb += io.next.eq(fcs.next_state(m, crc, self.rxd & lane_mask, 8, "fcs_next"))
        crc_ok = Signal(name="fcs_ok")
        crc_void = Signal(name="fcs_void")
        with m.Switch(io.lane):
            for t in range(8):
                with m.Case(t):
                    m.d.comb += [crc_ok.eq(crc == fcs.residue_after_zeros(8 - t)),
                                 crc_void.eq(crc == fcs.inverse_residue_after_zeros(8 - t))]
        m.d.comb += [io.ok.eq(crc_ok), io.void.eq(crc_void)]
        return m


class MacRxFramer(wiring.Component):
    """Cut the received words into frame bodies: start, body words, /T/ or a bad end, checks.

    :class:`MacRx`'s frame rules and timing: a good start word opens a frame, data words are
    held one word (to know which octets are FCS) and delivered, a /T/ word ends it in two
    stages (first the CRC over it, the length checks and the last beat's octets; a cycle later
    the FCS check and the last beat), any other word ends it as bad; the beat goes out on ``o``
    from a register. Its ``elaborate`` is a little over ~120 lines because it is one state
    machine: each word's decision (deliver, end, drop, count) is made in one place.

    Members
    -------
    rxd, rxc : In(64), In(8)
    word : In(WordKind)
    fcs : Out(FcsCheckRequest)
        The frame's CRC register and the lane of the /T/ word being checked.
    end : Out(FrameEndRequest)
        The frame in its second stage, to :class:`FrameVerdict`.
    o : Out(stream.Signature(MacRxFrameLayout()))
    count : Out(Counters)
        ``bad_starts``, ``error_chars``, ``truncated``, ``too_long`` (cut while arriving, or
        found at /T/), ``overruns``.

    Latency: as :class:`MacRx` (body beat 2 cycles after its word, last beat 2 cycles after
    the /T/ word, 1 cycle after another ending word). Throughput: one word per cycle.
    """
    COUNTERS = ("bad_starts", "error_chars", "truncated", "too_long", "overruns")

    def __init__(self, max_body_octets):
        self._max = max_body_octets
        super().__init__({**xgmii_rx(), "word": In(WordKind()),
                          "fcs": Out(FcsCheckRequest()),
                          "end": Out(FrameEndRequest(_octets_shape(max_body_octets))),
                          "o": Out(stream.Signature(MacRxFrameLayout())),
                          "count": Out(Counters(self.COUNTERS))})

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)
        fcs = OctetCrc(CRC32_ETHERNET, 8)
        w = self.word
        is_data, is_lcw, is_term, t_lane = w.is_data, w.is_lcw, w.is_term, w.term_lane
        counters["overruns"].increment(m, self.o.valid & ~self.o.ready)

        IDLE, FRAME, DROP = range(3)
        state = Signal(range(3), name="state")
        limit = self._max + FCS_OCTETS
        cnt = Signal(_octets_shape(self._max), name="frame_octets")      # body + FCS octets so far
        no_room = Signal(name="frame_no_room")      # cnt + 8 > limit: a data word is too many
        crc = Signal(32, name="fcs_crc", init=fcs.initial)
        held = Signal(64, name="held_data")         # the last data word, not yet delivered
        held_valid = Signal(name="held_valid")
        delivered = Signal(name="delivered")        # a beat of this frame went out
        seq = Signal(20, name="frame_seq")
        seq_valid = Signal(name="frame_sequenced")
        start_ok = Signal(name="frame_start_ok")
        # Frame end, second stage: the /T/ word was on rxd in the previous cycle; its FCS check
        # and the last beat are done now.
        end_valid = Signal(name="end_valid")
        end_lane = Signal(range(8), name="end_term_lane")
        end_runt = Signal(name="end_runt")
        end_too_long = Signal(name="end_too_long")
        end_data = Signal(64, name="end_data")
        end_keep = Signal(8, name="end_keep")
        end_first = Signal(name="end_first")

        end_octets = Signal.like(cnt, name="end_octets")

        m.d.comb += [self.fcs.crc.eq(crc), self.fcs.lane.eq(end_lane)]
        crc_next = self.fcs.next
        m.d.comb += [self.end.valid.eq(end_valid), self.end.runt.eq(end_runt),
                     self.end.too_long.eq(end_too_long), self.end.fcs_ok.eq(self.fcs.ok),
                     self.end.fcs_void.eq(self.fcs.void),
                     self.end.start_ok.eq(start_ok),
                     self.end.octets.eq(end_octets)]

        # What goes on `o` next cycle.
        emit = Signal(name="emit")
        e_data = Signal(64, name="emit_data")
        e_keep = Signal(8, name="emit_keep")
        e_last = Signal(name="emit_last")
        e_error = Signal(name="emit_error")
        e_void = Signal(name="emit_void")
        e_first = Signal(name="emit_first")

        def deliver(data, keep, last, error=0):
            m.d.comb += [emit.eq(1), e_data.eq(data), e_keep.eq(keep), e_last.eq(last),
                         e_error.eq(error), e_first.eq(~delivered)]
            m.d.sync += delivered.eq(1)

        def end_bad(counter):
            # Deliver what is held as the frame's last beat, flagged as bad.
            deliver(held, Mux(held_valid, 0xFF, 0), 1, 1)
            counters[counter].increment(m, 1)
            m.d.sync += [state.eq(IDLE), held_valid.eq(0)]

        # Second stage of a frame ended by /T/. In this cycle the frame state machine is between
        # frames (at most on a new start word), so it delivers nothing itself.
        with m.If(end_valid):
            counters["too_long"].increment(m, ~end_runt & end_too_long)
            m.d.comb += [emit.eq(1), e_data.eq(end_data), e_keep.eq(end_keep), e_last.eq(1),
                         e_error.eq(self.end.error), e_void.eq(self.end.void),
                         e_first.eq(end_first)]
        m.d.sync += end_valid.eq(0)

        with m.Switch(state):
            with m.Case(FRAME):
                # The CRC register takes every word of the frame but LCWs (after a word that
                # ends the frame, bad or not, its value no longer matters).
                with m.If(~is_lcw):
                    m.d.sync += crc.eq(crc_next)
                with m.If(is_lcw):
                    pass        # Ref: spec §5 — the frame simply continues on the next word.
                with m.Elif(is_data):
                    with m.If(no_room):
                        end_bad("too_long")
                        m.d.sync += state.eq(DROP)
                    with m.Else():
                        with m.If(held_valid):
                            deliver(held, 0xFF, 0)
                        m.d.sync += [cnt.eq(cnt + 8), no_room.eq(cnt + 16 > limit),
                                     held.eq(self.rxd), held_valid.eq(1)]
                with m.Elif(w.has_error):
                    end_bad("error_chars")
                with m.Elif(is_term):
                    total = Signal.like(cnt, name="total_octets")
                    m.d.comb += total.eq(cnt + t_lane)
                    # First stage: the CRC over the /T/ word, the length checks and the last
                    # beat's octets; the FCS check and the last beat follow next cycle.
                    m.d.sync += [end_valid.eq(1), end_lane.eq(t_lane),
                                 end_runt.eq(total < FCS_OCTETS), end_too_long.eq(total > limit),
                                 end_octets.eq(total - FCS_OCTETS)]
                    m.d.sync += [state.eq(IDLE), held_valid.eq(0)]
                    with m.If(held_valid & (t_lane <= 4)):
                        # The held word is the last beat: t + 4 of its octets are body.
                        m.d.sync += [end_data.eq(held), end_keep.eq(count_to_keep(t_lane + 4, 8)),
                                     end_first.eq(~delivered)]
                    with m.Else():
                        with m.If(held_valid):
                            deliver(held, 0xFF, 0)
                        m.d.sync += [end_data.eq(self.rxd),
                                     end_keep.eq(Mux(t_lane >= 4, count_to_keep(t_lane - 4, 8),
                                                     0)),
                                     end_first.eq(~held_valid & ~delivered)]
                with m.Else():
                    end_bad("truncated")
            with m.Case(DROP):
                with m.If(~is_data & ~is_lcw):
                    m.d.sync += state.eq(IDLE)

        # A word holding /S/ anywhere: a new frame or a bad start, after whatever it ended.
        with m.If(w.has_start):
            with m.If(w.good_start):
                m.d.sync += [state.eq(FRAME), cnt.eq(0), no_room.eq(8 > limit),
                             crc.eq(fcs.initial),
                             held_valid.eq(0), delivered.eq(0),
                             seq.eq(w.seq), seq_valid.eq(w.sequenced),
                             start_ok.eq(w.start_ok)]
            with m.Else():
                counters["bad_starts"].increment(m, 1)
                m.d.sync += state.eq(DROP)

        beat = self.o.payload
        m.d.sync += [self.o.valid.eq(emit), beat.data.eq(e_data), beat.keep.eq(e_keep),
                     beat.last.eq(e_last), beat.first.eq(e_first),
                     beat.user.error.eq(e_error & e_last), beat.user.void.eq(e_void & e_last),
                     beat.user.seq.eq(seq), beat.user.sequenced.eq(seq_valid)]
        return m


class FrameVerdict(wiring.Component):
    """Judge and count a frame ended by /T/, in its second stage.

    In order: a runt (fewer than 4 octets), too long, a failed start check, a void frame (the
    FCS exactly inverted, spec v1.1 §7: ``void`` high), an FCS error, or good (``frames``, and
    its body ``octets``); ``error`` is high for all but a good frame.

    Members
    -------
    end : In(FrameEndRequest)
    count : Out(Counters)
        ``frames``, ``octets``, ``runts``, ``start_check_errors``, ``void_frames``,
        ``fcs_errors`` (``too_long`` is the framer's).

    Latency: ``error`` is combinational; ``octets`` is added one cycle after ``frames``
    (registered first: keeps the octet adder off the FCS check's path).
    Throughput: one frame end per cycle.
    """
    COUNTERS = ("frames", "octets", "start_check_errors", "fcs_errors", "void_frames", "runts")

    def __init__(self, max_body_octets):
        super().__init__({"end": In(FrameEndRequest(_octets_shape(max_body_octets))),
                          "count": Out(Counters(self.COUNTERS))})

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)
        end = self.end
        octets_en = Signal(name="octets_en")
        octets_add = Signal.like(end.octets, name="octets_add")
        m.d.sync += octets_en.eq(0)
        counters["octets"].add(m, octets_add, octets_en)
        error = end.runt | end.too_long | ~end.start_ok | ~end.fcs_ok
        length_ok = ~end.runt & ~end.too_long
        # Ref: spec v1.1 §7 — a void frame is dropped like a bad one but is no FCS error.
        void = length_ok & end.start_ok & end.fcs_void
        m.d.comb += [end.error.eq(error), end.void.eq(void)]
        with m.If(end.valid):
            counters["runts"].increment(m, end.runt)
            counters["start_check_errors"].increment(m, length_ok & ~end.start_ok)
            counters["void_frames"].increment(m, void)
            counters["fcs_errors"].increment(m, length_ok & end.start_ok & ~end.fcs_ok & ~void)
            counters["frames"].increment(m, ~error)
            m.d.sync += [octets_en.eq(~error), octets_add.eq(end.octets)]
        return m
