"""The FEC sublayer of one link end (spec §6), and a link of two ends through the channel.

Ref: spec §6 — XGMII words ↔ 257-bit blocks ↔ RS(272,258) codewords; uncorrectable codewords
become ``/E/`` words; bypass per link; counters of corrected symbols, corrected and
uncorrectable codewords.
"""

from amaranth.hdl import Module, Cat, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...compose import forward
from ...counters import Counters
from ...params import IntRange, Param, parameters
from ...wire import XgmiiWordLayout
from ..channel import LinkChannel, DELAY, channel_controls
from .decoder import Rs272Decoder, MAX_SYMBOLS_PER_BEAT
from .encoder import Rs272Encoder
from .gf import SYMBOL_BITS
from .loop import connect_line
from .symbols import SymbolLayout
from .transcoder import XgmiiToSymbols, SymbolsToXgmii

__all__ = ["FecTransmitter", "FecReceiver", "FecSublayer", "FecLink", "LINE_SYMBOLS"]

_XGMII_BITS = 72        # 64 data + 8 control flags

#: A line beat must hold one XGMII word in bypass (10P ≥ 72) and the FEC must keep up with
#: one word per cycle (P ≥ 7): P = 8 … 16.
LINE_SYMBOLS = Param("10-bit symbols per line beat (P; a bypassed XGMII word is 72 bits)",
                     IntRange(8, MAX_SYMBOLS_PER_BEAT))
_TX_COUNTERS = ("tx_error_words",)
_RX_COUNTERS = ("corrected_symbols", "corrected_codewords", "uncorrectable_codewords",
                "rx_unknown_types", "rx_framing_errors")
#: The channel's counters a FEC link shows (not ``bursts``).
_CHANNEL_COUNTERS = ("flipped_bits", "errored_beats", "lost", "overruns")


@parameters(symbols_per_beat=LINE_SYMBOLS)
class FecTransmitter(wiring.Component):
    """TX half of the FEC sublayer: every 40 words on ``tx`` become one 258-symbol message
    (:class:`XgmiiToSymbols`) and one RS(272,258) codeword (:class:`Rs272Encoder`) of
    ``ceil(272/P)`` beats on ``line``, ``last`` on its final beat (the start-of-codeword flag
    of spec §6 is the beat after a ``last``). In bypass each word is one line beat of its own:
    ``data[63:0]`` the lanes, ``data[71:64]`` the control flags, the rest 0, ``last`` = 1.

    Latency: bypass 0 cycles; FEC: transcoder (6 cycles from a message's first word to its
    first beat) + encoder (1). Throughput: one word per cycle.
    """
    def __init__(self, symbols_per_beat=8):
        self.symbols_per_beat = symbols_per_beat
        super().__init__({
            "tx": In(stream.Signature(XgmiiWordLayout())),
            "line": Out(stream.Signature(SymbolLayout(symbols_per_beat))),
            "bypass": In(1),
            "count": Out(Counters(_TX_COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        P = self.symbols_per_beat
        m.submodules.transcoder = code = XgmiiToSymbols(P)
        m.submodules.encoder = encoder = Rs272Encoder(P)
        wiring.connect(m, code.o, encoder.i)
        bypass = self.bypass
        m.d.comb += [
            code.i.payload.eq(self.tx.payload),
            code.i.valid.eq(self.tx.valid & ~bypass),
            encoder.o.ready.eq(self.line.ready & ~bypass),
            self.tx.ready.eq(Mux(bypass, self.line.ready, code.i.ready)),
            self.line.valid.eq(Mux(bypass, self.tx.valid, encoder.o.valid)),
            self.line.payload.last.eq(Mux(bypass, 1, encoder.o.payload.last)),
            self.line.payload.data.eq(Mux(bypass, Cat(self.tx.payload.data, self.tx.payload.ctrl),
                                          encoder.o.payload.data)),
            self.count.tx_error_words.eq(code.count.error_words),
        ]
        return m


@parameters(symbols_per_beat=LINE_SYMBOLS)
class FecReceiver(wiring.Component):
    """RX half of the FEC sublayer: codewords on ``line`` are decoded (:class:`Rs272Decoder`)
    and turned back into 40 words each on ``rx`` (:class:`SymbolsToXgmii`); an uncorrectable
    codeword gives 40 ``/E/`` words, so the frames in it fail their checks and LLR replays
    them. In bypass each line beat is one word (the layout of :class:`FecTransmitter`).

    Latency: bypass 0 cycles; FEC: decoder (codeword fill + N) + transcoder (6 cycles from a
    message's first beat to its first word). Throughput: one word per cycle.
    """
    def __init__(self, symbols_per_beat=8):
        self.symbols_per_beat = symbols_per_beat
        super().__init__({
            "line": In(stream.Signature(SymbolLayout(symbols_per_beat))),
            "rx": Out(stream.Signature(XgmiiWordLayout())),
            "bypass": In(1),
            "count": Out(Counters(_RX_COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        P = self.symbols_per_beat
        m.submodules.decoder = decoder = Rs272Decoder(P)
        m.submodules.transcoder = code = SymbolsToXgmii(P)
        wiring.connect(m, decoder.o, code.i)
        bypass = self.bypass
        m.d.comb += [
            decoder.i.payload.eq(self.line.payload),
            decoder.i.valid.eq(self.line.valid & ~bypass),
            code.o.ready.eq(self.rx.ready & ~bypass),
            self.line.ready.eq(Mux(bypass, self.rx.ready, decoder.i.ready)),
            self.rx.valid.eq(Mux(bypass, self.line.valid, code.o.valid)),
            self.rx.payload.data.eq(Mux(bypass, self.line.payload.data[:64],
                                        code.o.payload.data)),
            self.rx.payload.ctrl.eq(Mux(bypass, self.line.payload.data[64:_XGMII_BITS],
                                        code.o.payload.ctrl)),
            self.count.corrected_symbols.eq(decoder.count.corrected_symbols),
            self.count.corrected_codewords.eq(decoder.count.corrected_codewords),
            self.count.uncorrectable_codewords.eq(decoder.count.uncorrectable_codewords),
            self.count.rx_unknown_types.eq(code.count.unknown_types),
            # Both frame by counting; a bad `last` at the decoder never reaches the
            # transcoder (the decoder emits whole messages), so the sum counts each once.
            self.count.rx_framing_errors.eq(decoder.count.framing_errors
                                            + code.count.framing_errors),
        ]
        return m


@parameters(symbols_per_beat=LINE_SYMBOLS)
class FecSublayer(wiring.Component):
    """One link end's FEC sublayer (spec §6): :class:`FecTransmitter` from ``tx`` to
    ``line_tx`` and :class:`FecReceiver` from ``line_rx`` to ``rx``, with one ``bypass``
    (configuration: change it only while the link is idle, at both ends alike).

    Counters (32-bit, saturating): corrected symbols, corrected codewords, uncorrectable
    codewords (spec §6); TX words sent as ERROR; RX words with unused type codes; RX framing
    errors.
    """
    def __init__(self, symbols_per_beat=8):
        self.symbols_per_beat = symbols_per_beat
        line = SymbolLayout(symbols_per_beat)
        super().__init__({
            "tx": In(stream.Signature(XgmiiWordLayout())),
            "line_tx": Out(stream.Signature(line)),
            "line_rx": In(stream.Signature(line)),
            "rx": Out(stream.Signature(XgmiiWordLayout())),
            "bypass": In(1),
            "count": Out(Counters(_TX_COUNTERS + _RX_COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.transmitter = transmitter = FecTransmitter(self.symbols_per_beat)
        m.submodules.receiver = receiver = FecReceiver(self.symbols_per_beat)
        wiring.connect(m, wiring.flipped(self.tx), transmitter.tx)
        wiring.connect(m, transmitter.line, wiring.flipped(self.line_tx))
        wiring.connect(m, wiring.flipped(self.line_rx), receiver.line)
        wiring.connect(m, receiver.rx, wiring.flipped(self.rx))
        m.d.comb += [transmitter.bypass.eq(self.bypass), receiver.bypass.eq(self.bypass)]
        forward(m, self.count, transmitter.count)
        forward(m, self.count, receiver.count)
        return m



@parameters(symbols_per_beat=LINE_SYMBOLS, delay=DELAY)
class FecLink(wiring.Component):
    """One direction of an FEC link: :class:`FecTransmitter`, a
    :class:`~ethlink.rtl.phy.channel.LinkChannel` of ``delay`` cycles, :class:`FecReceiver`.

    Members
    -------
    tx : In(stream.Signature(XgmiiWordLayout)), rx : Out(...)
        Words in at one end, out at the other.
    bypass : In(1)
        Both ends bypass the FEC.
    error_threshold, burst_length, burst, link_up, seed, reseed : In
        The channel's controls (:func:`~ethlink.rtl.phy.channel.channel_controls`).
    count : Out(Counters)
        The receiver's counters (``tx_error_words`` from the transmitter); the channel's
        flipped bits, errored beats, lost beats (line down) and overruns.

    Latency: sublayer TX + ``delay`` + sublayer RX; measured by its test and reported in
    docs/fec.md. Throughput: one word per cycle.
    """
    def __init__(self, symbols_per_beat=8, delay=4):
        self.symbols_per_beat = symbols_per_beat
        self.delay = delay
        super().__init__({
            "tx": In(stream.Signature(XgmiiWordLayout())),
            "rx": Out(stream.Signature(XgmiiWordLayout())),
            "bypass": In(1),
            **channel_controls(),
            "count": Out(Counters(_TX_COUNTERS + _RX_COUNTERS + _CHANNEL_COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        P = self.symbols_per_beat
        m.submodules.sender = sender = FecTransmitter(P)
        m.submodules.channel = channel = LinkChannel(width=SYMBOL_BITS * P, max_delay=self.delay)
        m.submodules.receiver = receiver = FecReceiver(P)

        wiring.connect(m, wiring.flipped(self.tx), sender.tx)
        wiring.connect(m, receiver.rx, wiring.flipped(self.rx))
        connect_line(m, self, channel, sender.line, receiver.line, self.delay)
        m.d.comb += [sender.bypass.eq(self.bypass), receiver.bypass.eq(self.bypass)]
        forward(m, self.count, sender.count)
        forward(m, self.count, receiver.count)
        forward(m, self.count, channel.count, Counters(_CHANNEL_COUNTERS))
        return m
