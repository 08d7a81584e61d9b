"""The FEC across a noisy line: encoder → link channel → decoder.

Used by ``ethlink bench fec`` (post-FEC codeword error rate against the raw bit error rate) and
by the tests; it is also what one direction of an FEC-protected link looks like on an FPGA
with the channel model in the line.
"""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...compose import forward
from ...counters import Counters
from ...params import parameters
from ..channel import LinkChannel, DELAY, channel_controls
from .decoder import Rs272Decoder, DECODER_SYMBOLS
from .encoder import Rs272Encoder
from .gf import SYMBOL_BITS
from .symbols import SymbolLayout, DecodedLayout

__all__ = ["FecChannelLoop", "connect_line"]

_DECODER_COUNTERS = ("corrected_symbols", "corrected_codewords", "uncorrectable_codewords")
_CHANNEL_COUNTERS = ("flipped_bits", "errored_beats", "overruns")


def connect_line(m, outer, channel, source, sink, delay):
    """Send line stream ``source`` through ``channel`` (fixed ``delay``) to ``sink``, and
    forward ``outer``'s channel controls to it. The channel never back-pressures: a beat
    ``sink`` cannot take is lost and counted by the channel as an overrun."""
    m.d.comb += [
        channel.i.valid.eq(source.valid),
        channel.i.payload.eq(source.payload),
        source.ready.eq(channel.i.ready),
        sink.valid.eq(channel.o.valid),
        sink.payload.eq(channel.o.payload),
        channel.o.ready.eq(sink.ready),
        channel.delay.eq(delay),
    ]
    forward(m, outer, channel, channel_controls())


@parameters(symbols_per_beat=DECODER_SYMBOLS, delay=DELAY)
class FecChannelLoop(wiring.Component):
    """Messages in, encoded, sent over a :class:`~ethlink.rtl.phy.channel.LinkChannel` of
    ``delay`` cycles, decoded, messages out with the decoder's verdict.

    Members
    -------
    i : In(stream.Signature(SymbolLayout(P)))
        258-symbol messages.
    o : Out(stream.Signature(DecodedLayout(P)))
        Decoded messages (``user``: uncorrectable, corrected).
    error_threshold, burst_length, burst, link_up, seed, reseed : In
        The channel's controls (:func:`~ethlink.rtl.phy.channel.channel_controls`).
    count : Out(Counters)
        The decoder's corrected symbols, corrected and uncorrectable codewords; the channel's
        flipped bits, errored beats and overruns (beats the decoder could not take).

    Latency: encoder (1) + ``delay`` + decoder (``ceil(272/P) + N``) cycles, first symbol in →
    first symbol out. Throughput: one message every ``ceil(272/P)`` cycles.
    """
    def __init__(self, symbols_per_beat=8, delay=4):
        self.symbols_per_beat = symbols_per_beat
        self.delay = delay
        super().__init__({
            "i": In(stream.Signature(SymbolLayout(symbols_per_beat))),
            "o": Out(stream.Signature(DecodedLayout(symbols_per_beat))),
            **channel_controls(),
            "count": Out(Counters(_DECODER_COUNTERS + _CHANNEL_COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        P = self.symbols_per_beat
        m.submodules.encoder = encoder = Rs272Encoder(P)
        m.submodules.channel = channel = LinkChannel(width=SYMBOL_BITS * P, max_delay=self.delay)
        m.submodules.decoder = decoder = Rs272Decoder(P)

        wiring.connect(m, wiring.flipped(self.i), encoder.i)
        connect_line(m, self, channel, encoder.o, decoder.i, self.delay)
        wiring.connect(m, decoder.o, wiring.flipped(self.o))
        forward(m, self.count, decoder.count, Counters(_DECODER_COUNTERS))
        forward(m, self.count, channel.count, Counters(_CHANNEL_COUNTERS))
        return m
