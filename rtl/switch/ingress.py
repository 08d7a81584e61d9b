"""Switch ingress: the forwarding decision of one port, taken on a frame's first beat."""

from amaranth.hdl import Module, Signal, Cat, C, Mux
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..counters import CounterBank, Counters
from ..link.layouts import MAC_BEAT_OCTETS
from ..stream import PacketLayout, PacketStream, keep_count
from ..wire import ENDPOINT_BITS, OEFH, LS_TH, Opcode, LsSize, OEFH_VERSION, lanes_to_value
from .csr import ENDPOINT_IDS, PARTITION_BITS, TABLE_BITS
from .voq import VoqWriteSignature

__all__ = ["SwitchIngress", "TableWriteSignature", "DROP_REASONS", "INGRESS_COUNTERS"]

#: Why a frame is dropped, in the order the checks apply (the first that applies counts).
DROP_REASONS = ("malformed", "spoofed", "unroutable", "partition")
#: The counters of an ingress.
INGRESS_COUNTERS = ("frames_in", "octets_in", "drop_malformed", "drop_spoofed",
                    "drop_unroutable", "drop_partition")


def TableWriteSignature(radix):
    """A write into the route table (``route``: ``port``, ``valid``) or the partition tables
    (``partition``) at endpoint ``addr``, as the register decoder drives it."""
    return wiring.Signature({"addr": Out(TABLE_BITS),
                             "route_we": Out(1), "route_valid": Out(1),
                             "route_port": Out(range(radix)),
                             "partition_we": Out(1), "partition": Out(PARTITION_BITS)})


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
    all copies at once. A lookup in cycle *t* sees the writes of cycles before *t*. The
    tables are read every cycle (no stall reaches their clock enables); stage 1 holds its
    beat's lookup in flip-flops while it waits.

    Members
    -------
    i : In(PacketStream(8))
        Frames (OEFH + TH + payload, no FCS).
    attached : In(12); src_check : In(1)
        The port's configuration (spec §10, §11).
    tables : In(TableWriteSignature(radix))
        Table writes.
    w : Out(VoqWriteSignature(radix, queues))
        Beats for the port's :class:`~.voq.VoqBuffer`.
    blocked : Out(1)
        A beat for egress ``w.egress`` waits for room (the port's line is held up).
    count : Out(Counters)
        :data:`INGRESS_COUNTERS`: frames and octets in, frames dropped by reason.

    Latency: a beat taken on ``i`` in cycle *t* is written to its queue in cycle *t + 2*
    (stage 1 holds the beat while the tables are read, stage 2 the beat and its decision).
    Throughput: one beat per cycle, frames back to back; ``i.ready`` drops only while the
    frame's queue is full or one beat short of full.
    """
    def __init__(self, *, radix, vc_classes, queues, fifo=False):
        self.radix = radix
        self.vc_classes = vc_classes
        self.fifo = fifo
        super().__init__({
            "i": In(PacketStream(MAC_BEAT_OCTETS)),
            "attached": In(ENDPOINT_BITS), "src_check": In(1),
            "tables": In(TableWriteSignature(radix)),
            "w": Out(VoqWriteSignature(radix, queues)),
            "blocked": Out(1),
            "count": Out(Counters(INGRESS_COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W = MAC_BEAT_OCTETS
        port_bits = len(self.tables.route_port)
        w, tables = self.w, self.tables

        # --- tables -----------------------------------------------------------------------
        m.submodules.routes = routes = Memory(shape=1 + port_bits, depth=ENDPOINT_IDS, init=[])
        m.submodules.part_dst = part_dst = Memory(shape=PARTITION_BITS, depth=ENDPOINT_IDS,
                                                  init=[])
        m.submodules.part_src = part_src = Memory(shape=PARTITION_BITS, depth=ENDPOINT_IDS,
                                                  init=[])
        route_w = routes.write_port()
        m.d.comb += [route_w.addr.eq(tables.addr), route_w.en.eq(tables.route_we),
                     route_w.data.eq(Cat(tables.route_port, tables.route_valid))]
        for mem in (part_dst, part_src):
            part_w = mem.write_port()
            m.d.comb += [part_w.addr.eq(tables.addr), part_w.en.eq(tables.partition_we),
                         part_w.data.eq(tables.partition)]
        route_r, part_dst_r, part_src_r = (mem.read_port() for mem in (routes, part_dst,
                                                                       part_src))

        beat = self.i.payload
        oefh_in = OEFH.layout(lanes_to_value(beat.data[:8 * OEFH.octets], OEFH.octets))
        m.d.comb += [route_r.addr.eq(oefh_in.dst), part_dst_r.addr.eq(oefh_in.dst),
                     part_src_r.addr.eq(oefh_in.src)]
        # The tables are read every cycle, at the beat on ``i``: no stall reaches the block
        # RAMs' clock enables, which sit far from the logic that stalls. The cycle after stage
        # 1 loads, their data are the lookup of its beat; while it waits, that lookup is held
        # in flip-flops.
        loaded = Signal()
        m.d.sync += loaded.eq(self.i.ready)
        lookup = []
        for port in (route_r, part_dst_r, part_src_r):
            held = Signal.like(port.data, name=f"{port.data.name}_held")
            value = Signal.like(port.data, name=f"{port.data.name}_lookup")
            m.d.comb += value.eq(Mux(loaded, port.data, held))
            m.d.sync += held.eq(value)
            lookup.append(value)
        route, part_dst, part_src = lookup

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

        # Each reason's counter, and its condition, in the order of DROP_REASONS.
        reasons = {
            "drop_malformed": s1.last | (oefh.ver != OEFH_VERSION) | ~valid_opcode
                              | (is_ls & (th.size == LsSize.RESERVED)),
            "drop_spoofed": self.src_check & (oefh.src != self.attached),
            "drop_unroutable": ~route[port_bits],
            "drop_partition": part_src != part_dst,
        }
        first_reason = Cat()
        earlier = C(0)
        for cond in reasons.values():
            first_reason = Cat(first_reason, cond & ~earlier)
            earlier = earlier | cond
        vc_class = oefh.vc % self.vc_classes if self.vc_classes > 1 else C(0, 1)
        egress_first = route[:port_bits]
        queue_first = C(0) if self.fifo else egress_first * self.vc_classes + vc_class

        # --- stage 2: the beat and its decision, registered; the write ---------------------
        # The decision is registered because the lookup comes out of block RAM late in the
        # cycle; the queue's room is then chosen by a register, not by the lookup.
        s2_valid = Signal()
        s2 = Signal(PacketLayout(W), name="s2")
        s2_drop = Signal()
        s2_reason = Signal(len(reasons))
        frame_drop = Signal()                   # the decision of the frame at stage 1, kept
        frame_queue = Signal.like(w.queue)
        frame_egress = Signal.like(w.egress)
        # Stage 2's beat may be written when ``room`` (a register) is set: its queue had room
        # for two beats in the cycle before, so it has room for one now whatever was written
        # then. The advance of both stages (``i.ready`` and the enables of every stage
        # register) then starts at a flip-flop instead of running through the multiplexer of
        # the queues' room; the price: a stall may begin with one beat of the queue still
        # free.
        room = Signal(init=1)
        s2_advance = s2_valid & (s2_drop | room)
        m.d.comb += self.blocked.eq(s2_valid & ~s2_drop & ~room)
        s1_move = ~s2_valid | s2_advance
        s1_queue = Mux(s1.first, queue_first, frame_queue)  # where stage 1's beat will go
        room_s1, room_s2 = Signal(), Signal()
        for queue, value in ((s1_queue, room_s1), (w.queue, room_s2)):
            with m.Switch(queue):
                for q in range(len(w.room)):
                    with m.Case(q):
                        m.d.comb += value.eq(w.room[q])
        m.d.sync += room.eq(Mux(s1_move, room_s1, room_s2))
        m.d.comb += [
            self.i.ready.eq(~s1_valid | s1_move),
            w.en.eq(s2_advance & ~s2_drop),
            w.first.eq(s2.first),
            w.word.data.eq(s2.data),
            w.word.count.eq(keep_count(s2.keep, W)),
            w.word.last.eq(s2.last),
        ]
        with m.If(self.i.ready):
            m.d.sync += [s1_valid.eq(self.i.valid), s1.eq(beat)]
        with m.If(s1_move):
            m.d.sync += [s2_valid.eq(s1_valid), s2.eq(s1), s2_reason.eq(0)]
            with m.If(s1_valid & s1.first):
                m.d.sync += [
                    s2_drop.eq(earlier), s2_reason.eq(first_reason),
                    w.queue.eq(queue_first), w.egress.eq(egress_first),
                    frame_drop.eq(earlier), frame_queue.eq(queue_first),
                    frame_egress.eq(egress_first),
                ]
            with m.Else():
                m.d.sync += [s2_drop.eq(frame_drop), w.queue.eq(frame_queue),
                             w.egress.eq(frame_egress)]

        # --- counters ---------------------------------------------------------------------
        counters = CounterBank(m, self.count)
        counters.frames_in.increment(m, s2_advance & s2.first)
        counters.octets_in.add(m, w.word.count, s2_advance)
        for k, counter in enumerate(reasons):
            counters[counter].increment(m, s2_advance & s2.first & s2_reason[k])
        return m
