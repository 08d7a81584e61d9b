"""A frame queue in block RAM that knows each frame's credit cost: the per-VC transmit queues
(store and forward) and receive buffers (cut-through) of CBFC (spec §8) are both made of it."""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..buffer import FRAME_QUEUE_OCTETS, FrameWordLayout, MAX_FRAME_WORDS, read_committed
from ..link.layouts import MAC_BEAT_OCTETS
from ..params import check_power_of_two
from ..stream import PacketStream, VerdictPacketStream, keep_count
from .credit import COST_BITS, FCS_OCTETS

__all__ = ["FrameFifo"]

_OCTET_BITS = (MAX_FRAME_WORDS * MAC_BEAT_OCTETS + FCS_OCTETS).bit_length() + 1


class FrameFifo(wiring.Component):
    """Frames in on ``i``, out on ``o``, with the credit cost of every stored frame
    (``ceil((octets + FCS) / credit_size)``, spec §8; ``credit_size`` a power of two from 16
    to 4096 octets, so that a beat adds at most one credit). Store and forward by default: a
    frame becomes visible at ``o`` only once its last beat is stored, so ``o`` never starves
    in the middle of a frame and a frame can still be dropped at its end.

    ``words`` words of 8 octets (block RAM) and at most ``frames`` frames. A frame is dropped
    (the beats already stored are rolled back, the rest discarded) when it is longer than
    :data:`MAX_FRAME_WORDS`, when ``reject`` is high with its first beat, or — if
    ``drop_when_full`` — when it finds no room; ``dropped`` then strobes with its last beat,
    with the cost of the whole frame in ``dropped_cost``. Without ``drop_when_full`` the queue
    back-pressures ``i`` instead (``words`` must hold a longest frame, so a frame always fits
    once the queue has drained).

    With ``spare_slot`` the last frame slot is kept for frames written while ``use_spare`` is
    high: a queue that gives a frame back and takes it again at its tail in the same cycles
    (re-steering) then always finds a slot, although the frame still holds its own until its
    last beat has left.

    ``abort``, sampled with a frame's last beat, rolls the frame back as if it had never come:
    nothing is ``stored`` or ``dropped`` (a frame the link layer found bad after passing it on
    cut-through, spec v1.1 §7; it is resent and stored then).

    With ``cut_through`` every frame is visible at ``o`` from its first beat: a beat is offered
    the cycle after it was taken when the reader has caught up with the writer (it goes
    straight into the output register), else 2 cycles after it was written (out of the block
    RAM); ``o`` then waits inside a frame for beats ``i`` has not delivered yet, and carries a
    verdict (:class:`~ethlink.rtl.stream.VerdictPacketLayout`).
    A frame rolled back or dropped (``abort``, too long, no room) whose first beat has not
    been read yet vanishes as in store and forward; one the reader has begun is ended on
    ``o`` by a beat with ``user.error`` (and ``keep = 0``) after the beats already read, and
    its unread words are freed at once (:func:`~ethlink.rtl.buffer.read_committed`). So the
    buffer never holds more than a bad frame's words already passed on, and the consumer
    undoes what it began for it. It costs no credit: it is neither ``stored`` nor ``popped``.

    Members
    -------
    i : In(PacketStream(8)), o : Out(PacketStream(8))
    use_spare : In(1)
        Only with ``spare_slot``: a frame starting now may take the last slot.
    reject : In(1)
        Drop the frame whose first beat is on ``i`` (sampled with that beat).
    abort : In(1)
        Roll back the frame whose last beat is on ``i``.
    stored, stored_cost : Out(1), Out(COST_BITS)
        A frame was stored (strobe at its last beat) and its cost.
    dropped, dropped_cost : Out(1), Out(COST_BITS)
    frames : Out
        Frames wholly stored and not yet wholly sent.
    empty : Out(1)
        ``frames`` is 0 (a register kept with the counters, as are the slot checks).
    head_cost : Out(COST_BITS)
        Cost of the oldest stored frame (the one ``o`` offers or is sending); a register.
    popped, popped_cost : Out(1), Out(COST_BITS)
        The last beat of a stored frame left on ``o`` (strobe), and that frame's cost.
    ended_bad : Out(1)
        Only with ``cut_through``: a frame the reader had begun was rolled back or dropped; it
        is ended on ``o`` with ``user.error`` (strobe).

    Latency: the first beat of a frame is offered on ``o`` 2 cycles after its last beat was
    taken on ``i`` (store and forward), or 1 cycle after its first beat was taken when it cuts
    through into an idle output. Throughput: one beat per cycle in and out.
    """
    def __init__(self, *, words, frames, credit_size, drop_when_full, spare_slot=False,
                 cut_through=False):
        FRAME_QUEUE_OCTETS.validate("words * 8", words * MAC_BEAT_OCTETS)
        check_power_of_two("frames", frames, 2, 1 << 16)
        self.words = words
        self.depth = frames
        # A beat adds to the cost at most one credit (the cost's carry, below).
        self.credit_size = check_power_of_two("credit_size", credit_size,
                                              2 * MAC_BEAT_OCTETS, 1 << 12)
        self.drop_when_full = drop_when_full
        self.spare_slot = spare_slot
        self.cut_through = cut_through
        super().__init__({
            "i": In(PacketStream(MAC_BEAT_OCTETS)),
            "o": Out(VerdictPacketStream(MAC_BEAT_OCTETS) if cut_through
                     else PacketStream(MAC_BEAT_OCTETS)),
            "reject": In(1),
            "abort": In(1),
            "stored": Out(1), "stored_cost": Out(COST_BITS),
            "dropped": Out(1), "dropped_cost": Out(COST_BITS),
            "frames": Out(range(frames + 1)), "empty": Out(1),
            "head_cost": Out(COST_BITS),
            "popped": Out(1), "popped_cost": Out(COST_BITS),
            **({"use_spare": In(1)} if spare_slot else {}),
            **({"ended_bad": Out(1)} if cut_through else {}),
        })

    def elaborate(self, platform):
        m = Module()
        W, F = self.words, self.depth
        AW, FW = exact_log2(W), exact_log2(F)

        buffer = Memory(shape=FrameWordLayout(), depth=W, init=[])
        costs = Memory(shape=COST_BITS, depth=F, init=[])
        m.submodules.buffer = buffer
        m.submodules.costs = costs
        wr = buffer.write_port()
        rd = buffer.read_port()
        cost_wr = costs.write_port()
        cost_next = costs.read_port(domain="comb")

        wr_ptr = Signal(AW + 1)
        commit = Signal(AW + 1)
        rd_ptr = Signal(AW + 1)
        cost_in = Signal(FW + 1)       # frames stored
        cost_out = Signal(FW + 1)      # frames wholly sent
        # The flags of the frame count are registers, kept with the counters (below), so that
        # the writer's drop decision and a consumer's grant start from flip-flops rather than
        # from a subtraction and a compare.
        empty = Signal(init=1)         # frames == 0
        at_full = Signal()             # frames == F
        at_spare = Signal()            # frames >= F - 1
        m.d.comb += [self.frames.eq(cost_in - cost_out), self.empty.eq(empty)]

        # --- writer ---------------------------------------------------------------------------
        beat = self.i.payload
        in_frame = Signal()
        discard = Signal()             # the rest of this frame is thrown away
        words_in = Signal(range(MAX_FRAME_WORDS + 2))
        first = ~in_frame
        full = (wr_ptr - rd_ptr)[:AW + 1] == W
        no_slot = at_full
        if self.spare_slot:
            no_slot = Mux(self.use_spare, at_full, at_spare)
        if self.drop_when_full:
            m.d.comb += self.i.ready.eq(1)
            lost_now = full | (first & no_slot)
        else:
            # Wait for a word (and, at a frame's start, a cost slot) instead of dropping.
            m.d.comb += self.i.ready.eq(~full & ~(first & no_slot))
            lost_now = 0
        take = self.i.valid & self.i.ready
        too_long = ~first & (words_in == MAX_FRAME_WORDS)
        aborted = Signal()             # this beat ends a frame that is rolled back
        m.d.comb += aborted.eq(take & beat.last & self.abort)
        drop_now = Signal()
        m.d.comb += drop_now.eq(take & ~(discard & ~first)
                                & ((first & self.reject) | lost_now | too_long | aborted))
        writing = take & ~drop_now & ~(discard & ~first)
        m.d.comb += [
            wr.addr.eq(wr_ptr[:AW]),
            wr.data.data.eq(beat.data), wr.data.keep.eq(beat.keep),
            wr.data.last.eq(beat.last),
            wr.en.eq(writing),
        ]
        # The cost of the octets so far, ceil((octets + FCS) / credit_size), is kept split at
        # the credit size: octets + FCS + credit_size - 1 = ahead * credit_size + part. A beat
        # of k octets then makes it ahead + (part + k >= credit_size): a short add and a
        # carry between a beat's `keep` and its cost, instead of two wide adders (on the ECP5
        # the receive buffers' cost was a critical path into the credit counters).
        shift = exact_log2(self.credit_size)
        bias = FCS_OCTETS + self.credit_size - 1
        ahead = Signal(_OCTET_BITS - shift + 1)
        part = Signal(shift)
        ahead_now = Mux(first, bias >> shift, ahead)
        part_now = Signal(shift + 1)
        m.d.comb += part_now.eq(Mux(first, bias % self.credit_size, part)
                                + keep_count(beat.keep, MAC_BEAT_OCTETS))
        # part < credit_size and k <= 8 < credit_size: the sum carries at most once.
        ahead_next = Signal.like(ahead)
        m.d.comb += ahead_next.eq(ahead_now + part_now[shift])
        cost = Signal(COST_BITS)
        m.d.comb += cost.eq(ahead_next)
        ends = take & beat.last
        with m.If(take):
            m.d.sync += [in_frame.eq(~beat.last),
                         ahead.eq(ahead_next), part.eq(part_now[:shift]),
                         words_in.eq(Mux(first, 1, words_in + 1))]
            with m.If(first):
                m.d.sync += discard.eq(0)
        with m.If(writing):
            m.d.sync += wr_ptr.eq(wr_ptr + 1)
        with m.If(drop_now):
            m.d.sync += [wr_ptr.eq(commit), discard.eq(1)]
        dropping = drop_now | (take & discard & ~first)
        m.d.comb += [
            self.stored.eq(ends & ~dropping), self.stored_cost.eq(cost),
            self.dropped.eq(ends & dropping & ~aborted), self.dropped_cost.eq(cost),
            cost_wr.addr.eq(cost_in[:FW]), cost_wr.data.eq(cost), cost_wr.en.eq(self.stored),
        ]
        with m.If(self.stored):
            m.d.sync += [commit.eq(wr_ptr + 1), cost_in.eq(cost_in + 1)]
        with m.If(ends):
            m.d.sync += discard.eq(0)

        # --- reader: committed words (cut-through: every word written) ----------------------
        if self.cut_through:
            # The frame being written has begun to leave when the read pointer is inside it
            # (the pointers run modulo 2W, and a frame is shorter than W words).
            inside = (rd_ptr - commit)[:AW + 1] <= (wr_ptr - commit)[:AW + 1]
            begun = (rd_ptr != commit) & inside
            # A frame dropped now must not begin to leave in this cycle either.
            m.d.comb += self.ended_bad.eq(drop_now & begun)
            sent_last = read_committed(m, rd, rd_ptr, Mux(drop_now, commit, wr_ptr), self.o,
                                       abandon=self.ended_bad, restart=commit,
                                       through=(writing, wr.data))
        else:
            sent_last = read_committed(m, rd, rd_ptr, commit, self.o)
        # The head's cost is a register that follows the cost memory at the head (cost_out):
        # the entry after it when the head leaves, the cost being stored when it is written
        # there, so that a consumer's logic starts from a register, not from a LUT-RAM read.
        head_cost = Signal(COST_BITS)
        next_out = (cost_out + sent_last)[:FW]
        m.d.comb += cost_next.addr.eq((cost_out + 1)[:FW])
        with m.If(self.stored & (cost_in[:FW] == next_out)):
            m.d.sync += head_cost.eq(cost)
        with m.Elif(sent_last):
            m.d.sync += head_cost.eq(cost_next.data)
        with m.If(sent_last):
            m.d.sync += cost_out.eq(cost_out + 1)
        # The count's flags follow it: up by one (a frame stored, none sent), down by one (one
        # sent, none stored), or unchanged.
        with m.If(self.stored & ~sent_last):
            m.d.sync += [empty.eq(0), at_full.eq(self.frames == F - 1),
                         at_spare.eq(self.frames >= F - 2)]
        with m.Elif(sent_last & ~self.stored):
            m.d.sync += [empty.eq(self.frames == 1), at_full.eq(0),
                         at_spare.eq(self.frames == F)]
        m.d.comb += [self.head_cost.eq(head_cost),
                     self.popped.eq(sent_last), self.popped_cost.eq(head_cost)]
        return m
