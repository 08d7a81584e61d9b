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
from ..params import check_int_range, check_power_of_two
from ..stream import PacketStream, count_to_keep, keep_count
from ..wire import OEFH, Opcode, LsSize, ls_payload_octets, th_octets
from .credit import (CreditSender, COST_BITS, CREDIT_BITS, CREDIT_SIZE, SYNC_PERIOD, VCS,
                     frame_cost)
from .frame_fifo import FrameFifo

__all__ = ["CbfcTx", "ResteerSignature", "oefh_vc", "rotate_pick", "head_decode", "head_costs",
           "HEAD_KNOWN_OPCODES"]


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


#: Opcodes whose frame length the first 8-octet beat tells (spec §4.2, §7 v1.1): the L/S
#: ones (opcode, size and status are all in TH octet 0, the frame's octet 6) and the RDMA
#: ones without payload. An RDMA WRITE's or READ_RSP's ``length`` is in the third beat.
HEAD_KNOWN_OPCODES = (Opcode.LOAD_REQ, Opcode.STORE_REQ, Opcode.LOAD_RSP, Opcode.STORE_RSP,
                      Opcode.READ_REQ, Opcode.ACK)
_TH_AT = 8 * OEFH.octets           # bit of the first TH octet in the first beat


def _head_table():
    """``{(opcode, size, status) as TH octet 0: body octets}`` of the frames whose length
    the first beat tells (spec §4.2: OEFH + TH + the payload the TH announces)."""
    table = {}
    for opcode in HEAD_KNOWN_OPCODES:
        for size in LsSize:
            if size == LsSize.RESERVED and not opcode.is_rdma:
                continue            # reserved: the receiver drops it; sent the slow way
            for status in range(4):
                octet = opcode << 4 | size << 2 | status
                payload = 0 if opcode.is_rdma else ls_payload_octets(opcode, size, status)
                table[octet] = OEFH.octets + th_octets(opcode) + payload
    return table


def head_costs(credit_size):
    """The costs (credits) a frame whose first beat tells its length can have, ascending."""
    return tuple(sorted({frame_cost(body, credit_size) for body in _head_table().values()}))


def head_decode(m, first_beat_data, credit_size, name):
    """``(known, octets, cost, grade)`` of a frame from its first 8-octet beat, straight from
    the TH octet (combinational, all 0 for a frame whose first beat does not tell its
    length): whether it does, the body length (OEFH + TH + payload, spec §7 v1.1), the cost
    in credits, and one bit per value of :func:`head_costs`, set for the value it has."""
    values = head_costs(credit_size)
    known = Signal(name=f"{name}_known")
    octets = Signal(range(max(_head_table().values()) + 1), name=f"{name}_octets")
    cost = Signal(COST_BITS, name=f"{name}_cost")
    grade = Signal(len(values), name=f"{name}_grade")
    with m.Switch(_th_octet(first_beat_data)):
        for octet, body in _head_table().items():
            value = frame_cost(body, credit_size)
            with m.Case(octet):
                m.d.comb += [known.eq(1), octets.eq(body), cost.eq(value),
                             grade.eq(1 << values.index(value))]
    return known, octets, cost, grade


def _th_octet(first_beat_data):
    return first_beat_data[_TH_AT:_TH_AT + 8]


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
    * **Urgent VCs** (``urgent_vcs``, a mask). A VC of the mask with a frame ready wins over
      the others (round robin among the urgent VCs, and among the others): a latency-critical
      frame waits for the frame on the line, never for frames of other VCs queued before it
      (the NIC marks its L/S VCs so, RDMA beside them). So that the others are never starved,
      after ``urgent_burst`` urgent frames granted in a row while another VC had a frame
      ready, the next grant goes to one of those (the others get at least one grant in
      ``urgent_burst + 1``). With no mask (or all VCs in it), plain round robin.
    * **Bypass** (``bypass=True``). A frame whose length its first beat tells (the L/S
      opcodes, RDMA READ_REQ and ACK: :data:`HEAD_KNOWN_OPCODES`; spec §7 v1.1), offered on
      ``i[v]`` while queue *v* holds nothing, competes in the same round robin with its cost
      from its TH. Its first beat is held (``i[v].ready`` low) in the cycle of that decision,
      so that neither ``o`` nor ``i[v].ready`` waits for the arbiter; when it won (the arbiter
      between frames, ``o`` ready) it goes straight to ``o`` from the next cycle on, as it
      arrives, else into its queue as any other frame. Its beats may come with gaps; the
      layer below must bear them (the link end's MAC fills them with LCWs). A
      bypassing frame is held to its TH's length: one that goes on past it is cut an octet
      short of it (its last beat marked ``last``, the rest of it taken and discarded), so the
      receiver finds it malformed and drops it (spec §7); one that ends early leaves as it is
      (malformed too). Both are counted in ``count_frames_dropped``; both were charged their
      TH's cost, at least what the receiver frees for them, and CREDIT_SYNC gives the
      difference back (docs/cbfc.md).
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
    and granted in *t* + 1, out of the block RAM in *t* + 2). A bypassing frame's first beat,
    offered on ``i`` in cycle *t*, is granted in *t* and on ``o`` in *t* + 1
    (:attr:`BYPASS_LATENCY` = 1), its later beats in the cycle they are offered. A
    CREDIT_UPDATE taken in cycle *c* that gives a waiting frame its credits puts its first beat on ``o`` in *c* + 2.
    Throughput: one beat per cycle, plus one cycle per frame (the decision; the MAC's start
    word and gap absorb it, the line rate is unaffected).

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
    #: Cycles from a bypassing frame's first beat offered on ``i`` to the same beat on ``o``.
    BYPASS_LATENCY = 1

    def __init__(self, vcs, *, credit_size=64, queue_octets=8192, sync_period=4096,
                 llr_frames=64, counter_init=0, resteer=False, bypass=False, urgent_vcs=0,
                 urgent_burst=2):
        self.vcs = VCS.validate("vcs", vcs)
        self.credit_size = CREDIT_SIZE.validate("credit_size", credit_size)
        self.queue_words = FRAME_QUEUE_OCTETS.validate("queue_octets",
                                                       queue_octets) // MAC_BEAT_OCTETS
        self.sync_period = SYNC_PERIOD.validate("sync_period", sync_period)
        self.llr_frames = check_power_of_two("llr_frames", llr_frames, 2, 4096)
        self.counter_init = counter_init
        self._resteer = resteer
        self._bypass = bypass
        self.urgent_vcs = check_int_range("urgent_vcs", urgent_vcs, 0, (1 << vcs) - 1)
        self.urgent_burst = check_int_range("urgent_burst", urgent_burst, 1, 255)
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
        m.submodules.credits = credits = CreditSender(
            n, sync_period=self.sync_period, counter_init=self.counter_init,
            costs=head_costs(self.credit_size) if self._bypass else ())
        counters = CounterBank(m, self.count, skip=CreditSender.counters(n).members)
        queues = []
        for v in range(n):
            queue = FrameFifo(words=self.queue_words, frames=max(4, self.queue_words // 8),
                              credit_size=self.credit_size, drop_when_full=False,
                              spare_slot=self._resteer)
            m.submodules[f"queue{v}"] = queue
            queues.append(queue)

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

        # --- bypass candidates: a frame at the head of an empty queue, its length from the TH
        bypass = self._bypass
        in_frame = [Signal(name=f"in_frame{v}") for v in range(n)]     # i[v] inside a frame
        eligible = Signal(n)           # i[v] offers a first beat that may bypass its queue
        # i[v]'s first beat was a candidate in the cycle before and is still held: it leaves
        # on ``o`` now if it was granted, else it goes into its queue.
        decided = Signal(n)
        empty = Signal(n)              # queue v holds no frame
        costs, bodies = [], []
        for v, queue in enumerate(queues):
            beat = self.i[v].payload
            known, octets, cost, grade = head_decode(m, beat.data, self.credit_size, f"head{v}")
            m.d.comb += empty[v].eq(queue.empty)
            if bypass:
                m.d.comb += eligible[v].eq(self.i[v].valid & ~in_frame[v] & ~decided[v]
                                           & empty[v] & known & (oefh_vc(beat.data) == v)
                                           & ~beat.last & (beat.keep == 0xFF))
            bodies.append(octets)
            # The cost a grant charges: the queue's head, or the frame bypassing it.
            costs.append(Signal(COST_BITS, name=f"cost{v}"))
            m.d.comb += costs[v].eq(Mux(empty[v], cost, queue.head_cost))
            m.d.comb += [credits.cost[v].eq(costs[v]),
                         credits.waiting[v].eq(~empty[v] | eligible[v])]
            if bypass:
                # A bypassing frame's credit check compares constants with ``room`` beside
                # the TH's decoding instead of after it (CreditSender, ``costs``).
                m.d.comb += [credits.cost_grade[v].eq(Mux(empty[v], grade, 0)),
                             credits.ungraded_cost[v].eq(queue.head_cost)]
            with m.If(self.i[v].valid & self.i[v].ready):
                m.d.sync += in_frame[v].eq(~beat.last)

        # --- arbiter ------------------------------------------------------------------------
        busy = Signal()
        direct = Signal()              # the frame being sent bypasses its queue
        cur = Signal(range(max(n, 2)))
        rr = Signal(range(max(n, 2)))
        candidates = Signal(n)
        # A frame is chosen only when the LLR takes a new frame, as late as the line allows
        # (its ``ahead_words``); a bypassing frame then leaves in the next cycle.
        m.d.comb += candidates.eq((~empty | eligible) & self.o.ready.replicate(n) & credits.ok)
        grant = Signal()
        any_ready, pick = self._pick(m, candidates, rr, grant)
        allowed = ~busy & any_ready & ~flight_full
        if self._resteer:
            halted = Signal()
            allowed = allowed & ~halted
        m.d.comb += grant.eq(allowed)
        picked_empty = Signal()
        picked = Signal.like(push.data)
        m.d.comb += [credits.take.eq(grant), credits.take_vc.eq(pick)]
        for v in range(n):
            with m.If(pick == v):
                m.d.comb += [picked.eq(Cat(Const(v, 3), costs[v])), picked_empty.eq(empty[v])]
        with m.If(grant):
            m.d.sync += [busy.eq(1), direct.eq(picked_empty), cur.eq(pick),
                         rr.eq(Mux(pick == n - 1, 0, pick + 1))]
        # The frame is recorded the cycle after its grant, so that the grant does not also
        # drive the record's LUT-RAM write. Grants are at least 3 cycles apart (a frame has at
        # least 2 beats after its grant, and the next grant waits for the last), so
        # ``flight_full`` and ``w_ptr`` are up to date by the next grant; a record is released
        # only once the LLR has acknowledged its frame, long after.
        recording = Signal()
        record = Signal.like(picked)
        m.d.sync += [recording.eq(grant), record.eq(picked)]
        m.d.comb += [push.addr.eq(w_ptr[:-1]), push.en.eq(recording), push.data.eq(record)]
        with m.If(recording):
            m.d.sync += w_ptr.eq(w_ptr + 1)


        # A bypassing frame is checked against the length its TH announced: one longer is cut
        # an octet short of it (so the receiver finds it malformed and drops it, spec §7) and
        # the rest discarded; one shorter goes as it is. Either way the receiver frees no more
        # than was charged, and CREDIT_SYNC returns the difference (docs/cbfc.md).
        # What the frame may still send is kept in registers, ``left`` octets and ``near``
        # (``left`` clamped to one more than a beat holds), so a beat is checked by comparing its octet
        # count with ``near``: no adder and compare stand between the beat and ``o`` (in the
        # NIC that chain ran from the steer's register into the LLR's replay buffer, its
        # critical path). A first beat's ``near`` is registered when it becomes a candidate
        # (it is held then, and the cycle after); its ``left`` is formed from the held beat
        # (it goes only into the register).
        body_bits = len(bodies[0])
        above = MAC_BEAT_OCTETS + 1        # more than any beat holds

        def clamped(octets):
            return Mux(octets > above, above, octets)

        left = Signal(body_bits)           # body octets the bypassing frame has still to send
        near = Signal(range(above + 1))    # clamped(left)
        discard = Signal(n)                # the rest of a cut frame on i[v] is thrown away
        malformed = Signal(n)
        for v, queue in enumerate(queues):
            inp, beat = self.i[v], self.i[v].payload
            through = busy & direct & (cur == v)
            starting = decided[v]          # with ``through``: the first beat, granted
            first_near = Signal.like(near, name=f"first_near{v}")
            # A candidate's first beat is held in the cycle of the decision (whatever it is),
            # so that neither ``o`` nor ``i[v].ready`` waits for the arbiter.
            with m.If(eligible[v]):
                m.d.sync += [decided[v].eq(1), first_near.eq(clamped(bodies[v]))]
            with m.If(inp.valid & inp.ready):
                m.d.sync += decided[v].eq(0)
            octets = keep_count(beat.keep, MAC_BEAT_OCTETS)
            budget = Signal.like(near, name=f"budget{v}")
            m.d.comb += budget.eq(Mux(starting, first_near, near))
            too_long = Mux(beat.last, octets > budget, octets >= budget)
            too_short = beat.last & (octets < budget)
            cut_keep = count_to_keep(budget - 1, MAC_BEAT_OCTETS)
            with m.If(discard[v]):
                m.d.comb += inp.ready.eq(1)
                with m.If(inp.valid & beat.last):
                    m.d.sync += discard[v].eq(0)
            with m.Elif(through):
                m.d.comb += [self.o.valid.eq(inp.valid), self.o.payload.eq(beat),
                             inp.ready.eq(self.o.ready)]
                with m.If(too_long):
                    m.d.comb += [self.o.payload.last.eq(1), self.o.payload.keep.eq(cut_keep)]
                # ``self.o.valid`` is ``inp.valid`` here: the beat's own handshake moves the
                # frame's registers, not the output multiplexer's (it was on cbfc_end's path).
                with m.If(inp.valid & self.o.ready):
                    rest = Signal(body_bits, name=f"rest{v}")
                    m.d.comb += rest.eq(Mux(starting, bodies[v], left) - octets)
                    m.d.sync += [left.eq(rest), near.eq(clamped(rest))]
                    with m.If(too_long & ~beat.last):
                        m.d.sync += discard[v].eq(1)
                    with m.If(beat.last | too_long):
                        m.d.sync += busy.eq(0)
                    m.d.comb += malformed[v].eq(too_long | too_short)
            with m.Elif(~eligible[v]):
                wiring.connect(m, wiring.flipped(inp), queue.i)
            m.d.comb += queue.reject.eq(oefh_vc(beat.data) != v)
            counters.frames_dropped[v].increment(m, queue.dropped | malformed[v])
            with m.If(busy & ~direct & (cur == v)):
                m.d.comb += [self.o.valid.eq(queue.o.valid), self.o.payload.eq(queue.o.payload),
                             queue.o.ready.eq(self.o.ready)]
                with m.If(queue.o.valid & self.o.ready & queue.o.payload.last):
                    m.d.sync += busy.eq(0)
            counters.frames_sent[v].increment(m, grant & (pick == v))
        if self._resteer:
            # After the output mux: diverting takes over the queues' ``o.ready``.
            m.d.comb += halted.eq(self._purge(m, queues, busy, counters.frames_diverted))

        wiring.connect(m, wiring.flipped(self.lcw_rx), credits.lcw_rx)
        wiring.connect(m, credits.lcw_tx, wiring.flipped(self.lcw_tx))
        m.d.comb += [self.sent.eq(credits.sent), self.limit.eq(credits.limit),
                     self.settled.eq(credits.settled)]
        forward(m, self.count, credits.count)
        return m

    def _pick(self, m, candidates, rr, grant):
        """The arbiter's choice among ``candidates`` (round robin from ``rr``, the urgent VCs
        first; see the class docstring): ``(any, vc)``; ``grant`` says it was taken."""
        n, mask = self.vcs, self.urgent_vcs
        if mask in (0, (1 << n) - 1):
            return rotate_pick(m, candidates, rr, n, "vc")
        urgent, others = candidates & mask, candidates & ~Const(mask, n)
        any_urgent, pick_urgent = rotate_pick(m, urgent, rr, n, "urgent")
        any_other, pick_other = rotate_pick(m, others, rr, n, "other")
        # Urgent frames granted in a row while another VC had one ready: at the bound, the
        # next grant goes to the others.
        run = Signal(range(self.urgent_burst + 1))
        take_urgent = any_urgent & ~(any_other & (run == self.urgent_burst))
        pick = Signal.like(pick_urgent)
        m.d.comb += pick.eq(Mux(take_urgent, pick_urgent, pick_other))
        with m.If(grant & ~take_urgent):
            m.d.sync += run.eq(0)
        with m.Elif(grant & any_other & (run != self.urgent_burst)):
            m.d.sync += run.eq(run + 1)
        return any_urgent | any_other, pick

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
