"""The input buffer of one switch port: virtual output queues in one block RAM, and the reader
that sends one frame at a time through the crossbar."""

from amaranth.hdl import Module, Signal, Cat, Mux
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..arbiter import round_robin, one_hot_index, one_hot_select
from ..buffer import CountedWordLayout
from ..params import OneOf, Param, PowerOfTwo

__all__ = ["VoqBuffer", "VoqWriteSignature", "VOQ_BEATS", "VC_CLASSES"]

VOQ_BEATS = Param("8-octet beats per virtual output queue", PowerOfTwo(16, 4096))
VC_CLASSES = Param("queues per (ingress, egress)", OneOf(1, 2, 4, 8))


def VoqWriteSignature(radix, queues):
    """Beats into a port's queues, as the ingress drives them: ``word`` to queue ``queue``
    when ``en`` (``first``: a frame's first beat, with its ``egress``); ``room[q]``: queue
    ``q`` can take two more beats (a register, so it can take a beat in the next cycle
    whatever is written in this one)."""
    return wiring.Signature({
        "en": Out(1), "first": Out(1),
        # (At least one bit wide even with a single queue.)
        "queue": Out(range(max(2, queues))), "egress": Out(range(radix)),
        "word": Out(CountedWordLayout()),
        "room": In(queues),
    })


class VoqBuffer(wiring.Component):
    """``radix * vc_classes`` queues of ``voq_beats`` beats each, one per (egress port, VC
    class), in one block RAM; or, with ``fifo``, the same RAM as a single first-in first-out
    queue (the head-of-line-blocking baseline).

    Write side (the ingress): a beat on ``w_word`` goes to queue ``w_queue`` when ``w_en``; the
    ingress writes only to a queue whose ``room`` bit (room for two beats) was set in the
    cycle before. In ``fifo`` mode ``w_queue`` is
    ignored and the egress port of a frame is given with its first beat (``w_first``,
    ``w_egress``).

    Read side (the crossbar): ``request[j]`` says the buffer is free and has a frame (or, in
    cut-through, the first beats of one) for egress ``j``. ``grant[j]`` connects it to that
    egress: it picks a VC class round robin among those with a frame for
    it and sends that frame's beats on ``r_*``, one per cycle while the beat is stored and
    ``egress_room`` allows, until the last beat (``r_valid & r_word.last``), which releases the
    connection. A frame is never interleaved with another.

    Members
    -------
    w : In(VoqWriteSignature(radix, queues))
        Beats from the ingress, and the room of each queue.
    request : Out(radix)
        From a register.
    grant : In(radix)
        One-hot (or 0), from a register: the egress the allocator matched the buffer with in
        the cycle before (the core registers the match). The buffer is connected from this
        cycle on and issues the frame's first read in it.
    busy : Out(1)
        Connected (from the cycle of ``grant`` to the cycle after the last beat).
    egress_room : In(radix)
        The egress can take a beat read now (it lands there two cycles later).
    r_valid : Out(1); r_egress : Out(range(radix)); r_word : Out(CountedWordLayout())
        A beat read from the RAM, for egress ``r_egress``.

    Latency: a beat written in cycle *t* counts in ``request`` in *t + 1*; with ``grant`` in
    cycle *g* (the match of *g - 1*), the first read is issued in *g* and its beat is on
    ``r_*`` in *g + 1*.
    Throughput: one beat per cycle in and out at the same time; between two frames read by
    one buffer, 2 cycles without a read (release, then the next grant).

    Everything the allocator and the ingress see comes from registers (``request``, ``room``;
    ``request`` masked by the registered ``grant``),
    and the RAM's ``last`` bit, which stops the reader, reaches only ``r_valid`` and ``busy``:
    the queues' fill levels count a read the cycle after it is issued (from ``r_valid``), a
    queue's head follows the reader's address while the reader is on that queue, and the
    address moves on without waiting for ``last``.
    """
    def __init__(self, *, radix, vc_classes, voq_beats, fifo=False):
        self.radix = radix
        self.vc_classes = VC_CLASSES.validate("vc_classes", vc_classes)
        self.voq_beats = VOQ_BEATS.validate("voq_beats", voq_beats)
        self.fifo = bool(fifo)
        self.queues = 1 if fifo else radix * vc_classes
        self.capacity = voq_beats * radix * vc_classes // self.queues
        word = CountedWordLayout()
        super().__init__({
            "w": In(VoqWriteSignature(radix, self.queues)),
            "request": Out(radix),
            "grant": In(radix),
            "busy": Out(1),
            "egress_room": In(radix),
            "r_valid": Out(1), "r_egress": Out(range(radix)), "r_word": Out(word),
        })

    def elaborate(self, platform):
        m = Module()
        radix, classes, queues, cap = self.radix, self.vc_classes, self.queues, self.capacity
        offset_bits = exact_log2(cap)
        queue_bits = exact_log2(queues) if queues > 1 else 0

        m.submodules.ram = ram = Memory(shape=CountedWordLayout(), depth=cap * queues, init=[])
        wport = ram.write_port()
        rport = ram.read_port()   # synchronous; address from registers only

        tails = [Signal(offset_bits, name=f"tail{q}") for q in range(queues)]
        heads = [Signal(offset_bits, name=f"head{q}") for q in range(queues)]
        counts = [Signal(range(cap + 1), name=f"count{q}") for q in range(queues)]
        # "Has a beat" and "has room" are registered, computed from the next fill level: they
        # feed the allocator and the ingress's stall logic, which must start from registers.
        nonempty = Signal(queues)
        two = Signal(queues)          # at least two beats
        room = Signal(queues, init=(1 << queues) - 1)
        w = self.w
        m.d.comb += w.room.eq(room)

        # --- write side -------------------------------------------------------------------
        w_queue = w.queue if queues > 1 else 0
        w_tail = Signal(offset_bits)
        with m.Switch(w_queue):
            for q in range(queues):
                with m.Case(q):
                    m.d.comb += w_tail.eq(tails[q])
        m.d.comb += [
            wport.addr.eq(Cat(w_tail, w_queue) if queue_bits else w_tail),
            wport.data.eq(w.word),
            wport.en.eq(w.en),
        ]

        # --- reader -----------------------------------------------------------------------
        # ``held``: connected since a grant of an earlier cycle; in the grant's own cycle the
        # reader starts from the queue and head the grant chooses (``start_*``, below), after
        # it from its registers.
        held = Signal()
        grant, busy = self.grant, self.busy
        granted = grant.any()
        m.d.comb += busy.eq(held | granted)
        cur_queue = Signal(range(max(2, queues)))
        cur_head = Signal(offset_bits)
        start_queue = Signal(range(max(2, queues)))
        start_head = Signal(offset_bits)
        rd_valid = self.r_valid
        done = Signal()
        issue = Signal()
        has_beat = Signal()
        # A read issued last cycle (``r_valid``) is not in the fill level yet (it counts a
        # cycle late, see below): then the queue must hold two beats for one more read.
        with m.Switch(cur_queue):
            for q in range(queues):
                with m.Case(q):
                    m.d.comb += has_beat.eq(Mux(rd_valid, two[q], nonempty[q]))
        room_here = Signal()
        with m.Switch(self.r_egress):
            for j in range(radix):
                with m.Case(j):
                    m.d.comb += room_here.eq(self.egress_room[j])
        # The reader reads ahead of the RAM's ``last`` bit: in the cycle a frame's last beat
        # comes out (``done``) it may read the next word too, but that read is not issued
        # (no ``r_valid``, not counted), and the address it moved on to is not used again:
        # in that same cycle the queue's head takes the reader's address from before the move
        # (below), and the next grant starts from the head. So ``last`` reaches only
        # ``r_valid`` and ``busy``.
        # In a grant's cycle the started queue has a beat: the allocator matched a request
        # for the egress, so a queue of it had a beat, the pick is among those that have one,
        # and an idle buffer reads nothing (``r_valid`` is low then too). Only the egress's
        # room decides that first read, so the grant does not pass the queue multiplexers.
        reading = Signal()
        m.d.comb += [
            self.r_word.eq(rport.data),
            done.eq(rd_valid & self.r_word.last),
            reading.eq(Mux(granted, (grant & self.egress_room).any(),
                           held & has_beat & room_here)),
            # Stop at a frame's end: the beat after it belongs to the next frame.
            issue.eq(reading & ~done),
        ]
        head = Mux(granted, start_head, cur_head)
        queue = Mux(granted, start_queue, cur_queue)
        m.d.comb += rport.addr.eq(Cat(head, queue) if queue_bits else head)
        m.d.sync += rd_valid.eq(issue)
        with m.If(granted):
            m.d.sync += [held.eq(1), self.r_egress.eq(one_hot_index(grant)),
                         cur_queue.eq(start_queue), cur_head.eq(start_head + reading)]
        with m.Elif(reading):
            m.d.sync += cur_head.eq(cur_head + 1)
        with m.If(done):
            m.d.sync += held.eq(0)
        # The queue's head follows the reader's address while the reader is on it: in the cycle
        # of ``done`` the address is one past the frame's last beat, the next frame's first,
        # and that is what the head holds when ``held`` falls (nobody else reads it meanwhile).
        with m.If(held):
            with m.Switch(cur_queue):
                for q in range(queues):
                    with m.Case(q):
                        m.d.sync += heads[q].eq(cur_head)

        # The next "has a beat" of each queue (the register ``nonempty`` loads it).
        filled = Signal(queues)
        for q in range(queues):
            write_here = w.en & (w_queue == q)
            # A read counts the cycle after it was issued, from a register: ``issue`` waits
            # for the RAM's ``last`` bit, which then stops at the reader's own state.
            read_here = rd_valid & (cur_queue == q)
            with m.If(write_here):
                m.d.sync += tails[q].eq(tails[q] + 1)
            level = Signal(range(cap + 1), name=f"level{q}_next")
            m.d.comb += [
                level.eq(counts[q] + write_here - read_here),
                # ``level != 0`` without the adder (it feeds the requests): a read leaves a
                # beat behind only if there were two.
                filled[q].eq(write_here | two[q] | nonempty[q] & ~read_here),
            ]
            m.d.sync += [counts[q].eq(level), nonempty[q].eq(filled[q]),
                         two[q].eq(level > 1), room[q].eq(level < cap - 1)]

        # --- requests and grant -----------------------------------------------------------
        if self.fifo:
            # Each frame's egress, in order: the head frame alone may request (HOL blocking).
            # Frames the switch forwards have at least 2 beats, so cap / 2 entries suffice.
            m.submodules.frames = frames = SyncFIFO(width=len(w.egress), depth=cap // 2)
            # Never full: a frame's beats take room in the queue before it is counted here.
            m.d.comb += [
                frames.w_stream.valid.eq(w.en & w.first),
                frames.w_stream.payload.eq(w.egress),
                frames.r_stream.ready.eq(done),
            ]
            head_egress = frames.r_stream.payload
            m.d.comb += [
                self.request.eq(Cat(*(~busy & frames.r_stream.valid & (head_egress == j)
                                      for j in range(radix)))),
                start_queue.eq(0), start_head.eq(heads[0]),
            ]
        else:
            # Which egresses have a frame, a register loaded from the queues' next state: the
            # allocator starts from flip-flops, not from an OR over the classes. ``request``
            # is the same, cycle for cycle, as ``~busy`` and the OR of ``nonempty``.
            has_frame = Signal(radix)
            m.d.sync += has_frame.eq(Cat(*(filled[j * classes:(j + 1) * classes].any()
                                           for j in range(radix))))
            m.d.comb += self.request.eq(has_frame & ~busy.replicate(radix))
            if classes == 1:
                m.d.comb += [start_queue.eq(one_hot_index(grant)),
                             start_head.eq(one_hot_select(grant, heads))]
            else:
                # The queue a grant for egress ``j`` would start (a VC class round robin among
                # those with a beat) and its head, prepared a cycle ahead in registers for
                # every egress, so that the grant only chooses among them and no round robin or
                # wide head multiplexer stands between the grant and the read address.
                # They are formed from the next state (``filled``, the heads as they will be),
                # so they are what the same logic would give from the registers at the grant;
                # the class pointer is the current one: it moves only at a grant, and the
                # buffer is busy from a grant's cycle, so it never moves in the cycle before
                # one.
                class_ptr = Signal(range(classes))
                heads_next = [Mux(held & (cur_queue == q), cur_head, heads[q])
                              for q in range(queues)]
                picks = [Signal(range(classes), name=f"pick_e{j}") for j in range(radix)]
                pick_heads = [Signal(offset_bits, name=f"pick_head_e{j}") for j in range(radix)]
                for j in range(radix):
                    ready = filled[j * classes:(j + 1) * classes]
                    pick = one_hot_index(round_robin(m, ready, class_ptr, f"class_e{j}"))
                    m.d.sync += picks[j].eq(pick)
                    with m.Switch(pick):
                        for c in range(classes):
                            with m.Case(c):
                                m.d.sync += pick_heads[j].eq(heads_next[j * classes + c])
                # ``classes`` is a power of two: queue j * classes + pick is Cat(pick, j), and
                # the class pointer wraps by truncation.
                pick = one_hot_select(grant, picks)
                m.d.comb += [start_queue.eq(Cat(pick, one_hot_index(grant))),
                             start_head.eq(one_hot_select(grant, pick_heads))]
                with m.If(granted):
                    m.d.sync += class_ptr.eq(pick + 1)
        return m
