"""Packets to and from memory over one half of an AXI4 manager port: the data movers of the
RDMA engines.

:class:`AxiReader` reads ``octets`` from a byte address and gives them as one packet;
:class:`AxiWriter` writes one packet to a byte address. Both split a packet into INCR bursts
that never cross a 4 KiB boundary (AXI4's rule) and hold at most one burst outstanding, so
the memory answers in order and a single ID (0) is enough.

Addresses are multiples of ``beat_octets``: the RDMA engines refuse anything else before
they get here. A packet's last beat may be partial (``keep``/``wstrb`` a run of ones from
lane 0).
"""

from amaranth.hdl import Module, Signal, C, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..stream import PacketStream, BEAT_OCTETS, count_to_keep, keep_count
from ..wire import RDMA_TH
from .axi import Axi4Signature, ADDR_WIDTH, BURST_INCR, RESP_OKAY

__all__ = ["AxiReader", "AxiWriter", "PacketSender", "MAX_PACKET_OCTETS", "PAGE_OCTETS"]

#: The longest packet a mover takes: the largest RDMA MTU (spec §3).
MAX_PACKET_OCTETS = 2048
#: AXI4 bursts must not cross a 4 KiB boundary.
PAGE_OCTETS = 4096
#: AXI4 INCR bursts are at most 256 beats.
MAX_BURST_BEATS = 256
#: Width of a message's length and offsets (the RDMA TH's ``length``).
LENGTH_BITS = dict(RDMA_TH.fields)["length"]


class MoveLayout(data.StructLayout):
    """One move: ``addr`` (a byte address, a multiple of the beat), ``octets`` (1 to
    :data:`MAX_PACKET_OCTETS`), and for a writer ``write`` (0: consume the packet, touch no
    memory)."""
    def __init__(self, addr_width, write=False):
        super().__init__({"addr": addr_width, "octets": range(MAX_PACKET_OCTETS + 1),
                          **({"write": 1} if write else {})})


class _Bursts:
    """The burst bookkeeping both movers share: beats left in the move, beats left in the
    current burst, the burst's length field."""
    def __init__(self, m, beat_octets, addr):
        self.beat_bits = (beat_octets - 1).bit_length()
        self.beats = Signal(range(MAX_PACKET_OCTETS // beat_octets + 1))
        self.in_burst = Signal(range(MAX_BURST_BEATS + 1))
        self.length = Signal(range(MAX_BURST_BEATS + 1))
        to_page = Signal(range(PAGE_OCTETS // beat_octets + 1))
        m.d.comb += to_page.eq((PAGE_OCTETS - addr[:12]) >> self.beat_bits)
        shortest = Mux(self.beats < to_page, self.beats, to_page)
        m.d.comb += self.length.eq(Mux(shortest < MAX_BURST_BEATS, shortest, MAX_BURST_BEATS))

    def tail(self, octets):
        """Octets of a move of ``octets`` in its last beat (1 to the beat)."""
        return octets - ((octets - 1) >> self.beat_bits << self.beat_bits)

    def start(self, m, octets):
        m.d.sync += self.beats.eq((octets + (1 << self.beat_bits) - 1) >> self.beat_bits)

    def fields(self):
        """AxLEN, AxSIZE, AxBURST of the next burst."""
        return (self.length - 1)[:8], C(self.beat_bits, 3), C(BURST_INCR, 2)

    def issue(self, m, addr, valid, ready, data_state):
        """In the address state: offer the burst (``valid``); once ``ready``, count its beats,
        move ``addr`` past it and go to ``data_state``."""
        m.d.comb += valid.eq(1)
        with m.If(ready):
            m.d.sync += [self.in_burst.eq(self.length),
                         addr.eq(addr + (self.length << self.beat_bits))]
            m.next = data_state


class AxiReader(wiring.Component):
    """Read one packet per ``cmd`` from memory.

    ``o`` gives ``ceil(octets / beat_octets)`` beats, ``first`` on the first and ``last`` on
    the last, whose ``keep`` covers the octets left. ``error`` pulses with every beat whose
    RRESP is not OKAY (its data is passed on regardless: the engine above reports it).

    Latency: AR valid the cycle after the ``cmd`` transfer; read data goes from R to ``o``
    combinationally (``rready`` is ``o.ready``).

    Throughput: one beat per cycle inside a burst; between bursts (every 4 KiB, every 256
    beats, every packet) the round trip AR → first R.
    """
    def __init__(self, beat_octets=8, addr_width=32):
        self.beat_octets = BEAT_OCTETS.validate("beat_octets", beat_octets)
        self.addr_width = ADDR_WIDTH.validate("addr_width", addr_width)
        super().__init__({
            "cmd": In(stream.Signature(MoveLayout(addr_width))),
            "o": Out(PacketStream(beat_octets)),
            "error": Out(1),
            "m_axi": Out(Axi4Signature(addr_width, beat_octets, write=False)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        axi = self.m_axi
        addr = Signal(self.addr_width)
        tail = Signal(range(W + 1))          # octets in the last beat
        first = Signal()
        bursts = _Bursts(m, W, addr)
        arlen, arsize, arburst = bursts.fields()
        m.d.comb += [axi.araddr.eq(addr), axi.arlen.eq(arlen), axi.arsize.eq(arsize),
                     axi.arburst.eq(arburst), axi.arid.eq(0)]
        last = bursts.beats == 1
        m.d.comb += [
            self.o.payload.data.eq(axi.rdata),
            self.o.payload.keep.eq(Mux(last, count_to_keep(tail, W), C(-1, W))),
            self.o.payload.first.eq(first),
            self.o.payload.last.eq(last),
        ]
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.cmd.ready.eq(1)
                with m.If(self.cmd.valid):
                    octets = self.cmd.payload.octets
                    m.d.sync += [addr.eq(self.cmd.payload.addr), first.eq(1),
                                 tail.eq(bursts.tail(octets))]
                    bursts.start(m, octets)
                    m.next = "AR"
            with m.State("AR"):
                bursts.issue(m, addr, axi.arvalid, axi.arready, "R")
            with m.State("R"):
                m.d.comb += [self.o.valid.eq(axi.rvalid),
                             axi.rready.eq(self.o.ready)]
                with m.If(axi.rvalid & self.o.ready):
                    m.d.comb += self.error.eq(axi.rresp != RESP_OKAY)
                    m.d.sync += [first.eq(0), bursts.beats.eq(bursts.beats - 1),
                                 bursts.in_burst.eq(bursts.in_burst - 1)]
                    with m.If(last):
                        m.next = "IDLE"
                    with m.Elif(bursts.in_burst == 1):
                        m.next = "AR"
        return m


class DoneLayout(data.StructLayout):
    """How a write went: ``exact`` (the packet had exactly ``octets`` octets) and ``ok``
    (every BRESP was OKAY)."""
    def __init__(self):
        super().__init__({"exact": 1, "ok": 1})


class AxiWriter(wiring.Component):
    """Write one packet per ``cmd`` to memory, and report on ``done``.

    The packet on ``i`` is written from ``cmd.addr`` (``wstrb`` = ``keep``). The burst lengths
    come from ``cmd.octets``, not from the packet: a packet that ends early is padded with
    beats of ``wstrb = 0`` (they write nothing), octets beyond ``octets`` are consumed and
    not written; either way ``done.exact`` is 0. With ``cmd.write = 0`` the packet is only
    consumed and measured. Memory outside ``[addr, addr + octets)`` is never written.

    Latency: AW valid the cycle after the ``cmd`` transfer; ``done`` valid the cycle after the
    last B (or after the packet's last beat when not writing).

    Throughput: one beat per cycle inside a burst; one burst at a time (W follows AW, the next
    AW waits for B).
    """
    def __init__(self, beat_octets=8, addr_width=32):
        self.beat_octets = BEAT_OCTETS.validate("beat_octets", beat_octets)
        self.addr_width = ADDR_WIDTH.validate("addr_width", addr_width)
        super().__init__({
            "cmd": In(stream.Signature(MoveLayout(addr_width, write=True))),
            "i": In(PacketStream(beat_octets)),
            "done": Out(stream.Signature(DoneLayout())),
            "m_axi": Out(Axi4Signature(addr_width, beat_octets, read=False)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        axi = self.m_axi
        addr = Signal(self.addr_width)
        octets = Signal(range(MAX_PACKET_OCTETS + 1))      # wanted
        seen = Signal(range(MAX_PACKET_OCTETS + W + 1))    # taken from the packet (saturating)
        in_packet = Signal()        # the packet's last beat has not been taken yet
        ok = Signal()
        bursts = _Bursts(m, W, addr)
        tail = Signal(range(W + 1))          # octets of the move in its last beat
        awlen, awsize, awburst = bursts.fields()
        m.d.comb += [axi.awaddr.eq(addr), axi.awlen.eq(awlen), axi.awsize.eq(awsize),
                     axi.awburst.eq(awburst), axi.awid.eq(0)]
        m.d.comb += [self.done.payload.ok.eq(ok),
                     self.done.payload.exact.eq(seen == octets)]
        take = self.i.valid & self.i.ready
        with m.If(take):
            m.d.sync += in_packet.eq(~self.i.payload.last)
            with m.If(seen <= MAX_PACKET_OCTETS):
                m.d.sync += seen.eq(seen + keep_count(self.i.payload.keep, W))

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.cmd.ready.eq(1)
                with m.If(self.cmd.valid):
                    wanted = self.cmd.payload.octets
                    m.d.sync += [addr.eq(self.cmd.payload.addr), octets.eq(wanted),
                                 seen.eq(0), in_packet.eq(1), ok.eq(1),
                                 tail.eq(bursts.tail(wanted))]
                    bursts.start(m, wanted)
                    with m.If(self.cmd.payload.write):
                        m.next = "AW"
                    with m.Else():
                        m.next = "DRAIN"
            with m.State("AW"):
                bursts.issue(m, addr, axi.awvalid, axi.awready, "W")
            with m.State("W"):
                # After the packet's last beat, padding beats (strobe 0) finish the burst; the
                # move's last beat writes no octet past ``octets``, whatever the packet holds.
                in_move = Mux(bursts.beats == 1, count_to_keep(tail, W), C(-1, W))
                m.d.comb += [
                    axi.wvalid.eq(self.i.valid | ~in_packet),
                    axi.wdata.eq(self.i.payload.data),
                    axi.wstrb.eq(Mux(in_packet, self.i.payload.keep & in_move, 0)),
                    axi.wlast.eq(bursts.in_burst == 1),
                    self.i.ready.eq(axi.wready & in_packet),
                ]
                with m.If(axi.wvalid & axi.wready):
                    m.d.sync += [bursts.beats.eq(bursts.beats - 1),
                                 bursts.in_burst.eq(bursts.in_burst - 1)]
                    with m.If(bursts.in_burst == 1):
                        m.next = "B"
            with m.State("B"):
                m.d.comb += axi.bready.eq(1)
                with m.If(axi.bvalid):
                    with m.If(axi.bresp != RESP_OKAY):
                        m.d.sync += ok.eq(0)
                    with m.If(bursts.beats != 0):
                        m.next = "AW"
                    with m.Else():
                        m.next = "DRAIN"
            with m.State("DRAIN"):
                # What is left of the packet (all of it when not writing) is consumed.
                m.d.comb += self.i.ready.eq(in_packet)
                with m.If(~in_packet | (take & self.i.payload.last)):
                    m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += self.done.valid.eq(1)
                with m.If(self.done.ready):
                    m.next = "IDLE"
        return m


class PacketSender:
    """The sending side both RDMA engines share, built into the module of its owner: frames
    to a deparser, one after another, either a message cut into packets of ``mtu`` octets
    (each a header offered while an :class:`AxiReader` fetches its payload) or a header
    with an empty payload (an ACK, a READ_REQ, a refusal).

    ``offset``, ``octets``, ``index`` and ``last`` describe the current packet of the
    message for the owner's header; :meth:`start` begins a message of ``length`` octets.
    The owner drives the header's payload, and the reader's command payload from ``offset``
    and ``octets``. Between frames no handshake is pending.
    """
    def __init__(self, m, mtu, deparser, reader):
        self._deparser, self._reader = deparser, reader
        self.offset = Signal(LENGTH_BITS)
        self.remaining = Signal(LENGTH_BITS)
        self.index = Signal(16)
        self.octets = Signal(range(MAX_PACKET_OCTETS + 1))
        m.d.comb += self.octets.eq(Mux(self.remaining > mtu, mtu, self.remaining))
        self.last = self.remaining <= mtu
        # Which of the packet's three transfers (header, reader command, last payload beat)
        # have happened; ``*_done`` include this cycle's.
        self._sent = [Signal(name=f"{name}_sent") for name in ("header", "read", "data")]
        header, read, data = self._sent
        self._header_done = header | deparser.header.ready
        self._read_done = read | reader.cmd.ready
        self._data_done = data | (deparser.i.valid & deparser.i.ready &
                                  deparser.i.payload.last)

    def start(self, m, length):
        m.d.sync += [self.offset.eq(0), self.remaining.eq(length), self.index.eq(0),
                     *(flag.eq(0) for flag in self._sent)]

    def segment(self, m):
        """In the owner's sending state: send the current packet; returns ``(sent, done)``:
        high in the cycle a packet is complete, and the message's last one."""
        header, read, data = self._sent
        wiring.connect(m, self._reader.o, self._deparser.i)
        m.d.comb += [self._deparser.header.valid.eq(~header),
                     self._reader.cmd.valid.eq(~read)]
        m.d.sync += [header.eq(self._header_done), read.eq(self._read_done),
                     data.eq(self._data_done)]
        sent = self._header_done & self._read_done & self._data_done
        with m.If(sent):
            m.d.sync += [self.offset.eq(self.offset + self.octets),
                         self.remaining.eq(self.remaining - self.octets),
                         self.index.eq(self.index + 1),
                         *(flag.eq(0) for flag in self._sent)]
        return sent, sent & self.last

    def empty(self, m):
        """In the owner's state: send the header and one empty payload beat; returns the
        signal high in the cycle both have gone."""
        header, _, data = self._sent
        m.d.comb += [self._deparser.header.valid.eq(~header),
                     self._deparser.i.valid.eq(~data),
                     self._deparser.i.payload.first.eq(1),
                     self._deparser.i.payload.last.eq(1)]
        m.d.sync += [header.eq(self._header_done), data.eq(self._data_done)]
        done = self._header_done & self._data_done
        with m.If(done):
            m.d.sync += [flag.eq(0) for flag in self._sent]
        return done
