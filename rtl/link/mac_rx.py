"""EthLink MAC receiver: 64-bit XGMII words to frame bodies and LCWs (spec §4, §5).

Ref: spec §4 (FCS), §5 (start word, /T/, LCW, crc8), §7 (the sequence number in the start
word). The word-level mapping and the bad-input rules are in docs/mac.md.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.crc.catalog import CRC8_SMBUS, CRC32_ETHERNET
from amaranth.lib.wiring import In, Out

from ..counters import CounterBank, Counters
from ..params import IntRange, Param, parameters
from ..stream import count_to_keep
from ..wire import MAX_BODY_OCTETS, PREAMBLE_OCTET, SFD, FrameClass, XgmiiControl
from .crc import OctetCrc
from .layouts import LCW_PAYLOAD_BITS, LcwLayout, MacRxFrameLayout

__all__ = ["MacRx", "MAX_BODY"]

FCS_OCTETS = 4
#: Ref: spec §4 — bodies are up to MAX_BODY_OCTETS octets; a receiver may take longer ones.
MAX_BODY = Param("largest body accepted, in octets", IntRange(8, 65535))


@parameters(max_body_octets=MAX_BODY)
class MacRx(wiring.Component):
    """Receive frame bodies and link control words from 64-bit XGMII words.

    Behaviour (Ref: spec §4, §5):

    * A frame starts only on a word with ``/S/`` in lane 0, lanes 1…7 data, ``55 55 55`` in
      lanes 1…3, a known class in Q1 (0xE, or 0x5 with Q1…Q3 = ``55 55 55``) and the SFD 0xD5
      in lane 7. Any other word holding ``/S/`` (in any lane) is a bad start
      (``count_bad_starts``): nothing is delivered and the words up to the next control word
      (other than an LCW) are ignored.
    * Inside a frame: all-data words are frame octets; a ``/T/`` word (data lanes, ``/T/``,
      ``/I/`` to the end) ends it; an LCW word (0x5C control in lane 0, lanes 1…7 data) is
      taken out and the frame continues on the next word. Any other word ends the frame as bad:
      ``count_error_chars`` if it holds ``/E/``, else ``count_truncated`` (``/I/``, a new
      ``/S/``, a malformed LCW…); such a word is then looked at as a word between frames, so a
      new ``/S/`` in lane 0 also starts the next frame.
    * A frame ended by ``/T/`` is, in this order: a runt (fewer than 4 octets,
      ``count_runts``), too long (more than ``max_body_octets`` body octets,
      ``count_too_long``), an FCS error (``count_fcs_errors``; checked by the CRC-32 residue
      over body and FCS, so the FCS position is not needed), or good (``count_frames``,
      ``count_octets``). A frame is known to be too long as soon as its octets exceed
      ``max_body_octets`` + 4: its last beat goes out at once and the rest is ignored.
    * Every frame that started delivers at least one beat and ends with exactly one ``last``
      beat; ``user.error`` on it marks a bad frame (each bad frame is counted once, by cause).
      A bad frame with nothing delivered yet (or a runt, or an empty-bodied frame) ends with a
      single beat ``keep`` = 0. The FCS is stripped.
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
        Frame bodies, 8 octets per beat; ``user.seq``/``user.sequenced`` (class 0xE; 0 for
        class 0x5) on every beat, ``user.error`` on the last beat.
    lcw : Out(stream.Signature(LcwLayout()))
        Received LCWs with a good crc8.
    count : Out(Counters)
        ``frames``, ``octets`` (body octets of good frames), ``bad_starts``, ``fcs_errors``,
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

    COUNTERS = ("frames", "octets", "bad_starts", "fcs_errors", "error_chars", "truncated",
                "too_long", "runts", "lcws", "lcw_crc_errors", "overruns", "lcw_overruns")

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
        m = Module()
        counters = CounterBank(m, self.count)

        fcs = OctetCrc(CRC32_ETHERNET, 8)
        crc8 = OctetCrc(CRC8_SMBUS, 6)
        d = [self.rxd[8 * j:8 * j + 8] for j in range(8)]
        c = [self.rxc[j] for j in range(8)]

        # --- classify the word on rxd ---
        is_data = Signal(name="is_data")
        is_lcw = Signal(name="is_lcw")
        has_e = Signal(name="has_error_char")
        has_s = Signal(name="has_start")
        good_start = Signal(name="good_start")
        is_term = Signal(name="is_term")
        t_lane = Signal(range(8), name="term_lane")
        m.d.comb += [
            is_data.eq(self.rxc == 0),
            # Ref: spec §5 — LCW: 0x5C (control) in lane 0, lanes 1…7 data.
            is_lcw.eq((self.rxc == 0x01) & (d[0] == XgmiiControl.LCW)),
            has_e.eq(Cat(*(c[j] & (d[j] == XgmiiControl.ERROR) for j in range(8))).any()),
            has_s.eq(Cat(*(c[j] & (d[j] == XgmiiControl.START) for j in range(8))).any()),
        ]
        for t in reversed(range(8)):
            # Ref: spec §5 — /T/ in any lane, /I/ to the end of the word.
            match = (self.rxc == (0xFF << t) & 0xFF) & (d[t] == XgmiiControl.TERMINATE)
            for j in range(t + 1, 8):
                match &= d[j] == XgmiiControl.IDLE
            with m.If(match):
                m.d.comb += [is_term.eq(1), t_lane.eq(t)]
        q1_class = d[4][4:8]
        sequenced = q1_class == FrameClass.SEQUENCED
        plain = (d[4] == PREAMBLE_OCTET) & (d[5] == PREAMBLE_OCTET) & (d[6] == PREAMBLE_OCTET)
        # Ref: spec §5 — /S/ P P P Q1 Q2 Q3 SFD, class 0xE (sequenced) or 0x5 (unsequenced).
        m.d.comb += good_start.eq((self.rxc == 0x01) & (d[0] == XgmiiControl.START)
                                  & (d[1] == PREAMBLE_OCTET) & (d[2] == PREAMBLE_OCTET)
                                  & (d[3] == PREAMBLE_OCTET) & (d[7] == SFD)
                                  & (sequenced | plain))

        # --- LCWs ---
        lcw_crc = crc8.next_state(m, Const(crc8.initial, 8), Cat(*d[1:7]), 6, "lcw_crc8")
        lcw_ok = is_lcw & (crc8.output(lcw_crc) == d[7])
        m.d.sync += [self.lcw.valid.eq(lcw_ok),
                     self.lcw.payload.type.eq(d[1]),
                     self.lcw.payload.payload.eq(Cat(*reversed(d[2:7])))]
        counters["lcws"].increment(m, lcw_ok)
        counters["lcw_crc_errors"].increment(m, is_lcw & ~lcw_ok)
        counters["lcw_overruns"].increment(m, self.lcw.valid & ~self.lcw.ready)
        counters["overruns"].increment(m, self.o.valid & ~self.o.ready)
        assert LCW_PAYLOAD_BITS == 40

        # --- frame state ---
        IDLE, FRAME, DROP = range(3)
        state = Signal(range(3), name="state")
        limit = self._max + FCS_OCTETS
        cnt = Signal(range(limit + 17), name="frame_octets")      # body + FCS octets so far
        no_room = Signal(name="frame_no_room")      # cnt + 8 > limit: a data word is too many
        crc = Signal(32, name="fcs_crc", init=fcs.initial)
        held = Signal(64, name="held_data")         # the last data word, not yet delivered
        held_valid = Signal(name="held_valid")
        delivered = Signal(name="delivered")        # a beat of this frame went out
        seq = Signal(20, name="frame_seq")
        seq_valid = Signal(name="frame_sequenced")
        # Frame end, second stage: the /T/ word was on rxd in the previous cycle; its FCS check
        # and the last beat are done now.
        end_valid = Signal(name="end_valid")
        end_lane = Signal(range(8), name="end_term_lane")
        end_runt = Signal(name="end_runt")
        end_too_long = Signal(name="end_too_long")
        end_data = Signal(64, name="end_data")
        end_keep = Signal(8, name="end_keep")
        end_first = Signal(name="end_first")

        octets_en = Signal(name="octets_en")
        octets_add = Signal.like(cnt, name="octets_add")
        end_octets = Signal.like(cnt, name="end_octets")
        m.d.sync += octets_en.eq(0)
        counters["octets"].add(m, octets_add, octets_en)

        # The CRC register runs over every word of the frame as 8 octets, with the control lanes
        # (those of the /T/ word from /T/ on) fed as zero octets: one fixed matrix, no octet count.
        # After the /T/ word in lane t it holds A^(8-t)·R, where R is the register after the
        # data octets (body and FCS) and A the register's step over one zero octet. A is
        # invertible, so the frame is good exactly when it equals A^(8-t)·residue, a constant
        # per lane t: the check is a compare with one of 8 constants, a cycle later.
        lane_mask = Cat(*((~c[j]).replicate(8) for j in range(8)))
        crc_next = fcs.next_state(m, crc, self.rxd & lane_mask, 8, "fcs_next")
        crc_ok = Signal(name="fcs_ok")
        with m.Switch(end_lane):
            for t in range(8):
                with m.Case(t):
                    m.d.comb += crc_ok.eq(crc == fcs.residue_after_zeros(8 - t))

        # What goes on `o` next cycle.
        emit = Signal(name="emit")
        e_data = Signal(64, name="emit_data")
        e_keep = Signal(8, name="emit_keep")
        e_last = Signal(name="emit_last")
        e_error = Signal(name="emit_error")
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
            error = end_runt | end_too_long | ~crc_ok
            counters["runts"].increment(m, end_runt)
            counters["too_long"].increment(m, ~end_runt & end_too_long)
            counters["fcs_errors"].increment(m, ~end_runt & ~end_too_long & ~crc_ok)
            counters["frames"].increment(m, ~error)
            # Registered first: keeps the octet adder off the FCS check's path.
            m.d.sync += [octets_en.eq(~error), octets_add.eq(end_octets)]
            m.d.comb += [emit.eq(1), e_data.eq(end_data), e_keep.eq(end_keep), e_last.eq(1),
                         e_error.eq(error), e_first.eq(end_first)]
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
                with m.Elif(has_e):
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
        with m.If(has_s):
            with m.If(good_start):
                m.d.sync += [state.eq(FRAME), cnt.eq(0), no_room.eq(8 > limit),
                             crc.eq(fcs.initial),
                             held_valid.eq(0), delivered.eq(0),
                             seq.eq(Mux(sequenced, Cat(d[6], d[5], d[4][0:4]), 0)),
                             seq_valid.eq(sequenced)]
            with m.Else():
                counters["bad_starts"].increment(m, 1)
                m.d.sync += state.eq(DROP)

        beat = self.o.payload
        m.d.sync += [self.o.valid.eq(emit), beat.data.eq(e_data), beat.keep.eq(e_keep),
                     beat.last.eq(e_last), beat.first.eq(e_first),
                     beat.user.error.eq(e_error & e_last),
                     beat.user.seq.eq(seq), beat.user.sequenced.eq(seq_valid)]
        return m
