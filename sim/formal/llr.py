"""Bounded formal check of the LLR (spec §7, v1.1 void frames) with SymbiYosys.

The harness joins an :class:`~ethlink.rtl.link.llr_tx.LlrTx` and an
:class:`~ethlink.rtl.link.llr_rx.LlrRx` (the RTL as it is) through an abstract link whose every
choice is a free input of the solver, constrained only by what a link can do:

* the upper layer offers frames of 1 or 2 beats whenever it likes (keeping the stream rules
  and the LLR's producer contract: no bubble inside a frame), and voids any of them with its
  last beat; every beat carries its frame's *tag* (its number in the order offered, voided
  frames included) and its beat index;
* the frame line takes the sender's beats at any pace (``mac.ready``) and, per frame, loses
  it whole, delivers it corrupted (``user.error`` on its last beat, as a bad FCS or start
  check arrives from :class:`MacRx`) or delivers it intact (a void frame intact arrives as a
  void frame, ``user.void``); a frame cut by the sender's ``abort`` arrives as a bad frame;
  nothing is reordered; one cycle of delay;
* the two LCW lines take LCWs at any pace and lose any of them; one cycle of delay;
* any ACK or NACK with any sequence number may also appear on the line to the sender, as
  long as it is outside the sender's outstanding window (a stale or corrupted-but-crc-good
  LCW); the receive side's output is back-pressured at will.

The MAC pair is abstracted by this line: it is checked on its own against the golden model
(test_mac), and what it gives the LLR is exactly this (a frame intact, a bad frame, a void
frame, or nothing).

Properties, asserted in every cycle of every trace up to the bound:

1. **In order, exactly once** (outside FLUSH): every frame delivered on the receiver's ``o``
   is the oldest frame offered and not yet delivered, voided frames skipped: its tag is
   higher than the previous delivery's, every tag between them belongs to a voided frame,
   its beats come in order and it has as many as were offered.
2. **Void frames are never delivered** (always).
3. **The replay buffer never overruns** (always): the writer never writes the first word of
   the oldest frame held, and never holds more frames than the start table has entries.
4. **Out-of-window ACK/NACK change nothing** (always): a second :class:`LlrTx`, fed the same
   inputs except the ACKs and NACKs outside the first one's window (``n`` + 1 not in
   [``head``, newest frame sent + 1]), shows the same outputs and the same window state in
   every cycle.

This is ``mode bmc``: the properties hold in every trace of up to :data:`DEPTH` cycles from
reset (property 4: :data:`WINDOW_DEPTH`), not for all time (no induction: an invariant tying
the two buffers, the window and the expected sequence number together was out of reach). In
that many cycles the link comes up (LLR_INIT/ECHO), carries a few frames, loses, corrupts,
replays and voids some. The sizes are
small so that the bound reaches those events: a replay buffer of 8 words and 4 frames, a
receive buffer of 8 words, frames of at most 2 words (:data:`MAX_FRAME_WORDS` of the RTL is
set to 2 while the harness is elaborated: it only sizes the room checks), a replay timer of
:data:`REPLAY_TIMEOUT` cycles. Cover statements (task ``cover``) show the events are reached
within the bound: a void frame dropped by the receiver and a frame delivered after it, a
replay followed by a delivery, the sender finishing a voided frame on the wire.
"""

import contextlib
import shutil
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import (Assert, Assume, Cat, ClockDomain, Cover, Elaboratable, Module,
                          Mux, Signal)

from . import run_sby
from ...rtl.link import llr_rx, llr_tx
from ...rtl.link.llr_rx import LlrRx
from ...rtl.link.llr_tx import LlrTx, TxState, seq_in_window
from ...rtl.wire import LLR_PAYLOAD, SEQ_BITS, LcwType

__all__ = ["LlrProof", "run_proof", "PROOF_DEFAULTS", "DEPTH", "WINDOW_DEPTH", "REPLAY_TIMEOUT",
           "MAX_FRAME_WORDS"]

#: Longest frame in the harness, in words.
MAX_FRAME_WORDS = 2
#: The sender's replay timer in cycles.
REPLAY_TIMEOUT = 6
#: Cycles checked from reset: properties 1-3 and the covers, property 4.
DEPTH = 14
WINDOW_DEPTH = 12
#: The configuration checked by default.
PROOF_DEFAULTS = dict(buffer_words=8, buffer_frames=4, rx_buffer_words=8, replay_max=3,
                      ack_every=2, ack_timer=3, depth=DEPTH, window_depth=WINDOW_DEPTH,
                      cover_depth=DEPTH)


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
    """:class:`LlrTx` that also shows its window (``sent_hi``) and its writer's state, for the
    harness's checks (plain signals, outside the signature); built without the export's size
    checks (a buffer of a few words)."""
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.p_sent_hi = Signal(SEQ_BITS)
        self.p_send = Signal(SEQ_BITS)
        self.p_nxt = Signal(SEQ_BITS)
        self.p_addr = Signal(16)
        self.p_take = Signal()
        self.p_in_frame = Signal()
        self.p_head_start = Signal(16)
        self.p_draining = Signal()

    def elaborate(self, platform):
        m = super().elaborate(platform)
        reader, writer, occupancy = (m.submodules.reader, m.submodules.writer,
                                     m.submodules.occupancy)
        m.d.comb += [
            self.p_sent_hi.eq(reader.sent_hi), self.p_send.eq(reader.send),
            self.p_nxt.eq(writer.status.nxt), self.p_addr.eq(writer.status.addr),
            self.p_take.eq(writer.status.take), self.p_in_frame.eq(writer.status.in_frame),
            self.p_head_start.eq(occupancy.head_start.addr),
            self.p_draining.eq(reader.draining),
        ]
        return m


class _SmallLlrRx(LlrRx):
    """:class:`LlrRx` built without the export's size checks (a buffer of a few words)."""
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


def _free(name, width=1):
    return Signal(width, name=name)


class LlrProof(Elaboratable):
    """The harness (see the module docstring). ``ports`` lists the free inputs.

    ``check`` "delivery" asserts properties 1–3 (and holds the covers); "window" adds the
    second sender and the injected LCWs and asserts property 4. Apart, each is a smaller
    problem for the solver than the two together.
    """
    CHECKS = ("delivery", "window")

    def __init__(self, *, buffer_words, buffer_frames, rx_buffer_words, replay_max, ack_every,
                 ack_timer, check="delivery"):
        if check not in self.CHECKS:
            raise ValueError(f"check must be one of {self.CHECKS}, not {check!r}")
        self.check = check
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
        # LCW lines and the injected LCWs.
        self.f_ack_ready, self.f_ack_lose = _free("f_ack_ready"), _free("f_ack_lose")
        self.f_init_ready, self.f_init_lose = _free("f_init_ready"), _free("f_init_lose")
        self.f_inject, self.f_inject_nack = _free("f_inject"), _free("f_inject_nack")
        self.f_inject_seq = _free("f_inject_seq", SEQ_BITS)
        # Receiver's output.
        self.f_o_ready = _free("f_o_ready")

    @property
    def ports(self):
        return [self.clk, self.f_valid, self.f_len2, self.f_void, self.f_mac_ready,
                self.f_lose, self.f_corrupt, self.f_ack_ready, self.f_ack_lose,
                self.f_init_ready, self.f_init_lose, self.f_inject, self.f_inject_nack,
                self.f_inject_seq, self.f_o_ready]

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = cd = ClockDomain("sync", reset_less=True)
        m.d.comb += cd.clk.eq(self.clk)
        octets = 8 * self.buffer_words
        tx_args = (octets, self.buffer_frames, self.replay_max)
        window = self.check == "window"
        m.submodules.tx = tx = _ProbedLlrTx(*tx_args)
        ends = (tx,)
        if window:
            m.submodules.shadow = shadow = _ProbedLlrTx(*tx_args)
            ends = (tx, shadow)
        m.submodules.rx = rx = _SmallLlrRx(8 * self.rx_buffer_words, self.ack_every, self.ack_timer)
        F = self.buffer_frames

        for end in ends:
            m.d.comb += [end.enable.eq(1), end.replay_timeout.eq(REPLAY_TIMEOUT),
                         end.rtt_valid.eq(0)]

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
        if window:
            # The shadow gets the same frames and must take them at the same time (checked).
            m.d.comb += [shadow.i.valid.eq(i.valid), shadow.i.payload.eq(i.payload),
                         shadow.i_void.eq(tx.i_void)]

        # --- frame line: lose, corrupt or deliver each frame; an abort cuts it ------------------
        mac = tx.mac
        for end in ends:
            m.d.comb += end.mac.ready.eq(self.f_mac_ready)
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
        # Receiver -> sender (ACK, NACK, INIT_ECHO), plus injected out-of-window ACK/NACKs.
        back_valid = Signal()
        back = Signal.like(rx.lcw_tx.payload)
        m.d.comb += rx.lcw_tx.ready.eq(self.f_ack_ready)
        m.d.sync += [back_valid.eq(rx.lcw_tx.valid & self.f_ack_ready & ~self.f_ack_lose),
                     back.eq(rx.lcw_tx.payload)]
        inject = self.f_inject & ~back_valid if window else 0
        injected = Signal.like(back)
        m.d.comb += [injected.type.eq(Mux(self.f_inject_nack, LcwType.LLR_NACK,
                                          LcwType.LLR_ACK)),
                     LLR_PAYLOAD.layout(injected.payload).seq.eq(self.f_inject_seq)]
        lcw = tx.lcw_rx
        m.d.comb += [lcw.valid.eq(back_valid | inject),
                     lcw.payload.eq(Mux(back_valid, back, injected))]
        lcw_seq = LLR_PAYLOAD.layout(lcw.payload.payload).seq
        is_ack_nack = (lcw.payload.type == LcwType.LLR_ACK) | \
            (lcw.payload.type == LcwType.LLR_NACK)
        # Ref: spec §7 — the window: ``n`` + 1 in [oldest unacknowledged, newest sent + 1].
        in_window = seq_in_window((lcw_seq + 1)[:SEQ_BITS], tx.head, tx.p_sent_hi)
        outside = lcw.valid & is_ack_nack & ~in_window
        if window:
            m.d.comb += Assume(~inject | outside)
            m.d.comb += [shadow.lcw_rx.valid.eq(lcw.valid & ~outside),
                         shadow.lcw_rx.payload.eq(lcw.payload)]
        # Sender -> receiver (LLR_INIT).
        for end in ends:
            m.d.comb += end.lcw_tx.ready.eq(self.f_init_ready)
        m.d.sync += [rx.lcw_rx.valid.eq(tx.lcw_tx.valid & self.f_init_ready
                                        & ~self.f_init_lose),
                     rx.lcw_rx.payload.eq(tx.lcw_tx.payload)]
        m.d.comb += rx.o.ready.eq(self.f_o_ready)

        # --- properties ---------------------------------------------------------------------
        if window:
            self._same(m, tx, shadow)
            return m

        flushed = Signal()
        with m.If(tx.state == TxState.FLUSH):
            m.d.sync += flushed.eq(1)
        live = ~flushed & (tx.state != TxState.FLUSH)

        # 1, 2: deliveries: tags 0, 1, 2, … in order, each frame whole, no void beat.
        o = rx.o
        o_tag = o.payload.data[:8]
        o_beat, o_len2, o_void = o.payload.data[8], o.payload.data[9], o.payload.data[10]
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

    @staticmethod
    def _same(m, tx, shadow):
        """Property 4: the sender that saw the out-of-window LCWs and the one that did not
        show the same outputs and the same window in every cycle."""
        for a, b in ((tx.i.ready, shadow.i.ready), (tx.mac.valid, shadow.mac.valid),
                     (tx.abort, shadow.abort), (tx.head, shadow.head),
                     (tx.state, shadow.state), (tx.lcw_tx.valid, shadow.lcw_tx.valid),
                     (tx.p_sent_hi, shadow.p_sent_hi), (tx.p_send, shadow.p_send),
                     (tx.p_nxt, shadow.p_nxt), (tx.failed, shadow.failed)):
            m.d.comb += Assert(a == b)
        with m.If(tx.mac.valid):
            m.d.comb += Assert(tx.mac.payload.as_value() == shadow.mac.payload.as_value())
        with m.If(tx.lcw_tx.valid):
            m.d.comb += Assert(tx.lcw_tx.payload.as_value() == shadow.lcw_tx.payload.as_value())


def _sby_text(depths, cover_depth):
    """``depths``: cycles checked by each task of :attr:`LlrProof.CHECKS`."""
    options = "\n".join(f"{check}: depth {depth}" for check, depth in depths.items())
    reads = "\n".join(f"{check}: read_rtlil {check}.il" for check in depths)
    return f"""[tasks]
{chr(10).join(depths)}
cover

[options]
cover: mode cover
cover: depth {cover_depth}
~cover: mode bmc
{options}

[engines]
smtbmc yices

[script]
{reads}
cover: read_rtlil delivery.il
prep -top top
# Memories as registers: the harness writes constant bits that then fold away.
memory_map
opt -full
opt_clean

[files]
{chr(10).join(f"{check}.il" for check in depths)}
"""


def run_proof(workdir, *, depth=None, window_depth=None, cover_depth=None, **params):
    """Write the two harnesses and the .sby file to ``workdir`` and run the bounded checks
    (task ``delivery`` to ``depth`` cycles, ``window`` to ``window_depth``) and the covers
    (SymbiYosys as in :mod:`ethlink.sim.formal.cbfc`). Returns ``{"mode": "bmc", "depth",
    "window_depth", "cover_depth", "seconds", "passed", "tasks": {task: status},
    "params"}``."""
    config = {**PROOF_DEFAULTS, **params}
    depths = {"delivery": depth or config["depth"],
              "window": window_depth or config["window_depth"]}
    cover_depth = cover_depth or config["cover_depth"]
    for key in ("depth", "window_depth", "cover_depth"):
        del config[key]
    workdir = Path(workdir)
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    for check in depths:
        harness = LlrProof(**config, check=check)
        with _small_frames():
            (workdir / f"{check}.il").write_text(rtlil.convert(harness, ports=harness.ports))
    (workdir / "llr.sby").write_text(_sby_text(depths, cover_depth))
    returncode, seconds = run_sby(workdir, "llr.sby")
    tasks = {}
    for task in (*depths, "cover"):
        status = workdir / f"llr_{task}" / "status"
        tasks[task] = status.read_text().split()[0] if status.exists() else "ERROR"
    return {"mode": "bmc", "depth": depths["delivery"], "window_depth": depths["window"],
            "cover_depth": cover_depth, "seconds": round(seconds, 1),
            "passed": returncode == 0 and all(s == "PASS" for s in tasks.values()),
            "tasks": tasks, "params": config}
