"""LLR receiver: in-order acceptance, cumulative ACKs, one NACK then discard-until-expected, and
the receive frame buffer (spec §7).

Ref: spec §7 — the receiver accepts a frame only if its FCS is good and its sequence number is
the expected one; it acknowledges cumulatively with LLR_ACK at least every ``ack_every`` frames
or ``ack_timer`` cycles; on a bad FCS, a missing frame or an out-of-order seq it sends one
LLR_NACK carrying the last good seq, then discards everything until the expected seq arrives.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import enum, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..buffer import FRAME_BUFFER_OCTETS, FrameWordLayout, MAX_FRAME_WORDS, read_committed
from ..counters import CounterBank, Counters
from ..params import IntRange, Param, parameters
from ..stream import PacketStream
from ..wire import LLR_PAYLOAD, LcwType
from .layouts import LcwEvents, LcwStream, MacRxFrameLayout, MAC_BEAT_OCTETS, SEQ_BITS

__all__ = ["LlrRx", "RxState", "ACK_EVERY", "ACK_TIMER", "HELD_FRAME_BITS"]

_SEQ_HALF = 1 << (SEQ_BITS - 1)
#: Width of :attr:`LlrRx.held_frames`.
HELD_FRAME_BITS = 16


class RxState(enum.Enum, shape=2):
    """LLR receiver states (spec §7)."""
    OFF = 0
    SEND_ACKS = 1
    NACK_SENT = 2


ACK_EVERY = Param("an LLR_ACK at least every this many frames", IntRange(1, 255))
ACK_TIMER = Param("... or this many cycles after the oldest unacknowledged frame",
                  IntRange(1, 65535))


@parameters(buffer_octets=FRAME_BUFFER_OCTETS, ack_every=ACK_EVERY, ack_timer=ACK_TIMER)
class LlrRx(wiring.Component):
    """Accept the frames of one link direction in order, acknowledge them, ask for replays, and
    hand the good ones to the upper layer (spec §7).

    Frames from :class:`MacRx` on ``mac`` are judged on their first beat (sequence number) and
    their last (``user.error``):

    * **OFF** (until the partner's LLR_INIT): sequenced frames are discarded.
    * **Expected seq**, room for a longest frame in the buffer: the frame is written into the
      receive buffer as it arrives; at its last beat it is committed (good) or rolled back
      (bad: counted, and one LLR_NACK). The arrival of the expected seq ends a discard period
      (the seq is in the start word, outside the FCS), so when that frame fails its FCS it is
      a new loss and gets its own NACK, even in NACK_SENT: a replay hit by an error is asked
      for again at once instead of after the sender's replay timer.
    * **Older seq** (a resend of a frame already accepted): discarded, counted as a duplicate,
      and an LLR_ACK is sent so that the sender learns how far we are.
    * **Newer seq** (a frame went missing) or **no room**: discarded; in SEND_ACKS one
      LLR_NACK (seq = last good) and NACK_SENT; in NACK_SENT silently (spec: no further NACK).
    * **Unsequenced** frames (class 0x5) are delivered when good, outside the LLR.
    * **LLR_INIT** (seq, nonce): the expected seq becomes ``seq``, state SEND_ACKS, a frame
      being received is dropped, and LLR_INIT_ECHO returns the payload.

    ACKs are cumulative (newest accepted seq): one is sent once ``ack_every`` frames are
    unacknowledged, or ``ack_timer`` cycles after the oldest unacknowledged one.

    The receive buffer (``buffer_octets`` of block RAM) holds committed frames until ``o``
    takes them; ``o`` is back-pressured freely. A frame that finds no room is refused and
    replayed later by the sender, so back-pressure on ``o`` never loses a frame.

    Latency: the first beat of a frame is offered on ``o`` 2 cycles after its last beat arrives
    on ``mac`` (store and forward: a frame is known good only at its end). Throughput: one beat
    per cycle.

    Members
    -------
    mac : In(stream.Signature(MacRxFrameLayout))
        Frames from the MAC (always ready: the line cannot wait).
    o : Out(PacketStream(8))
        Accepted frame bodies, in order.
    lcw_rx : In(LcwEvents())
        LCWs from the partner; LLR_INIT is used.
    lcw_tx : Out(LcwStream())
        LLR_NACK, LLR_INIT_ECHO and LLR_ACK to send (in that priority).
    state : Out(RxState)
    held_frames : Out(16)
        Frames committed to the buffer (including one committing in this cycle) whose last
        beat has not left on ``o`` yet: an LCW arriving now overtook them (CBFC orders its
        CREDIT_SYNC behind them).
    count : Out(Counters)
        Frames accepted, bad frames, NACKs and ACKs sent, duplicates, sequence errors, frames
        discarded while waiting for a replay or before INIT, frames refused for lack of room,
        unsequenced frames delivered, INITs received.
    """
    COUNTERS = ("frames_received", "bad_frames", "nacks_sent", "acks_sent", "duplicates",
                "seq_errors", "discarded", "overflows", "unsequenced", "inits_received")

    def __init__(self, buffer_octets=8192, ack_every=8, ack_timer=128):
        self.buffer_words = buffer_octets // MAC_BEAT_OCTETS
        self.ack_every = ack_every
        self.ack_timer = ack_timer
        super().__init__({
            "mac": In(stream.Signature(MacRxFrameLayout())),
            "o": Out(PacketStream(MAC_BEAT_OCTETS)),
            "lcw_rx": In(LcwEvents()),
            "lcw_tx": Out(LcwStream()),
            "state": Out(RxState),
            "held_frames": Out(HELD_FRAME_BITS),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.buffer_words
        AW = exact_log2(W)
        counters = CounterBank(m, self.count)

        buffer = Memory(shape=FrameWordLayout(), depth=W, init=[])
        m.submodules.buffer = buffer
        wr = buffer.write_port()
        rd = buffer.read_port()

        state = Signal(RxState)
        expected = Signal(SEQ_BITS)
        last_good = Signal(SEQ_BITS)
        m.d.comb += [self.state.eq(state), last_good.eq(expected - 1)]

        # --- buffer pointers: wr_ptr runs ahead of commit while a frame is written --------
        wr_ptr = Signal(AW + 1)
        commit = Signal(AW + 1)
        rd_ptr = Signal(AW + 1)
        free = Signal(AW + 1)
        m.d.comb += free.eq(W - (wr_ptr - rd_ptr)[:AW + 1])
        room = free >= MAX_FRAME_WORDS

        # --- judging frames ---------------------------------------------------------------------
        beat = self.mac.payload
        m.d.comb += self.mac.ready.eq(1)
        arrive = self.mac.valid
        in_frame = Signal()            # beats of a frame have arrived, its last not yet
        taking = Signal()              # ... and it is being written
        first = arrive & ~in_frame
        distance = Signal(SEQ_BITS)
        m.d.comb += distance.eq(beat.user.seq - expected)
        is_expected = distance == 0
        is_old = distance >= _SEQ_HALF
        accept_now = Signal()          # the first beat of this frame is taken
        with m.If(first):
            with m.If(~beat.user.sequenced):
                m.d.comb += accept_now.eq(room)
            with m.Elif(state != RxState.OFF):
                m.d.comb += accept_now.eq(is_expected & room)
        writing = (first & accept_now) | (arrive & in_frame & taking)
        m.d.comb += [
            wr.addr.eq(wr_ptr[:AW]),
            wr.data.data.eq(beat.data),
            wr.data.keep.eq(beat.keep),
            wr.data.last.eq(beat.last),
            wr.en.eq(writing),
        ]

        nack_pending = Signal()
        nack_seq = Signal(SEQ_BITS)
        ack_pending = Signal()
        echo_pending = Signal()
        echo_payload = Signal(40)

        def ask_nack(always=False):
            # One NACK per loss: from SEND_ACKS, or (``always``) when the expected frame
            # itself arrived and failed, which ends the discard period and starts a new loss.
            with m.If((state == RxState.SEND_ACKS) | always):
                m.d.sync += [nack_pending.eq(1), nack_seq.eq(last_good),
                             state.eq(RxState.NACK_SENT)]
                counters["nacks_sent"].increment(m, 1)

        with m.If(arrive):
            m.d.sync += in_frame.eq(~beat.last)
            with m.If(first):
                m.d.sync += taking.eq(accept_now & ~beat.last)
        with m.If(writing):
            m.d.sync += wr_ptr.eq(wr_ptr + 1)

        committed = Signal()           # a sequenced frame was accepted this cycle
        with m.If(first & beat.user.sequenced & (state != RxState.OFF) & ~accept_now):
            with m.If(is_old):
                counters["duplicates"].increment(m, 1)
                m.d.sync += ack_pending.eq(1)
            with m.Elif(is_expected):
                counters["overflows"].increment(m, 1)
                ask_nack()
            with m.Elif(state == RxState.SEND_ACKS):
                counters["seq_errors"].increment(m, 1)
                ask_nack()
            with m.Else():
                counters["discarded"].increment(m, 1)
        counters["discarded"].increment(
            m, first & beat.user.sequenced & (state == RxState.OFF))
        counters["overflows"].increment(m, first & ~beat.user.sequenced & ~room)

        with m.If(writing & beat.last):
            with m.If(beat.user.error):
                m.d.sync += wr_ptr.eq(commit)             # roll the frame back
                counters["bad_frames"].increment(m, 1)
                with m.If(beat.user.sequenced):
                    ask_nack(always=True)
            with m.Else():
                m.d.sync += commit.eq(wr_ptr + 1)
                with m.If(beat.user.sequenced):
                    m.d.comb += committed.eq(1)
                    m.d.sync += [expected.eq(expected + 1), state.eq(RxState.SEND_ACKS)]
                    counters["frames_received"].increment(m, 1)
                with m.Else():
                    counters["unsequenced"].increment(m, 1)

        # --- LLR_INIT from the partner --------------------------------------------------------
        lcw = self.lcw_rx
        init = lcw.valid & (lcw.payload.type == LcwType.LLR_INIT)
        counters["inits_received"].increment(m, init)
        unacked = Signal(8)
        ack_age = Signal(16)
        with m.If(init):
            m.d.sync += [
                expected.eq(LLR_PAYLOAD.layout(lcw.payload.payload).seq),
                state.eq(RxState.SEND_ACKS),
                echo_pending.eq(1), echo_payload.eq(lcw.payload.payload),
                nack_pending.eq(0), ack_pending.eq(0),
                taking.eq(0),
            ]
            # A frame ending now came before the INIT and is kept; one still arriving is
            # dropped (it belongs to the old sequence).
            with m.If(writing & beat.last & ~beat.user.error):
                m.d.sync += wr_ptr.eq(wr_ptr + 1)
            with m.Else():
                m.d.sync += wr_ptr.eq(commit)

        # --- ACK cadence ----------------------------------------------------------------------
        ack_sent = Signal()
        with m.If(ack_sent | init):
            m.d.sync += [unacked.eq(committed), ack_age.eq(0)]
        with m.Else():
            with m.If(committed):
                m.d.sync += unacked.eq(unacked + 1)
            with m.If(unacked != 0):
                m.d.sync += ack_age.eq(ack_age + 1)
        with m.If(((unacked >= self.ack_every) | ((unacked != 0) & (ack_age >= self.ack_timer)))
                  & (state == RxState.SEND_ACKS) & ~init):
            m.d.sync += ack_pending.eq(1)

        # --- LCWs to send: NACK, then ECHO, then ACK --------------------------------------------
        tx = self.lcw_tx
        tx_seq = LLR_PAYLOAD.layout(tx.payload.payload).seq
        with m.If(nack_pending):
            m.d.comb += [tx.payload.type.eq(LcwType.LLR_NACK), tx_seq.eq(nack_seq)]
        with m.Elif(echo_pending):
            m.d.comb += [tx.payload.type.eq(LcwType.LLR_INIT_ECHO),
                         tx.payload.payload.eq(echo_payload)]
        with m.Else():
            m.d.comb += [tx.payload.type.eq(LcwType.LLR_ACK), tx_seq.eq(last_good)]
        m.d.comb += tx.valid.eq(nack_pending | echo_pending | ack_pending)
        sent = tx.valid & tx.ready
        with m.If(sent):
            with m.If(nack_pending):
                m.d.sync += nack_pending.eq(0)
            with m.Elif(echo_pending):
                m.d.sync += echo_pending.eq(0)
            with m.Else():
                m.d.sync += ack_pending.eq(0)
                m.d.comb += ack_sent.eq(1)
        counters["acks_sent"].increment(m, ack_sent)

        # --- buffer -> upper layer --------------------------------------------------------------
        delivered = read_committed(m, rd, rd_ptr, commit, self.o)

        # Committed frames not yet wholly delivered (every committed frame, sequenced or not).
        held = Signal(HELD_FRAME_BITS)
        committing = writing & beat.last & ~beat.user.error
        m.d.sync += held.eq(held + committing - delivered)
        m.d.comb += self.held_frames.eq(held + committing)
        return m
