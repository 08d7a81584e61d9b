"""CBFC transmit side: per-VC queues, a VC arbiter that skips VCs without credits, and the
sender's credit counters (spec §8)."""

from amaranth.hdl import Module, Signal, Mux, Cat, Const
from amaranth.lib import wiring
from amaranth.lib.data import ArrayLayout
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..buffer import FRAME_QUEUE_OCTETS
from ..compose import forward
from ..counters import CounterBank, Counters, merge_counters
from ..link.layouts import LcwEvents, LcwStream, MAC_BEAT_OCTETS, SEQ_BITS
from ..params import check_power_of_two
from ..stream import PacketStream
from ..wire import OEFH
from .credit import (CreditSender, COST_BITS, CREDIT_BITS, CREDIT_SIZE, SYNC_PERIOD, VCS)
from .frame_fifo import FrameFifo

__all__ = ["CbfcTx", "ResteerSignature", "oefh_vc", "rotate_pick"]


def ResteerSignature():
    """Re-steering of a CBFC transmitter's queues, as the layer above (the NIC) sees it:
    ``pause`` and ``purge`` to the queues, ``purging`` and the frames given back on
    ``divert`` from them (see :class:`CbfcTx`)."""
    return wiring.Signature({"pause": Out(1), "purge": Out(1), "purging": In(1),
                             "divert": In(PacketStream(MAC_BEAT_OCTETS))})

_VC_AT, _VC_BITS = OEFH.offsets()["vc"]


def oefh_vc(first_beat_data):
    """The OEFH ``vc`` field of a frame, from the data of its first 8-octet beat (octet 0 in
    bits 7:0; ``vc`` is bits 45:43 of the big-endian header, i.e. bits 5:3 of octet 0)."""
    octet0_bit = _VC_AT - 40
    return first_beat_data[octet0_bit:octet0_bit + _VC_BITS]


def rotate_pick(m, requests, start, n, name):
    """Round-robin choice among ``requests`` (``n`` bits), first at or after ``start``:
    returns ``(any, index)`` (combinational)."""
    index = Signal(range(max(n, 2)), name=f"{name}_index")
    offset = Signal(range(max(n, 2)), name=f"{name}_offset")
    window = Signal(n, name=f"{name}_window")
    # The requests rotated so that bit 0 is VC `start` (a case per start: no variable shift).
    for first in range(n):
        with m.If(start == first):
            m.d.comb += window.eq(Cat(requests[(first + k) % n] for k in range(n)))
    for k in reversed(range(n)):
        with m.If(window[k]):
            m.d.comb += offset.eq(k)
    total = start + offset
    m.d.comb += index.eq(Mux(total >= n, total - n, total))
    return window != 0, index


class CbfcTx(wiring.Component):
    """Send the frames of ``vcs`` VCs over one link, each only when the receiver has room.

    * **Queues.** Frames of VC *v* arrive on ``i[v]`` and wait in a store-and-forward queue
      of its own (``queue_octets`` of block RAM per VC, :class:`FrameFifo`): a frame is sent
      only once wholly queued, so it reaches the LLR without gaps, and its cost is known
      before it starts. A frame whose OEFH ``vc`` is not *v*, or longer than the longest
      frame, is dropped and counted (``count_frames_dropped``).
    * **Arbiter.** Between frames, the next VC is chosen round-robin among the VCs whose
      head frame has credits (``(limit − sent) mod 2^20 ≥ cost``, :class:`CreditSender`), so
      a VC without credits never blocks another. The choice is registered: the chosen frame's
      first beat leaves on ``o`` one cycle after the decision, and the next decision is made
      after the last beat (one idle cycle between frames, which the MAC's start word and gap
      absorb: the line rate is unaffected).
    * **Settled credits.** Every frame sent is recorded in order (VC, cost); the LLR numbers
      frames in the same order, so when its oldest unacknowledged sequence number
      ``llr_head`` passes a frame, that frame was delivered or flushed: its credits are
      settled, and CREDIT_SYNC carries them (docs/cbfc.md, "leak recovery").
    * **Re-steering** (``resteer=True``, spec §10). While ``pause`` is high no frame is
      granted (one already on its way to the LLR finishes). A ``purge`` strobe takes the
      frames wholly queued at that moment (once ``o`` is between frames) off the queues, VC 0
      first, each in its order, and offers them on ``divert`` for the layer above to steer
      again; ``purging`` is high from the cycle after the strobe until the last of them has
      left. Frames queued after the strobe stay. A diverted frame may come straight back into
      its own queue (the layer above finds the port still good for it) while it is still
      leaving it: a queue's last frame slot is kept for such frames, so the frame never waits
      for the slot it holds itself.

    Latency (:attr:`LATENCY`): a frame whose last beat is taken on ``i`` in cycle *t*, with
    credits available and ``o`` idle, offers its first beat on ``o`` in *t* + 2 (committed
    and granted in *t* + 1, out of the block RAM in *t* + 2). A CREDIT_UPDATE taken in
    cycle *c* that gives a waiting frame its credits puts its first beat on ``o`` in *c* + 2.
    Throughput: one beat per cycle, plus one cycle per frame.

    Members
    -------
    i : In(PacketStream(8)).array(vcs)
    o : Out(PacketStream(8))
        To the LLR transmitter.
    llr_head : In(20)
        The LLR transmitter's oldest unacknowledged sequence number.
    lcw_rx : In(LcwEvents())
        Received LCWs (CREDIT_UPDATE is used).
    lcw_tx : Out(LcwStream())
        CREDIT_SYNC to send.
    sent, limit, settled : Out(ArrayLayout(20, vcs))
    count : Out(Counters)
        Per VC: ``frames_sent``, ``frames_dropped``, ``stall_cycles`` (and
        ``frames_diverted``, frames handed to ``divert``, with ``resteer=True``); the credit
        sender's ``updates_received``, ``bogus_updates``, ``syncs_sent``.
    resteer : In(ResteerSignature())
        Re-steering (``resteer=True`` only): ``pause``, ``purge`` in, ``purging`` and the
        frames given back on ``divert`` out.
    """
    VC_COUNTERS = ("frames_sent", "frames_dropped")
    LATENCY = 2

    def __init__(self, vcs, *, credit_size=64, queue_octets=8192, sync_period=4096,
                 llr_frames=64, counter_init=0, resteer=False):
        self.vcs = VCS.validate("vcs", vcs)
        self.credit_size = CREDIT_SIZE.validate("credit_size", credit_size)
        self.queue_words = FRAME_QUEUE_OCTETS.validate("queue_octets",
                                                       queue_octets) // MAC_BEAT_OCTETS
        self.sync_period = SYNC_PERIOD.validate("sync_period", sync_period)
        self.llr_frames = check_power_of_two("llr_frames", llr_frames, 2, 4096)
        self.counter_init = counter_init
        self._resteer = resteer
        super().__init__({
            "i": In(PacketStream(MAC_BEAT_OCTETS)).array(vcs),
            "o": Out(PacketStream(MAC_BEAT_OCTETS)),
            "llr_head": In(SEQ_BITS),
            "lcw_rx": In(LcwEvents()),
            "lcw_tx": Out(LcwStream()),
            **{name: Out(ArrayLayout(CREDIT_BITS, vcs)) for name in ("sent", "limit", "settled")},
            "count": Out(self.counters(vcs, resteer)),
            **({"resteer": In(ResteerSignature())} if resteer else {}),
        })

    @classmethod
    def counters(cls, vcs, resteer=False):
        """The counters of a transmitter of ``vcs`` VCs."""
        own = cls.VC_COUNTERS + (("frames_diverted",) if resteer else ())
        return merge_counters(Counters(arrays={name: vcs for name in own}),
                              CreditSender.counters(vcs))

    def elaborate(self, platform):
        m = Module()
        n = self.vcs
        m.submodules.credits = credits = CreditSender(n, sync_period=self.sync_period,
                                                      counter_init=self.counter_init)
        counters = CounterBank(m, self.count, skip=CreditSender.counters(n).members)
        queues = []
        for v in range(n):
            queue = FrameFifo(words=self.queue_words, frames=max(4, self.queue_words // 8),
                              credit_size=self.credit_size, drop_when_full=False,
                              spare_slot=self._resteer)
            m.submodules[f"queue{v}"] = queue
            queues.append(queue)
            wiring.connect(m, wiring.flipped(self.i[v]), queue.i)
            m.d.comb += queue.reject.eq(oefh_vc(self.i[v].payload.data) != v)
            counters.frames_dropped[v].increment(m, queue.dropped)
            m.d.comb += [credits.cost[v].eq(queue.head_cost),
                         credits.waiting[v].eq(queue.frames != 0)]

        # --- frames in flight in the LLR, in order: (vc, cost) ----------------------------
        depth = 2 * self.llr_frames
        flight = Memory(shape=3 + COST_BITS, depth=depth, init=[])
        m.submodules.flight = flight
        push = flight.write_port()
        oldest = flight.read_port(domain="comb")
        w_ptr = Signal(exact_log2(depth) + 1)
        r_ptr = Signal(exact_log2(depth) + 1)
        oldest_seq = Signal(SEQ_BITS)
        flight_full = (w_ptr - r_ptr)[:len(w_ptr)] == depth
        release = (w_ptr != r_ptr) & (oldest_seq != self.llr_head)
        m.d.comb += [
            oldest.addr.eq(r_ptr[:-1]),
            credits.release.eq(release),
            credits.release_vc.eq(oldest.data[:3]),
            credits.release_cost.eq(oldest.data[3:]),
        ]
        with m.If(release):
            m.d.sync += [r_ptr.eq(r_ptr + 1), oldest_seq.eq(oldest_seq + 1)]

        # --- arbiter ------------------------------------------------------------------------
        busy = Signal()
        cur = Signal(range(max(n, 2)))
        rr = Signal(range(max(n, 2)))
        candidates = Signal(n)
        m.d.comb += candidates.eq(Cat(q.frames != 0 for q in queues) & credits.ok)
        any_ready, pick = rotate_pick(m, candidates, rr, n, "vc")
        grant = ~busy & any_ready & ~flight_full
        if self._resteer:
            halted = Signal()
            grant = grant & ~halted
        m.d.comb += [credits.take.eq(grant), credits.take_vc.eq(pick),
                     push.addr.eq(w_ptr[:-1]), push.en.eq(grant)]
        for v in range(n):
            with m.If(pick == v):
                m.d.comb += push.data.eq(Cat(Const(v, 3), queues[v].head_cost))
        with m.If(grant):
            m.d.sync += [busy.eq(1), cur.eq(pick), w_ptr.eq(w_ptr + 1),
                         rr.eq(Mux(pick == n - 1, 0, pick + 1))]

        for v, queue in enumerate(queues):
            with m.If(cur == v):
                m.d.comb += [self.o.valid.eq(busy & queue.o.valid),
                             self.o.payload.eq(queue.o.payload),
                             queue.o.ready.eq(busy & self.o.ready)]
            counters.frames_sent[v].increment(m, grant & (pick == v))
        with m.If(self.o.valid & self.o.ready & self.o.payload.last):
            m.d.sync += busy.eq(0)
        if self._resteer:
            # After the output mux: diverting takes over the queues' ``o.ready``.
            m.d.comb += halted.eq(self._purge(m, queues, busy, counters.frames_diverted))

        wiring.connect(m, wiring.flipped(self.lcw_rx), credits.lcw_rx)
        wiring.connect(m, credits.lcw_tx, wiring.flipped(self.lcw_tx))
        m.d.comb += [self.sent.eq(credits.sent), self.limit.eq(credits.limit),
                     self.settled.eq(credits.settled)]
        forward(m, self.count, credits.count)
        return m

    def _purge(self, m, queues, busy, diverted):
        """Pause and purge (see the class docstring); returns the signal that stops grants."""
        n = len(queues)
        port = self.resteer
        requested = Signal()    # a purge strobe not yet served
        diverting = Signal()
        dv = Signal(range(max(n, 2)))
        left = [Signal.like(q.frames, name=f"left{v}") for v, q in enumerate(queues)]
        m.d.comb += port.purging.eq(requested | diverting)
        with m.If(requested & ~busy & ~diverting):
            # The LLR's frame has left: the snapshot of what is queued now.
            m.d.sync += [requested.eq(0), diverting.eq(1), dv.eq(0)]
            m.d.sync += [left[v].eq(q.frames) for v, q in enumerate(queues)]
        with m.If(port.purge):
            m.d.sync += requested.eq(1)
        for v, queue in enumerate(queues):
            counter = diverted[v]
            m.d.comb += queue.use_spare.eq(diverting)
            with m.If(diverting & (dv == v)):
                with m.If(left[v] == 0):
                    m.d.sync += (diverting.eq(0) if v == n - 1 else dv.eq(v + 1))
                with m.Else():
                    # Only the frames of the snapshot: the next one stays, even its first
                    # beat, which the queue already offers.
                    m.d.comb += [port.divert.valid.eq(queue.o.valid),
                                 port.divert.payload.eq(queue.o.payload),
                                 queue.o.ready.eq(port.divert.ready)]
                    done = port.divert.valid & port.divert.ready & port.divert.payload.last
                    counter.increment(m, done)
                    with m.If(done):
                        m.d.sync += left[v].eq(left[v] - 1)
        return port.pause | port.purge | requested | diverting
