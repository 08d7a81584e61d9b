"""OEFH + TH deparser: header fields and a payload stream in, a frame stream out.

Ref: spec §4 (frame format: OEFH | TH | payload; the FCS is the MAC's), §4.2 (the opcode alone
tells the TH length).
"""

from amaranth.hdl import Module, Signal, Mux, Cat
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..counters import CounterBank, Counters
from ..params import parameters
from ..stream import PacketStream, BEAT_OCTETS, keep_count, count_to_keep
from ..wire import HEADER_OCTETS, HeaderLayout, lanes_to_value
from .parser import LS_HEADER_OCTETS, header_geometry

__all__ = ["OefhDeparser"]


@parameters(beat_octets=BEAT_OCTETS)
class OefhDeparser(wiring.Component):
    """Put OEFH + TH in front of a payload.

    Every transfer on ``header`` is matched by one packet on ``i`` (an empty packet — one beat
    with ``keep = 0`` — for a frame without payload). The frame on ``o`` is the 14 (L/S) or 22
    (RDMA) header octets, chosen by the TH opcode, followed by the payload octets; its last beat
    holds the tail and ``keep`` says how much of it is valid.

    Members
    -------
    header : In(stream.Signature(HeaderLayout()))
        OEFH and TH fields of the next frame. The deparser writes what it is given: checking
        the fields is the job of the block that built them.
    i : In(PacketStream(beat_octets))
        Payload.
    o : Out(PacketStream(beat_octets))
        Frames.
    count : Out(Counters)
        ``frames``: frames started (saturating).

    Latency: 1 cycle, from the ``header`` transfer to the first frame beat on ``o`` (when the
    header ends inside the first beat — L/S at 16 octets per beat and wider, RDMA at 32 and
    wider — the first payload beat must be valid too, and the header waits for it).

    Throughput: one output beat per cycle, back-to-back frames without a bubble. ``o`` is a
    register; ``header.ready`` and ``i.ready`` follow ``o.ready`` combinationally. When the
    header ends inside the first beat, ``header.ready`` also waits for ``i.valid`` (and, at a
    frame start, ``i.ready`` for ``header.valid``): a producer must offer a frame's header and
    its first payload beat independently, not one only after the other was taken.
    """
    def __init__(self, beat_octets=8):
        self.beat_octets = beat_octets
        super().__init__({
            "header": In(stream.Signature(HeaderLayout())),
            "i": In(PacketStream(beat_octets)),
            "o": Out(PacketStream(beat_octets)),
            "count": Out(Counters(["frames"])),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        ls_beats, ls_off = header_geometry(LS_HEADER_OCTETS, W)
        rdma_beats, rdma_off = header_geometry(HEADER_OCTETS, W)
        max_off = max(ls_off, rdma_off)

        frames = CounterBank(m, self.count).frames

        # Header octets in wire order (octet 0 in bits 7:0); an L/S header is the first 14.
        lanes = Signal(8 * HEADER_OCTETS)
        m.d.comb += lanes.eq(lanes_to_value(self.header.payload.as_value(), HEADER_OCTETS))
        header_rdma = self.header.payload.th.rdma.opcode[3]   # opcodes 8…11 (spec §4.2)

        held = Signal(8 * HEADER_OCTETS)   # the accepted header, for its later pure beats
        is_rdma = Signal()
        next_header_beat = Signal(range(max(rdma_beats, 1) + 1))
        carry = Signal(8 * max_off)        # octets waiting for the next output beat
        flush_count = Signal(range(W + 1))

        header_beats = Mux(is_rdma, rdma_beats, ls_beats)

        o = self.o.payload
        advance = ~self.o.valid | self.o.ready
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += self.o.valid.eq(0)

        def emit(data, keep, first, last):
            m.d.sync += [
                self.o.valid.eq(1),
                o.data.eq(data), o.keep.eq(keep), o.first.eq(first), o.last.eq(last),
            ]

        # The payload step, shared by every state that consumes a payload beat: the octets in
        # `carry` (or the header itself, when a frame starts with payload) followed by the
        # lower lanes of the payload beat; the upper lanes become the next carry.
        idle = Signal()
        frame_rdma = Mux(idle, header_rdma, is_rdma)
        carry_now = Mux(idle, lanes[:8 * max_off], carry)
        beat = self.i.payload
        n = Signal(range(W + 1))
        off = Signal(range(max_off + 1))
        joined = Signal(8 * W)
        rest = Signal(8 * max_off)
        spill = Signal()
        done = Signal()
        m.d.comb += [
            n.eq(keep_count(beat.keep, W)),
            off.eq(Mux(frame_rdma, rdma_off, ls_off)),
            joined.eq(Mux(frame_rdma,
                          Cat(carry_now[:8 * rdma_off], beat.data[:8 * (W - rdma_off)]),
                          Cat(carry_now[:8 * ls_off], beat.data[:8 * (W - ls_off)]))),
            rest.eq(Mux(frame_rdma, beat.data[8 * (W - rdma_off):],
                        beat.data[8 * (W - ls_off):])),
            spill.eq(beat.last & (n + off > W)),   # the tail needs one more beat
            done.eq(beat.last & ~spill),
        ]

        def join(first):
            m.d.comb += self.i.ready.eq(1)
            m.d.sync += carry.eq(rest)
            emit(joined, Mux(done, count_to_keep(n + off, W), (1 << W) - 1), first, done)
            with m.If(spill):
                m.d.sync += flush_count.eq(n + off - W)
                m.next = "FLUSH"
            with m.Elif(done):
                m.next = "IDLE"

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += idle.eq(1)
                starts_with_payload = Mux(header_rdma, rdma_beats == 0, ls_beats == 0)
                with m.If(advance & self.header.valid):
                    m.d.sync += [held.eq(lanes), is_rdma.eq(header_rdma)]
                    with m.If(starts_with_payload):
                        # The header ends in the first beat: it needs the first payload beat.
                        with m.If(self.i.valid):
                            m.d.comb += self.header.ready.eq(1)
                            frames.increment(m, 1)
                            m.next = "BODY"
                            join(first=1)
                    with m.Else():
                        m.d.comb += self.header.ready.eq(1)
                        frames.increment(m, 1)
                        emit(lanes[:8 * W], (1 << W) - 1, first=1, last=0)
                        m.d.sync += [
                            next_header_beat.eq(1),
                            carry.eq(Mux(header_rdma,
                                         lanes[8 * W * rdma_beats:],
                                         lanes[8 * W * ls_beats:])),
                        ]
                        m.next = "HEADER"
            with m.State("HEADER"):
                # Beats made of header octets only (8 octets per beat; RDMA at 16).
                with m.If(next_header_beat == header_beats):
                    m.next = "BODY"
                    with m.If(advance & self.i.valid):
                        join(first=0)
                with m.Elif(advance):
                    for index in range(1, max(rdma_beats, 1)):
                        with m.If(next_header_beat == index):
                            emit(held[8 * W * index:8 * W * (index + 1)], (1 << W) - 1, 0, 0)
                    m.d.sync += next_header_beat.eq(next_header_beat + 1)
            with m.State("BODY"):
                with m.If(advance & self.i.valid):
                    join(first=0)
            with m.State("FLUSH"):
                with m.If(advance):
                    emit(carry, count_to_keep(flush_count, W), first=0, last=1)
                    m.next = "IDLE"
        return m
