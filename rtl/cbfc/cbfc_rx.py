"""CBFC receive side: per-VC receive buffers whose draining frees credits, CREDIT_UPDATE, and
CREDIT_SYNC applied in frame order (spec §8)."""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import wiring
from amaranth.lib.data import ArrayLayout
from amaranth.lib.wiring import In, Out

from ..buffer import FRAME_QUEUE_OCTETS
from ..compose import forward
from ..counters import CounterBank, Counters, merge_counters
from ..link.layouts import CutFrameStream, LcwEvents, LcwStream, MAC_BEAT_OCTETS
from ..params import check_int_range
from ..stream import PacketStream, VerdictPacketStream, connect_packets
from ..wire import CREDIT_PAYLOAD, LcwType, OEFH
from .cbfc_tx import oefh_vc
from .credit import (CreditReceiver, COST_BITS, CREDIT_BITS, CREDIT_SIZE, UPDATE_PERIOD, VCS,
                     lowest_set, max_frame_cost)
from .frame_fifo import FrameFifo

__all__ = ["CbfcRx"]

_VC_BITS = dict(OEFH.fields)["vc"]
_FREE_BITS = 12


class CbfcRx(wiring.Component):
    """Receive the frames of ``vcs`` VCs from one link into a buffer per VC, and give credits
    for the room.

    * **Buffers.** Frames from the LLR receiver on ``i`` go, by their OEFH ``vc``, into a
      buffer of ``buffer_octets`` per VC (block RAM, :class:`FrameFifo`), drained on ``o[v]``
      by that VC's consumer at its own pace. The LLR receiver passes each frame on as it
      arrives (cut-through, spec v1.1 §7) and gives its verdict with the last beat: this
      buffer is the only copy of a received frame, written once; a good frame becomes
      visible on ``o[v]`` once its last beat is in, a bad one (``error``) is rolled back and
      leaves no trace (the LLR has it resent). The buffers of the VCs in ``pass_vcs`` (a
      mask) pass a frame on as it arrives instead (:class:`FrameFifo` ``cut_through``): then
      ``o`` carries the verdict (:class:`~ethlink.rtl.stream.VerdictPacketLayout`), a bad frame
      the consumer has begun ends with ``user.error`` and the consumer undoes what it began
      for it. ``i`` never waits: a VC buffer has room for
      everything the sender was allowed to send. A frame that does not
      fit (only a sender ignoring its credits can cause it) is dropped and counted
      (``count_overruns``); so is a frame of a VC ≥ ``vcs`` (``count_bad_vc``, counted when
      the frame ends good).
    * **Credits.** ``credits`` credits per VC (default: the whole buffer, ``buffer_octets /
      credit_size``) are advertised (:class:`CreditReceiver`). A frame's credits are freed
      when its last beat leaves on ``o[v]``; frees of several VCs in one cycle are queued
      per VC and applied one VC per cycle in turn.
    * **CREDIT_SYNC.** A SYNC counts only frames the LLR has acknowledged, and the LLR
      receiver holds no frame (each is passed on as it is committed), so every frame a SYNC
      counts is already in a buffer when the SYNC arrives: it is offered to
      :class:`CreditReceiver` from a register the cycle after it arrives and applied there
      (a SYNC every other cycle when several VCs wait).

    Latency (:attr:`LATENCY`): a frame whose last beat arrives on ``i`` in cycle *t* offers
    its first beat on ``o[v]`` in *t* + 2 (store and forward, :class:`FrameFifo`); on a VC of
    ``pass_vcs`` a beat is offered 1 cycle after it arrived (:attr:`PASS_LATENCY`) while the
    consumer keeps up.
    Throughput: one beat per cycle in; each VC's output one beat per cycle.

    Members
    -------
    i : In(CutFrameStream())
        From the LLR receiver, cut through: the verdict (``error``) on each frame's last beat.
    o : Out(PacketStream(8)).array(vcs)
        ``Out(VerdictPacketStream(8)).array(vcs)`` when ``pass_vcs`` is not 0 (the others'
        ``user.error`` is always 0).
    credits_advertised : In(range(credits + 1))
        Run-time cap on the credits advertised per VC (0: all ``credits``), see
        :class:`CreditReceiver`.
    lcw_rx : In(LcwEvents())
        Received LCWs (CREDIT_SYNC is used).
    lcw_tx : Out(LcwStream())
        CREDIT_UPDATE to send.
    received, freed, limit, occupancy : Out(ArrayLayout(20, vcs))
    count : Out(Counters)
        Per VC: ``frames_received`` (stored), ``overruns`` (frames dropped for lack of room,
        or longer than any frame the MAC passes), ``passed_bad`` (only when ``pass_vcs`` is
        not 0, counting on those VCs: frames ended with ``user.error`` after their consumer
        had begun them — found bad by the link layer, or dropped), ``occupancy_high`` (most
        credits ever held); ``bad_vc`` (frames of a VC ≥ ``vcs``); the credit receiver's
        ``updates_sent``, ``syncs_received``, ``leaked_credits``, ``bogus_syncs``.
    """
    VC_COUNTERS = ("frames_received", "overruns", "occupancy_high")
    LATENCY = 2
    PASS_LATENCY = 1

    def __init__(self, vcs, *, credit_size=64, buffer_octets=8192, credits=None,
                 update_threshold=0, update_period=1024, counter_init=0, pass_vcs=0):
        self.vcs = VCS.validate("vcs", vcs)
        self.pass_vcs = check_int_range("pass_vcs", pass_vcs, 0, (1 << self.vcs) - 1)
        self.credit_size = CREDIT_SIZE.validate("credit_size", credit_size)
        self.buffer_octets = FRAME_QUEUE_OCTETS.validate("rx_vc_octets", buffer_octets)
        whole = buffer_octets // credit_size
        self.credits = whole if credits is None else check_int_range(
            "credits", credits, max_frame_cost(credit_size), whole)
        # 0: an eighth of the credits advertised (CreditReceiver).
        self.update_threshold = check_int_range("update_threshold", update_threshold, 0,
                                                self.credits)
        self.update_period = UPDATE_PERIOD.validate("update_period", update_period)
        self.counter_init = counter_init
        super().__init__({
            "i": In(CutFrameStream()),
            "o": Out(VerdictPacketStream(MAC_BEAT_OCTETS) if pass_vcs
                     else PacketStream(MAC_BEAT_OCTETS)).array(vcs),
            "credits_advertised": In(range(self.credits + 1)),
            "lcw_rx": In(LcwEvents()),
            "lcw_tx": Out(LcwStream()),
            **{name: Out(ArrayLayout(CREDIT_BITS, vcs))
               for name in ("received", "freed", "limit", "occupancy")},
            "count": Out(self.counters(vcs, passing=bool(pass_vcs))),
        })

    @classmethod
    def counters(cls, vcs, passing=False):
        """The counters of a receiver of ``vcs`` VCs (``passing``: some VCs pass frames on)."""
        names = cls.VC_COUNTERS + (("passed_bad",) if passing else ())
        return merge_counters(Counters(["bad_vc"], arrays={name: vcs for name in names}),
                              Counters(CreditReceiver.COUNTERS))

    def elaborate(self, platform):
        m = Module()
        n = self.vcs
        m.submodules.credits = credits = CreditReceiver(
            n, self.credits, update_threshold=self.update_threshold,
            update_period=self.update_period, counter_init=self.counter_init)
        words = self.buffer_octets // MAC_BEAT_OCTETS
        # Every frame costs at least one credit, so `credits` frame slots always suffice.
        slots = 1 << max(1, (self.credits - 1).bit_length())
        counters = CounterBank(m, self.count, skip=CreditReceiver.COUNTERS)
        buffers = []
        for v in range(n):
            passing = bool(self.pass_vcs >> v & 1)
            buffer = FrameFifo(words=words, frames=slots, credit_size=self.credit_size,
                               drop_when_full=True, cut_through=passing)
            m.submodules[f"buffer{v}"] = buffer
            buffers.append(buffer)
            if passing or not self.pass_vcs:
                wiring.connect(m, buffer.o, wiring.flipped(self.o[v]))
            else:
                connect_packets(m, buffer.o, self.o[v])

        # --- demultiplex by the OEFH vc of each frame's first beat --------------------------
        beat = self.i.payload
        in_frame = Signal()
        cur = Signal(_VC_BITS)
        vc_now = Signal(_VC_BITS)
        m.d.comb += vc_now.eq(Mux(in_frame, cur, oefh_vc(beat.data)))
        with m.If(self.i.valid):
            m.d.sync += [in_frame.eq(~beat.last), cur.eq(vc_now)]
        # Counted at the frame's end, and only if it is good: a bit error in the OEFH of a
        # frame that fails its check is the MAC's count, not a sender's bad VC.
        counters.bad_vc.increment(m, self.i.valid & beat.last & ~beat.user.error
                                  & (vc_now >= n))
        for v, buffer in enumerate(buffers):
            m.d.comb += [buffer.i.valid.eq(self.i.valid & (vc_now == v)),
                         buffer.i.payload.data.eq(beat.data), buffer.i.payload.keep.eq(beat.keep),
                         buffer.i.payload.first.eq(beat.first), buffer.i.payload.last.eq(beat.last),
                         buffer.reject.eq(0), buffer.abort.eq(beat.user.error)]

        # --- credits: arrivals, and frees queued per VC ---------------------------------------
        for v, buffer in enumerate(buffers):
            with m.If(buffer.stored | buffer.dropped):
                m.d.comb += [credits.arrive.eq(1), credits.arrive_vc.eq(v),
                             credits.arrive_cost.eq(Mux(buffer.stored, buffer.stored_cost,
                                                        buffer.dropped_cost))]
            counters.frames_received[v].increment(m, buffer.stored)
            counters.overruns[v].increment(m, buffer.dropped)
            if buffer.cut_through:
                counters.passed_bad[v].increment(m, buffer.ended_bad)
            counters.occupancy_high[v].track_max(m, credits.occupancy[v])

        turn = Signal(range(max(n, 2)))
        m.d.sync += turn.eq(Mux(turn == n - 1, 0, turn + 1))
        top = (1 << COST_BITS) - 1
        for v, buffer in enumerate(buffers):
            to_free = Signal(_FREE_BITS, name=f"to_free{v}")
            served = Signal(COST_BITS, name=f"served{v}")
            with m.If(turn == v):
                m.d.comb += [served.eq(Mux(to_free > top, top, to_free)),
                             credits.drain.eq(to_free != 0), credits.drain_vc.eq(v),
                             credits.drain_cost.eq(served)]
            # A dropped frame is freed as soon as it is counted: it holds no room.
            added = (Mux(buffer.popped, buffer.popped_cost, 0)
                     + Mux(buffer.dropped, buffer.dropped_cost, 0))
            m.d.sync += to_free.eq(to_free + added - served)

        # --- CREDIT_SYNC: kept per VC until the credit receiver takes it --------------------
        lcw = self.lcw_rx
        sync = CREDIT_PAYLOAD.layout(lcw.payload.payload)
        sync_vc = sync.vc
        is_sync = lcw.valid & (lcw.payload.type == LcwType.CREDIT_SYNC) & (sync_vc < n)
        pending = Signal(n)
        values = [Signal(CREDIT_BITS, name=f"sync_value{v}") for v in range(n)]
        # The SYNC offered to the credit receiver comes from registers of its own (loaded from
        # the lowest pending VC when none is offered), so that the receiver's leak arithmetic
        # starts from flip-flops, not from the choice among the pending VCs.
        offer = Signal()
        offer_vc = Signal(range(max(n, 2)))
        offer_value = Signal(CREDIT_BITS)
        next_vc = lowest_set(m, pending, n, "sync_next_vc")
        load = ~offer & (pending != 0)
        m.d.comb += [credits.sync.eq(offer), credits.sync_vc.eq(offer_vc),
                     credits.sync_value.eq(offer_value)]
        with m.If(credits.sync & credits.sync_ready):
            m.d.sync += offer.eq(0)
        with m.If(load):
            m.d.sync += [offer.eq(1), offer_vc.eq(next_vc)]
        for v in range(n):
            with m.If(load & (next_vc == v)):
                m.d.sync += [pending[v].eq(0), offer_value.eq(values[v])]
            with m.If(is_sync & (sync_vc == v)):
                m.d.sync += [pending[v].eq(1), values[v].eq(sync.credits)]

        wiring.connect(m, credits.lcw_tx, wiring.flipped(self.lcw_tx))
        m.d.comb += credits.credits.eq(self.credits_advertised)
        m.d.comb += [self.received.eq(credits.received), self.freed.eq(credits.freed),
                     self.limit.eq(credits.limit), self.occupancy.eq(credits.occupancy)]
        forward(m, self.count, credits.count)
        return m

