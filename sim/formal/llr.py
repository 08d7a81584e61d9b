"""Formal checks of the LLR (spec §7, v1.1 void frames) with SymbiYosys and yosys.

**Delivery (bounded).** The harness :class:`LlrProof` joins an
:class:`~ethlink.rtl.link.llr_tx.LlrTx` and an :class:`~ethlink.rtl.link.llr_rx.LlrRx` (the
RTL as it is) through an abstract link whose every choice is a free input of the solver,
constrained only by what a link can do:

* the upper layer offers frames of 1 or 2 beats whenever it likes (keeping the stream rules
  and the LLR's producer contract: no bubble inside a frame), and voids any of them with its
  last beat; every beat carries its frame's *tag* (the number of frames not voided offered
  before it, so a voided frame has the tag of the frame that reuses its sequence number), its
  beat index, its length and, on the last beat of a voided frame, a void mark;
* the frame line takes the sender's beats at any pace (``mac.ready``) and, per frame, loses
  it whole, delivers it corrupted (``user.error`` on its last beat, as a bad FCS or start
  check arrives from :class:`MacRx`) or delivers it intact (a void frame intact arrives as a
  void frame, ``user.void``); a frame cut by the sender's ``abort`` arrives as a bad frame;
  nothing is reordered; one cycle of delay;
* the two LCW lines take LCWs at any pace and lose any of them; one cycle of delay; the
  receive side's output is back-pressured at will.

The MAC pair is abstracted by this line: it is checked on its own against the golden model
(test_mac), and what it gives the LLR is exactly this (a frame intact, a bad frame, a void
frame, or nothing).

Properties, asserted in every cycle of every trace up to :data:`DEPTH` cycles from reset
(``mode bmc``, task ``delivery``):

1. **In order, exactly once** (outside FLUSH): every frame delivered on the receiver's ``o``
   is the oldest frame offered and not yet delivered, voided frames skipped: its tag is
   higher than the previous delivery's, every tag between them belongs to a voided frame,
   its beats come in order and it has as many as were offered.
2. **Void frames are never delivered** (always).
3. **The replay buffer never overruns** (always): the writer never writes the first word of
   the oldest frame held, and never holds more frames than the start table has entries.

These hold for every trace of the bound, and the check also asserts there, while no FLUSH
has happened, that what the sender sends through the line keeps the rules the receiver's half
of property 1 takes as given (below): the two halves meet. The sizes are small so that the
bound reaches the interesting events: a replay buffer of 8 words and 4 frames, a receive
buffer of 8 words, frames of at most 2 words (:data:`MAX_FRAME_WORDS` of the RTL is set to 2
while the harness is elaborated: it only sizes the room checks), a replay timer of
:data:`REPLAY_TIMEOUT` cycles. Cover statements (task ``cover``) show the
events are reached within the bound: a void frame dropped by the receiver and a frame
delivered after it, a replay followed by a delivery, the sender finishing a voided frame on
the wire.

**In order, exactly once (proven for all time, in two halves).** 1 is proven by
assume-guarantee, each half by k-induction (``mode prove``; k = 1, plain induction, for the
sender, :data:`SENDER_INDUCTION_DEPTH`; k = :data:`INDUCTION_DEPTH` for the receiver) with
invariants written in its harness:

* the sender (:class:`TxOrderProof`, task ``order_tx``): an ``LlrTx`` alone, in the
  environment of the replay proof below with ``enable`` high and the upper layer's beats
  labelled as above, sends every frame well formed — ``first`` exactly when the previous
  frame ended or was cut by ``abort``, at most 2 beats, and a frame that ends without
  ``user.void`` has every beat tagged with the low 8 bits of the frame's sequence number,
  beat indices 0, 1 in order, its last beat where its length says; a beat with the void mark
  goes out with ``user.void``; until a FLUSH, LLR_INIT (seq 0) leaves only in cycles before
  the first frame beat;
* the line (above) passes a frame beat for beat a cycle later, or loses it whole, and
  whatever it corrupts, voids or cuts ends with ``user.error``; so the frames that reach the
  receiver good are frames the sender sent whole and not void, and LLR_INIT arrives before
  any frame beat (both lines have the same delay);
* the receiver (:class:`RxOrderProof`, tasks ``order_rx`` buffered and ``order_rx_cut`` cut
  through): an ``LlrRx`` alone whose input keeps those rules (and the MAC's contract), every
  other input free, delivers the frames it delivers good with tags 0, 1, 2, … in order, each
  whole and well formed.

Tags count the frames offered and not voided, so the frames delivered are the frames offered,
in order, each once, voided frames skipped (tags are 8 bits; the sender holds at most
``buffer_frames`` − 1 frames, so no two of the frames it holds share a tag).

**Bad and void frames (proven for all time).** 2, stronger, for an ``LlrRx`` alone
(:class:`BadFrameProof`, buffered and cut through) whose inputs are free but for the MAC's
contract (frames of 1 or 2 beats, ``user.void`` only with ``user.error``): no beat of a bad
frame is delivered (buffered), no bad frame ends good (cut through). A frame may be marked
(bit 0 of every beat); a marked frame ends bad; the property: no marked beat leaves.

**Replay buffer (proven for all time).** 3 again, for an ``LlrTx`` alone (:class:`ReplayProof`)
whose inputs are free but for the producer contract and one rule of the partner: an ACK or
NACK ``n`` that reaches it has ``n`` + 1 in [oldest unacknowledged, next frame written] (a
partner acknowledges only frames it received whole, hence wholly written; ACK/NACKs outside
the window change nothing, property 4). k-induction (``mode prove``, k =
:data:`INDUCTION_DEPTH`) with the invariants written in the harness: the held frames lie
back to back in the buffer, 1 to ``MAX_FRAME_WORDS`` words each, as the start table says; the
frame being written starts where its table entry says; a frame under way, and ``room`` (a
cycle old), leave space for a longest frame. Two sizes: task ``replay`` (8 words, 4 frames:
the frame limit binds) and ``replay_words`` (8 words, 8 frames: the word limit binds).

**Window (proven for all time).** 4. **ACK/NACK outside the window change nothing**: an
``LlrTx`` fed any inputs (:class:`WindowSide`, every input free) and an ``LlrTx`` fed the same
inputs with the LLR_ACKs and LLR_NACKs outside the window removed (``n`` + 1 not in [oldest
unacknowledged, one past the newest frame sent], spec §7, written here from the spec) are
equivalent: every register and every output of the two is equal in every cycle. yosys proves
it (``equiv_make``, then ``equiv_induct``: 1-induction over all the matched signals at once;
the base case is the common reset state); only the two sides' LCW ``valid`` nets, the one
input that differs, are left unmatched. The proof is accepted only when the whole set is
proven in one induction step (``equiv_induct`` also tries cells one by one, assuming the others,
which would not be a proof). Same sizes as above.
"""

import contextlib
import shutil
from types import SimpleNamespace
from pathlib import Path

from amaranth.back import rtlil
from amaranth.utils import exact_log2
from amaranth.hdl import (Array, Assert, Assume, Cat, ClockDomain, Const, Cover, Elaboratable,
                          Module, Mux, Signal)

from . import run_sby, run_yosys
from ...rtl.link import llr_rx, llr_tx
from ...rtl.link.llr_rx import LlrRx, RxState
from ...rtl.link.llr_tx import LlrTx, TxState
from ...rtl.wire import LLR_PAYLOAD, SEQ_BITS, LcwType

__all__ = ["LlrProof", "TxOrderProof", "RxOrderProof", "BadFrameProof", "ReplayProof",
           "WindowSide", "run_proof", "window_proof", "CHECKS", "PROOF_DEFAULTS", "DEPTH",
           "INDUCTION_DEPTH", "SENDER_INDUCTION_DEPTH", "REPLAY_TIMEOUT", "MAX_FRAME_WORDS"]

#: Longest frame in the harness, in words.
MAX_FRAME_WORDS = 2
#: The sender's replay timer in cycles.
REPLAY_TIMEOUT = 6
#: Cycles checked from reset: properties 1-3 and the covers.
DEPTH = 14
#: The configuration checked by default.
PROOF_DEFAULTS = dict(buffer_words=8, buffer_frames=4, rx_buffer_words=8, replay_max=3,
                      ack_every=2, ack_timer=3, depth=DEPTH, cover_depth=DEPTH)


#: Bits of a beat's data that hold its label (:func:`_label`); the harnesses look at no more.
LABEL_BITS = 11


def _label(data):
    """The label the harnesses' upper layer puts in a beat's data: ``(tag, beat index,
    2-beat frame, void mark)``, :data:`LABEL_BITS` bits."""
    return data[:8], data[8], data[9], data[10]


def _probe_words(m, buffer, words, lasts):
    """Show every word of a frame buffer (:class:`FrameWordLayout` words) on ``words`` (its
    label bits) and ``lasts``, through extra asynchronous read ports."""
    for k, (probe, last) in enumerate(zip(words, lasts)):
        port = buffer.read_port(domain="comb")
        m.d.comb += [port.addr.eq(k), probe.eq(port.data.data), last.eq(port.data.last)]


@contextlib.contextmanager
def _small_frames():
    """Elaborate the LLR with ``MAX_FRAME_WORDS`` words as the longest frame."""
    saved = llr_tx.MAX_FRAME_WORDS, llr_rx.MAX_FRAME_WORDS
    llr_tx.MAX_FRAME_WORDS = llr_rx.MAX_FRAME_WORDS = MAX_FRAME_WORDS
    try:
        yield
    finally:
        llr_tx.MAX_FRAME_WORDS, llr_rx.MAX_FRAME_WORDS = saved


class _ProbedLlrTx(LlrTx):
    """:class:`LlrTx` that also shows its window (``sent_hi``), its writer's state and every
    entry of its start table, for the harness's checks (plain signals, outside the signature;
    the table through extra asynchronous read ports); built without the export's size checks
    (a buffer of a few words)."""
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.p_starts = [Signal(16, name=f"p_start{k}") for k in range(self.buffer_frames)]
        self.p_frame_start = Signal(16)
        self.p_room = Signal()
        self.p_sent_hi = Signal(SEQ_BITS)
        self.p_send = Signal(SEQ_BITS)
        self.p_send_next = Signal(SEQ_BITS)
        self.p_nxt = Signal(SEQ_BITS)
        self.p_addr = Signal(16)
        self.p_take = Signal()
        self.p_in_frame = Signal()
        self.p_head_start = Signal(16)
        self.p_draining = Signal()
        aw = exact_log2(self.buffer_words)
        self.p_rd_addr, self.p_drain_end = Signal(aw), Signal(aw)
        self.p_rd_first, self.p_out_valid, self.p_pending = Signal(), Signal(), Signal()
        self.p_jump_to = Signal(SEQ_BITS)
        words = self.buffer_words
        self.p_words = [Signal(LABEL_BITS, name=f"p_word{k}") for k in range(words)]
        self.p_lasts = [Signal(name=f"p_last{k}") for k in range(words)]

    def elaborate(self, platform):
        m = super().elaborate(platform)
        reader, writer, occupancy = (m.submodules.reader, m.submodules.writer,
                                     m.submodules.occupancy)
        m.d.comb += [
            self.p_sent_hi.eq(reader.sent_hi), self.p_send.eq(reader.send),
            self.p_send_next.eq(reader.send_next),
            self.p_nxt.eq(writer.status.nxt), self.p_addr.eq(writer.status.addr),
            self.p_take.eq(writer.status.take), self.p_in_frame.eq(writer.status.in_frame),
            self.p_head_start.eq(occupancy.head_start.addr),
            self.p_draining.eq(reader.draining),
            self.p_frame_start.eq(writer.status.frame_start), self.p_room.eq(occupancy.room),
        ]
        for k, probe in enumerate(self.p_starts):
            port = m.submodules.starts.read_port(domain="comb")
            m.d.comb += [port.addr.eq(k), probe.eq(port.data)]
        _probe_words(m, m.submodules.buffer, self.p_words, self.p_lasts)
        control = m.submodules.control
        m.d.comb += [
            self.p_rd_addr.eq(reader.rd_addr), self.p_drain_end.eq(reader.drain_end),
            self.p_rd_first.eq(reader.rd_first), self.p_out_valid.eq(reader.out_valid),
            self.p_pending.eq(control.pending), self.p_jump_to.eq(control.jump.to),
        ]
        return m


class _SmallLlrRx(LlrRx):
    """:class:`LlrRx` built without the export's size checks (a buffer of a few words)."""
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class _ProbedLlrRx(_SmallLlrRx):
    """:class:`_SmallLlrRx` that also shows its acceptor's and buffer's state and every word
    of its receive buffer (through extra asynchronous read ports), for :class:`BadFrameProof`."""
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        aw = exact_log2(self.buffer_words)
        self.p_words = [Signal(LABEL_BITS, name=f"p_word{k}") for k in range(self.buffer_words)]
        self.p_lasts = [Signal(name=f"p_last{k}") for k in range(self.buffer_words)]
        self.p_rd_ptr, self.p_commit, self.p_wr_ptr = (Signal(aw + 1) for _ in range(3))
        self.p_in_frame, self.p_taking, self.p_open = Signal(), Signal(), Signal()
        self.p_expected = Signal(SEQ_BITS)

    def elaborate(self, platform):
        m = super().elaborate(platform)
        acceptor = m.submodules.acceptor
        m.d.comb += [self.p_in_frame.eq(acceptor.in_frame), self.p_taking.eq(acceptor.taking),
                     self.p_expected.eq(acceptor.expected)]
        if self.cut_through:
            m.d.comb += self.p_open.eq(m.submodules.cut.open_)
            return m
        _probe_words(m, m.submodules.buffer, self.p_words, self.p_lasts)
        m.d.comb += [self.p_rd_ptr.eq(m.submodules.delivery.rd_ptr),
                     self.p_commit.eq(m.submodules.writer.commit),
                     self.p_wr_ptr.eq(m.submodules.writer.wr_ptr)]
        return m


class _Harness(Elaboratable):
    """A formal harness: its ``sync`` domain (no reset: the solver starts from the initial
    values) runs on ``clk``; ``ports`` are ``clk`` and the free ``inputs``."""
    @property
    def ports(self):
        return [self.clk, *self.inputs]

    def _module(self):
        m = Module()
        m.domains.sync = cd = ClockDomain("sync", reset_less=True)
        m.d.comb += cd.clk.eq(self.clk)
        return m


def _free(name, width=1):
    return Signal(width, name=name)


class LlrProof(_Harness):
    """The delivery harness (see the module docstring): properties 1–3 and the covers.
    ``ports`` lists the free inputs."""

    def __init__(self, *, buffer_words, buffer_frames, rx_buffer_words, replay_max, ack_every,
                 ack_timer):
        self.buffer_words, self.buffer_frames = buffer_words, buffer_frames
        self.rx_buffer_words = rx_buffer_words
        self.replay_max, self.ack_every, self.ack_timer = replay_max, ack_every, ack_timer
        self.clk = Signal()
        # Upper layer.
        self.f_valid, self.f_len2, self.f_void = _free("f_valid"), _free("f_len2"), \
            _free("f_void")
        # Frame line.
        self.f_mac_ready, self.f_lose, self.f_corrupt = _free("f_mac_ready"), \
            _free("f_lose"), _free("f_corrupt")
        # LCW lines.
        self.f_ack_ready, self.f_ack_lose = _free("f_ack_ready"), _free("f_ack_lose")
        self.f_init_ready, self.f_init_lose = _free("f_init_ready"), _free("f_init_lose")
        # Receiver's output.
        self.f_o_ready = _free("f_o_ready")

    @property
    def ports(self):
        return [self.clk, self.f_valid, self.f_len2, self.f_void, self.f_mac_ready,
                self.f_lose, self.f_corrupt, self.f_ack_ready, self.f_ack_lose,
                self.f_init_ready, self.f_init_lose, self.f_o_ready]

    def elaborate(self, platform):
        m = self._module()
        m.submodules.tx = tx = _ProbedLlrTx(8 * self.buffer_words, self.buffer_frames,
                                            self.replay_max)
        m.submodules.rx = rx = _SmallLlrRx(8 * self.rx_buffer_words, self.ack_every, self.ack_timer)
        F = self.buffer_frames

        m.d.comb += [tx.enable.eq(1), tx.replay_timeout.eq(REPLAY_TIMEOUT), tx.rtt_valid.eq(0)]

        # --- upper layer: frames of 1 or 2 beats -------------------------------------------
        # Every beat carries {tag, beat index, 2-beat frame, void}: the tag is the number of
        # frames *not voided* offered before (a voided frame's tag is the next frame's, as its
        # sequence number is), ``void`` is set on the last beat of a voided frame.
        tag = Signal(8)                 # tag of the frame being offered
        beat = Signal()                 # its beat index
        held = Signal()                 # a beat was offered and not taken
        frame_len2 = Signal()
        frame_void = Signal()
        choosing = (beat == 0) & ~held
        len2 = Mux(choosing, self.f_len2, frame_len2)
        void = Mux(choosing, self.f_void, frame_void)
        i = tx.i
        last = beat == len2
        m.d.comb += [
            i.valid.eq(self.f_valid | held | (beat != 0)),     # no bubble inside a frame
            i.payload.data.eq(Cat(tag, beat, len2, void & last)),
            i.payload.keep.eq(0xFF),
            i.payload.first.eq(beat == 0),
            i.payload.last.eq(last),
            tx.i_void.eq(void),
        ]
        taken = i.valid & i.ready
        m.d.sync += [held.eq(i.valid & ~i.ready), frame_len2.eq(len2), frame_void.eq(void)]
        with m.If(taken):
            with m.If(i.payload.last):
                m.d.sync += [beat.eq(0), tag.eq(Mux(void, tag, tag + 1))]
            with m.Else():
                m.d.sync += beat.eq(1)

        # --- frame line: lose, corrupt or deliver each frame; an abort cuts it ------------------
        mac = tx.mac
        m.d.comb += mac.ready.eq(self.f_mac_ready)
        line_in_frame = Signal()
        line_losing = Signal()
        line_seq = Signal(SEQ_BITS)
        rb = rx.mac.payload
        m.d.sync += rx.mac.valid.eq(0)
        mac_take = mac.valid & mac.ready
        losing = Mux(mac.payload.first, self.f_lose, line_losing)
        with m.If(mac_take):
            m.d.sync += [line_in_frame.eq(~mac.payload.last), line_losing.eq(losing),
                         line_seq.eq(mac.payload.user.seq)]
            with m.If(~losing):
                bad = mac.payload.last & self.f_corrupt
                m.d.sync += [rx.mac.valid.eq(1), rb.data.eq(mac.payload.data),
                             rb.keep.eq(mac.payload.keep), rb.first.eq(mac.payload.first),
                             rb.last.eq(mac.payload.last), rb.user.seq.eq(mac.payload.user.seq),
                             rb.user.sequenced.eq(1),
                             rb.user.error.eq(bad | mac.payload.user.void),
                             rb.user.void.eq(mac.payload.user.void & ~bad)]
        with m.Elif(tx.abort & line_in_frame):
            m.d.sync += line_in_frame.eq(0)
            with m.If(~line_losing):
                # The rest of the frame is the abort word: a bad frame ends.
                m.d.sync += [rx.mac.valid.eq(1), rb.keep.eq(0), rb.first.eq(0), rb.last.eq(1),
                             rb.user.seq.eq(line_seq), rb.user.sequenced.eq(1),
                             rb.user.error.eq(1), rb.user.void.eq(0)]

        # --- LCW lines ---------------------------------------------------------------------
        # Receiver -> sender (ACK, NACK, INIT_ECHO).
        m.d.comb += rx.lcw_tx.ready.eq(self.f_ack_ready)
        m.d.sync += [tx.lcw_rx.valid.eq(rx.lcw_tx.valid & self.f_ack_ready & ~self.f_ack_lose),
                     tx.lcw_rx.payload.eq(rx.lcw_tx.payload)]
        # Sender -> receiver (LLR_INIT).
        m.d.comb += tx.lcw_tx.ready.eq(self.f_init_ready)
        m.d.sync += [rx.lcw_rx.valid.eq(tx.lcw_tx.valid & self.f_init_ready
                                        & ~self.f_init_lose),
                     rx.lcw_rx.payload.eq(tx.lcw_tx.payload)]
        m.d.comb += rx.o.ready.eq(self.f_o_ready)

        # --- properties ---------------------------------------------------------------------
        flushed = Signal()
        with m.If(tx.state == TxState.FLUSH):
            m.d.sync += flushed.eq(1)
        live = ~flushed & (tx.state != TxState.FLUSH)

        # The halves of property 1 proven for all time meet here: what the sender sends
        # through the line is what the receiver's half takes.
        rules, _ = _receiver_input(m, rx)
        with m.If(live):
            m.d.comb += [Assert(rule) for rule in rules]

        # 1, 2: deliveries: tags 0, 1, 2, … in order, each frame whole, no void beat.
        o = rx.o
        o_tag, o_beat, o_len2, o_void = _label(o.payload.data)
        delivered = Signal(8)           # frames delivered: the tag expected next
        out_beat = Signal()
        with m.If(o.valid & o.ready):
            m.d.comb += [Assert(~o_void), Assert(o_beat == out_beat),
                         Assert(o.payload.first == (out_beat == 0)),
                         Assert(o.payload.last == (o_beat == o_len2))]
            with m.If(live):
                m.d.comb += Assert(o_tag == delivered)
            with m.If(o.payload.last):
                m.d.sync += [out_beat.eq(0), delivered.eq(o_tag + 1)]
            with m.Else():
                m.d.sync += out_beat.eq(1)

        # 3: the replay buffer.
        held_frames = (tx.p_nxt - tx.head)[:SEQ_BITS]
        m.d.comb += [
            Assert(~(tx.p_take & (held_frames != 0) & (tx.p_addr == tx.p_head_start))),
            Assert(held_frames + tx.p_in_frame <= F),
        ]

        # Reached within the bound.
        delivered_after_void = Signal()
        with m.If(o.valid & o.ready & o.payload.last & (rx.count.void_frames != 0)):
            m.d.sync += delivered_after_void.eq(1)
        delivered_after_replay = Signal()
        with m.If(o.valid & o.ready & o.payload.last & (tx.count.replays != 0)):
            m.d.sync += delivered_after_replay.eq(1)
        m.d.comb += [
            Cover(delivered_after_void),
            Cover(delivered_after_replay),
            Cover(tx.p_draining),
        ]
        return m


class ReplayProof(_Harness):
    """Property 3 for all time (see the module docstring): an ``LlrTx`` alone, every input
    free but for two rules of its environment, and the inductive invariants that make the
    property provable by k-induction. ``ports`` lists the free inputs.

    The environment: the upper layer keeps the producer contract (frames of 1 or 2 beats, the
    second right after the first, ``first`` on the first); an LLR_ACK or LLR_NACK ``n`` that
    reaches the sender has ``n`` + 1 in [``head``, ``nxt``] (the writer's next number): a
    partner acknowledges only frames it received whole, which were then wholly written, and
    those outside the window change nothing (property 4). LLR_INIT_ECHO, ``enable``, the MAC's
    ``ready`` and the timer are free.
    """
    def __init__(self, *, buffer_words, buffer_frames, replay_max):
        self.words, self.frames = buffer_words, buffer_frames
        self.tx = tx = _ProbedLlrTx(8 * buffer_words, buffer_frames, replay_max)
        self.clk = Signal()
        self.inputs = [_free(name, width) for name, width in (
            ("f_valid", 1), ("f_payload", len(tx.i.payload.as_value())), ("f_void", 1),
            ("f_mac_ready", 1), ("f_lcw_valid", 1), ("f_lcw", len(tx.lcw_rx.payload.as_value())),
            ("f_init_ready", 1), ("f_enable", 1), ("f_timeout", len(tx.replay_timeout)))]

    def elaborate(self, platform):
        m = self._module()
        m.submodules.tx = tx = self.tx
        W, F, AW = self.words, self.frames, exact_log2(self.words)
        valid, payload, void, mac_ready, lcw_valid, lcw_payload, init_ready, enable, timeout = \
            self.inputs
        lcw = tx.lcw_rx
        m.d.comb += [tx.i.valid.eq(valid), tx.i.payload.eq(payload), tx.i_void.eq(void),
                     tx.mac.ready.eq(mac_ready), lcw.valid.eq(lcw_valid),
                     lcw.payload.eq(lcw_payload), tx.lcw_tx.ready.eq(init_ready),
                     tx.enable.eq(enable), tx.replay_timeout.eq(timeout), tx.rtt_valid.eq(0)]
        in_frame = tx.p_in_frame
        m.d.comb += [Assume(tx.i.payload.first == ~in_frame),
                     Assume(~in_frame | (tx.i.valid & tx.i.payload.last))]
        held = Signal(SEQ_BITS)
        m.d.comb += held.eq((tx.p_nxt - tx.head)[:SEQ_BITS])
        n_plus_1 = (LLR_PAYLOAD.layout(lcw.payload.payload).seq + 1)[:SEQ_BITS]
        ack_nack = (lcw.payload.type == LcwType.LLR_ACK) | (lcw.payload.type == LcwType.LLR_NACK)
        m.d.comb += Assume(~(lcw.valid & ack_nack) | ((n_plus_1 - tx.head)[:SEQ_BITS] <= held))

        # The held frames' first words, oldest first (S[k]: frame head + k), and their
        # distances from the oldest's, 0 … W (W: the buffer is exactly full).
        S = [Signal(AW, name=f"held_start{k}") for k in range(F)]
        for k in range(F):
            with m.Switch(tx.head[:exact_log2(F)]):
                for h in range(F):
                    with m.Case(h):
                        m.d.comb += S[k].eq(tx.p_starts[(h + k) % F])
        fs = tx.p_frame_start[:AW]           # first word of the frame written (or next)
        dist = [Signal(AW + 1, name=f"held_dist{k}") for k in range(F)]
        m.d.comb += [dist[k].eq((S[k] - S[0])[:AW]) for k in range(F)]
        dist_fs = Signal(AW + 1)
        m.d.comb += dist_fs.eq(Mux((fs == S[0]) & (held != 0), W, (fs - S[0])[:AW]))
        tail = Signal(AW)                    # words of the frame being written, so far
        m.d.comb += tail.eq((tx.p_addr[:AW] - fs)[:AW])

        # 3: the replay buffer never overruns.
        m.d.comb += [Assert(~(tx.p_take & (held != 0) & (tx.p_addr[:AW] == S[0]))),
                     Assert(held + in_frame <= F)]
        # Inductive invariants: held frames lie back to back, 1 … MAX_FRAME_WORDS words each,
        # the frame being written starts where the table says; ``room`` (a cycle old) and a
        # frame under way leave space for a longest frame.
        m.d.comb += Assert(held <= F)
        # Where each held frame ends: the next one's first word, or the frame being written.
        afters = [dist_fs if k + 1 == F else Mux(held == k + 1, dist_fs, dist[k + 1])
                  for k in range(F)]
        for k, after in enumerate(afters):
            with m.If(held > k):
                m.d.comb += [Assert(after > dist[k]),
                             Assert(after - dist[k] <= MAX_FRAME_WORDS)]
        m.d.comb += [Assert(tail <= Mux(in_frame, MAX_FRAME_WORDS - 1, 0)),
                     Assert(~in_frame | (tail >= 1))]
        with m.If(in_frame):
            with m.Switch(tx.p_nxt[:exact_log2(F)]):
                for h in range(F):
                    with m.Case(h):
                        m.d.comb += Assert(tx.p_starts[h][:AW] == fs)
            m.d.comb += Assert(held <= F - 1)
            with m.If(held != 0):
                m.d.comb += Assert(dist_fs <= W - MAX_FRAME_WORDS)
        with m.If(tx.p_room):
            m.d.comb += Assert(held <= F - 1)
            with m.If(held != 0):
                m.d.comb += Assert(dist_fs + tail <= W - MAX_FRAME_WORDS)
        lengths = [after - dist[k] for k, after in enumerate(afters)]
        self.layout = SimpleNamespace(held=held, starts=S, lengths=lengths, fs=fs,
                                      dist_fs=dist_fs)
        return m


class TxOrderProof(ReplayProof):
    """The sender's half of property 1 for all time (see the module docstring): an
    ``LlrTx`` alone, its environment that of :class:`ReplayProof` with ``enable`` held high
    and the upper layer's beats labelled (tag: the frames not voided offered before, beat
    index, length, void mark), sends every frame well formed: each beat it sends carries the
    tag equal to the low 8 bits of its frame's sequence number, beat indices 0, 1 in order,
    the last beat the one its length says; a beat with the void mark goes out with
    ``user.void``; a frame starts (``first``) exactly when the previous one ended or was cut
    by ``abort``, and keeps its sequence number to its end. ``ports`` lists the free inputs.
    """
    def elaborate(self, platform):
        m = super().elaborate(platform)
        tx, L = self.tx, self.layout
        W, F, AW, FW = self.words, self.frames, exact_log2(self.words), exact_log2(self.frames)
        void, enable = self.inputs[2], self.inputs[7]
        m.d.comb += Assume(enable)

        # The upper layer labels its beats.
        tag = Signal(8)
        i_tag, i_index, i_len2, i_vmark = _label(tx.i.payload.data)
        with m.If(tx.i.valid):
            m.d.comb += [Assume(i_tag == tag), Assume(i_index == tx.p_in_frame),
                         Assume(tx.i.payload.last == (i_index == i_len2)),
                         Assume(i_vmark == (void & tx.i.payload.last))]
        with m.If(tx.i.valid & tx.i.ready & tx.i.payload.last & ~void):
            m.d.sync += tag.eq(tag + 1)

        # The property, on every beat the MAC takes.
        mac = tx.mac
        taken = mac.valid & mac.ready
        _, _, _, vmark = _label(mac.payload.data)
        _, ok, _, wire_seq, wire_ok = _labelled(m, taken, mac.payload, mac.payload.user.seq,
                                                "wire")
        line_open = Signal()            # a frame has begun on the wire and not ended
        with m.If(taken):
            m.d.sync += line_open.eq(~mac.payload.last)
        with m.Elif(tx.abort):
            m.d.sync += line_open.eq(0)
        with m.If(taken):
            m.d.comb += [Assert(mac.payload.first == ~line_open),
                         Assert(mac.payload.first | mac.payload.last),
                         Assert(~vmark | mac.payload.user.void)]
            with m.If(mac.payload.last & ~mac.payload.user.void):
                m.d.comb += Assert(ok)
        # Until a FLUSH, LLR_INIT (seq 0) leaves only in cycles before the first frame beat.
        sent, flushed = Signal(), Signal()
        with m.If(taken):
            m.d.sync += sent.eq(1)
        with m.If(tx.state == TxState.FLUSH):
            m.d.sync += flushed.eq(1)
        init = tx.lcw_tx
        with m.If(init.valid & init.ready & ~flushed & (tx.state != TxState.FLUSH)):
            m.d.comb += [Assert(~sent & ~taken),
                         Assert(LLR_PAYLOAD.layout(init.payload.payload).seq == 0)]

        # Inductive invariants. The buffer: every held frame (and the frame being written)
        # is well formed, tagged with its sequence number.
        words, lasts = Array(tx.p_words), Array(tx.p_lasts)

        def word_is(addr, tag, index, len2, vmark, last):
            w_tag, w_index, w_len2, w_vmark = _label(words[addr])
            return [Assert(w_tag == tag[:8]), Assert(w_index == index), Assert(w_len2 == len2),
                    Assert(w_vmark == vmark), Assert(lasts[addr] == last)]

        nxt, head, held, fs = tx.p_nxt, tx.head, L.held, L.fs
        m.d.comb += Assert(tag == nxt[:8])
        for k in range(F):
            start, two = L.starts[k], L.lengths[k] == 2
            with m.If(held > k):
                m.d.comb += word_is(start, head + k, 0, two, 0, ~two)
                with m.If(two):
                    m.d.comb += word_is((start + 1)[:AW], head + k, 1, 1, 0, 1)
        with m.If(tx.p_in_frame):
            m.d.comb += word_is(fs, nxt, 0, 1, 0, 0)

        # The reader: frame ``send`` is held or being written; it reads from the frame's
        # first word, or its second after the first; finishing a void frame, its last word is
        # still there; the output register holds the word read, with its frame's number.
        send, rd_addr, rd_first = tx.p_send, tx.p_rd_addr, tx.p_rd_first
        out_valid, out = tx.p_out_valid, mac.payload
        k_send = (send - head)[:SEQ_BITS]
        start_send = Mux(send == nxt, fs, Array(L.starts)[k_send[:FW]])
        m.d.comb += Assert(tx.p_send_next == (send + 1)[:SEQ_BITS])
        with m.If(tx.p_pending & (tx.state != TxState.FLUSH)):
            m.d.comb += [Assert(tx.abort), Assert((tx.p_jump_to - head)[:SEQ_BITS] <= held)]
        m.d.comb += Assert(tx.state != TxState.OFF)
        with m.If((tx.state == TxState.INIT) | (tx.state == TxState.FLUSH)):
            m.d.comb += Assert(~out_valid)
        with m.If(tx.state == TxState.INIT):
            with m.If(~flushed):
                m.d.comb += [Assert(~sent), Assert(head == 0)]
        m.d.comb += Assert(~init.valid | ((tx.state == TxState.INIT)
                                          & (LLR_PAYLOAD.layout(init.payload.payload).seq
                                             == head)))
        with m.If(~tx.abort):
            m.d.comb += Assert(k_send <= held)
            with m.If(tx.p_draining):
                m.d.comb += [Assert(send == nxt), Assert(~tx.p_in_frame), Assert(~rd_first),
                             Assert(rd_addr == (fs + 1)[:AW]),
                             Assert(tx.p_drain_end == (fs + 2)[:AW])]
                m.d.comb += word_is((fs + 1)[:AW], nxt, 1, 1, 1, 1)
                with m.If(held != 0):
                    m.d.comb += Assert(L.dist_fs <= W - MAX_FRAME_WORDS)
            with m.Elif(rd_first):
                m.d.comb += Assert(rd_addr == start_send)
            with m.Else():
                m.d.comb += [Assert(rd_addr == (start_send + 1)[:AW]),
                             Assert(Mux(send == nxt, tx.p_in_frame,
                                        Array(L.lengths)[k_send[:FW]] == 2))]
            o_tag, o_index, o_len2, o_vmark = _label(out.data)
            with m.If(out_valid):
                m.d.comb += [Assert(o_tag == out.user.seq[:8]), Assert(o_index == ~out.first),
                             Assert(o_vmark == out.user.void), Assert(~o_vmark | out.last),
                             Assert(out.first | out.last),
                             Assert(out.last == (o_index == o_len2)),
                             Assert(line_open == ~out.first)]
                with m.If(out.last):
                    m.d.comb += [Assert(rd_first),
                                 Assert(send == Mux(out.user.void, out.user.seq,
                                                    out.user.seq + 1)[:SEQ_BITS])]
                with m.Else():
                    m.d.comb += [Assert(~rd_first), Assert(send == out.user.seq)]
            with m.Else():
                m.d.comb += Assert(line_open == ~rd_first)
            with m.If(line_open):
                m.d.comb += [Assert(wire_ok),
                             Assert(wire_seq == Mux(out_valid, out.user.seq, send))]
        return m


class _RxHarness(_Harness):
    """A harness of an ``LlrRx`` alone (``_ProbedLlrRx``, buffered or ``cut_through``) whose
    inputs are all free ports: the MAC's beats, the LCWs, ``o.ready`` and ``lcw_tx.ready``."""
    def __init__(self, *, rx_buffer_words, ack_every, ack_timer, cut_through):
        self.words, self.cut_through = rx_buffer_words, cut_through
        self.rx = rx = _ProbedLlrRx(8 * rx_buffer_words, ack_every, ack_timer,
                                    cut_through=cut_through)
        self.clk = Signal()
        self.inputs = [_free(name, width) for name, width in (
            ("f_valid", 1), ("f_beat", len(rx.mac.payload.as_value())), ("f_lcw_valid", 1),
            ("f_lcw", len(rx.lcw_rx.payload.as_value())), ("f_o_ready", 1),
            ("f_lcw_ready", 1))]

    def _receiver(self):
        m = self._module()
        m.submodules.rx = rx = self.rx
        valid, payload, lcw_valid, lcw_payload, _, lcw_ready = self.inputs
        m.d.comb += [rx.mac.valid.eq(valid), rx.mac.payload.eq(payload),
                     rx.lcw_rx.valid.eq(lcw_valid), rx.lcw_rx.payload.eq(lcw_payload),
                     rx.lcw_tx.ready.eq(lcw_ready)]
        return m, rx


class BadFrameProof(_RxHarness):
    """Property 2 for all time, and more (see the module docstring): an ``LlrRx`` alone
    (buffered, or ``cut_through``), every input free but for the MAC's contract, never
    delivers a beat of a bad frame (buffered) / never ends a bad frame good (cut through).

    The MAC's contract: frames of 1 or 2 beats (``first`` on the first; the MAC cuts longer
    ones), ``user.void`` only with ``user.error``. Any frame may be *marked* (bit 0 of every
    one of its beats set); a marked frame ends with ``user.error`` (a void frame always does).
    Everything else — sequence numbers, LCWs (LLR_INIT included), ``o.ready`` — is free.
    ``ports`` lists the free inputs.
    """
    def elaborate(self, platform):
        m, rx = self._receiver()
        valid, o_ready = self.inputs[0], self.inputs[4]
        beat = rx.mac.payload
        in_frame, mark = Signal(), Signal()     # the MAC is inside a frame; it is marked
        with m.If(valid):
            m.d.sync += in_frame.eq(~beat.last)
            with m.If(beat.first):
                m.d.sync += mark.eq(beat.data[0])
        m.d.comb += [
            Assume(~valid | (beat.first == ~in_frame)),
            Assume(~(valid & in_frame) | beat.last),
            Assume(~valid | beat.first | (beat.data[0] == mark)),
            Assume(~(valid & beat.last & beat.data[0]) | beat.user.error),
            Assume(~(valid & beat.user.void) | beat.user.error),
        ]
        o = rx.o
        if self.cut_through:
            # The frame on ``o`` ends with ``error`` when marked; the inductive invariants tie
            # the output register's frame to the MAC's frame.
            o_in, o_mark = Signal(), Signal()
            with m.If(o.valid):
                m.d.sync += o_in.eq(~o.payload.last)
                with m.If(o.payload.first):
                    m.d.sync += o_mark.eq(o.payload.data[0])
            frame_mark = Mux(o.payload.first, o.payload.data[0], o_mark)
            m.d.comb += [
                Assert(~(o.valid & o.payload.last & frame_mark) | o.payload.user.error),
                Assert(in_frame == rx.p_in_frame),
                Assert(Mux(o.valid, ~o.payload.last, o_in) == rx.p_open),
            ]
            with m.If(rx.p_open):
                m.d.comb += [Assert(rx.p_taking & rx.p_in_frame), Assert(frame_mark == mark)]
            return m
        m.d.comb += o.ready.eq(o_ready)
        W, AW = self.words, exact_log2(self.words)
        m.d.comb += Assert(~o.valid | ~o.payload.data[0])
        # Invariants: the committed words not yet read are unmarked; the words of the frame
        # being written carry its mark; the pointers keep their order; a frame being taken
        # started with room for a longest frame.
        rd, commit, wr = rx.p_rd_ptr, rx.p_commit, rx.p_wr_ptr
        for k, word in enumerate(rx.p_words):
            with m.If((k - rd)[:AW] < (commit - rd)[:AW + 1]):
                m.d.comb += Assert(~word[0])
            with m.If((k - commit)[:AW] < (wr - commit)[:AW + 1]):
                m.d.comb += Assert(word[0] == mark)
        m.d.comb += Assert(in_frame == rx.p_in_frame)
        _rx_pointer_invariants(m, rx, W)
        return m


def _rx_pointer_invariants(m, rx, W):
    """Inductive invariants of a buffered ``_ProbedLlrRx`` with ``W`` words: the pointers
    keep their order, a frame being taken started with room for a longest frame."""
    AW = exact_log2(W)
    rd, commit, wr = rx.p_rd_ptr, rx.p_commit, rx.p_wr_ptr
    m.d.comb += [Assert((wr - rd)[:AW + 1] <= W),
                 Assert((commit - rd)[:AW + 1] <= (wr - rd)[:AW + 1])]
    with m.If(rx.p_taking & rx.p_in_frame):
        m.d.comb += [Assert((wr - commit)[:AW + 1] >= 1),
                     Assert((wr - commit)[:AW + 1] <= MAX_FRAME_WORDS - 1),
                     Assert((commit - rd)[:AW + 1] <= W - MAX_FRAME_WORDS)]
    with m.Else():
        m.d.comb += Assert(wr == commit)


def _labelled(m, valid, beat, seq, name):
    """Follow the frames of a stream of labelled beats (``beat``: ``first``, ``last``,
    ``data``), each frame numbered ``seq`` (read on its first beat). Returns ``(seq, ok,
    in_frame, frame_seq, frame_ok)``: the number of the frame the beat belongs to; whether
    that frame is well formed up to and including this beat (every beat tagged with the low 8
    bits of the number, beat indices 0, 1 in order, the last beat the one its length says, no
    void mark); and, registered, whether a
    frame is under way, its number and whether it was well formed up to its latest beat."""
    tag, index, len2, vmark = _label(beat.data)
    in_frame = Signal(name=f"{name}_in_frame")
    frame_ok = Signal(name=f"{name}_ok")
    frame_seq = Signal(len(seq), name=f"{name}_seq")
    this_seq = Mux(beat.first, seq, frame_seq)
    ok = Signal(name=f"{name}_ok_now")
    m.d.comb += ok.eq(Mux(beat.first, index == 0, frame_ok & (index == 1))
                      & (beat.last == (index == len2)) & (tag == this_seq[:8]) & ~vmark)
    with m.If(valid):
        m.d.sync += [in_frame.eq(~beat.last), frame_ok.eq(ok)]
        with m.If(beat.first):
            m.d.sync += frame_seq.eq(seq)
    return this_seq, ok, in_frame, frame_seq, frame_ok


def _receiver_input(m, rx):
    """What the receiver's half of property 1 takes from the sender through the line, on
    ``rx``'s inputs: ``(rules, state)``, the rules a list of conditions of every cycle (the
    MAC's contract: frames of 1 or 2 beats, ``first`` on the first, ``user.void`` only with
    ``user.error``; every frame sequenced; a frame that ends good is well formed (see
    :func:`_labelled`); an LLR_INIT arrives only before the first frame beat, with seq 0),
    ``state`` the registers that follow the input: ``in_frame``, ``in_seq`` and ``in_ok`` of
    the frame arriving, ``seen`` (a frame beat has arrived)."""
    valid, beat, lcw = rx.mac.valid, rx.mac.payload, rx.lcw_rx
    _, ok_now, in_frame, in_seq, in_ok = _labelled(m, valid, beat, beat.user.seq, "in")
    seen = Signal(name="in_seen")
    with m.If(valid):
        m.d.sync += seen.eq(1)
    init = lcw.valid & (lcw.payload.type == LcwType.LLR_INIT)
    rules = [
        ~valid | (beat.first == ~in_frame),
        ~(valid & in_frame) | beat.last,
        ~(valid & beat.user.void) | beat.user.error,
        ~valid | beat.user.sequenced,
        ~(valid & beat.last & ~beat.user.error) | ok_now,
        ~init | (~seen & ~valid & (LLR_PAYLOAD.layout(lcw.payload.payload).seq == 0)),
    ]
    return rules, SimpleNamespace(in_frame=in_frame, in_seq=in_seq, in_ok=in_ok, seen=seen)


class RxOrderProof(_RxHarness):
    """The receiver's half of property 1 for all time (see the module docstring): an
    ``LlrRx`` alone (buffered, or ``cut_through``) whose input is what the sender guarantees
    through the line (:class:`TxOrderProof`) delivers the good frames with tags 0, 1, 2, …,
    each whole. ``ports`` lists the free inputs.

    The environment: the MAC's contract (as in :class:`BadFrameProof`), every frame
    sequenced; a frame that ends good is well formed: every beat tagged with the low 8 bits
    of the frame's sequence number, beat indices 0, 1, … up to its length, no void mark; an
    LLR_INIT arrives only before the first frame beat, with seq 0 (outside FLUSH, the sender
    sends LLR_INIT only before it sends any frame, from ``head`` = 0). Everything else —
    sequence numbers, bad frames, other LCWs, ``o.ready`` — is free.
    """
    def elaborate(self, platform):
        m, rx = self._receiver()
        o_ready = self.inputs[4]
        rules, state = _receiver_input(m, rx)
        m.d.comb += [Assume(rule) for rule in rules]
        in_frame, in_seq, in_ok, seen = state.in_frame, state.in_seq, state.in_ok, state.seen

        # The property: the frames delivered good carry tags 0, 1, 2, …, each well formed
        # and whole.
        o = rx.o
        delivered = Signal(8)
        _, o_index, o_len2, _ = _label(o.payload.data)
        taken = o.valid if self.cut_through else o.valid & o.ready
        o_tag, o_ok_now, o_in, _, o_ok = _labelled(m, taken, o.payload,
                                                 _label(o.payload.data)[0], "out")
        good_end = taken & o.payload.last
        if self.cut_through:
            good_end &= ~o.payload.user.error
        else:
            m.d.comb += o.ready.eq(o_ready)
        with m.If(good_end):
            m.d.comb += Assert(o_ok_now & (o_index == o_len2) & (o_tag == delivered))
            m.d.sync += delivered.eq(delivered + 1)

        # Inductive invariants.
        expected = rx.p_expected
        m.d.comb += Assert(in_frame == rx.p_in_frame)
        with m.If(~seen):
            m.d.comb += Assert(~in_frame)
        with m.If(~seen | (rx.state == RxState.OFF)):
            # No frame yet, or no LLR_INIT yet: nothing was taken.
            m.d.comb += [Assert(expected == 0), Assert(delivered == 0), Assert(~o.valid),
                         Assert(~o_in), Assert(~rx.p_taking)]
            if not self.cut_through:
                m.d.comb += Assert(rx.p_commit == rx.p_rd_ptr)
        with m.If(rx.p_taking & rx.p_in_frame):
            m.d.comb += Assert(in_seq == expected)
        if self.cut_through:
            m.d.comb += [Assert((expected[:8] - delivered)[:8] == good_end),
                         Assert(Mux(o.valid, ~o.payload.last, o_in) == rx.p_open)]
            m.d.comb += Assert(rx.p_open == (rx.p_taking & rx.p_in_frame))
            with m.If(rx.p_open):
                with m.If(in_ok):
                    m.d.comb += [Assert(Mux(o.valid, o_ok_now, o_ok)),
                                 Assert(o_tag == in_seq[:8])]
            return m
        # Buffered: the output register's beat, the committed words and the word of the frame
        # being taken are the frames delivered next, well formed, tags counting up from
        # ``delivered``.
        W, AW = self.words, exact_log2(self.words)
        _rx_pointer_invariants(m, rx, W)
        m.d.comb += Assert(o_in == ~o.payload.first)
        with m.If(o.valid):
            m.d.comb += [Assert(o_ok_now), Assert(o_tag == delivered),
                         Assert(o.payload.last == (o_index == o_len2))]
        with m.Elif(o_in):
            m.d.comb += [Assert(o_ok), Assert(o_tag == delivered)]
        open_ = Mux(o.valid, ~o.payload.last, o_in)  # the next word read continues a frame
        base = (delivered + (o.valid & o.payload.last))[:8]
        words, lasts = Array(rx.p_words), Array(rx.p_lasts)
        rd, commit = rx.p_rd_ptr, rx.p_commit
        committed = (commit - rd)[:AW + 1]
        # Walking the committed words from the read pointer: ``first``, the word at distance
        # d starts a frame; ``ends``, frames ended before it.
        first, ends = ~open_, Const(0, 8)
        firsts, counts = [], []
        for d in range(W + 1):
            firsts.append(first)
            counts.append(ends)
            if d == W:
                break
            pos = (rd + d)[:AW]
            tag, index, len2, vmark = _label(words[pos])
            with m.If(d < committed):
                m.d.comb += [Assert(tag == (base + ends)[:8]), Assert(index == ~first),
                             Assert(~vmark), Assert(len2 | ~index),
                             Assert(lasts[pos] == (index == len2))]
            first = lasts[pos]
            ends = (ends + lasts[pos])[:8]
        m.d.comb += [Assert(Array(firsts)[committed]),
                     Assert(expected[:8] == (base + Array(counts)[committed])[:8])]
        with m.If(rx.p_taking & rx.p_in_frame & in_ok):
            tag, index, len2, vmark = _label(words[commit[:AW]])
            m.d.comb += [Assert(tag == in_seq[:8]), Assert(index == 0), Assert(len2),
                         Assert(~vmark), Assert(~lasts[commit[:AW]])]
        return m


class WindowSide(_Harness):
    """One side of the window proof (property 4): an ``LlrTx`` whose every input is a free
    port, and whose outputs and window state are ports. With ``filtered``, the LLR_ACKs and
    LLR_NACKs outside its window never reach it (their ``valid`` is cleared in front of it).

    The window, from spec §7: an ACK or NACK ``n`` is in it when ``n`` + 1 lies in [oldest
    unacknowledged (``head``), one past the newest frame sent (``sent_hi``)] modulo 2^20.
    """
    def __init__(self, *, buffer_words, buffer_frames, replay_max, filtered):
        self.filtered = filtered
        self.tx = tx = _ProbedLlrTx(8 * buffer_words, buffer_frames, replay_max)
        self.clk = Signal()

        def port(name, value):
            return Signal(len(value), name=name)
        self.inputs = [port(name, value) for name, value in (
            ("i_valid", tx.i.valid), ("i_payload", tx.i.payload.as_value()),
            ("i_void", tx.i_void), ("mac_ready", tx.mac.ready), ("lcw_valid", tx.lcw_rx.valid),
            ("lcw_payload", tx.lcw_rx.payload.as_value()), ("init_ready", tx.lcw_tx.ready),
            ("enable", tx.enable), ("replay_timeout", tx.replay_timeout), ("rtt", tx.rtt),
            ("rtt_valid", tx.rtt_valid))]
        self._outputs = (("i_ready", tx.i.ready), ("mac_valid", tx.mac.valid),
                         ("mac_payload", tx.mac.payload.as_value()), ("abort", tx.abort),
                         ("init_valid", tx.lcw_tx.valid),
                         ("init_payload", tx.lcw_tx.payload.as_value()),
                         ("state", tx.state.as_value()), ("head", tx.head),
                         ("failed", tx.failed), ("sent_hi", tx.p_sent_hi),
                         ("send", tx.p_send), ("nxt", tx.p_nxt))
        self.outputs = [port(name, value) for name, value in self._outputs]

    @property
    def ports(self):
        return [self.clk, *self.inputs, *self.outputs]

    def elaborate(self, platform):
        m = self._module()
        m.submodules.tx = tx = self.tx
        (i_valid, i_payload, i_void, mac_ready, lcw_valid, lcw_payload, init_ready, enable,
         replay_timeout, rtt, rtt_valid) = self.inputs
        lcw = tx.lcw_rx
        m.d.comb += [
            tx.i.valid.eq(i_valid), tx.i.payload.eq(i_payload), tx.i_void.eq(i_void),
            tx.mac.ready.eq(mac_ready), lcw.payload.eq(lcw_payload),
            tx.lcw_tx.ready.eq(init_ready), tx.enable.eq(enable),
            tx.replay_timeout.eq(replay_timeout), tx.rtt.eq(rtt), tx.rtt_valid.eq(rtt_valid),
        ]
        m.d.comb += [out.eq(value) for out, (_, value) in zip(self.outputs, self._outputs)]
        if not self.filtered:
            m.d.comb += lcw.valid.eq(lcw_valid)
            return m
        # Ref: spec §7 — ``n`` + 1 in [head, sent_hi], distances modulo 2^20.
        n_plus_1 = (LLR_PAYLOAD.layout(lcw.payload.payload).seq + 1)[:SEQ_BITS]
        in_window = (n_plus_1 - tx.head)[:SEQ_BITS] <= (tx.p_sent_hi - tx.head)[:SEQ_BITS]
        ack_nack = (lcw.payload.type == LcwType.LLR_ACK) | (lcw.payload.type == LcwType.LLR_NACK)
        m.d.comb += lcw.valid.eq(lcw_valid & ~(ack_nack & ~in_window))
        return m


#: The one net that differs between the two sides of the window proof: the LCW ``valid``
#: into ``LlrTx`` (and its copies inside it); left unmatched.
_UNMATCHED = "lcw_rx__valid"


#: k of the k-induction that proves properties 1 (the receiver's half), 2 and 3.
INDUCTION_DEPTH = 3
#: ... and the sender's half of property 1: its invariants are inductive on their own.
SENDER_INDUCTION_DEPTH = 1


def _sby_text(depth, cover_depth):
    return f"""[tasks]
delivery
cover
order_tx
order_rx
order_rx_cut
replay
replay_words
bad_frames
bad_frames_cut

[options]
cover: mode cover
cover: depth {cover_depth}
delivery: mode bmc
delivery: depth {depth}
order_tx: mode prove
order_tx: depth {SENDER_INDUCTION_DEPTH}
order_rx: mode prove
order_rx: depth {INDUCTION_DEPTH}
order_rx_cut: mode prove
order_rx_cut: depth {INDUCTION_DEPTH}
replay: mode prove
replay: depth {INDUCTION_DEPTH}
replay_words: mode prove
replay_words: depth {INDUCTION_DEPTH}
bad_frames: mode prove
bad_frames: depth {INDUCTION_DEPTH}
bad_frames_cut: mode prove
bad_frames_cut: depth {INDUCTION_DEPTH}

[engines]
smtbmc yices

[script]
delivery: read_rtlil delivery.il
cover: read_rtlil delivery.il
order_tx: read_rtlil order_tx.il
order_rx: read_rtlil order_rx.il
order_rx_cut: read_rtlil order_rx_cut.il
replay: read_rtlil replay.il
replay_words: read_rtlil replay_words.il
bad_frames: read_rtlil bad_frames.il
bad_frames_cut: read_rtlil bad_frames_cut.il
prep -top top
# Memories as registers: the harness writes constant bits that then fold away.
memory_map
opt -full
opt_clean

[files]
delivery.il
order_tx.il
order_rx.il
order_rx_cut.il
replay.il
replay_words.il
bad_frames.il
bad_frames_cut.il
"""


def _flatten_script(side):
    return f"""read_rtlil {side}.il
hierarchy -top top
proc
flatten
memory_map
opt_clean
rename top {side}
"""


def window_proof(workdir, *, buffer_words, buffer_frames, replay_max):
    """Property 4 by equivalence and 1-induction (see the module docstring), in ``workdir``
    (which must exist). Returns ``(status, seconds, signals proven equal)``; the log is
    ``window.ys.log``."""
    for filtered, side in ((False, "gold"), (True, "gate")):
        harness = WindowSide(buffer_words=buffer_words, buffer_frames=buffer_frames,
                             replay_max=replay_max, filtered=filtered)
        with _small_frames():
            (workdir / f"{side}.il").write_text(rtlil.convert(harness, ports=harness.ports))
    # The names of the unmatched nets after flattening (the copies inside the hierarchy).
    (workdir / "names.ys").write_text(_flatten_script("gold") +
                                      f"select -list gold/w:*{_UNMATCHED}*\n")
    _, seconds_names, log = run_yosys(workdir, "names.ys")
    names = sorted({line.split("/", 1)[1].lstrip("\\") for line in log.splitlines()
                    if line.startswith("gold/")})
    (workdir / "unmatched.txt").write_text("".join(f"{name}\n" for name in names))
    (workdir / "window.ys").write_text(
        _flatten_script("gate") + "design -stash gate\n" + _flatten_script("gold") +
        "design -copy-from gate -as gate gate\n"
        "equiv_make -blacklist unmatched.txt gold gate equiv\n"
        "hierarchy -top equiv\n"
        "equiv_induct -seq 1\n"
        "equiv_status -assert\n")
    returncode, seconds, log = run_yosys(workdir, "window.ys")
    found = [line for line in log.splitlines() if line.startswith("Found ")
             and "$equiv cells in equiv" in line]
    whole = "Entire workset of" in log and "Equivalence successfully proven" in log
    status = "PASS" if returncode == 0 and whole and names else "FAIL"
    matched = int(found[-1].split()[1]) if found else 0
    return status, seconds_names + seconds, matched


#: The checks, in the order run.
CHECKS = ("delivery", "cover", "order_tx", "order_rx", "order_rx_cut", "bad_frames",
          "bad_frames_cut", "replay", "replay_words", "window")
MODES = {"delivery": "bmc", "cover": "cover", "order_tx": "prove", "order_rx": "prove",
         "order_rx_cut": "prove", "bad_frames": "prove", "bad_frames_cut": "prove",
         "replay": "prove", "replay_words": "prove", "window": "prove"}


def run_proof(workdir, *, depth=None, cover_depth=None, checks=CHECKS, **params):
    """Write the harnesses and run ``checks`` in ``workdir``: with SymbiYosys (as in
    :mod:`ethlink.sim.formal.cbfc`) task ``delivery`` (properties 1–3, bounded, to ``depth``
    cycles), the covers, tasks ``order_tx``, ``order_rx`` and ``order_rx_cut`` (the two
    halves of property 1 for all time, the receiver buffered and cut through), ``bad_frames``
    and ``bad_frames_cut`` (property 2 for all time, buffered and cut through) and ``replay``
    and ``replay_words`` (property 3 for all time, with the frame limit and with the word
    limit binding), by k-induction; with
    yosys task ``window`` (property 4, for all time). Returns ``{"modes": {task: mode},
    "depth", "cover_depth", "window_signals", "seconds", "passed", "tasks": {task: status},
    "params"}``."""
    config = {**PROOF_DEFAULTS, **params}
    depth, cover_depth = (depth or config.pop("depth"),
                          cover_depth or config.pop("cover_depth"))
    for key in ("depth", "cover_depth"):
        config.pop(key, None)
    workdir = Path(workdir)
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    sizes = {key: config[key] for key in ("buffer_words", "buffer_frames", "replay_max")}
    # "replay": the sizes of the other checks, where the frame limit binds; "replay_words":
    # as many frames as words, where the word limit (a longest frame + 1 word) binds.
    harnesses = {"delivery": LlrProof(**config), "replay": ReplayProof(**sizes),
                 "replay_words": ReplayProof(**{**sizes,
                                                "buffer_frames": sizes["buffer_words"]})}
    harnesses["order_tx"] = TxOrderProof(**sizes)
    rx_sizes = {key: config[key] for key in ("rx_buffer_words", "ack_every", "ack_timer")}
    for name, cut in (("bad_frames", 0), ("bad_frames_cut", 1)):
        harnesses[name] = BadFrameProof(**rx_sizes, cut_through=cut)
    for name, cut in (("order_rx", 0), ("order_rx_cut", 1)):
        harnesses[name] = RxOrderProof(**rx_sizes, cut_through=cut)
    for name, harness in harnesses.items():
        with _small_frames():
            (workdir / f"{name}.il").write_text(rtlil.convert(harness, ports=harness.ports))
    (workdir / "llr.sby").write_text(_sby_text(depth, cover_depth))
    sby_tasks = [task for task in checks if task != "window"]
    returncode, seconds = run_sby(workdir, "llr.sby", sby_tasks) if sby_tasks else (0, 0.0)
    tasks = {}
    for task in sby_tasks:
        status = workdir / f"llr_{task}" / "status"
        tasks[task] = status.read_text().split()[0] if status.exists() else "ERROR"
    matched = None
    if "window" in checks:
        tasks["window"], window_seconds, matched = window_proof(workdir, **sizes)
        seconds += window_seconds
    return {"modes": {task: MODES[task] for task in tasks},
            "depth": depth, "cover_depth": cover_depth, "window_signals": matched,
            "seconds": round(seconds, 1),
            "passed": returncode == 0 and all(s == "PASS" for s in tasks.values()),
            "tasks": tasks, "params": config}
