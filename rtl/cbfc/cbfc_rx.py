"""CBFC receive side: per-VC receive buffers whose draining frees credits, CREDIT_UPDATE, and
CREDIT_SYNC applied in frame order (spec §8)."""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.data import ArrayLayout
from amaranth.lib.wiring import In, Out

from ..config import check_int_range
from ..link.layouts import LcwLayout, MAC_BEAT_OCTETS
from ..link.llr_rx import HELD_FRAME_BITS
from ..stream import PacketStream, SaturatingCounter, COUNTER_WIDTH
from ..wire import CREDIT_PAYLOAD, LcwType
from .cbfc_tx import oefh_vc
from .credit import (CreditReceiver, COST_BITS, CREDIT_BITS, check_credit_size, check_vcs,
                     lowest_set, max_frame_cost)
from .frame_fifo import FrameFifo, check_queue_octets

__all__ = ["CbfcRx"]

_VC_AT, _VC_BITS = CREDIT_PAYLOAD.offsets()["vc"]
_CREDITS_AT, _ = CREDIT_PAYLOAD.offsets()["credits"]
_FREE_BITS = 12


class CbfcRx(wiring.Component):
    """Receive the frames of ``vcs`` VCs from one link into a buffer per VC, and give credits
    for the room.

    * **Buffers.** Frames from the LLR receiver on ``i`` go, by their OEFH ``vc``, into a
      buffer of ``buffer_octets`` per VC (block RAM, :class:`FrameFifo`), drained on ``o[v]``
      by that VC's consumer at its own pace. The LLR receiver has already checked every
      frame whole, so a frame cuts through: its head is offered while its tail arrives.
      ``i`` is always ready: a VC buffer has room for everything the sender was allowed to
      send. A frame that does not
      fit (only a sender ignoring its credits can cause it) is dropped and counted
      (``count_overruns``); so is a frame of a VC ≥ ``vcs`` (``count_bad_vc``).
    * **Credits.** ``credits`` credits per VC (default: the whole buffer, ``buffer_octets /
      credit_size``) are advertised (:class:`CreditReceiver`). A frame's credits are freed
      when its last beat leaves on ``o[v]``; frees of several VCs in one cycle are queued
      per VC and applied one VC per cycle in turn.
    * **CREDIT_SYNC in order.** An LCW overtakes the frames the LLR receiver still holds, so
      a SYNC is held until as many frames have arrived on ``i`` as the LLR receiver held
      when it came (``llr_held``); then it is applied (:class:`CreditReceiver`).

    Latency (:attr:`LATENCY`): a frame whose first beat arrives on ``i`` in cycle *t* offers
    it on ``o[v]`` in *t* + 2 (cut-through, :class:`FrameFifo`). Throughput: one beat per
    cycle in; each VC's output one beat per cycle.

    Members
    -------
    i : In(PacketStream(8))
        From the LLR receiver.
    o : Out(PacketStream(8)).array(vcs)
    credits_advertised : In(range(credits + 1))
        Run-time cap on the credits advertised per VC (0: all ``credits``), see
        :class:`CreditReceiver`.
    llr_held : In(16)
        Frames the LLR receiver holds (committed, including one committing now).
    lcw_rx : In(stream.Signature(LcwLayout))
        Received LCWs (CREDIT_SYNC is used).
    lcw_tx : Out(stream.Signature(LcwLayout))
        CREDIT_UPDATE to send.
    received, freed, limit, occupancy : Out(ArrayLayout(20, vcs))
    count_frames_received, count_overruns, count_occupancy_high : Out(ArrayLayout(32, vcs))
        Per VC: frames stored, frames dropped for lack of room (or cut, being longer than
        any frame the MAC passes), most credits ever held.
    count_bad_vc, count_updates_sent, count_syncs_received, count_leaked_credits,
    count_bogus_syncs : Out(32)
    """
    VC_COUNTERS = ("count_frames_received", "count_overruns", "count_occupancy_high")
    LATENCY = 2

    def __init__(self, vcs, *, credit_size=64, buffer_octets=8192, credits=None,
                 update_threshold=0, update_period=1024, counter_init=0):
        self.vcs = check_vcs(vcs)
        self.credit_size = check_credit_size(credit_size)
        self.buffer_octets = check_queue_octets("rx_vc_octets", buffer_octets)
        whole = buffer_octets // credit_size
        self.credits = whole if credits is None else check_int_range(
            "credits", credits, max_frame_cost(credit_size), whole)
        # 0: an eighth of the credits advertised (CreditReceiver).
        self.update_threshold = check_int_range("update_threshold", update_threshold, 0,
                                                self.credits)
        self.update_period = check_int_range("update_period", update_period, 2, 1 << 20)
        self.counter_init = counter_init
        super().__init__({
            "i": In(PacketStream(MAC_BEAT_OCTETS)),
            "o": Out(PacketStream(MAC_BEAT_OCTETS)).array(vcs),
            "llr_held": In(HELD_FRAME_BITS),
            "credits_advertised": In(range(self.credits + 1)),
            "lcw_rx": In(stream.Signature(LcwLayout())),
            "lcw_tx": Out(stream.Signature(LcwLayout())),
            **{name: Out(ArrayLayout(CREDIT_BITS, vcs))
               for name in ("received", "freed", "limit", "occupancy")},
            **{name: Out(ArrayLayout(COUNTER_WIDTH, vcs)) for name in self.VC_COUNTERS},
            "count_bad_vc": Out(COUNTER_WIDTH),
            **{name: Out(COUNTER_WIDTH) for name in CreditReceiver.COUNTERS},
        })

    def elaborate(self, platform):
        m = Module()
        n = self.vcs
        m.submodules.credits = credits = CreditReceiver(
            n, self.credits, update_threshold=self.update_threshold,
            update_period=self.update_period, counter_init=self.counter_init)
        words = self.buffer_octets // MAC_BEAT_OCTETS
        # Every frame costs at least one credit, so `credits` frame slots always suffice.
        slots = 1 << max(1, (self.credits - 1).bit_length())
        buffers = []
        for v in range(n):
            buffer = FrameFifo(words=words, frames=slots, credit_size=self.credit_size,
                               drop_when_full=True, cut_through=True)
            m.submodules[f"buffer{v}"] = buffer
            buffers.append(buffer)
            wiring.connect(m, buffer.o, wiring.flipped(self.o[v]))

        # --- demultiplex by the OEFH vc of each frame's first beat --------------------------
        beat = self.i.payload
        in_frame = Signal()
        cur = Signal(_VC_BITS + 1)
        vc_now = Signal(_VC_BITS + 1)
        m.d.comb += [vc_now.eq(Mux(in_frame, cur, oefh_vc(beat.data))), self.i.ready.eq(1)]
        with m.If(self.i.valid):
            m.d.sync += [in_frame.eq(~beat.last), cur.eq(vc_now)]
        bad_vc = SaturatingCounter("count_bad_vc")
        bad_vc.increment(m, self.i.valid & ~in_frame & (vc_now >= n))
        m.d.comb += self.count_bad_vc.eq(bad_vc.value)
        for v, buffer in enumerate(buffers):
            m.d.comb += [buffer.i.valid.eq(self.i.valid & (vc_now == v)),
                         buffer.i.payload.eq(beat), buffer.reject.eq(0)]

        # --- credits: arrivals, and frees queued per VC ---------------------------------------
        for v, buffer in enumerate(buffers):
            with m.If(buffer.stored | buffer.dropped):
                m.d.comb += [credits.arrive.eq(1), credits.arrive_vc.eq(v),
                             credits.arrive_cost.eq(Mux(buffer.stored, buffer.stored_cost,
                                                        buffer.dropped_cost))]
            for name, strobe in (("count_frames_received", buffer.stored),
                                 ("count_overruns", buffer.dropped | buffer.truncated)):
                counter = SaturatingCounter(f"{name}{v}")
                counter.increment(m, strobe)
                m.d.comb += getattr(self, name)[v].eq(counter.value)
            high = SaturatingCounter(f"count_occupancy_high{v}")
            with m.If(credits.occupancy[v] > high.value):
                m.d.sync += high.value.eq(credits.occupancy[v])
            m.d.comb += self.count_occupancy_high[v].eq(high.value)

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

        # --- CREDIT_SYNC, held behind the frames the LLR receiver held when it came ----------
        arrived = Signal(HELD_FRAME_BITS)
        with m.If(self.i.valid & beat.last):
            m.d.sync += arrived.eq(arrived + 1)
        lcw = self.lcw_rx
        m.d.comb += lcw.ready.eq(1)
        sync_vc = lcw.payload.payload[_VC_AT:_VC_AT + _VC_BITS]
        is_sync = lcw.valid & (lcw.payload.type == LcwType.CREDIT_SYNC) & (sync_vc < n)
        pending = Signal(n)
        reached = Signal(n)
        values = [Signal(CREDIT_BITS, name=f"sync_value{v}") for v in range(n)]
        targets = [Signal(HELD_FRAME_BITS, name=f"sync_target{v}") for v in range(n)]
        half = 1 << (HELD_FRAME_BITS - 1)
        for v in range(n):
            m.d.comb += reached[v].eq(pending[v]
                                      & ((arrived - targets[v])[:HELD_FRAME_BITS] < half))
        apply_vc = lowest_set(m, reached, n, "sync_apply_vc")
        m.d.comb += [credits.sync.eq(reached != 0), credits.sync_vc.eq(apply_vc)]
        for v in range(n):
            with m.If(apply_vc == v):
                m.d.comb += credits.sync_value.eq(values[v])
            with m.If(credits.sync & credits.sync_ready & (apply_vc == v)):
                m.d.sync += pending[v].eq(0)
            with m.If(is_sync & (sync_vc == v)):
                m.d.sync += [pending[v].eq(1),
                             values[v].eq(lcw.payload.payload[_CREDITS_AT:
                                                              _CREDITS_AT + CREDIT_BITS]),
                             targets[v].eq(arrived + self.llr_held)]

        wiring.connect(m, credits.lcw_tx, wiring.flipped(self.lcw_tx))
        m.d.comb += credits.credits.eq(self.credits_advertised)
        for name in ("received", "freed", "limit", "occupancy"):
            m.d.comb += getattr(self, name).eq(getattr(credits, name))
        for name in CreditReceiver.COUNTERS:
            m.d.comb += getattr(self, name).eq(getattr(credits, name))
        return m

