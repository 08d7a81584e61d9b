"""RS(272,258) systematic encoder, P symbols per beat.

Ref: spec §6 (the code), §12 (the ``rs272_encoder`` export: ports, symbol order, partial last
beat).
"""

from amaranth.hdl import Module, Signal, Cat, C
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...counters import CounterBank, Counters
from ...params import parameters
from .gf import SYMBOL_BITS, N, K, PARITY, generator_poly, mul_forms, linear_map
from .symbols import SymbolLayout, beats_for, SYMBOLS_PER_BEAT

__all__ = ["Rs272Encoder"]


def _update_rows(symbols):
    """The LFSR of g(x) absorbing ``symbols`` symbols, as a GF(2) matrix (one int per bit).

    Variables: bit ``10k + b`` is bit *b* of remainder symbol *k*, bit ``140 + 10j + b`` bit *b*
    of symbol *j* (*j* = 0 first in time). Row ``10k + b`` gives bit *b* of remainder symbol *k*
    after the ``symbols`` steps.
    """
    # Ref: spec §6 — systematic: parity = m(x)·x^14 mod g(x), symbol 0 highest degree.
    g = generator_poly()

    def variables(offset):
        return [1 << (offset + b) for b in range(SYMBOL_BITS)]

    state = [variables(SYMBOL_BITS * k) for k in range(PARITY)]
    for j in range(symbols):
        f = [a ^ b for a, b in zip(variables(SYMBOL_BITS * (PARITY + j)), state[PARITY - 1],
                                   strict=True)]
        state = [mul_forms(f, g[0])] + [
            [a ^ b for a, b in zip(state[k - 1], mul_forms(f, g[k]), strict=True)]
            for k in range(1, PARITY)]
    return [form for symbol in state for form in symbol]


@parameters(symbols_per_beat=SYMBOLS_PER_BEAT)
class Rs272Encoder(wiring.Component):
    """Append the 14 parity symbols of RS(272,258) to each 258-symbol message.

    A message is ``ceil(258/P)`` beats on ``i`` (``last`` on the final one, whose symbols past
    the 258th are ignored); its codeword is ``ceil(272/P)`` beats on ``o``: the message symbols
    unchanged, then the parity symbols (highest degree first), zero-padded to the beat.

    Structure: the remainder register holds m(x)·x^14 mod g(x) of the symbols absorbed so far.
    Absorbing P symbols advances the LFSR of g(x) P steps, a GF(2)-linear map of (remainder,
    P symbols); its 140 × (140 + 10P) bit matrix is computed at elaboration time and built flat
    by :func:`.gf.linear_map`, each remainder bit one XOR of shared 4-bit partial sums. The loop
    is thus at most 1 + ceil(log4(ceil((140 + 10P) / 4))) LUT4 levels (4 at P = 8) instead of
    a chain of P constant multipliers. The P symbols absorbed with a beat are the last
    P − tail symbols of the previous beat (``held``) followed by the beat's first tail
    symbols, tail being the message symbols in the last beat (258 − (ceil(258/P) − 1)·P): the
    last group then ends exactly at the message's end, so the same network yields the parity:
    no second network for the short last beat, and no select between two networks in the loop
    (a message's first group starts with P − tail zeros, leading zeros of m(x)). The first
    P − tail parity symbols fill the last beat at once; the parity-only beats shift the rest
    out of the remainder register, and the last of them clears it for the next message.

    Members
    -------
    i : In(stream.Signature(SymbolLayout(P)))
        Messages.
    o : Out(stream.Signature(SymbolLayout(P)))
        Codewords.
    count : Out(Counters)
        ``framing_errors``: beats whose ``last`` disagrees with the beat count (the encoder keeps counting beats:
        a message is always ``ceil(258/P)`` beats).

    Latency: 1 cycle from a beat on ``i`` to the same symbols on ``o`` (first symbol in → first
    symbol out = 1 cycle).

    Throughput: one codeword every ``ceil(272/P)`` cycles; ``i.ready`` is low for the
    ``ceil(272/P) − ceil(258/P)`` cycles of parity-only beats. ``o`` is a register; ``i.ready``
    follows ``o.ready`` combinationally.
    """
    def __init__(self, symbols_per_beat=8):
        self.symbols_per_beat = symbols_per_beat
        layout = SymbolLayout(symbols_per_beat)
        super().__init__({
            "i": In(stream.Signature(layout)),
            "o": Out(stream.Signature(layout)),
            "count": Out(Counters(["framing_errors"])),
        })

    def elaborate(self, platform):
        m = Module()
        P = self.symbols_per_beat
        in_beats, out_beats = beats_for(K, P), beats_for(N, P)
        tail = K - (in_beats - 1) * P            # message symbols in the last input beat
        parity_beats = out_beats - in_beats      # beats of parity only

        framing = CounterBank(m, self.count).framing_errors

        remainder = [Signal(SYMBOL_BITS, name=f"r{k}") for k in range(PARITY)]
        # The previous beat's last P − tail symbols, absorbed in front of this beat's first
        # tail symbols (zero at the start of a message).
        held = [Signal(SYMBOL_BITS, name=f"held{j}") for j in range(P - tail)]
        index = Signal(range(max(in_beats, parity_beats)))

        def symbol(value, j):
            return value[SYMBOL_BITS * j:SYMBOL_BITS * (j + 1)]

        beat = [symbol(self.i.payload.data, j) for j in range(P)]
        update = linear_map(m, Cat(*remainder, *held, *beat[:tail]), _update_rows(P), "update")
        after = [symbol(update, k) for k in range(PARITY)]

        def shifted(state, n):
            """``state`` (lowest degree first) moved up ``n`` symbols, zeros shifted in."""
            zero = C(0, SYMBOL_BITS)
            return [state[k - n] if 0 <= k - n < PARITY else zero for k in range(PARITY)]

        def top(state, count):
            """The ``count`` highest-degree symbols of ``state`` in send order, zero-padded."""
            return Cat(*(state[PARITY - 1 - n] if n < PARITY else C(0, SYMBOL_BITS)
                         for n in range(count)))

        advance = ~self.o.valid | self.o.ready
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += self.o.valid.eq(0)

        def emit(value, last):
            m.d.sync += [self.o.valid.eq(1), self.o.payload.data.eq(value),
                         self.o.payload.last.eq(last)]

        def load(state):
            m.d.sync += [r.eq(v) for r, v in zip(remainder, state, strict=True)]

        def clear():
            # Every parity symbol is out: the next message starts from a zero remainder.
            m.d.sync += [r.eq(0) for r in remainder]

        with m.FSM():
            with m.State("MESSAGE"):
                m.d.comb += self.i.ready.eq(advance)
                is_last = index == in_beats - 1
                with m.If(self.i.valid & advance):
                    framing.increment(m, self.i.payload.last != is_last)
                    load(after)
                    with m.If(is_last):
                        # `after` is now the parity: its first P − tail symbols go out in this
                        # beat, the PARITY beats send the rest from the register.
                        emit(Cat(*beat[:tail], top(after, P - tail)), last=parity_beats == 0)
                        m.d.sync += [h.eq(0) for h in held]
                        m.d.sync += index.eq(0)
                        if parity_beats:
                            m.next = "PARITY"
                        else:
                            clear()
                    with m.Else():
                        emit(self.i.payload.data, last=0)
                        m.d.sync += [h.eq(s) for h, s in zip(held, beat[tail:], strict=True)]
                        m.d.sync += index.eq(index + 1)
            if parity_beats:
                with m.State("PARITY"):
                    with m.If(advance):
                        final = index == parity_beats - 1
                        # The symbols after the P − tail sent with the message's last beat.
                        emit(top(shifted(remainder, P - tail), P), last=final)
                        if parity_beats > 1:
                            # Bring the next beat's symbols to the top. (With one parity beat
                            # there is no next beat, and no dead select in the loop either.)
                            load(shifted(remainder, P))
                        m.d.sync += index.eq(index + 1)
                        with m.If(final):
                            clear()
                            m.d.sync += index.eq(0)
                            m.next = "MESSAGE"
        return m
