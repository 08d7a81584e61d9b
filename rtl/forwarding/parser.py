"""OEFH + TH parser: a frame stream in, header fields and a payload stream out.

Ref: spec §4 (frame format), §4.1 (OEFH), §4.2 (TH), §11 (malformed frames are dropped and
counted).
"""

from amaranth.hdl import Module, Signal, Mux, Cat, C
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..counters import CounterBank, Counters
from ..params import parameters
from ..queue import DualPushQueue, TwoEntryFifo
from ..stream import (PacketLayout, PacketStream, VerdictPacketLayout, VerdictPacketStream,
                      BEAT_OCTETS, keep_count, count_to_keep)
from ..wire import (OEFH, LS_TH, RDMA_TH, HEADER_OCTETS, HeaderLayout, Opcode, LsSize,
                    OEFH_VERSION, lanes_to_value)

__all__ = ["OefhParser", "header_geometry"]


def header_geometry(header_octets, beat_octets):
    """``(beat, offset)``: index of the beat that completes a header of ``header_octets``
    octets, and the lane of the first payload octet within that beat. EthLink headers (14 and
    22 octets) never end on a beat boundary of 8…64 octets, so ``offset`` is never 0."""
    beat, offset = divmod(header_octets, beat_octets)
    assert offset != 0
    return beat, offset


LS_HEADER_OCTETS = OEFH.octets + LS_TH.octets


@parameters(beat_octets=BEAT_OCTETS)
class OefhParser(wiring.Component):
    """Split EthLink frames into header fields and payload.

    The frame stream ``i`` carries OEFH + TH + payload (the MAC has removed the FCS). For every
    well-formed frame the parser gives one transfer on ``header`` (OEFH and TH fields, see
    :class:`~ethlink.rtl.wire.HeaderLayout`) and one packet on ``o`` (the payload realigned to
    lane 0; an empty packet — one beat, ``keep = 0`` — when the frame has no payload).

    Malformed frames are consumed whole, give nothing on ``header`` and ``o``, and are counted
    once each, by the first of these that applies:

    1. ``short``: the frame ends before octet 6 (which holds the opcode);
    2. ``bad_version``: OEFH ver ≠ 1;
    3. ``bad_opcode``: TH opcode not one of spec §4.2;
    4. ``bad_size``: L/S size field = 3 (reserved);
    5. ``short``: the frame ends before its TH does.

    The version, opcode and size are all in the first beat (octets 0…6), so a bad frame never
    produces output; only ``short`` needs the frame's end. A dropped frame never disturbs the
    next one, and the parser restarts at every beat flagged ``first``.

    What the parser does not check, by design: that the payload length agrees with the TH
    (``size``, ``length``) — the NIC's transaction layer checks that against the operation —
    and the maximum frame length, which the MAC enforces before the parser sees a frame.

    With ``verdict`` the frames on ``i`` are passed on before they are judged
    (:class:`~ethlink.rtl.stream.VerdictPacketLayout`, cut-through): the verdict of a frame's
    last beat goes on its payload's last beat on ``o``, whose consumer undoes what it began
    for a bad frame. A bad frame that ends before its TH does gives nothing and is not
    counted ``short``.

    Members
    -------
    i : In(PacketStream(beat_octets))
        Frames (``VerdictPacketStream(beat_octets)`` with ``verdict``, and so is ``o``).
    header : Out(stream.Signature(HeaderLayout()))
        One transfer per good frame.
    o : Out(PacketStream(beat_octets))
        One payload packet per good frame, in the order of ``header``.
    count : Out(Counters)
        ``frames``, ``short``, ``bad_version``, ``bad_opcode``, ``bad_size``: saturating
        event counters.

    Latency: ``header`` is valid 1 cycle after the transfer of the beat that completes the TH
    (L/S: beat 1 at 8 octets per beat, beat 0 at 16 and wider; RDMA: beat 2 at 8, beat 1 at
    16, beat 0 at 32 and 64). A payload
    beat is valid 1 cycle after the input beat that completes it (it needs the first lanes of
    the following input beat, so the first payload beat follows the TH-completing beat by
    2 cycles unless the frame ends there).

    Throughput: one input beat per cycle, back-to-back frames without a bubble, as long as the
    consumers take ``header`` and ``o`` at the rate they are produced. ``i.ready`` depends only
    on registers (the fill levels of the output queues).

    Structure: one ``elaborate`` in three sections (beat-0 decode and drop counting, header
    assembly, payload realignment) rather than three components, because all three read the
    same per-frame state in the same cycle (beat index, L/S or RDMA, dropping, the header's
    offset); as components they would each carry a copy of that decode or a wide interface of
    it, for no change in the logic.
    """
    COUNTERS = ("frames", "short", "bad_version", "bad_opcode", "bad_size")

    def __init__(self, beat_octets=8, verdict=False):
        self.beat_octets = beat_octets
        self.verdict = verdict
        beats = VerdictPacketStream if verdict else PacketStream
        super().__init__({
            "i": In(beats(beat_octets)),
            "header": Out(stream.Signature(HeaderLayout())),
            "o": Out(beats(beat_octets)),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        beat_layout = VerdictPacketLayout(W) if self.verdict else PacketLayout(W)
        ls_beat, ls_off = header_geometry(LS_HEADER_OCTETS, W)
        rdma_beat, rdma_off = header_geometry(HEADER_OCTETS, W)

        m.submodules.payload_q = payload_q = DualPushQueue(beat_layout, depth=4)
        # The header's consumers (the engines' window checks) start from a register.
        m.submodules.header_q = header_q = TwoEntryFifo(HeaderLayout())
        wiring.connect(m, wiring.flipped(self.o), payload_q.o)
        wiring.connect(m, header_q.r_stream, wiring.flipped(self.header))

        counters = CounterBank(m, self.count)

        beat = self.i.payload
        data = beat.data
        count = Signal(range(W + 1))
        m.d.comb += count.eq(keep_count(beat.keep, W))
        take = self.i.valid & self.i.ready
        # Only registered levels: no combinational path from the consumers' ready.
        m.d.comb += self.i.ready.eq(payload_q.room2 & (header_q.level < 2))

        def octet(n):
            return data[8 * n:8 * n + 8]

        # --- per-frame state, decoded from beat 0 and kept for the rest of the frame --------
        last_index = rdma_beat + 2             # "past the first payload beat": saturate here
        index = Signal(range(last_index + 1))  # beat index within the frame
        is_rdma_r = Signal()
        dropping_r = Signal()
        index_now = Mux(beat.first, 0, index)

        # Ref: spec §4.1, §4.2 — version in octet 0, opcode and size in octet 6.
        oefh0 = OEFH.layout(lanes_to_value(data[:8 * OEFH.octets], OEFH.octets))
        th0 = LS_TH.layout(Cat(C(0, LS_TH.bits - 8), octet(OEFH.octets)))
        opcode0 = th0.opcode
        valid_opcode = Signal()
        with m.Switch(opcode0):
            with m.Case(*Opcode):
                m.d.comb += valid_opcode.eq(1)
        rdma0 = opcode0[3]   # opcodes 8…11 are RDMA (spec §4.2)
        bad_version0 = oefh0.ver != OEFH_VERSION
        bad_size0 = ~rdma0 & (th0.size == LsSize.RESERVED)
        too_short0 = beat.last & (count < OEFH.octets + 1)
        content_error0 = ~too_short0 & (bad_version0 | ~valid_opcode | bad_size0)

        is_rdma = Mux(beat.first, rdma0, is_rdma_r)
        dropping = Mux(beat.first, content_error0, dropping_r)
        done_beat = Mux(is_rdma, rdma_beat, ls_beat)
        offset = Mux(is_rdma, rdma_off, ls_off)
        at_header = index_now == done_beat
        # (At 32 octets per beat and wider every header ends in beat 0.)
        before_header = (index_now < done_beat) if rdma_beat > 0 else C(0)
        short = beat.last & (before_header | (at_header & (count < offset)))

        with m.If(take):
            m.d.sync += [
                index.eq(Mux(index_now == last_index, index_now, index_now + 1)),
                is_rdma_r.eq(is_rdma),
                dropping_r.eq(dropping & ~beat.last),
            ]
            with m.If(beat.last):
                m.d.sync += index.eq(0)

        with m.If(take & beat.first):
            counters["bad_version"].increment(m, ~too_short0 & bad_version0)
            counters["bad_opcode"].increment(m, ~too_short0 & ~bad_version0 & ~valid_opcode)
            counters["bad_size"].increment(m, ~too_short0 & ~bad_version0 & valid_opcode
                                           & bad_size0)
        good = take & ~dropping
        bad = beat.last & beat.user.error if self.verdict else C(0)
        counters["short"].increment(m, good & short & ~bad)

        # --- header assembly ----------------------------------------------------------------
        # Beats before the TH-completing one are kept; the header is read from them and from
        # the completing beat itself, so it is pushed in the same cycle that beat arrives.
        if rdma_beat > 0:
            held = Signal(8 * W * rdma_beat)
            with m.If(take & (index_now < rdma_beat)):
                for n in range(rdma_beat):
                    with m.If(index_now == n):
                        m.d.sync += held[8 * W * n:8 * W * (n + 1)].eq(data)
        else:
            held = C(0, 0)
        ls_lanes = Cat(held[:8 * W * ls_beat], data)
        rdma_lanes = Cat(held[:8 * W * rdma_beat], data)
        ls_value = Cat(C(0, 8 * RDMA_TH.octets - 8 * LS_TH.octets),
                       lanes_to_value(ls_lanes[:8 * LS_HEADER_OCTETS], LS_HEADER_OCTETS))
        rdma_value = lanes_to_value(rdma_lanes[:8 * HEADER_OCTETS], HEADER_OCTETS)
        push_header = good & at_header & ~short
        # Never refused: ``i.ready`` holds the input while the queue has fewer than 2 headers.
        m.d.comb += [
            header_q.w_stream.valid.eq(push_header),
            header_q.w_stream.payload.eq(Mux(is_rdma, rdma_value, ls_value)),
        ]
        counters["frames"].increment(m, push_header)

        # --- payload realignment ------------------------------------------------------------
        # Output beat k holds frame octets [H + kW, H + (k+1)W): the upper W - offset lanes of
        # one input beat (kept in `pending`) followed by the lower `offset` lanes of the next.
        pending = Signal(8 * W)
        pending_ls = data >> (8 * ls_off)
        pending_rdma = data >> (8 * rdma_off)
        joined_ls = Cat(pending[:8 * (W - ls_off)], data[:8 * ls_off])
        joined_rdma = Cat(pending[:8 * (W - rdma_off)], data[:8 * rdma_off])
        shifted = Mux(is_rdma, pending_rdma, pending_ls)
        joined = Mux(is_rdma, joined_rdma, joined_ls)

        out0 = beat_layout(Signal(beat_layout.size))
        out1 = beat_layout(Signal(beat_layout.size))
        m.d.comb += [
            payload_q.data0.eq(out0),
            payload_q.data1.eq(out1),
            out1.data.eq(shifted),
            out1.keep.eq(count_to_keep(count - offset, W)),
            out1.last.eq(1),
        ]
        if self.verdict:
            m.d.comb += [out0.user.error.eq(bad & out0.last), out1.user.error.eq(bad)]
        with m.If(good & ~short):
            with m.If(at_header):
                m.d.sync += pending.eq(shifted)
                with m.If(beat.last):
                    # The whole payload is in this beat (or there is none): one beat.
                    m.d.comb += [
                        out0.data.eq(shifted),
                        out0.keep.eq(count_to_keep(count - offset, W)),
                        out0.first.eq(1),
                        out0.last.eq(1),
                        payload_q.push0.eq(1),
                    ]
            with m.Elif(index_now > done_beat):
                m.d.sync += pending.eq(shifted)
                spill = beat.last & (count > offset)   # the tail needs a second beat
                m.d.comb += [
                    out0.data.eq(joined),
                    out0.keep.eq(Mux(beat.last & ~spill,
                                     count_to_keep(count + (W - offset), W),
                                     (1 << W) - 1)),
                    out0.first.eq(index_now == done_beat + 1),
                    out0.last.eq(beat.last & ~spill),
                    payload_q.push0.eq(1),
                    payload_q.push1.eq(spill),
                ]
        return m
