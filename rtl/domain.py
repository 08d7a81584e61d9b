"""The simulated EthLink domain that ``ethlink demo`` runs.

It holds every datapath block that exists, joined the way a NIC→switch→NIC path joins them.
Today that is the forwarding layer alone: a deparser builds frames, a parser takes them apart.
The link layer, the FEC and the switch go between the two as they land.
"""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .forwarding import OefhDeparser, OefhParser
from .stream import PacketStream, check_beat_octets, COUNTER_WIDTH
from .wire import HeaderLayout

__all__ = ["ForwardingLoopback"]


class ForwardingLoopback(wiring.Component):
    """Deparser → parser, with a tap on the frame stream between them.

    Members
    -------
    header_in, i : In
        Header and payload of frames to send (as :class:`OefhDeparser`).
    header_out, o : Out
        Header and payload of frames received (as :class:`OefhParser`).
    tap_valid, tap_ready, tap_first, tap_last : Out(1)
        Handshake of the frame stream between the blocks, so that a bench can time each block.
    count_* : Out(32)
        The parser's counters, and ``count_frames_sent`` from the deparser.

    Latency: the deparser's plus the parser's (see their docstrings); nothing in between.
    """
    def __init__(self, beat_octets=8):
        self.beat_octets = check_beat_octets(beat_octets)
        super().__init__({
            "header_in": In(stream.Signature(HeaderLayout())),
            "i": In(PacketStream(beat_octets)),
            "header_out": Out(stream.Signature(HeaderLayout())),
            "o": Out(PacketStream(beat_octets)),
            "tap_valid": Out(1), "tap_ready": Out(1), "tap_first": Out(1), "tap_last": Out(1),
            "count_frames_sent": Out(COUNTER_WIDTH),
            **{f"count_{name}": Out(COUNTER_WIDTH) for name in OefhParser.COUNTERS},
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
            self.tap_valid.eq(deparser.o.valid),
            self.tap_ready.eq(deparser.o.ready),
            self.tap_first.eq(deparser.o.payload.first),
            self.tap_last.eq(deparser.o.payload.last),
            self.count_frames_sent.eq(deparser.count_frames),
        ]
        for name in OefhParser.COUNTERS:
            m.d.comb += getattr(self, f"count_{name}").eq(getattr(parser, f"count_{name}"))
        return m
