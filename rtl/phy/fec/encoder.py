"""RS(272,258) systematic encoder, P symbols per beat.

Ref: spec §6 (the code), §12 (the ``rs272_encoder`` export: ports, symbol order, partial last
beat).
"""

from amaranth.hdl import Module, Signal, Mux, Cat, C
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...stream import SaturatingCounter, COUNTER_WIDTH
from .gf import SYMBOL_BITS, N, K, PARITY, generator_poly, mul_const
from .symbols import SymbolLayout, beats_for, check_symbols_per_beat

__all__ = ["Rs272Encoder"]


class Rs272Encoder(wiring.Component):
    """Append the 14 parity symbols of RS(272,258) to each 258-symbol message.

    A message is ``ceil(258/P)`` beats on ``i`` (``last`` on the final one, whose symbols past
    the 258th are ignored); its codeword is ``ceil(272/P)`` beats on ``o``: the message symbols
    unchanged, then the parity symbols (highest degree first), zero-padded to the beat.

    The remainder m(x)·x^14 mod g(x) is computed by the usual LFSR, unrolled P times so one beat
    is absorbed per cycle. The parity is known combinationally during the message's last beat,
    so it fills that beat's free symbol slots at once.

    Members
    -------
    i : In(stream.Signature(SymbolLayout(P)))
        Messages.
    o : Out(stream.Signature(SymbolLayout(P)))
        Codewords.
    count_framing_errors : Out(32)
        Beats whose ``last`` disagrees with the beat count (the encoder keeps counting beats:
        a message is always ``ceil(258/P)`` beats).

    Latency: 1 cycle from a beat on ``i`` to the same symbols on ``o`` (first symbol in → first
    symbol out = 1 cycle).

    Throughput: one codeword every ``ceil(272/P)`` cycles; ``i.ready`` is low for the
    ``ceil(272/P) − ceil(258/P)`` cycles of parity-only beats. ``o`` is a register; ``i.ready``
    follows ``o.ready`` combinationally.
    """
    def __init__(self, symbols_per_beat=8):
        self.symbols_per_beat = check_symbols_per_beat(symbols_per_beat)
        layout = SymbolLayout(symbols_per_beat)
        super().__init__({
            "i": In(stream.Signature(layout)),
            "o": Out(stream.Signature(layout)),
            "count_framing_errors": Out(COUNTER_WIDTH),
        })

    def elaborate(self, platform):
        m = Module()
        P = self.symbols_per_beat
        in_beats, out_beats = beats_for(K, P), beats_for(N, P)
        tail = K - (in_beats - 1) * P            # message symbols in the last input beat
        g = generator_poly()

        framing = SaturatingCounter("count_framing_errors")
        m.d.comb += self.count_framing_errors.eq(framing.value)

        remainder = [Signal(SYMBOL_BITS, name=f"r{k}") for k in range(PARITY)]
        index = Signal(range(max(in_beats, out_beats - in_beats + 1)))

        def symbol(value, j):
            return value[SYMBOL_BITS * j:SYMBOL_BITS * (j + 1)]

        def lfsr(state, symbols, name):
            # Ref: spec §6 — systematic: parity = m(x)·x^14 mod g(x), symbol 0 highest degree.
            for step, s in enumerate(symbols):
                # Each step's feedback is a named signal: the unrolled steps then share it
                # instead of repeating its expression (which would grow exponentially).
                feedback = Signal(SYMBOL_BITS, name=f"{name}_fb{step}")
                m.d.comb += feedback.eq(s ^ state[PARITY - 1])
                state = [mul_const(feedback, g[0])] + [
                    state[k - 1] ^ mul_const(feedback, g[k]) for k in range(1, PARITY)]
            return state

        beat = self.i.payload.data
        first = index == 0
        start = [Mux(first, C(0, SYMBOL_BITS), r) for r in remainder]
        after_full = lfsr(start, [symbol(beat, j) for j in range(P)], "full")
        after_tail = lfsr(start, [symbol(beat, j) for j in range(tail)], "tail")
        # Parity in send order: the highest-degree remainder coefficient first.
        parity_now = list(reversed(after_tail))
        parity_held = list(reversed(remainder))

        def parity_symbols(parity, first_index):
            return Cat(*(parity[n] if 0 <= n < PARITY else C(0, SYMBOL_BITS)
                         for n in range(first_index, first_index + P)))

        advance = ~self.o.valid | self.o.ready
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += self.o.valid.eq(0)

        def emit(value, last):
            m.d.sync += [self.o.valid.eq(1), self.o.payload.data.eq(value),
                         self.o.payload.last.eq(last)]

        with m.FSM():
            with m.State("MESSAGE"):
                m.d.comb += self.i.ready.eq(advance)
                is_last = index == in_beats - 1
                with m.If(self.i.valid & advance):
                    framing.increment(m, self.i.payload.last != is_last)
                    with m.If(is_last):
                        message = Cat(*(symbol(beat, j) for j in range(tail)))
                        emit(Cat(message, parity_symbols(parity_now, 0))[:SYMBOL_BITS * P],
                             last=out_beats == in_beats)
                        m.d.sync += [r.eq(v) for r, v in zip(remainder, after_tail, strict=True)]
                        m.d.sync += index.eq(0)
                        if out_beats > in_beats:
                            m.next = "PARITY"
                    with m.Else():
                        emit(beat, last=0)
                        m.d.sync += [r.eq(v) for r, v in zip(remainder, after_full, strict=True)]
                        m.d.sync += index.eq(index + 1)
            if out_beats > in_beats:
                with m.State("PARITY"):
                    # Parity symbols that did not fit in the message's last beat.
                    with m.If(advance):
                        for n in range(out_beats - in_beats):
                            with m.If(index == n):
                                emit(parity_symbols(parity_held, (P - tail) + n * P),
                                     last=n == out_beats - in_beats - 1)
                        with m.If(index == out_beats - in_beats - 1):
                            m.d.sync += index.eq(0)
                            m.next = "MESSAGE"
                        with m.Else():
                            m.d.sync += index.eq(index + 1)
        return m
