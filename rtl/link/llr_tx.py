"""LLR transmitter: sequence numbers, the replay buffer, go-back-N replay, FLUSH and re-init
(spec §7).

Ref: spec §7 — every sequenced frame gets the next 20-bit sequence number; the sender keeps
every unacknowledged frame in a replay buffer; on LLR_NACK it replays from the frame after the
NACKed seq; when its replay timer expires with frames outstanding it replays them all; after
``replay_max`` consecutive replays without progress it enters FLUSH and re-inits with
LLR_INIT / LLR_INIT_ECHO; ACKs and NACKs outside the outstanding window are ignored and counted.
"""

from amaranth.hdl import Module, Signal, Mux, unsigned
from amaranth.lib import enum, stream, wiring
from amaranth.lib.memory import Memory, ReadPort, WritePort
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..buffer import FRAME_BUFFER_OCTETS, FrameWordLayout, MAX_FRAME_WORDS
from ..compose import broadcast, forward
from ..counters import CounterBank, Counters
from ..params import IntRange, Param, PowerOfTwo, parameters
from ..stream import PacketStream
from ..wire import LLR_PAYLOAD, LcwType
from .layouts import LcwEvents, LcwStream, MacTxFrameLayout, MAC_BEAT_OCTETS, SEQ_BITS

__all__ = ["LlrTx", "TxState", "REPLAY_MAX", "BUFFER_FRAMES", "AHEAD_WORDS",
           "DEFAULT_REPLAY_TIMEOUT",
           "AUTO_TIMEOUT_MARGIN", "TIMER_BITS", "seq_in_window", "ReplayWriter",
           "ReplayOccupancy", "ReplayReader", "ReplayControl", "LlrTxPhase"]
#: Replay timer while the round trip is not known yet (``replay_timeout`` = 0, no PONG yet).
DEFAULT_REPLAY_TIMEOUT = 4096
#: Automatic replay timer: twice the measured round trip plus this margin: two longest frames
#: in flight, and the wait of an ACK at the receiver (its ``ack_timer``, 128 cycles by
#: default, with room to spare), see docs/link.md.
AUTO_TIMEOUT_MARGIN = 2 * MAX_FRAME_WORDS + 256
TIMER_BITS = 20

_SEQ_MOD = 1 << SEQ_BITS


class TxState(enum.Enum, shape=3):
    """LLR transmitter states (spec §7). ADVANCE and REPLAY differ only in whether the frame
    being sent is new or a resend."""
    OFF = 0
    INIT = 1
    ADVANCE = 2
    REPLAY = 3
    FLUSH = 4


#: Ref: spec §7 — at most replay_max consecutive replays without progress before FLUSH.
REPLAY_MAX = Param("consecutive replays without progress before FLUSH", IntRange(1, 255))
BUFFER_FRAMES = Param("LLR replay buffer in frames", PowerOfTwo(2, 4096))


def seq_in_window(seq, low, high):
    """``seq`` lies in ``[low, high]`` modulo 2^20 (Amaranth values or ints); the window is
    shorter than 2^19 by construction."""
    return ((seq - low) % _SEQ_MOD if isinstance(seq, int)
            else (seq - low)[:SEQ_BITS]) <= ((high - low) % _SEQ_MOD if isinstance(high, int)
                                             else (high - low)[:SEQ_BITS])


#: Words written into the replay buffer and not yet read beyond which a new frame waits.
AHEAD_WORDS = Param("words committed ahead of the wire before a new frame waits (0: no limit)",
                    IntRange(0, 1 << 12))


@parameters(buffer_octets=FRAME_BUFFER_OCTETS, buffer_frames=BUFFER_FRAMES,
            replay_max=REPLAY_MAX, ahead_words=AHEAD_WORDS)
class LlrTx(wiring.Component):
    """Sequence, buffer, send and replay the frames of one link direction (spec §7).

    Every frame taken on ``i`` is written into the replay buffer (block RAM, ``buffer_octets``
    octets and ``buffer_frames`` frames) and sent from there to the MAC on ``mac`` with the next
    sequence number. A frame leaves the buffer when the partner acknowledges it.

    * **Cut-through.** A frame is sent while it is still being written: the reader follows the
      writer one word behind. The upper layer must therefore offer a frame's beats without
      bubbles once its first beat is taken (a bubble starves the MAC, which aborts the frame;
      the receiver then asks for it again, so nothing is lost, but a replay is spent).
    * **Space.** A new frame is taken only when fewer than ``buffer_frames`` − 1 frames are
      held and at least one longest frame (:data:`MAX_FRAME_WORDS` words) + 1 word is free (the
      check is registered, one cycle old), so a frame once started is never stalled for room.
    * **Ahead of the wire** (``ahead_words`` > 0). A new frame is taken only while at most
      ``ahead_words`` words written are not yet read (checked a cycle before, like the
      space): what is committed ahead of the line is the frame on the wire and no more than
      the next frame's first words, so the layer above (CBFC's VC arbiter) picks the next
      frame as late as the line allows and a latency-critical frame never waits behind a
      queue of others already in the buffer. In a replay nothing new is taken until the
      reader is back among the new words. 0: a frame is taken whenever there is space.
    * **ACK** ``n`` (in window) frees every frame up to ``n``. **NACK** ``n`` (in window) frees
      them too and replays from ``n + 1``: the frame on the wire, if any, is cut by ``abort``
      (:class:`MacTx` ends it with ``/E/``) and the first replayed frame follows; but a NACK
      for the very frame being resent is already answered by that copy, which goes on. The window is
      ``[oldest unacknowledged − 1, newest sent]``; anything else is ignored and counted.
    * **Replay timer.** With frames outstanding and no progress for ``replay_timeout`` cycles
      (0: automatic, 2·``rtt`` + :data:`AUTO_TIMEOUT_MARGIN` once ``rtt_valid``, else
      :data:`DEFAULT_REPLAY_TIMEOUT`), everything outstanding is replayed.
    * **FLUSH.** The ``replay_max`` + 1-th consecutive replay without progress flushes the
      buffer instead (each frame counted in ``count_flushed_frames``), raises ``failed`` and
      re-inits: LLR_INIT (seq = next frame, nonce) every timer period until the matching
      LLR_INIT_ECHO arrives; then ``failed`` falls and sending resumes. The frame being written
      at that moment is kept. Frames keep being taken into the buffer during INIT.
    * **OFF.** While ``enable`` is low nothing is sent; raising it starts INIT.
    * **Void frames (spec v1.1 §7).** ``i_void`` with the last beat of a frame abandons that
      frame (a cut-through forwarder learnt it was bad): it leaves the replay buffer at once
      (never replayed; its words and its sequence number go to the next frame taken, so
      the partner's expected sequence number is unaffected) and ``count_voided_frames`` counts
      it. If the reader has already started it on the wire, the reader finishes it, from the
      buffer, with ``user.void`` on its last beat (:class:`MacTx` inverts the FCS); the next
      frame is taken once that last word is read. If not, it is never sent. Frames are
      numbered in the order taken on ``i``, voided frames left out.

    Latency: a beat taken on ``i`` in cycle *t* (buffer caught up) is offered on ``mac`` in
    *t* + 1 (the buffer read is transparent to the same-cycle write). A NACK on ``lcw_rx`` in
    cycle *t* cuts the frame on the wire in *t* + 1 and offers the first replayed beat in *t* + 3.
    Throughput: one beat per cycle, new or replayed.

    Members
    -------
    i : In(PacketStream(8))
        Frame bodies from the upper layer.
    i_void : In(1)
        With ``i.valid`` and ``i.payload.last``: the frame ends void (abandoned). 0 when unused.
    mac : Out(stream.Signature(MacTxFrameLayout))
        Frames to the MAC, ``user.sequenced`` = 1, ``user.seq`` their number, ``user.void`` on
        the last beat of a frame voided while on the wire.
    abort : Out(1)
        Cut the frame the MAC is sending: a strobe in the cycle the reader jumps (replay,
        skip, FLUSH); the next beat offered is the first of the frame the jump goes to.
    lcw_rx : In(LcwEvents())
        LCWs received from the partner; LLR_ACK, LLR_NACK and LLR_INIT_ECHO are used.
    lcw_tx : Out(LcwStream())
        LLR_INIT to send.
    enable : In(1)
    replay_timeout : In(TIMER_BITS)
        Replay timer in cycles; 0 = automatic.
    rtt, rtt_valid : In(16), In(1)
        The link's measured round trip (:class:`PingUnit`).
    state : Out(TxState)
    head : Out(20)
        Sequence number of the oldest frame not yet acknowledged (or flushed). Frames are
        numbered from 0 in the order they are taken on ``i``, voided frames left out (a voided
        frame's number is the next frame's), so the layer above can tell which of its frames
        the link has finished with (CBFC's settled credits; a layer that voids frames settles
        a voided frame's credits itself, at the void).
    failed : Out(1)
        The link failed (FLUSH) and has not re-initialised yet.
    count : Out(Counters)
        Frames sent new and replayed, replays, NACKs/ACKs received, out-of-window ACK/NACKs,
        timeouts, flushes, flushed frames, INITs sent; high-water marks of buffer words and
        frames; frames voided on ``i`` (``voided_frames``; those that went out are also in
        ``frames_sent``).
    """
    COUNTERS = ("frames_sent", "frames_replayed", "replays", "nacks_received",
                "acks_received", "out_of_window", "timeouts", "flushes", "flushed_frames",
                "inits_sent", "buffer_words_high", "buffer_frames_high", "voided_frames")

    def __init__(self, buffer_octets=16384, buffer_frames=64, replay_max=8, ahead_words=0):
        self.buffer_words = buffer_octets // MAC_BEAT_OCTETS
        self.buffer_frames = buffer_frames
        self.replay_max = replay_max
        self.ahead_words = ahead_words
        super().__init__({
            "i": In(PacketStream(MAC_BEAT_OCTETS)),
            "i_void": In(1),
            "mac": Out(stream.Signature(MacTxFrameLayout())),
            "abort": Out(1),
            "lcw_rx": In(LcwEvents()),
            "lcw_tx": Out(LcwStream()),
            "enable": In(1),
            "replay_timeout": In(TIMER_BITS),
            "rtt": In(16),
            "rtt_valid": In(1),
            "state": Out(TxState),
            "head": Out(SEQ_BITS),
            "failed": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        # i ─▶ ReplayWriter ─▶ buffer, starts ─▶ ReplayReader ─▶ mac
        #      ReplayOccupancy: room for the writer     ReplayControl: ACK/NACK, timer, jumps
        #      LlrTxPhase: OFF / INIT / ADVANCE / FLUSH, LLR_INIT on lcw_tx
        m = Module()
        W, F = self.buffer_words, self.buffer_frames

        buffer = Memory(shape=FrameWordLayout(), depth=W, init=[])
        starts = Memory(shape=unsigned(exact_log2(W)), depth=F, init=[])
        m.submodules.buffer = buffer
        m.submodules.starts = starts
        wr = buffer.write_port()
        rd = buffer.read_port(transparent_for=(wr,))
        start_wr = starts.write_port()
        start_of_head = starts.read_port(domain="comb")
        start_of_next = starts.read_port(domain="comb")
        start_of_target = starts.read_port(domain="comb")

        m.submodules.writer = writer = ReplayWriter(W, F)
        m.submodules.occupancy = occupancy = ReplayOccupancy(W, F)
        m.submodules.reader = reader = ReplayReader(W, F)
        m.submodules.control = control = ReplayControl(W, F, self.replay_max)
        m.submodules.phase = phase = LlrTxPhase()

        wiring.connect(m, wiring.flipped(self.i), writer.i)
        wiring.connect(m, writer.buffer, wr)
        wiring.connect(m, writer.starts, start_wr)
        wiring.connect(m, writer.status, occupancy.writer, reader.writer, control.writer)
        wiring.connect(m, reader.buffer, rd)
        wiring.connect(m, wiring.flipped(self.mac), reader.mac)
        _serve(m, start_of_head, occupancy.head_start)
        _serve(m, start_of_next, reader.next_start)
        _serve(m, start_of_target, reader.target_start)
        wiring.connect(m, control.jump, reader.jump)
        broadcast(m, self.lcw_rx, control.lcw_rx, phase.lcw_rx)
        wiring.connect(m, phase.lcw_tx, wiring.flipped(self.lcw_tx))

        # Ahead of the wire: a new frame is taken only while few words wait to be read, so
        # the layer above chooses its next frame as late as the line allows (registered,
        # like ``room``).
        ahead_ok = Signal(init=1)
        if self.ahead_words:
            m.d.sync += ahead_ok.eq(reader.backlog <= self.ahead_words)
        m.d.comb += [
            writer.i_void.eq(self.i_void),
            writer.room.eq(occupancy.room & ahead_ok),
            writer.hold.eq(reader.draining),
            occupancy.head.eq(control.head),
            reader.phase.eq(phase.phase),
            control.phase.eq(phase.phase),
            control.send.eq(reader.send),
            control.resending.eq(reader.resending),
            control.sent_hi.eq(reader.sent_hi),
            control.frames_held.eq(occupancy.frames_held),
            control.echoed.eq(phase.echoed),
            control.replay_timeout.eq(self.replay_timeout),
            control.rtt.eq(self.rtt),
            control.rtt_valid.eq(self.rtt_valid),
            phase.enable.eq(self.enable),
            phase.head.eq(control.head),
            phase.flush.eq(control.jump.flush),
            phase.timer_zero.eq(control.timer_zero),
            phase.replaying.eq(reader.replaying),
            self.abort.eq(control.jump.restart),
            self.state.eq(phase.state),
            self.head.eq(control.head),
            self.failed.eq(phase.failed),
        ]
        for part in (writer, occupancy, reader, control, phase):
            forward(m, self.count, part.count)
        return m


def _serve(m, port, lookup):
    """Answer ``lookup`` (a :func:`StartLookup`, flipped) from the asynchronous read ``port``."""
    m.d.comb += [port.addr.eq(lookup.frame), lookup.addr.eq(port.data)]


def StartLookup(frame_bits, addr_bits):
    """Where a frame starts in the replay buffer: ``frame`` (the low bits of its sequence
    number) out, its first word ``addr`` back in the same cycle (an asynchronous read of the
    start table)."""
    return wiring.Signature({"frame": Out(frame_bits), "addr": In(addr_bits)})


def WriterStatus(addr_bits):
    """What :class:`ReplayWriter` tells the others about the frame being written, all from the
    current cycle: ``nxt`` the sequence number it gets, ``addr`` the next word written,
    ``frame_start`` where frame ``nxt`` starts (its first word, or ``addr`` between frames),
    ``in_frame`` a frame is half written, ``take`` a beat is written this cycle, ``last`` the
    beat offered ends its frame, ``void`` ... as a void frame (spec v1.1 §7): taken with
    ``take``, frame ``nxt`` is dropped and the writer goes back to its first word."""
    return wiring.Signature({"nxt": Out(SEQ_BITS), "addr": Out(addr_bits),
                             "frame_start": Out(addr_bits), "in_frame": Out(1),
                             "take": Out(1), "last": Out(1), "void": Out(1)})


def Jump():
    """A move of the reader decided by :class:`ReplayControl`, carried out in the same cycle:
    ``restart`` the reader drops the beat it offers and starts a frame (a replay, a skip or a
    FLUSH); ``go`` it moves to frame ``to`` (replay or skip); ``flush`` it moves past every
    frame held, to the frame being written."""
    return wiring.Signature({"restart": Out(1), "go": Out(1), "flush": Out(1),
                             "to": Out(SEQ_BITS)})


class ReplayWriter(wiring.Component):
    """Write frame bodies into the replay buffer and number them.

    A beat on ``i`` is taken when a frame is half written or ``room`` is high (so a frame once
    started never waits for space), written to the next word of the buffer, and the first word
    of each frame is recorded in the start table under its sequence number ``nxt``, which
    counts up after each last beat. Words and frames lie back to back, wrapping around.

    A last beat with ``i_void`` ends a void frame (spec v1.1 §7): ``nxt`` stays and the next
    word written is the void frame's first, so the next frame takes its words and its number.
    While ``hold`` is high (the reader is finishing a void frame on the wire from those very
    words) no new frame starts.

    Members
    -------
    i : In(PacketStream(8))
        Frame bodies from the upper layer.
    i_void : In(1)
        The last beat on ``i`` ends a void frame.
    buffer : Out(WritePort.Signature(FrameWordLayout))
        Write port of the replay buffer.
    starts : Out(WritePort.Signature(unsigned(addr bits)))
        Write port of the start table.
    room : In(1)
        A new frame may start (:class:`ReplayOccupancy`).
    hold : In(1)
        No new frame may start (:class:`ReplayReader` finishes a void frame).
    status : Out(WriterStatus)
        The frame being written.
    count : Out(Counters)
        Void frames taken.

    Latency: a beat taken in cycle *t* is in the buffer, and counted in ``status.addr``, from
    *t* + 1; ``status.take`` and ``status.last`` are of cycle *t*, so a reader can follow the
    same cycle (the buffer read is transparent to the write).
    Throughput: one beat per cycle.
    """
    COUNTERS = ("voided_frames",)

    def __init__(self, words, frames):
        self.words, self.frames = words, frames
        aw = exact_log2(words)
        super().__init__({
            "i": In(PacketStream(MAC_BEAT_OCTETS)),
            "i_void": In(1),
            "buffer": Out(WritePort.Signature(addr_width=aw, shape=FrameWordLayout()).flip()),
            "starts": Out(WritePort.Signature(addr_width=exact_log2(frames),
                                              shape=unsigned(aw)).flip()),
            "room": In(1),
            "hold": In(1),
            "status": Out(WriterStatus(aw)),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        AW, FW = exact_log2(self.words), exact_log2(self.frames)
        wr, start_wr = self.buffer, self.starts

        wr_addr = Signal(AW)
        wr_start = Signal(AW)          # first word of the frame being written
        wr_in_frame = Signal()
        nxt = Signal(SEQ_BITS)
        counters = CounterBank(m, self.count)
        m.d.comb += self.i.ready.eq(wr_in_frame | (self.room & ~self.hold))
        take = self.i.valid & self.i.ready
        frame_start = Mux(wr_in_frame, wr_start, wr_addr)
        void = self.i.payload.last & self.i_void
        m.d.comb += [
            wr.addr.eq(wr_addr),
            wr.data.data.eq(self.i.payload.data),
            wr.data.keep.eq(self.i.payload.keep),
            wr.data.last.eq(self.i.payload.last),
            wr.en.eq(take),
            start_wr.addr.eq(nxt[:FW]),
            start_wr.data.eq(wr_addr),
            start_wr.en.eq(take & ~wr_in_frame),
        ]
        with m.If(take):
            m.d.sync += wr_addr.eq(wr_addr + 1)
            with m.If(~wr_in_frame):
                m.d.sync += wr_start.eq(wr_addr)
            m.d.sync += wr_in_frame.eq(~self.i.payload.last)
            with m.If(void):
                # Ref: spec v1.1 §7 — the void frame leaves the buffer; its words and its
                # number go to the next frame.
                m.d.sync += wr_addr.eq(frame_start)
            with m.Elif(self.i.payload.last):
                m.d.sync += nxt.eq(nxt + 1)
        counters["voided_frames"].increment(m, take & void)

        m.d.comb += [
            self.status.nxt.eq(nxt),
            self.status.addr.eq(wr_addr),
            self.status.frame_start.eq(frame_start),
            self.status.in_frame.eq(wr_in_frame),
            self.status.take.eq(take),
            self.status.last.eq(self.i.payload.last),
            self.status.void.eq(void),
        ]
        return m


class ReplayOccupancy(wiring.Component):
    """Account for the replay buffer's use: frames held, words free, room for a new frame.

    Frames ``head`` up to the writer's ``nxt`` are held; the free words run from the writer's
    address to the start of frame ``head`` (all of them when nothing is held). ``room`` is high
    when fewer than ``frames`` − 1 frames are held and at least one longest frame
    (:data:`MAX_FRAME_WORDS` words) + 1 word is free.

    Members
    -------
    writer : In(WriterStatus)
    head : In(20)
        Oldest frame held.
    head_start : Out(StartLookup)
        Where frame ``head`` starts.
    frames_held : Out(frames bits + 1)
        Frames held, this cycle.
    room : Out(1)
        A new frame may start.
    count : Out(Counters)
        High-water marks of the buffer words and frames in use.

    Latency: ``frames_held`` is combinational; ``room`` is registered (one cycle old, hence the
    margin of one word and one frame: a cycle writes at most one word and ends at most one
    frame), so the writer's ``ready`` comes from a flop.
    Throughput: follows the writer, one word per cycle.
    """
    COUNTERS = ("buffer_words_high", "buffer_frames_high")

    def __init__(self, words, frames):
        self.words, self.frames = words, frames
        aw, fw = exact_log2(words), exact_log2(frames)
        super().__init__({
            "writer": In(WriterStatus(aw)),
            "head": In(SEQ_BITS),
            "head_start": Out(StartLookup(fw, aw)),
            "frames_held": Out(fw + 1),
            "room": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W, F = self.words, self.frames
        AW, FW = exact_log2(W), exact_log2(F)
        head, nxt, wr_addr = self.head, self.writer.nxt, self.writer.addr
        counters = CounterBank(m, self.count)

        frames_held = self.frames_held
        m.d.comb += frames_held.eq((nxt - head)[:SEQ_BITS])
        free_words = Signal(AW + 1)
        m.d.comb += [
            self.head_start.frame.eq(head[:FW]),
            free_words.eq(Mux(head == nxt, W, (self.head_start.addr - wr_addr)[:AW])),
        ]
        m.d.sync += self.room.eq((frames_held < F - 1) & (free_words >= MAX_FRAME_WORDS + 1))

        used_words = Signal(AW + 1)
        m.d.comb += used_words.eq(W - free_words)
        counters.buffer_words_high.track_max(m, used_words)
        counters.buffer_frames_high.track_max(m, frames_held)
        return m


class ReplayReader(wiring.Component):
    """Read frames from the replay buffer to the MAC, each with its sequence number.

    In ADVANCE (``phase``), the reader sends frame ``send`` word by word and moves on to the next:
    a frame already in the buffer, or the one being written, one word behind the writer
    (cut-through). A frame is new when its number reaches ``sent_hi`` (one past the newest
    frame ever started), a resend otherwise. A ``jump`` moves it: ``restart`` drops the beat it
    offers (the MAC aborts the frame on the wire) and ``go`` restarts at frame ``jump.to``,
    ``flush`` at the frame being written, forgetting every frame held.

    A frame voided by the writer (spec v1.1 §7) while the reader is inside it is finished
    from the buffer: ``draining`` holds the writer off (the next frame would write over the
    words still to read) until the void frame's last word is read; that beat goes to the MAC
    with ``user.void``. The reader then stays at the same sequence number, at the void frame's
    first word, where the next frame will be written. A frame that was started (``sent_hi``
    past it) and is voided is forgotten: ``sent_hi`` goes back to its number.

    Members
    -------
    writer : In(WriterStatus)
    buffer : Out(ReadPort.Signature(FrameWordLayout))
        Synchronous read port of the replay buffer, transparent to the writer's port.
    next_start, target_start : Out(StartLookup)
        Where frame ``send`` + 1 (the end of frame ``send``) and frame ``jump.to`` start.
    mac : Out(stream.Signature(MacTxFrameLayout))
        Frames to the MAC, ``user.sequenced`` = 1 and ``user.seq`` their number.
    phase : In(TxState)
        The transmitter's phase: the reader reads in ADVANCE only.
    jump : In(Jump)
    send, sent_hi : Out(20)
        Next frame to read; one past the newest frame ever started.
    backlog : Out(words bits)
        Words written and not read yet: the new words ahead of the wire, or, in a replay,
        everything from the replay point on (combinational).
    replaying : Out(1)
        The frame being sent (or next) is a resend.
    resending : Out(1)
        A resend of frame ``send`` has started (its first word is read) and is not finished.
    draining : Out(1)
        Finishing a void frame on the wire (from a register).
    count : Out(Counters)
        Frames sent new and frames resent.

    Latency: a word read in cycle *t* (``read``) is offered on ``mac`` in *t* + 1; a beat taken
    by the writer in *t* with the reader caught up is read in *t*. A jump takes effect in the
    cycle it is given: the offered beat is dropped then, the first beat of the new frame is
    offered two cycles later.
    Throughput: one beat per cycle.

    ``rd_addr`` (the next word read), ``send_next`` (``send`` + 1), ``rd_first`` (it starts
    frame ``send``), ``out_valid`` (the output register holds a beat), ``drain`` and
    ``drain_end`` (finishing a void frame, up to that word) are its state, plain signals
    outside the signature for the formal checks (sim/formal/llr.py).
    """
    COUNTERS = ("frames_sent", "frames_replayed")

    def __init__(self, words, frames):
        self.words, self.frames = words, frames
        aw, fw = exact_log2(words), exact_log2(frames)
        self.rd_addr = Signal(aw)
        self.send_next = Signal(SEQ_BITS, init=1)
        self.rd_first = Signal(init=1)
        self.out_valid = Signal()
        self.drain = Signal()
        self.drain_end = Signal(aw)
        super().__init__({
            "writer": In(WriterStatus(aw)),
            "buffer": Out(ReadPort.Signature(addr_width=aw, shape=FrameWordLayout()).flip()),
            "next_start": Out(StartLookup(fw, aw)),
            "target_start": Out(StartLookup(fw, aw)),
            "mac": Out(stream.Signature(MacTxFrameLayout())),
            "phase": In(TxState),
            "jump": In(Jump()),
            "send": Out(SEQ_BITS),
            "sent_hi": Out(SEQ_BITS),
            "backlog": Out(aw),
            "replaying": Out(1),
            "resending": Out(1),
            "draining": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        AW, FW = exact_log2(self.words), exact_log2(self.frames)
        rd, wrt, jump = self.buffer, self.writer, self.jump
        nxt, wr_addr, take = wrt.nxt, wrt.addr, wrt.take
        counters = CounterBank(m, self.count)

        send = Signal(SEQ_BITS)
        # ``send`` + 1, kept in a register of its own: the lookup of where frame ``send`` ends
        # and the compares behind it start from a flip-flop, not from an adder's carry chain.
        send_next = self.send_next
        sent_hi = Signal(SEQ_BITS)
        rd_addr = self.rd_addr
        rd_first = self.rd_first       # the next word read starts frame `send`
        out_valid = self.out_valid
        out_first = Signal()
        out_seq = Signal(SEQ_BITS)
        out_void = Signal()
        restart = jump.restart
        sending = (self.phase == TxState.ADVANCE)
        # Finishing a void frame: its words up to `drain_end` are still in the buffer, behind
        # the writer's address (the writer went back to the frame's first word and waits).
        drain = self.drain
        drain_end = self.drain_end
        void_end = take & wrt.last & wrt.void       # frame `nxt` ends void this cycle

        complete = send != nxt         # frame `send` is wholly in the buffer
        # End of frame `send` = start of the frame after it (frames lie back to back).
        m.d.comb += self.next_start.frame.eq(send_next[:FW])
        end_addr = Mux(send_next == nxt, wrt.frame_start, self.next_start.addr)
        exists = complete | wrt.in_frame | take | drain
        word_ready = complete | (rd_addr != wr_addr) | take | drain
        advance = ~out_valid | self.mac.ready
        read = Signal()
        m.d.comb += read.eq(sending & ~restart & advance & exists & word_ready)
        ends = Signal()
        m.d.comb += ends.eq(Mux(drain, (rd_addr + 1)[:AW] == drain_end,
                                Mux(complete, (rd_addr + 1)[:AW] == end_addr,
                                    take & wrt.last & (rd_addr == wr_addr))))
        # The word read ends a void frame: the one drained, or the last word being written
        # (the reader caught up with the writer).
        read_void = Signal()
        m.d.comb += read_void.eq(read & ends & (drain | (~complete & void_end)))
        m.d.comb += [
            rd.addr.eq(rd_addr),
            rd.en.eq(read | ~out_valid | self.mac.ready),
        ]
        with m.If(read):
            m.d.sync += [
                rd_addr.eq(rd_addr + 1),
                out_first.eq(rd_first),
                out_seq.eq(send),
                out_void.eq(read_void),
                rd_first.eq(ends),
            ]
            with m.If(read_void):
                # Ref: spec v1.1 §7 — the next frame reuses the number, from the same words.
                m.d.sync += rd_addr.eq(wrt.frame_start)
            with m.Elif(ends):
                m.d.sync += [send.eq(send_next), send_next.eq(send_next + 1)]
            with m.If(rd_first):
                with m.If(send == sent_hi):
                    m.d.sync += sent_hi.eq(send_next)
                counters["frames_sent"].increment(m, send == sent_hi)
                counters["frames_replayed"].increment(m, send != sent_hi)
        with m.If(advance | restart):
            m.d.sync += out_valid.eq(read)

        # A frame voided while the reader is inside it (it read its first word before, or
        # reads a word of it now that is not the last): finish it from the buffer.
        inside = ~complete & (~rd_first | read)
        with m.If(void_end & inside & ~restart & ~read_void):
            m.d.sync += [drain.eq(1), drain_end.eq((wr_addr + 1)[:AW])]
        with m.If(read_void | restart):
            m.d.sync += drain.eq(0)
        # A voided frame that was started is no longer the newest frame started.
        with m.If(void_end & (((sent_hi - nxt)[:SEQ_BITS] == 1)
                              | (read & rd_first & ~complete))):
            m.d.sync += sent_hi.eq(nxt)

        m.d.comb += [
            self.mac.valid.eq(out_valid & ~restart),
            self.mac.payload.data.eq(rd.data.data),
            self.mac.payload.keep.eq(rd.data.keep),
            self.mac.payload.last.eq(rd.data.last),
            self.mac.payload.first.eq(out_first),
            self.mac.payload.user.seq.eq(out_seq),
            self.mac.payload.user.sequenced.eq(1),
            self.mac.payload.user.void.eq(out_void),
        ]

        m.d.comb += self.target_start.frame.eq(jump.to[:FW])
        with m.If(restart):
            m.d.sync += [out_valid.eq(0), rd_first.eq(1)]

        # The frame being read is new (not a resend): its number is `sent_hi` − 1 too, so the
        # window alone cannot tell a new frame from a resend while it is on the wire.
        fresh = Signal()
        with m.If(read & rd_first):
            m.d.sync += fresh.eq(send == sent_hi)
        with m.If((read & ends) | restart):
            m.d.sync += fresh.eq(0)
        with m.If(jump.go):
            # The frame being written (or about to be) has no entry in `starts` yet.
            m.d.sync += [send.eq(jump.to), send_next.eq(jump.to + 1),
                         rd_addr.eq(Mux(jump.to == nxt, wrt.frame_start,
                                        self.target_start.addr))]
        with m.If(jump.flush):
            m.d.sync += [send.eq(nxt), send_next.eq(nxt + 1), sent_hi.eq(nxt),
                         rd_addr.eq(wrt.frame_start)]

        m.d.comb += [
            self.send.eq(send),
            self.sent_hi.eq(sent_hi),
            self.backlog.eq((wr_addr - rd_addr)[:AW]),
            self.replaying.eq((send != sent_hi) & ~fresh),
            self.resending.eq(~rd_first & (send != sent_hi) & ~fresh),
            self.draining.eq(drain),
        ]
        return m


class ReplayControl(wiring.Component):
    """Decide the replays: ACK/NACK window, replay timer, consecutive replays, FLUSH.

    In ADVANCE (``phase``), an ACK or NACK ``n`` with ``n`` + 1 in ``[head, sent_hi]`` moves
    ``head`` to ``n`` + 1 (progress when it moves); a NACK then replays from there, an ACK past
    the frame being resent (``send``), or past the frame a jump carried out in the same cycle
    goes to, skips to there (the reader never resends a frame no longer held). Others are
    ignored and counted. The replay timer counts while frames are outstanding and nothing
    happens; when it reaches the limit (``replay_timeout``, or automatic: 2·``rtt`` +
    :data:`AUTO_TIMEOUT_MARGIN` once ``rtt_valid``, else :data:`DEFAULT_REPLAY_TIMEOUT`)
    everything outstanding is replayed.
    A replay is registered and given to the reader on ``jump`` in the next cycle; the
    ``replay_max`` + 1-th consecutive replay without progress becomes a FLUSH instead: every
    held frame is dropped (``head`` moves to the writer's ``nxt``). Outside ADVANCE the timer
    paces LLR_INIT (``timer_zero``); the echo that ends INIT (``echoed``) clears it and the
    replay streak.

    Members
    -------
    lcw_rx : In(LcwEvents())
        LCWs from the partner; LLR_ACK and LLR_NACK are used.
    writer : In(WriterStatus)
    phase : In(TxState)
        The transmitter's phase (:class:`LlrTxPhase`).
    send, sent_hi : In(20)
        The reader's next frame, and one past the newest frame ever started.
    resending : In(1)
        A resend of frame ``send`` is on its way to the MAC (:class:`ReplayReader`).
    frames_held : In(frames bits + 1)
    echoed : In(1)
        The partner echoed the LLR_INIT offered (:class:`LlrTxPhase`); used in INIT.
    replay_timeout : In(TIMER_BITS)
    rtt, rtt_valid : In(16), In(1)
    head : Out(20)
        Oldest frame not acknowledged.
    jump : Out(Jump)
        The reader's move this cycle.
    timer_zero : Out(1)
        The timer is at zero: a period starts.
    count : Out(Counters)
        ACKs and NACKs received, out-of-window ones, replays, timeouts, flushes, flushed
        frames.

    Latency: ``head`` moves in the cycle after the ACK/NACK; the replay it decides (NACK, skip,
    timeout) is on ``jump`` that cycle, so a NACK in cycle *t* cuts the frame on the wire in
    *t* + 1. ``jump.flush`` depends on registers only.
    Throughput: one received LCW per cycle.

    ``pending`` (a jump is registered for this cycle) is its state, a plain signal outside the
    signature for the formal checks (sim/formal/llr.py).
    """
    COUNTERS = ("replays", "nacks_received", "acks_received", "out_of_window", "timeouts",
                "flushes", "flushed_frames")

    def __init__(self, words, frames, replay_max):
        self.frames, self.replay_max = frames, replay_max
        aw, fw = exact_log2(words), exact_log2(frames)
        self.pending = Signal(name="jump")
        super().__init__({
            "lcw_rx": In(LcwEvents()),
            "writer": In(WriterStatus(aw)),
            "phase": In(TxState),
            "send": In(SEQ_BITS),
            "sent_hi": In(SEQ_BITS),
            "resending": In(1),
            "frames_held": In(fw + 1),
            "echoed": In(1),
            "replay_timeout": In(TIMER_BITS),
            "rtt": In(16),
            "rtt_valid": In(1),
            "head": Out(SEQ_BITS),
            "jump": Out(Jump()),
            "timer_zero": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)
        nxt, send, sent_hi, phase = self.writer.nxt, self.send, self.sent_hi, self.phase

        head = Signal(SEQ_BITS)
        lcw = self.lcw_rx
        lcw_seq = Signal(SEQ_BITS)
        m.d.comb += lcw_seq.eq(LLR_PAYLOAD.layout(lcw.payload.payload).seq)
        lcw_next = Signal(SEQ_BITS)
        m.d.comb += lcw_next.eq(lcw_seq + 1)
        in_window = seq_in_window(lcw_next, head, sent_hi)
        is_ack = lcw.valid & (lcw.payload.type == LcwType.LLR_ACK)
        is_nack = lcw.valid & (lcw.payload.type == LcwType.LLR_NACK)
        live = (phase == TxState.ADVANCE)

        # A replay (or a skip past frames acknowledged while they were being resent) is
        # registered here and carried out in the next cycle.
        jump = self.pending
        jump_to = Signal(SEQ_BITS)
        jump_is_replay = Signal()
        jump_is_timeout = Signal()
        m.d.sync += [jump.eq(0), jump_is_replay.eq(0), jump_is_timeout.eq(0)]

        progress = Signal()
        accepted = (is_ack | is_nack) & live & in_window
        counters["acks_received"].increment(m, is_ack & live)
        counters["nacks_received"].increment(m, is_nack & live)
        counters["out_of_window"].increment(m, (is_ack | is_nack) & live & ~in_window)
        with m.If(accepted):
            m.d.comb += progress.eq(lcw_next != head)
            m.d.sync += head.eq(lcw_next)
            # A NACK for the frame being resent right now is already answered: that copy left
            # after the bad one the receiver saw, so it reaches the receiver next. Cutting it
            # would make it bad in turn and, for a frame longer than the round trip, draw the
            # same NACK again while its next copy is on the wire, for ever.
            answered = self.resending & (lcw_next == send)
            with m.If(is_nack & ~answered):
                m.d.sync += [jump.eq(1), jump_to.eq(lcw_next), jump_is_replay.eq(1)]
            with m.Elif(~seq_in_window(lcw_next, head, Mux(jump & live, jump_to, send))):
                # Acknowledged beyond the frame being resent (or the frame a jump carried out
                # now goes to): skip what is already delivered, so the reader never resends a
                # frame that is no longer held (its words may be written over).
                m.d.sync += [jump.eq(1), jump_to.eq(lcw_next)]

        timer = Signal(TIMER_BITS)
        limit = Signal(TIMER_BITS)
        auto = Mux(self.rtt_valid, (self.rtt << 1) + AUTO_TIMEOUT_MARGIN, DEFAULT_REPLAY_TIMEOUT)
        m.d.comb += limit.eq(Mux(self.replay_timeout != 0, self.replay_timeout, auto))
        outstanding = head != sent_hi
        expired = Signal()
        m.d.comb += expired.eq(timer >= limit)
        with m.If(progress | jump | expired | (live & ~outstanding)
                  | (phase == TxState.OFF) | (phase == TxState.FLUSH)):
            m.d.sync += timer.eq(0)
        with m.Else():
            m.d.sync += timer.eq(timer + 1)
        # An accepted ACK/NACK decides this cycle's jump itself; one outside the window must
        # not hold the timeout back (it would wait a whole period more: spec §7, ignored).
        with m.If(live & outstanding & expired & ~jump & ~accepted):
            m.d.sync += [jump.eq(1), jump_to.eq(head), jump_is_replay.eq(1),
                         jump_is_timeout.eq(1)]

        streak = Signal(range(256))     # consecutive replays without progress
        with m.If(progress):
            m.d.sync += streak.eq(0)
        flush = Signal()
        m.d.comb += [
            self.jump.restart.eq(jump & live | flush),
            # From registers only: an ACK arriving in this very cycle does not save the link
            # (it is one cycle late), but the path from a received LCW to `mac.valid` stays short.
            flush.eq(jump & live & jump_is_replay & (streak >= self.replay_max)),
            self.jump.to.eq(jump_to),
            self.jump.flush.eq(flush),
        ]
        with m.If(jump & live & ~flush):
            m.d.comb += self.jump.go.eq(1)
            with m.If(jump_is_replay):
                m.d.sync += streak.eq(Mux(progress, 1, streak + 1))
            counters["replays"].increment(m, jump_is_replay)
            counters["timeouts"].increment(m, jump_is_timeout)

        counters["flushes"].increment(m, flush)
        counters["flushed_frames"].add(m, self.frames_held, flush)
        with m.If(flush):
            m.d.sync += [head.eq(nxt), streak.eq(0)]
        with m.Switch(phase):
            with m.Case(TxState.INIT):
                with m.If(self.echoed):
                    m.d.sync += [timer.eq(0), streak.eq(0)]

        m.d.comb += [self.head.eq(head), self.timer_zero.eq(timer == 0)]
        return m


class LlrTxPhase(wiring.Component):
    """Run the transmitter's phases: OFF, INIT (LLR_INIT until echoed), ADVANCE, FLUSH.

    Low ``enable`` holds OFF; raising it starts INIT. In INIT, LLR_INIT (seq = ``head``, a
    nonce) is offered on ``lcw_tx`` at every ``timer_zero``, until the LLR_INIT_ECHO with the
    same payload arrives (``echoed``): then ADVANCE, and ``failed`` falls. ``flush`` moves to
    FLUSH, raises ``failed`` and, one cycle later, to INIT with a new nonce.

    Members
    -------
    enable : In(1)
    lcw_rx : In(LcwEvents())
        LCWs from the partner; LLR_INIT_ECHO is used.
    lcw_tx : Out(LcwStream())
        LLR_INIT to send.
    head : In(20)
        Oldest frame not acknowledged: the seq of LLR_INIT.
    flush, timer_zero : In(1), In(1)
        From :class:`ReplayControl`.
    replaying : In(1)
        The reader sends a resend (:class:`ReplayReader`).
    phase : Out(TxState)
        OFF, INIT, ADVANCE or FLUSH, from a register.
    state : Out(TxState)
        ``phase``, or REPLAY in ADVANCE while ``replaying``.
    echoed : Out(1)
        An LLR_INIT_ECHO with the payload of the LLR_INIT (seq = ``head``, the nonce) is
        received this cycle; in INIT it ends INIT.
    failed : Out(1)
        FLUSH happened and INIT has not ended yet.
    count : Out(Counters)
        LLR_INITs sent.

    Latency: ``flush`` or ``echoed`` (in INIT) in cycle *t* changes ``phase`` in *t* + 1;
    LLR_INIT is offered in the cycle after ``timer_zero``.
    Throughput: one LLR_INIT per timer period.
    """
    COUNTERS = ("inits_sent",)

    def __init__(self):
        super().__init__({
            "enable": In(1),
            "lcw_rx": In(LcwEvents()),
            "lcw_tx": Out(LcwStream()),
            "head": In(SEQ_BITS),
            "flush": In(1),
            "timer_zero": In(1),
            "replaying": In(1),
            "phase": Out(TxState),
            "state": Out(TxState),
            "echoed": Out(1),
            "failed": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)
        lcw = self.lcw_rx
        fsm_state = Signal(TxState, init=TxState.INIT)
        nonce = Signal(16)
        is_echo = lcw.valid & (lcw.payload.type == LcwType.LLR_INIT_ECHO)

        init_pending = Signal()
        init_payload = Signal(40)
        m.d.comb += [
            self.lcw_tx.valid.eq(init_pending),
            self.lcw_tx.payload.type.eq(LcwType.LLR_INIT),
            self.lcw_tx.payload.payload.eq(init_payload),
        ]
        init_word = LLR_PAYLOAD.layout
        expected_echo = Signal(init_word)
        expected_value = expected_echo.as_value()
        m.d.comb += [expected_echo.seq.eq(self.head), expected_echo.nonce.eq(nonce)]
        m.d.comb += self.echoed.eq(is_echo & (lcw.payload.payload == expected_value))
        counters["inits_sent"].increment(m, self.lcw_tx.valid & self.lcw_tx.ready)
        with m.If(self.lcw_tx.valid & self.lcw_tx.ready):
            m.d.sync += init_pending.eq(0)

        with m.If(self.flush):
            m.d.sync += fsm_state.eq(TxState.FLUSH)

        with m.Switch(fsm_state):
            with m.Case(TxState.OFF):
                with m.If(self.enable):
                    m.d.sync += fsm_state.eq(TxState.INIT)
            with m.Case(TxState.FLUSH):
                m.d.sync += [fsm_state.eq(TxState.INIT), nonce.eq(nonce + 1)]
            with m.Case(TxState.INIT):
                # Resend LLR_INIT every timer period until its echo comes back.
                with m.If(self.timer_zero):
                    m.d.sync += [init_pending.eq(1), init_payload.eq(expected_value)]
                with m.If(self.echoed):
                    m.d.sync += [fsm_state.eq(TxState.ADVANCE), init_pending.eq(0),
                                 self.failed.eq(0)]
        with m.If(~self.enable):
            m.d.sync += [fsm_state.eq(TxState.OFF), init_pending.eq(0)]

        live = (fsm_state == TxState.ADVANCE)
        m.d.comb += [
            self.phase.eq(fsm_state),
            self.state.eq(Mux(live & self.replaying, TxState.REPLAY, fsm_state)),
        ]
        with m.If(self.flush):
            m.d.sync += self.failed.eq(1)
        return m
