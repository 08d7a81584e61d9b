"""LLR receiver: in-order acceptance, cumulative ACKs, one NACK then discard-until-expected, and
the receive frame buffer (spec §7).

Ref: spec §7 — the receiver accepts a frame only if its FCS is good and its sequence number is
the expected one; it acknowledges cumulatively with LLR_ACK at least every ``ack_every`` frames
or ``ack_timer`` cycles; on a bad FCS, a missing frame or an out-of-order seq it sends one
LLR_NACK carrying the last good seq, then discards everything until the expected seq arrives.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import enum, stream, wiring
from amaranth.lib.memory import Memory, ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..buffer import FRAME_BUFFER_OCTETS, FrameWordLayout, MAX_FRAME_WORDS, read_committed
from ..compose import forward
from ..counters import CounterBank, Counters
from ..params import Flag, IntRange, Param, parameters
from ..stream import PacketStream
from ..wire import LLR_PAYLOAD, LcwType
from .layouts import (LCW_PAYLOAD_BITS, LcwEvents, LcwStream, MacRxFrameLayout, MAC_BEAT_OCTETS,
                      SEQ_BITS, CutFrameStream)

__all__ = ["LlrRx", "RxState", "ACK_EVERY", "ACK_TIMER", "RX_CUT_THROUGH",
           "RxAcceptor", "AckCadence", "RxLcwSender", "RxBufferWriter", "RxDelivery",
           "RxCutThrough"]

_SEQ_HALF = 1 << (SEQ_BITS - 1)


class RxState(enum.Enum, shape=2):
    """LLR receiver states (spec §7)."""
    OFF = 0
    SEND_ACKS = 1
    NACK_SENT = 2


ACK_EVERY = Param("an LLR_ACK at least every this many frames", IntRange(1, 255))
ACK_TIMER = Param("... or this many cycles after the oldest unacknowledged frame",
                  IntRange(1, 65535))
RX_CUT_THROUGH = Param("1: no receive buffer, frames pass on as they arrive with a late "
                       "verdict (for a layer above that buffers them, CBFC)", Flag())


@parameters(buffer_octets=FRAME_BUFFER_OCTETS, ack_every=ACK_EVERY, ack_timer=ACK_TIMER,
            cut_through=RX_CUT_THROUGH)
class LlrRx(wiring.Component):
    """Accept the frames of one link direction in order, acknowledge them, ask for replays, and
    hand the good ones to the upper layer (spec §7).

    Frames from :class:`MacRx` on ``mac`` are judged on their first beat (sequence number) and
    their last (``user.error``):

    * **OFF** (until the partner's LLR_INIT): sequenced frames are discarded.
    * **Expected seq**, room for a longest frame in the buffer: the frame is taken as it
      arrives; at its last beat it is committed (good) or rolled back (bad: counted, and one
      LLR_NACK). Only a committed frame advances the expected seq and is acknowledged. The arrival of the expected seq ends a discard period
      (the seq is in the start word, outside the FCS), so when that frame fails its FCS it is
      a new loss and gets its own NACK, even in NACK_SENT: a replay hit by an error is asked
      for again at once instead of after the sender's replay timer.
    * **Older seq** (a resend of a frame already accepted): discarded, counted as a duplicate,
      and an LLR_ACK is sent so that the sender learns how far we are.
    * **Newer seq** (a frame went missing) or **no room**: discarded; in SEND_ACKS one
      LLR_NACK (seq = last good) and NACK_SENT; in NACK_SENT silently (spec: no further NACK).
    * **Unsequenced** frames (class 0x5) are delivered when good, outside the LLR.
    * **Void** frames (``user.void`` on the last beat, spec v1.1 §7) are dropped without a
      NACK and without any change of state or expected seq, and counted (``void_frames``).
      One with a corrupted FCS arrives as an ordinary bad frame.
    * **LLR_INIT** (seq, nonce): the expected seq becomes ``seq``, state SEND_ACKS, a frame
      being received is dropped, and LLR_INIT_ECHO returns the payload.

    ACKs are cumulative (newest accepted seq): one is sent once ``ack_every`` frames are
    unacknowledged, or ``ack_timer`` cycles after the oldest unacknowledged one.

    **Buffered** (default): the receive buffer (``buffer_octets`` of block RAM) holds
    committed frames until ``o`` takes them; ``o`` is back-pressured freely. A frame that finds
    no room is refused and replayed later by the sender, so back-pressure on ``o`` never loses
    a frame. Latency: the first beat of a frame is offered on ``o`` 2 cycles after its last
    beat arrives on ``mac`` (store and forward: a frame is known good only at its end).

    **Cut-through** (``cut_through=1``, spec v1.1 §7): no buffer. Every beat of a frame taken
    is offered on ``o`` (:func:`~.layouts.CutFrameStream`, never waits) 1 cycle after it
    arrives, and the frame's last beat carries the verdict: ``error`` = 1 for a bad frame
    (and for a frame an LLR_INIT cut short: a last beat ``keep`` = 0, ``error`` = 1 ends it),
    which the layer above must roll back. The layer above must have room for every frame its
    credits allow (CBFC).

    Throughput: one beat per cycle.

    Members
    -------
    mac : In(stream.Signature(MacRxFrameLayout))
        Frames from the MAC (always ready: the line cannot wait).
    o : Out(PacketStream(8)), or Out(CutFrameStream()) when cut through
        Accepted frame bodies, in order.
    lcw_rx : In(LcwEvents())
        LCWs from the partner; LLR_INIT is used.
    lcw_tx : Out(LcwStream())
        LLR_NACK, LLR_INIT_ECHO and LLR_ACK to send (in that priority).
    state : Out(RxState)
    count : Out(Counters)
        Frames accepted, bad frames, NACKs and ACKs sent, duplicates, sequence errors, frames
        discarded while waiting for a replay or before INIT, frames refused for lack of room,
        unsequenced frames delivered, INITs received, void frames dropped.
    """
    COUNTERS = ("frames_received", "bad_frames", "nacks_sent", "acks_sent", "duplicates",
                "seq_errors", "discarded", "overflows", "unsequenced", "inits_received",
                "void_frames")

    def __init__(self, buffer_octets=8192, ack_every=8, ack_timer=128, cut_through=0):
        self.buffer_words = buffer_octets // MAC_BEAT_OCTETS
        self.ack_every = ack_every
        self.ack_timer = ack_timer
        self.cut_through = cut_through
        super().__init__({
            "mac": In(stream.Signature(MacRxFrameLayout())),
            "o": Out(CutFrameStream() if cut_through else PacketStream(MAC_BEAT_OCTETS)),
            "lcw_rx": In(LcwEvents()),
            "lcw_tx": Out(LcwStream()),
            "state": Out(RxState),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        # mac ─▶ RxAcceptor ─ frame ─▶ RxBufferWriter ─▶ buffer ─▶ RxDelivery ─▶ o
        #          │                └▶ RxCutThrough ─▶ o            (cut_through)
        #          └ events ─▶ AckCadence ─▶ RxLcwSender ─▶ lcw_tx
        m = Module()
        m.submodules.acceptor = acceptor = RxAcceptor()
        m.submodules.cadence = cadence = AckCadence(self.ack_every, self.ack_timer)
        m.submodules.sender = sender = RxLcwSender()
        wiring.connect(m, wiring.flipped(self.mac), acceptor.mac)
        wiring.connect(m, wiring.flipped(self.lcw_rx), acceptor.lcw_rx)
        wiring.connect(m, acceptor.events, cadence.events, sender.events)
        wiring.connect(m, sender.lcw_tx, wiring.flipped(self.lcw_tx))
        m.d.comb += [
            cadence.ack_sent.eq(sender.ack_sent),
            sender.ack_due.eq(cadence.due),
            self.state.eq(acceptor.events.state),
        ]
        for part in (acceptor, sender):
            forward(m, self.count, part.count)

        if self.cut_through:
            m.submodules.cut = cut = RxCutThrough()
            wiring.connect(m, acceptor.frame, cut.frame)
            wiring.connect(m, cut.o, wiring.flipped(self.o))
            # Every frame is passed on as it is committed: the LLR holds none.
            m.d.comb += acceptor.room.eq(1)
            return m

        W = self.buffer_words
        buffer = Memory(shape=FrameWordLayout(), depth=W, init=[])
        m.submodules.buffer = buffer
        m.submodules.writer = writer = RxBufferWriter(W)
        m.submodules.delivery = delivery = RxDelivery(W)
        wiring.connect(m, acceptor.frame, writer.frame)
        wiring.connect(m, writer.buffer, buffer.write_port())
        wiring.connect(m, delivery.buffer, buffer.read_port())
        wiring.connect(m, delivery.o, wiring.flipped(self.o))
        m.d.comb += [
            acceptor.room.eq(writer.room),
            writer.rd_ptr.eq(delivery.rd_ptr),
            delivery.commit.eq(writer.commit),
        ]
        return m


def RxFrameTake():
    """A frame beat :class:`RxAcceptor` takes, as its writer sees it: ``en`` a beat is taken
    (``beat``: data, keep, last); ``error`` with a last beat: the frame is bad, roll it back;
    ``cancel``: an LLR_INIT drops the frame being taken (it has no last beat; a last beat in
    the same cycle is kept unless it is bad). All of the current cycle."""
    return wiring.Signature({"en": Out(1), "beat": Out(FrameWordLayout()), "error": Out(1),
                             "cancel": Out(1)})


def RxEvents():
    """What :class:`RxAcceptor` tells the LCW side, all of the current cycle: ``state``;
    ``last_good`` the newest sequenced frame accepted (expected − 1); strobes ``nack`` (ask for
    a replay from ``last_good`` + 1), ``ack`` (a duplicate arrived: say how far we are),
    ``committed`` (a sequenced frame was accepted), ``init`` (LLR_INIT arrived, its payload in
    ``init_payload``)."""
    return wiring.Signature({"state": Out(RxState), "last_good": Out(SEQ_BITS),
                             "nack": Out(1), "ack": Out(1), "committed": Out(1),
                             "init": Out(1), "init_payload": Out(LCW_PAYLOAD_BITS)})


class RxAcceptor(wiring.Component):
    """Judge each frame from the MAC: take the accepted ones, commit or roll them back.

    The rules are :class:`LlrRx`'s: a frame is taken on its first beat (expected seq or
    unsequenced, and ``room`` for a longest frame), passed on ``frame`` as it arrives, and
    committed or rolled back at its last beat (``user.error``). The receiver state (OFF,
    SEND_ACKS, NACK_SENT) and the expected seq live here; an LLR_INIT resets them and cancels
    a frame still arriving.

    Members
    -------
    mac : In(stream.Signature(MacRxFrameLayout))
        Frames from the MAC (always ready).
    lcw_rx : In(LcwEvents())
        LCWs from the partner; LLR_INIT is used.
    room : In(1)
        A longest frame fits where frames go (the receive buffer, or always when cut through).
    frame : Out(RxFrameTake)
        The beats taken, the verdict at the last, a cancel.
    events : Out(RxEvents)
    count : Out(Counters)
        All of :class:`LlrRx`'s counters but ``acks_sent``.

    Latency: combinational from ``mac`` to ``frame`` and ``events`` (strobes are of the cycle
    of the beat or LCW). Throughput: one beat per cycle.

    ``in_frame`` (beats of a frame have arrived, its last not yet), ``taking`` (... and
    it is being taken) and ``expected`` (the sequence number accepted next) are its state,
    plain signals outside the signature for the formal checks (sim/formal/llr.py).
    """
    COUNTERS = ("frames_received", "bad_frames", "nacks_sent", "duplicates", "seq_errors",
                "discarded", "overflows", "unsequenced", "inits_received", "void_frames")

    def __init__(self):
        self.in_frame = Signal()
        self.taking = Signal()
        self.expected = Signal(SEQ_BITS)
        super().__init__({
            "mac": In(stream.Signature(MacRxFrameLayout())),
            "lcw_rx": In(LcwEvents()),
            "room": In(1),
            "frame": Out(RxFrameTake()),
            "events": Out(RxEvents()),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)
        ev, room, frame = self.events, self.room, self.frame

        state = Signal(RxState)
        expected = self.expected
        last_good = Signal(SEQ_BITS)
        m.d.comb += [ev.state.eq(state), last_good.eq(expected - 1), ev.last_good.eq(last_good)]

        beat = self.mac.payload
        m.d.comb += self.mac.ready.eq(1)
        arrive = self.mac.valid
        in_frame, taking = self.in_frame, self.taking
        first = arrive & ~in_frame
        distance = Signal(SEQ_BITS)
        m.d.comb += distance.eq(beat.user.seq - expected)
        # An equality, not ``distance == 0``: acceptance (which every beat's path waits for)
        # does not wait for the subtraction; only the duplicate count does.
        is_expected = beat.user.seq == expected
        is_old = distance >= _SEQ_HALF
        accept_now = Signal()          # the first beat of this frame is taken
        with m.If(first):
            with m.If(~beat.user.sequenced):
                m.d.comb += accept_now.eq(room)
            with m.Elif(state != RxState.OFF):
                m.d.comb += accept_now.eq(is_expected & room)
        writing = (first & accept_now) | (arrive & in_frame & taking)
        m.d.comb += [
            frame.en.eq(writing),
            frame.beat.data.eq(beat.data),
            frame.beat.keep.eq(beat.keep),
            frame.beat.last.eq(beat.last),
            frame.error.eq(beat.user.error),
        ]

        def ask_nack(always=False):
            # One NACK per loss: from SEND_ACKS, or (``always``) when the expected frame
            # itself arrived and failed, which ends the discard period and starts a new loss.
            with m.If((state == RxState.SEND_ACKS) | always):
                m.d.comb += ev.nack.eq(1)
                m.d.sync += state.eq(RxState.NACK_SENT)
                counters["nacks_sent"].increment(m, 1)

        with m.If(arrive):
            m.d.sync += in_frame.eq(~beat.last)
            with m.If(first):
                m.d.sync += taking.eq(accept_now & ~beat.last)

        with m.If(first & beat.user.sequenced & (state != RxState.OFF) & ~accept_now):
            with m.If(is_old):
                counters["duplicates"].increment(m, 1)
                m.d.comb += ev.ack.eq(1)
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

        # Ref: spec v1.1 §7 — a void frame is dropped silently: no NACK, no change of state.
        counters["void_frames"].increment(m, arrive & beat.last & beat.user.void)
        with m.If(writing & beat.last):
            with m.If(beat.user.error):
                with m.If(~beat.user.void):
                    counters["bad_frames"].increment(m, 1)
                    with m.If(beat.user.sequenced):
                        ask_nack(always=True)
            with m.Else():
                with m.If(beat.user.sequenced):
                    m.d.comb += ev.committed.eq(1)
                    m.d.sync += [expected.eq(expected + 1), state.eq(RxState.SEND_ACKS)]
                    counters["frames_received"].increment(m, 1)
                with m.Else():
                    counters["unsequenced"].increment(m, 1)

        lcw = self.lcw_rx
        init = lcw.valid & (lcw.payload.type == LcwType.LLR_INIT)
        counters["inits_received"].increment(m, init)
        with m.If(init):
            m.d.sync += [
                expected.eq(LLR_PAYLOAD.layout(lcw.payload.payload).seq),
                state.eq(RxState.SEND_ACKS),
                taking.eq(0),
            ]
        # A frame ending now came before the INIT and is kept; one still arriving is dropped
        # (it belongs to the old sequence).
        m.d.comb += frame.cancel.eq(init & (taking | writing)
                                    & ~(writing & beat.last & ~beat.user.error))

        m.d.comb += [
            ev.init.eq(init),
            ev.init_payload.eq(lcw.payload.payload),
        ]
        return m


class RxBufferWriter(wiring.Component):
    """Write the frames :class:`RxAcceptor` takes into the receive buffer; commit the good
    ones, roll back the bad and cancelled ones.

    Members
    -------
    frame : In(RxFrameTake)
    buffer : Out(WritePort.Signature(FrameWordLayout))
        Write port of the receive buffer.
    rd_ptr : In(addr bits + 1)
        The reader's pointer (:class:`RxDelivery`): the words before it are free.
    room : Out(1)
        A longest frame fits (registered pointers, combinational compare).
    commit : Out(addr bits + 1)
        End of the committed words.

    Latency: a beat is written in the cycle it is taken; ``commit`` moves in the cycle after
    a frame's last beat. Throughput: one beat per cycle.

    ``wr_ptr`` (the next word written; it runs ahead of ``commit`` while a frame is written)
    is its state, a plain signal outside the signature for the formal checks
    (sim/formal/llr.py).
    """
    def __init__(self, words):
        self.words = words
        aw = exact_log2(words)
        self.wr_ptr = Signal(aw + 1)
        super().__init__({
            "frame": In(RxFrameTake()),
            "buffer": Out(WritePort.Signature(addr_width=aw, shape=FrameWordLayout()).flip()),
            "rd_ptr": In(aw + 1),
            "room": Out(1),
            "commit": Out(aw + 1),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.words
        AW = exact_log2(W)
        frame, wr = self.frame, self.buffer
        wr_ptr = self.wr_ptr
        commit = Signal(AW + 1)
        free = Signal(AW + 1)
        m.d.comb += [free.eq(W - (wr_ptr - self.rd_ptr)[:AW + 1]),
                     self.room.eq(free >= MAX_FRAME_WORDS)]
        m.d.comb += [wr.addr.eq(wr_ptr[:AW]), wr.data.eq(frame.beat), wr.en.eq(frame.en)]
        good_end = frame.en & frame.beat.last & ~frame.error
        with m.If(frame.en):
            m.d.sync += wr_ptr.eq(wr_ptr + 1)
        with m.If(good_end):
            m.d.sync += commit.eq(wr_ptr + 1)
        with m.Elif((frame.en & frame.beat.last) | frame.cancel):
            m.d.sync += wr_ptr.eq(commit)             # roll the frame back
        m.d.comb += self.commit.eq(commit)
        return m


class RxCutThrough(wiring.Component):
    """Pass the frames :class:`RxAcceptor` takes straight on, the verdict on the last beat.

    Each beat taken is offered on ``o`` the next cycle; the frame's last beat has ``error`` =
    1 when the frame is bad. A cancelled frame (LLR_INIT) ends with a last beat ``error`` = 1
    (``keep`` = 0 unless a beat was taken in that cycle), so every frame begun on ``o`` ends
    there and the layer above rolls back every bad one.

    Members
    -------
    frame : In(RxFrameTake)
    o : Out(CutFrameStream())
        Never waits: the layer above keeps up (CBFC gives it room for every frame).

    Latency: 1 cycle (a register). Throughput: one beat per cycle.

    ``open_`` (a frame has begun on ``o`` and not ended) is its state, a plain signal outside
    the signature for the formal checks (sim/formal/llr.py).
    """
    def __init__(self):
        self.open_ = Signal()
        super().__init__({"frame": In(RxFrameTake()), "o": Out(CutFrameStream())})

    def elaborate(self, platform):
        m = Module()
        frame, o = self.frame, self.o
        out = o.payload
        open_ = self.open_
        ends = (frame.en & frame.beat.last) | frame.cancel
        m.d.sync += [
            o.valid.eq(frame.en | frame.cancel),
            out.data.eq(frame.beat.data),
            out.keep.eq(Mux(frame.en, frame.beat.keep, 0)),
            out.first.eq(~open_),
            out.last.eq(ends),
            out.user.error.eq(((frame.en & frame.beat.last) & frame.error) | frame.cancel),
        ]
        with m.If(frame.en | frame.cancel):
            m.d.sync += open_.eq(~ends)
        return m


class AckCadence(wiring.Component):
    """Say when a cumulative LLR_ACK is due.

    Counts the sequenced frames accepted since the last ACK (or LLR_INIT) and the cycles since
    the oldest of them; an ACK is ``due`` in SEND_ACKS once ``ack_every`` frames are
    unacknowledged or ``ack_timer`` cycles have passed, except in the cycle of an LLR_INIT.

    Members
    -------
    events : In(RxEvents)
        ``committed``, ``init`` and ``state`` are used.
    ack_sent : In(1)
        An LLR_ACK left this cycle (:class:`RxLcwSender`).
    due : Out(1)

    Latency: ``due`` follows the counts (registered) combinationally: one cycle after the frame
    or cycle that reaches the limit.
    Throughput: one accepted frame per cycle.
    """
    def __init__(self, ack_every, ack_timer):
        self.ack_every, self.ack_timer = ack_every, ack_timer
        super().__init__({
            "events": In(RxEvents()),
            "ack_sent": In(1),
            "due": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        ev = self.events
        init = ev.init
        # A commit goes into a register first (``committed``) and is added to the count in the
        # next cycle, inside ``unacked``: the acceptance's verdict (the sequence compare) ends
        # in a flip-flop instead of running on through the count's adder. ``unacked`` is
        # always the count of the cycle before plus that register, so ``due`` and the age see
        # exactly the counts they would see with the commit counted at once.
        committed = Signal()
        m.d.sync += committed.eq(ev.committed)
        counted = Signal(8)             # frames accepted and not yet acknowledged
        unacked = Signal(8)
        m.d.comb += unacked.eq(counted + committed)
        ack_age = Signal(16)
        with m.If(self.ack_sent | init):
            # This cycle's commit (if any) reaches ``committed`` next cycle and is counted then.
            m.d.sync += [counted.eq(0), ack_age.eq(0)]
        with m.Else():
            m.d.sync += counted.eq(unacked)
            with m.If(unacked != 0):
                m.d.sync += ack_age.eq(ack_age + 1)
        m.d.comb += self.due.eq(
            ((unacked >= self.ack_every) | ((unacked != 0) & (ack_age >= self.ack_timer)))
            & (ev.state == RxState.SEND_ACKS) & ~init)
        return m


class RxLcwSender(wiring.Component):
    """Send the receiver's LCWs: LLR_NACK, then LLR_INIT_ECHO, then LLR_ACK.

    Each kind is one pending flag, set by its request and cleared when that LCW leaves:
    ``nack`` asks for a NACK, ``ack`` and ``ack_due`` for an ACK, both of ``last_good`` as it
    is when the LCW leaves (for a NACK held back by the MAC, a frame committed meanwhile only
    moves it forward, and the sender then replays less); ``init`` asks for the echo of its
    payload and cancels a pending NACK and ACK. No register waits on a request's logic but
    the flag itself.

    Members
    -------
    events : In(RxEvents)
        ``nack``, ``ack``, ``init``, ``init_payload`` and ``last_good`` are used.
    ack_due : In(1)
        From :class:`AckCadence`.
    lcw_tx : Out(LcwStream())
    ack_sent : Out(1)
        An LLR_ACK is taken on ``lcw_tx`` this cycle.
    count : Out(Counters)
        LLR_ACKs sent.

    Latency: a request in cycle *t* is offered on ``lcw_tx`` in *t* + 1.
    Throughput: one LCW per cycle; a request of a kind already pending merges with it.
    """
    COUNTERS = ("acks_sent",)

    def __init__(self):
        super().__init__({
            "events": In(RxEvents()),
            "ack_due": In(1),
            "lcw_tx": Out(LcwStream()),
            "ack_sent": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)
        ev = self.events

        nack_pending = Signal()
        ack_pending = Signal()
        echo_pending = Signal()
        echo_payload = Signal(40)
        with m.If(ev.nack):
            m.d.sync += nack_pending.eq(1)
        with m.If(ev.ack):
            m.d.sync += ack_pending.eq(1)
        with m.If(ev.init):
            m.d.sync += [echo_pending.eq(1), echo_payload.eq(ev.init_payload),
                         nack_pending.eq(0), ack_pending.eq(0)]
        with m.If(self.ack_due):
            m.d.sync += ack_pending.eq(1)

        tx = self.lcw_tx
        tx_seq = LLR_PAYLOAD.layout(tx.payload.payload).seq
        with m.If(nack_pending):
            m.d.comb += [tx.payload.type.eq(LcwType.LLR_NACK), tx_seq.eq(ev.last_good)]
        with m.Elif(echo_pending):
            m.d.comb += [tx.payload.type.eq(LcwType.LLR_INIT_ECHO),
                         tx.payload.payload.eq(echo_payload)]
        with m.Else():
            m.d.comb += [tx.payload.type.eq(LcwType.LLR_ACK), tx_seq.eq(ev.last_good)]
        m.d.comb += tx.valid.eq(nack_pending | echo_pending | ack_pending)
        sent = tx.valid & tx.ready
        with m.If(sent):
            with m.If(nack_pending):
                m.d.sync += nack_pending.eq(0)
            with m.Elif(echo_pending):
                m.d.sync += echo_pending.eq(0)
            with m.Else():
                m.d.sync += ack_pending.eq(0)
                m.d.comb += self.ack_sent.eq(1)
        counters["acks_sent"].increment(m, self.ack_sent)
        return m


class RxDelivery(wiring.Component):
    """Hand the committed frames of the receive buffer to the upper layer.

    Reads words up to ``commit`` onto ``o`` (one output register, see
    :func:`~ethlink.rtl.buffer.read_committed`).

    Members
    -------
    buffer : Out(ReadPort.Signature(FrameWordLayout))
        Synchronous read port of the receive buffer.
    commit : In(addr bits + 1)
    o : Out(PacketStream(8))
    rd_ptr : Out(addr bits + 1)
        The read pointer: the words before it are free.

    Latency: a word is read in the first cycle ``commit`` covers it and offered on ``o`` in the
    next. Throughput: one beat per cycle.
    """
    def __init__(self, words):
        self.words = words
        aw = exact_log2(words)
        super().__init__({
            "buffer": Out(ReadPort.Signature(addr_width=aw, shape=FrameWordLayout()).flip()),
            "commit": In(aw + 1),
            "o": Out(PacketStream(MAC_BEAT_OCTETS)),
            "rd_ptr": Out(aw + 1),
        })

    def elaborate(self, platform):
        m = Module()
        rd_ptr = Signal(len(self.rd_ptr))
        read_committed(m, self.buffer, rd_ptr, self.commit, self.o)
        m.d.comb += self.rd_ptr.eq(rd_ptr)
        return m
