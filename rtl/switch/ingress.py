"""Switch ingress: the forwarding decision of one port, taken on a frame's first beat."""

from amaranth.hdl import Module, Signal, Cat, C
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..link.layouts import MAC_BEAT_OCTETS
from ..stream import PacketLayout, PacketStream, SaturatingCounter, keep_count, COUNTER_WIDTH
from ..wire import OEFH, LS_TH, Opcode, LsSize, OEFH_VERSION, lanes_to_value
from .csr import ENDPOINT_IDS, PARTITION_BITS
from .voq import BufferWordLayout

__all__ = ["SwitchIngress", "DROP_REASONS"]

#: Why a frame is dropped, in the order the checks apply (the first that applies counts).
DROP_REASONS = ("malformed", "spoofed", "unroutable", "partition")


class SwitchIngress(wiring.Component):
    """Looks up and checks every frame arriving on ``i`` and writes the ones it forwards into
    the virtual output queue of (egress port, VC class).

    The decision uses only the first beat (octets 0…7: the OEFH and the TH's opcode/size
    octet), which is what lets the switch cut through. A frame is dropped, and counted once
    under the first reason that applies, when

    1. ``malformed``: it ends within its first beat (no EthLink frame is that short), its OEFH
       ``ver`` is not 1, its opcode is not one of spec §4.2, or it is an L/S frame with the
       reserved size 3;
    2. ``spoofed``: the port's source check is on and OEFH ``src`` is not the port's attached
       endpoint (spec §11);
    3. ``unroutable``: the route table has no valid entry for ``dst``;
    4. ``partition``: ``partition[src] != partition[dst]`` (spec §11).

    Faults that show only after the first beat (a frame shorter than its TH) cannot stop a
    frame already cut through; the receiving end's parser drops those.

    Tables: this port's copy of the route table (``dst`` → valid, egress port) and two copies
    of the partition table (read by ``dst`` and by ``src``), 4096 entries each in block RAM.
    Every ingress has its own copy, so all ports look up in the same cycle; ``table_*`` writes
    all copies at once. A lookup in cycle *t* sees the writes of cycles before *t*.

    Members
    -------
    i : In(PacketStream(8))
        Frames (OEFH + TH + payload, no FCS).
    attached : In(12); src_check : In(1)
        The port's configuration (spec §10, §11).
    route_we, partition_we : In(1); table_addr : In(12); route_valid : In(1);
    route_port : In(range(radix)); partition : In(4)
        Table writes.
    w_en, w_first, w_queue, w_egress, w_word : Out
        Beats for the port's :class:`~.voq.VoqBuffer`; ``room`` from it.
    blocked : Out(1)
        A beat for egress ``w_egress`` waits for room (the port's line is held up).
    count_frames_in, count_octets_in, count_drop_* : Out(32)

    Latency: a beat taken on ``i`` in cycle *t* is written to its queue in cycle *t + 2*
    (stage 1 holds the beat while the tables are read, stage 2 the beat and its decision). Throughput: one beat per cycle, frames
    back to back; ``i.ready`` drops only while the frame's queue is full.
    """
    def __init__(self, *, radix, vc_classes, queues, fifo=False):
        self.radix = radix
        self.vc_classes = vc_classes
        self.fifo = fifo
        super().__init__({
            "i": In(PacketStream(MAC_BEAT_OCTETS)),
            "attached": In(12), "src_check": In(1),
            "route_we": In(1), "partition_we": In(1), "table_addr": In(12),
            "route_valid": In(1), "route_port": In(range(radix)),
            "partition": In(PARTITION_BITS),
            # (At least one bit wide even with a single queue.)
            "w_en": Out(1), "w_first": Out(1), "w_queue": Out(range(max(2, queues))),
            "w_egress": Out(range(radix)), "w_word": Out(BufferWordLayout()),
            "room": In(queues),
            "blocked": Out(1),
            "count_frames_in": Out(COUNTER_WIDTH), "count_octets_in": Out(COUNTER_WIDTH),
            **{f"count_drop_{reason}": Out(COUNTER_WIDTH) for reason in DROP_REASONS},
        })

    def elaborate(self, platform):
        m = Module()
        W = MAC_BEAT_OCTETS
        port_bits = len(self.route_port)

        # --- tables -----------------------------------------------------------------------
        m.submodules.routes = routes = Memory(shape=1 + port_bits, depth=ENDPOINT_IDS, init=[])
        m.submodules.part_dst = part_dst = Memory(shape=PARTITION_BITS, depth=ENDPOINT_IDS,
                                                  init=[])
        m.submodules.part_src = part_src = Memory(shape=PARTITION_BITS, depth=ENDPOINT_IDS,
                                                  init=[])
        route_w = routes.write_port()
        m.d.comb += [route_w.addr.eq(self.table_addr), route_w.en.eq(self.route_we),
                     route_w.data.eq(Cat(self.route_port, self.route_valid))]
        for mem in (part_dst, part_src):
            w = mem.write_port()
            m.d.comb += [w.addr.eq(self.table_addr), w.en.eq(self.partition_we),
                         w.data.eq(self.partition)]
        route_r, part_dst_r, part_src_r = (mem.read_port() for mem in (routes, part_dst,
                                                                       part_src))

        beat = self.i.payload
        take = self.i.valid & self.i.ready
        oefh_in = OEFH.layout(lanes_to_value(beat.data[:8 * OEFH.octets], OEFH.octets))
        lookup = take & beat.first
        m.d.comb += [
            route_r.addr.eq(oefh_in.dst), part_dst_r.addr.eq(oefh_in.dst),
            part_src_r.addr.eq(oefh_in.src),
            # The read ports hold their data between first beats: the decision stays valid
            # while stage 1 waits.
            route_r.en.eq(lookup), part_dst_r.en.eq(lookup), part_src_r.en.eq(lookup),
        ]

        # --- stage 1: the beat and the lookup result: the decision --------------------------
        s1_valid = Signal()
        s1 = Signal(PacketLayout(W), name="s1")
        oefh = OEFH.layout(lanes_to_value(s1.data[:8 * OEFH.octets], OEFH.octets))
        th = LS_TH.layout(Cat(C(0, LS_TH.bits - 8),
                              s1.data[8 * OEFH.octets:8 * OEFH.octets + 8]))
        valid_opcode = Signal()
        with m.Switch(th.opcode):
            with m.Case(*Opcode):
                m.d.comb += valid_opcode.eq(1)
        is_ls = ~th.opcode[3]    # opcodes 8…11 are RDMA (spec §4.2)

        reasons = {
            "malformed": s1.last | (oefh.ver != OEFH_VERSION) | ~valid_opcode
                         | (is_ls & (th.size == LsSize.RESERVED)),
            "spoofed": self.src_check & (oefh.src != self.attached),
            "unroutable": ~route_r.data[port_bits],
            "partition": part_src_r.data != part_dst_r.data,
        }
        first_reason = Cat()
        earlier = C(0)
        for cond in reasons.values():
            first_reason = Cat(first_reason, cond & ~earlier)
            earlier = earlier | cond
        vc_class = oefh.vc % self.vc_classes if self.vc_classes > 1 else C(0, 1)
        egress_first = route_r.data[:port_bits]
        queue_first = C(0) if self.fifo else egress_first * self.vc_classes + vc_class

        # --- stage 2: the beat and its decision, registered; the write ---------------------
        # The decision is registered because the lookup comes out of block RAM late in the
        # cycle; the queue's room is then chosen by a register, not by the lookup.
        s2_valid = Signal()
        s2 = Signal(PacketLayout(W), name="s2")
        s2_drop = Signal()
        s2_reason = Signal(len(reasons))
        frame_drop = Signal()                   # the decision of the frame at stage 1, kept
        frame_queue = Signal.like(self.w_queue)
        frame_egress = Signal.like(self.w_egress)
        room = Signal()
        with m.Switch(self.w_queue):
            for q in range(len(self.room)):
                with m.Case(q):
                    m.d.comb += room.eq(self.room[q])
        s2_advance = s2_valid & (s2_drop | room)
        m.d.comb += self.blocked.eq(s2_valid & ~s2_drop & ~room)
        s1_move = ~s2_valid | s2_advance
        m.d.comb += [
            self.i.ready.eq(~s1_valid | s1_move),
            self.w_en.eq(s2_advance & ~s2_drop),
            self.w_first.eq(s2.first),
            self.w_word.data.eq(s2.data),
            self.w_word.count.eq(keep_count(s2.keep, W)),
            self.w_word.last.eq(s2.last),
        ]
        with m.If(self.i.ready):
            m.d.sync += [s1_valid.eq(self.i.valid), s1.eq(beat)]
        with m.If(s1_move):
            m.d.sync += [s2_valid.eq(s1_valid), s2.eq(s1), s2_reason.eq(0)]
            with m.If(s1_valid & s1.first):
                m.d.sync += [
                    s2_drop.eq(earlier), s2_reason.eq(first_reason),
                    self.w_queue.eq(queue_first), self.w_egress.eq(egress_first),
                    frame_drop.eq(earlier), frame_queue.eq(queue_first),
                    frame_egress.eq(egress_first),
                ]
            with m.Else():
                m.d.sync += [s2_drop.eq(frame_drop), self.w_queue.eq(frame_queue),
                             self.w_egress.eq(frame_egress)]

        # --- counters ---------------------------------------------------------------------
        frames = SaturatingCounter("count_frames_in")
        octets = SaturatingCounter("count_octets_in")
        frames.increment(m, s2_advance & s2.first)
        octets.add(m, self.w_word.count, s2_advance)
        m.d.comb += [self.count_frames_in.eq(frames.value),
                     self.count_octets_in.eq(octets.value)]
        for k, reason in enumerate(reasons):
            counter = SaturatingCounter(f"count_drop_{reason}")
            counter.increment(m, s2_advance & s2.first & s2_reason[k])
            m.d.comb += getattr(self, f"count_drop_{reason}").eq(counter.value)
        return m
