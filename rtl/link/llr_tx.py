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
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..buffer import FRAME_BUFFER_OCTETS, FrameWordLayout, MAX_FRAME_WORDS
from ..counters import CounterBank, Counters
from ..params import IntRange, Param, PowerOfTwo, parameters
from ..stream import PacketStream
from ..wire import LLR_PAYLOAD, LcwType
from .layouts import LcwEvents, LcwStream, MacTxFrameLayout, MAC_BEAT_OCTETS, SEQ_BITS

__all__ = ["LlrTx", "TxState", "REPLAY_MAX", "BUFFER_FRAMES", "DEFAULT_REPLAY_TIMEOUT",
           "AUTO_TIMEOUT_MARGIN", "TIMER_BITS", "seq_in_window"]
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


@parameters(buffer_octets=FRAME_BUFFER_OCTETS, buffer_frames=BUFFER_FRAMES,
            replay_max=REPLAY_MAX)
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
    * **ACK** ``n`` (in window) frees every frame up to ``n``. **NACK** ``n`` (in window) frees
      them too and replays from ``n + 1``: the frame on the wire, if any, is cut by ``abort``
      (:class:`MacTx` ends it with ``/E/``) and the first replayed frame follows. The window is
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

    Latency: a beat taken on ``i`` in cycle *t* (buffer caught up) is offered on ``mac`` in
    *t* + 1 (the buffer read is transparent to the same-cycle write). A NACK on ``lcw_rx`` in
    cycle *t* cuts the frame on the wire in *t* + 1 and offers the first replayed beat in *t* + 3.
    Throughput: one beat per cycle, new or replayed.

    Members
    -------
    i : In(PacketStream(8))
        Frame bodies from the upper layer.
    mac : Out(stream.Signature(MacTxFrameLayout))
        Frames to the MAC, ``user.sequenced`` = 1 and ``user.seq`` their number.
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
        numbered from 0 in the order they are taken on ``i``, so the layer above can tell
        which of its frames the link has finished with (CBFC's settled credits).
    failed : Out(1)
        The link failed (FLUSH) and has not re-initialised yet.
    count : Out(Counters)
        Frames sent new and replayed, replays, NACKs/ACKs received, out-of-window ACK/NACKs,
        timeouts, flushes, flushed frames, INITs sent; high-water marks of buffer words and
        frames.
    """
    COUNTERS = ("frames_sent", "frames_replayed", "replays", "nacks_received",
                "acks_received", "out_of_window", "timeouts", "flushes", "flushed_frames",
                "inits_sent", "buffer_words_high", "buffer_frames_high")

    def __init__(self, buffer_octets=16384, buffer_frames=64, replay_max=8):
        self.buffer_words = buffer_octets // MAC_BEAT_OCTETS
        self.buffer_frames = buffer_frames
        self.replay_max = replay_max
        super().__init__({
            "i": In(PacketStream(MAC_BEAT_OCTETS)),
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
        m = Module()
        W, F = self.buffer_words, self.buffer_frames
        AW, FW = exact_log2(W), exact_log2(F)

        buffer = Memory(shape=FrameWordLayout(), depth=W, init=[])
        starts = Memory(shape=unsigned(AW), depth=F, init=[])
        m.submodules.buffer = buffer
        m.submodules.starts = starts
        wr = buffer.write_port()
        rd = buffer.read_port(transparent_for=(wr,))
        start_wr = starts.write_port()
        start_of_head = starts.read_port(domain="comb")
        start_of_next = starts.read_port(domain="comb")     # frame after the one being read
        start_of_target = starts.read_port(domain="comb")   # where a replay begins

        counters = CounterBank(m, self.count)

        # Sequence numbers: head = oldest unacknowledged, send = next to read from the buffer,
        # sent_hi = one past the newest frame ever started, nxt = the frame being written.
        head = Signal(SEQ_BITS)
        send = Signal(SEQ_BITS)
        sent_hi = Signal(SEQ_BITS)
        nxt = Signal(SEQ_BITS)
        fsm_state = Signal(TxState, init=TxState.INIT)
        nonce = Signal(16)

        # --- writer: upper layer -> buffer ------------------------------------------------
        wr_addr = Signal(AW)
        wr_start = Signal(AW)          # first word of the frame being written
        wr_in_frame = Signal()
        write_start = Mux(wr_in_frame, wr_start, wr_addr)   # where frame `nxt` starts
        frames_held = Signal(FW + 1)
        m.d.comb += frames_held.eq((nxt - head)[:SEQ_BITS])
        free_words = Signal(AW + 1)
        m.d.comb += [
            start_of_head.addr.eq(head[:FW]),
            free_words.eq(Mux(head == nxt, W, (start_of_head.data - wr_addr)[:AW])),
        ]
        # Registered, so `i.ready` comes from flops: one cycle stale, hence one word and one
        # frame of margin (a cycle writes at most one word and completes at most one frame).
        room = Signal()
        m.d.sync += room.eq((frames_held < F - 1) & (free_words >= MAX_FRAME_WORDS + 1))
        m.d.comb += self.i.ready.eq(wr_in_frame | room)
        take = self.i.valid & self.i.ready
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
            with m.If(self.i.payload.last):
                m.d.sync += nxt.eq(nxt + 1)

        used_words = Signal(AW + 1)
        m.d.comb += used_words.eq(W - free_words)
        counters.buffer_words_high.track_max(m, used_words)
        counters.buffer_frames_high.track_max(m, frames_held)

        # --- reader: buffer -> MAC ----------------------------------------------------------
        rd_addr = Signal(AW)
        rd_first = Signal(init=1)      # the next word read starts frame `send`
        out_valid = Signal()
        out_first = Signal()
        out_seq = Signal(SEQ_BITS)
        sending = (fsm_state == TxState.ADVANCE)
        restart = Signal()             # this cycle the reader jumps (replay, skip, flush)

        complete = send != nxt         # frame `send` is wholly in the buffer
        # End of frame `send` = start of the frame after it (frames lie back to back).
        m.d.comb += start_of_next.addr.eq((send + 1)[:FW])
        end_addr = Mux((send + 1)[:SEQ_BITS] == nxt,
                       Mux(wr_in_frame, wr_start, wr_addr), start_of_next.data)
        exists = complete | wr_in_frame | take
        word_ready = complete | (rd_addr != wr_addr) | take
        advance = ~out_valid | self.mac.ready
        read = Signal()
        m.d.comb += read.eq(sending & ~restart & advance & exists & word_ready)
        ends = Mux(complete, (rd_addr + 1)[:AW] == end_addr,
                   take & self.i.payload.last & (rd_addr == wr_addr))
        m.d.comb += [
            rd.addr.eq(rd_addr),
            rd.en.eq(read | ~out_valid | self.mac.ready),
        ]
        with m.If(read):
            m.d.sync += [
                rd_addr.eq(rd_addr + 1),
                out_first.eq(rd_first),
                out_seq.eq(send),
                rd_first.eq(ends),
            ]
            with m.If(ends):
                m.d.sync += send.eq(send + 1)
            with m.If(rd_first):
                with m.If(send == sent_hi):
                    m.d.sync += sent_hi.eq(send + 1)
                counters["frames_sent"].increment(m, send == sent_hi)
                counters["frames_replayed"].increment(m, send != sent_hi)
        with m.If(advance | restart):
            m.d.sync += out_valid.eq(read)

        m.d.comb += [
            self.mac.valid.eq(out_valid & ~restart),
            self.mac.payload.data.eq(rd.data.data),
            self.mac.payload.keep.eq(rd.data.keep),
            self.mac.payload.last.eq(rd.data.last),
            self.mac.payload.first.eq(out_first),
            self.mac.payload.user.seq.eq(out_seq),
            self.mac.payload.user.sequenced.eq(1),
        ]

        # --- partner's LCWs -------------------------------------------------------------
        lcw = self.lcw_rx
        lcw_seq = Signal(SEQ_BITS)
        m.d.comb += lcw_seq.eq(LLR_PAYLOAD.layout(lcw.payload.payload).seq)
        lcw_next = Signal(SEQ_BITS)
        m.d.comb += lcw_next.eq(lcw_seq + 1)
        in_window = seq_in_window(lcw_next, head, sent_hi)
        is_ack = lcw.valid & (lcw.payload.type == LcwType.LLR_ACK)
        is_nack = lcw.valid & (lcw.payload.type == LcwType.LLR_NACK)
        is_echo = lcw.valid & (lcw.payload.type == LcwType.LLR_INIT_ECHO)
        live = (fsm_state == TxState.ADVANCE)

        # A replay (or a skip past frames acknowledged while they were being resent) is
        # registered here and carried out in the next cycle.
        jump = Signal()
        jump_to = Signal(SEQ_BITS)
        jump_is_replay = Signal()
        jump_is_timeout = Signal()
        m.d.sync += [jump.eq(0), jump_is_replay.eq(0), jump_is_timeout.eq(0)]

        progress = Signal()
        counters["acks_received"].increment(m, is_ack & live)
        counters["nacks_received"].increment(m, is_nack & live)
        counters["out_of_window"].increment(m, (is_ack | is_nack) & live & ~in_window)
        with m.If((is_ack | is_nack) & live & in_window):
            m.d.comb += progress.eq(lcw_next != head)
            m.d.sync += head.eq(lcw_next)
            with m.If(is_nack):
                m.d.sync += [jump.eq(1), jump_to.eq(lcw_next), jump_is_replay.eq(1)]
            with m.Elif(~seq_in_window(lcw_next, head, send)):
                # Acknowledged beyond the frame being resent: skip what is already delivered.
                m.d.sync += [jump.eq(1), jump_to.eq(lcw_next)]

        # --- replay timer -------------------------------------------------------------------
        timer = Signal(TIMER_BITS)
        limit = Signal(TIMER_BITS)
        auto = Mux(self.rtt_valid, (self.rtt << 1) + AUTO_TIMEOUT_MARGIN, DEFAULT_REPLAY_TIMEOUT)
        m.d.comb += limit.eq(Mux(self.replay_timeout != 0, self.replay_timeout, auto))
        outstanding = head != sent_hi
        expired = Signal()
        m.d.comb += expired.eq(timer >= limit)
        with m.If(progress | jump | expired | (live & ~outstanding)
                  | (fsm_state == TxState.OFF) | (fsm_state == TxState.FLUSH)):
            m.d.sync += timer.eq(0)
        with m.Else():
            m.d.sync += timer.eq(timer + 1)
        with m.If(live & outstanding & expired & ~jump & ~(is_ack | is_nack)):
            m.d.sync += [jump.eq(1), jump_to.eq(head), jump_is_replay.eq(1),
                         jump_is_timeout.eq(1)]

        # --- carrying out a jump: replay, skip or FLUSH ----------------------------------
        streak = Signal(range(256))     # consecutive replays without progress
        with m.If(progress):
            m.d.sync += streak.eq(0)
        flush = Signal()
        m.d.comb += [
            restart.eq(jump & live | flush),
            # From registers only: an ACK arriving in this very cycle does not save the link
            # (it is one cycle late), but the path from a received LCW to `mac.valid` stays short.
            flush.eq(jump & live & jump_is_replay & (streak >= self.replay_max)),
            start_of_target.addr.eq(jump_to[:FW]),
            # The MAC ignores it between frames, and cuts a frame it has started (even one
            # whose first beat it has not taken yet, as after its start word).
            self.abort.eq(restart),
        ]
        with m.If(restart):
            m.d.sync += [out_valid.eq(0), rd_first.eq(1)]

        # The frame being read is new (not a resend): its number is `sent_hi` − 1 too, so the
        # window alone cannot tell ADVANCE from REPLAY while it is on the wire.
        fresh = Signal()
        with m.If(read & rd_first):
            m.d.sync += fresh.eq(send == sent_hi)
        with m.If((read & ends) | restart):
            m.d.sync += fresh.eq(0)
        with m.If(jump & live & ~flush):
            # The frame being written (or about to be) has no entry in `starts` yet.
            m.d.sync += [send.eq(jump_to),
                         rd_addr.eq(Mux(jump_to == nxt, write_start, start_of_target.data))]
            with m.If(jump_is_replay):
                m.d.sync += streak.eq(Mux(progress, 1, streak + 1))
            counters["replays"].increment(m, jump_is_replay)
            counters["timeouts"].increment(m, jump_is_timeout)

        # --- FLUSH and INIT -------------------------------------------------------------------
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
        m.d.comb += [expected_echo.seq.eq(head), expected_echo.nonce.eq(nonce)]
        counters["inits_sent"].increment(m, self.lcw_tx.valid & self.lcw_tx.ready)
        with m.If(self.lcw_tx.valid & self.lcw_tx.ready):
            m.d.sync += init_pending.eq(0)

        counters["flushes"].increment(m, flush)
        counters["flushed_frames"].add(m, frames_held, flush)
        with m.If(flush):
            m.d.sync += [
                head.eq(nxt), send.eq(nxt), sent_hi.eq(nxt),
                rd_addr.eq(write_start),
                fsm_state.eq(TxState.FLUSH),
                streak.eq(0),
            ]

        with m.Switch(fsm_state):
            with m.Case(TxState.OFF):
                with m.If(self.enable):
                    m.d.sync += fsm_state.eq(TxState.INIT)
            with m.Case(TxState.FLUSH):
                m.d.sync += [fsm_state.eq(TxState.INIT), nonce.eq(nonce + 1)]
            with m.Case(TxState.INIT):
                # Resend LLR_INIT every timer period until its echo comes back.
                with m.If(timer == 0):
                    m.d.sync += [init_pending.eq(1), init_payload.eq(expected_value)]
                with m.If(is_echo & (lcw.payload.payload == expected_value)):
                    m.d.sync += [fsm_state.eq(TxState.ADVANCE), init_pending.eq(0),
                                 timer.eq(0), streak.eq(0), self.failed.eq(0)]
        with m.If(~self.enable):
            m.d.sync += [fsm_state.eq(TxState.OFF), init_pending.eq(0)]

        m.d.comb += [
            self.state.eq(Mux(live & (send != sent_hi) & ~fresh, TxState.REPLAY, fsm_state)),
            self.head.eq(head),
        ]
        with m.If(flush):
            m.d.sync += self.failed.eq(1)
        return m
