"""Loopbacks: blocks joined back to back, for simulation only.

* :class:`ForwardingLoopback`: a deparser builds frames, a parser takes them apart (the
  forwarding part of ``ethlink demo``);
* :class:`LsLoopback`, :class:`RdmaLoopback`: a NIC's requester and another's target over a
  frame path that can lose requests.
"""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..compose import forward
from ..counters import CounterBank, Counters
from ..forwarding import OefhDeparser, OefhParser
from ..nic.axi import ADDR_WIDTH
from ..nic.engine import CONTEXTS, MESSAGES, MTU, TAGS, TIMEOUT_CYCLES
from ..nic.ls_requester import LsRequester
from ..nic.ls_responder import LsTarget
from ..nic.rdma_requester import RdmaRequester
from ..nic.rdma_target import RdmaTarget
from ..nic.windows import WINDOWS
from ..params import parameters
from ..stream import PacketStream, BEAT_OCTETS, connect_packets, packet_fields
from ..wire import ENDPOINT_BITS, HeaderLayout, OEFH, lanes_to_value

__all__ = ["ForwardingLoopback", "EngineLoopback", "LsLoopback", "RdmaLoopback"]

#: What a bench watches of a packet stream between two blocks.
TapSignature = wiring.Signature({"valid": Out(1), "ready": Out(1), "first": Out(1),
                                 "last": Out(1)})


@parameters(beat_octets=BEAT_OCTETS)
class ForwardingLoopback(wiring.Component):
    """Deparser → parser, with a tap on the frame stream between them.

    Members
    -------
    header_in, i : In
        Header and payload of frames to send (as :class:`OefhDeparser`).
    header_out, o : Out
        Header and payload of frames received (as :class:`OefhParser`).
    tap : Out(TapSignature)
        Handshake of the frame stream between the blocks, so that a bench can time each block.
    count : Out(Counters)
        The parser's counters, and ``frames_sent`` from the deparser.

    Latency: the deparser's plus the parser's (see their docstrings); nothing in between.
    """
    def __init__(self, beat_octets=8):
        self.beat_octets = beat_octets
        super().__init__({
            "header_in": In(stream.Signature(HeaderLayout())),
            "i": In(PacketStream(beat_octets)),
            "header_out": Out(stream.Signature(HeaderLayout())),
            "o": Out(PacketStream(beat_octets)),
            "tap": Out(TapSignature),
            "count": Out(Counters(OefhParser.COUNTERS + ("frames_sent",))),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.deparser = deparser = OefhDeparser(self.beat_octets)
        m.submodules.parser = parser = OefhParser(self.beat_octets)
        wiring.connect(m, wiring.flipped(self.header_in), deparser.header)
        wiring.connect(m, wiring.flipped(self.i), deparser.i)
        wiring.connect(m, deparser.o, parser.i)
        wiring.connect(m, parser.header, wiring.flipped(self.header_out))
        wiring.connect(m, parser.o, wiring.flipped(self.o))
        m.d.comb += [
            self.tap.valid.eq(deparser.o.valid),
            self.tap.ready.eq(deparser.o.ready),
            self.tap.first.eq(deparser.o.payload.first),
            self.tap.last.eq(deparser.o.payload.last),
            self.count.frames_sent.eq(deparser.count.frames),
        ]
        forward(m, self.count, parser.count)
        return m


class EngineLoopback(wiring.Component):
    """``requester`` → (drop) → ``target`` → ``requester``: one NIC's requester talks to
    another's target over a frame path that can lose requests (the bench and test tops of the
    L/S and RDMA engines; spec §4.2, §11).

    Request frames whose OEFH dst equals ``drop_dst`` are discarded on the way, as a lost
    frame would be (``count.dropped``): their operations must complete with TIMEOUT. ``tap_req``
    and ``tap_rsp`` show the request and response frame streams for latency measurement. The
    requester's ``fail`` input is left idle (nothing is unroutable here).

    Members
    -------
    the requester's ``gpu_members`` (requests, completions, ``local_id``, ``outstanding``)
    count : Out(Counters)
        The requester's counters and ``dropped``.
    m_axi, csr, target_count
        The target's AXI4 port, register bus and counters.
    drop_dst : In(12)
    tap_req, tap_rsp : Out(TapSignature)
    """
    def __init__(self, requester, target):
        self._requester = requester
        self._target = target
        self._gpu = requester.gpu_members
        members = target.signature.members
        super().__init__({
            **self._gpu,
            "count": Out(Counters(requester.COUNTERS + ("dropped",))),
            "m_axi": members["m_axi"], "csr": members["csr"],
            "target_count": members["count"],
            "drop_dst": In(ENDPOINT_BITS),
            "tap_req": Out(TapSignature), "tap_rsp": Out(TapSignature),
            **self._extra_members(),
        })

    def _extra_members(self):
        return {}

    def elaborate(self, platform):
        m = Module()
        m.submodules.requester = req = self._requester
        m.submodules.target = tgt = self._target
        forward(m, self, req, self._gpu)
        forward(m, self.count, req.count)
        wiring.connect(m, wiring.flipped(self.m_axi), tgt.m_axi)
        wiring.connect(m, wiring.flipped(self.csr), tgt.csr)
        wiring.connect(m, tgt.count, wiring.flipped(self.target_count))
        m.d.comb += req.fail.valid.eq(0)

        # The lossy request path: a frame is dropped whole, decided on its first beat.
        beat = req.o.payload
        dropping = Signal()
        drop_now = Signal()
        dst = OEFH.layout(lanes_to_value(beat.data[:8 * OEFH.octets], OEFH.octets)).dst
        m.d.comb += drop_now.eq(Mux(beat.first, dst == self.drop_dst, dropping))
        m.d.comb += [
            *packet_fields(tgt.i.payload, beat),
            tgt.i.valid.eq(req.o.valid & ~drop_now),
            req.o.ready.eq(tgt.i.ready | drop_now),
        ]
        with m.If(req.o.valid & req.o.ready):
            m.d.sync += dropping.eq(drop_now & ~beat.last)
        dropped = CounterBank(m, self.count, skip=req.COUNTERS).dropped
        dropped.increment(m, req.o.valid & req.o.ready & beat.first & drop_now)
        connect_packets(m, tgt.o, req.i)   # responses judged before they come: no verdict
        for tap, port in ((self.tap_req, req.o), (self.tap_rsp, tgt.o)):
            m.d.comb += [tap.valid.eq(port.valid), tap.ready.eq(port.ready),
                         tap.first.eq(port.payload.first), tap.last.eq(port.payload.last)]
        return m


@parameters(beat_octets=BEAT_OCTETS, tags=TAGS, timeout_cycles=TIMEOUT_CYCLES,
            windows=WINDOWS, addr_width=ADDR_WIDTH)
class LsLoopback(EngineLoopback):
    """:class:`LsRequester` → (drop) → :class:`LsTarget` → :class:`LsRequester`."""
    def __init__(self, beat_octets=8, tags=256, timeout_cycles=4096, windows=8,
                 addr_width=32):
        super().__init__(LsRequester(beat_octets, tags, timeout_cycles),
                         LsTarget(beat_octets, windows, addr_width))


@parameters(beat_octets=BEAT_OCTETS, messages=MESSAGES, mtu=MTU,
            timeout_cycles=TIMEOUT_CYCLES, windows=WINDOWS, addr_width=ADDR_WIDTH,
            contexts=CONTEXTS)
class RdmaLoopback(EngineLoopback):
    """:class:`RdmaRequester` → (drop) → :class:`RdmaTarget` → :class:`RdmaRequester`; the
    requester's own AXI4 port (its local memory) is ``m_axi_dma``, the target's (the remote
    memory) ``m_axi``."""
    def __init__(self, beat_octets=8, messages=16, mtu=1024, timeout_cycles=4096, windows=8,
                 addr_width=32, contexts=8):
        super().__init__(RdmaRequester(beat_octets, messages, mtu, timeout_cycles, addr_width),
                         RdmaTarget(beat_octets, windows, addr_width, mtu, contexts,
                                    timeout_cycles))

    def _extra_members(self):
        return {"m_axi_dma": self._requester.signature.members["m_axi"]}

    def elaborate(self, platform):
        m = super().elaborate(platform)
        wiring.connect(m, wiring.flipped(self.m_axi_dma), self._requester.m_axi)
        return m
