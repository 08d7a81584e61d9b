"""RS(272,258) decoder, P symbols per beat: syndromes → RiBM → Chien search and Forney.

Ref: spec §6 (the code, t = 7), §12 (the ``rs272_decoder`` export: ports, symbol order, partial
last beat, ``m_axis_tuser``).

Four small stages, each a component of its own, run concurrently on successive codewords:

* :class:`SyndromeUnit` — S_j = r(α^j), j = 0…13, by Horner's rule while the codeword streams
  in, P symbols per cycle;
* :class:`KeyEquationSolver` — the reformulated inversionless Berlekamp–Massey algorithm (RiBM,
  Sarwate and Shanbhag, 2001): 3t + 1 = 22 processing elements, 2t = 14 iterations, one per
  cycle; it yields the error locator Λ(x) and the error evaluator Ω(x);
* :class:`ChienForney` — evaluates Λ and Ω at 2P positions per cycle and computes each error
  value with Forney's formula (one inverse ROM read and one multiplication);
* :class:`Rs272Decoder` — the message buffer, the error-pattern buffer and the output stage that
  adds the error pattern to the received symbols under back-pressure.

Spec §12 puts the uncorrectable flag on *every* beat of the codeword, so the verdict (number of
roots of Λ among the 272 positions against the degree of Λ) must be known before the first beat
leaves. The Chien search therefore runs over the whole codeword before output starts, at twice
the input rate so that it costs half a codeword time, not a whole one.
"""

from amaranth.hdl import Module, Signal, Mux, Cat, C, Array, signed
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ...counters import CounterBank, Counters
from ...params import IntRange, Param, parameters
from .gf import SYMBOL_BITS, N, K, PARITY, T, alpha_pow, inverse, mul_const, mul_sum, mul_var
from .symbols import SymbolLayout, DecodedLayout, DecodeStatusLayout, beats_for

__all__ = ["SyndromeUnit", "KeyEquationSolver", "ChienForney", "Rs272Decoder",
           "MAX_SYMBOLS_PER_BEAT", "DECODER_SYMBOLS", "CHIEN_SPEEDUP", "decoder_latency"]

#: RiBM needs 2t + 1 cycles per codeword; a codeword lasts ceil(272/P) cycles, so P ≤ 16.
MAX_SYMBOLS_PER_BEAT = 16
DECODER_SYMBOLS = Param("10-bit symbols per stream beat (P)", IntRange(1, MAX_SYMBOLS_PER_BEAT))
#: Chien positions per cycle = CHIEN_SPEEDUP × P.
CHIEN_SPEEDUP = 2
#: Pipeline registers of :class:`ChienForney` after its last group is evaluated.
CHIEN_PIPELINE = 3

_LOCATOR_TERMS = T + 1       # Λ_0 … Λ_7
_EVALUATOR_TERMS = T         # Ω_0 … Ω_6
_PES = 3 * T + 1             # RiBM processing elements


def _symbols(value, count):
    return [value[SYMBOL_BITS * j:SYMBOL_BITS * (j + 1)] for j in range(count)]


def decoder_latency(symbols_per_beat):
    """``N`` of the decoder's latency "codeword fill + N" at P = ``symbols_per_beat``: cycles
    from the end of a codeword's fill (the cycle after its last beat arrives, when the
    syndromes are ready) to its first output beat, when nothing stalls."""
    groups = beats_for(N, CHIEN_SPEEDUP * symbols_per_beat)
    # Solver (load + 2t iterations), Chien scan and pipeline, then one cycle in the verdict
    # queue and one to read the buffers into the output register.
    return (PARITY + 1) + (groups + CHIEN_PIPELINE) + 2


class SyndromeUnit(wiring.Component):
    """Syndromes S_j = r(α^j), j = 0…13, of a codeword that arrives P symbols per beat.

    ``r(x) = Σ r_k x^(271−k)`` (symbol 0 is the highest-degree coefficient), so each beat is
    absorbed by Horner's rule: ``S_j ← S_j·α^(jP) + Σ_l r_l·α^(j(P−1−l))`` — constant
    multipliers only. The last beat of a codeword carries ``272 − (beats − 1)·P`` symbols and
    uses its own constants.

    Members
    -------
    beat : In(10P)
        The symbols of a beat, taken when ``strobe``.
    strobe, first, last : In(1)
        A beat is taken; it is the codeword's first; it is the codeword's last.
    syndromes : Out(ArrayLayout(10, 14))
        Valid in the cycle ``done`` is high, held until the next codeword's first beat.
    done : Out(1)
        One cycle after the last beat.

    Latency: 1 cycle (last beat → ``done``). Throughput: one beat per cycle.
    """
    def __init__(self, symbols_per_beat):
        self.symbols_per_beat = symbols_per_beat
        super().__init__({
            "beat": In(SYMBOL_BITS * symbols_per_beat),
            "strobe": In(1), "first": In(1), "last": In(1),
            "syndromes": Out(data.ArrayLayout(SYMBOL_BITS, PARITY)),
            "done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        P = self.symbols_per_beat
        tail = N - (beats_for(N, P) - 1) * P
        symbols = _symbols(self.beat, P)

        def horner(j, state, count):
            return mul_sum([state] + symbols[:count],
                           [alpha_pow(j * count)] + [alpha_pow(j * (count - 1 - l))
                                                     for l in range(count)])

        m.d.sync += self.done.eq(self.strobe & self.last)
        for j in range(PARITY):
            syndrome = self.syndromes[j]
            state = Signal(SYMBOL_BITS, name=f"state{j}")
            m.d.comb += state.eq(Mux(self.first, 0, syndrome))
            with m.If(self.strobe):
                if tail == P:
                    m.d.sync += syndrome.eq(horner(j, state, P))
                else:
                    m.d.sync += syndrome.eq(Mux(self.last, horner(j, state, tail),
                                                horner(j, state, P)))
        return m


class KeyEquationSolver(wiring.Component):
    """The reformulated inversionless Berlekamp–Massey algorithm (RiBM) for t = 7.

    22 processing elements hold δ_i and θ_i; each iteration r = 0…13 computes
    ``δ_i ← γ·δ_(i+1) − δ_0·θ_i`` (two general GF(2^10) multipliers per element) and, when
    ``δ_0 ≠ 0`` and ``k ≥ 0``, ``θ_i ← δ_(i+1)``, ``γ ← δ_0``, ``k ← −k − 1`` (else ``k ← k + 1``).
    Initial state: δ_i = θ_i = S_i for i < 14, δ_21 = θ_21 = 1, the rest 0, γ = 1, k = 0.
    After 14 iterations Λ_i = δ_(7+i) (i = 0…7) and Ω^h_i = δ_i (i = 0…6); with roots α^0…α^13
    the error value at locator X is ``x^14·Ω^h(x) / (x·Λ'(x))`` at x = X^-1, which is what
    :class:`ChienForney` computes.

    Members
    -------
    start : In(1)
        Load ``syndromes`` and begin; must not come while busy (every 15 cycles at most).
    syndromes : In(ArrayLayout(10, 14))
    done : Out(1)
        ``locator`` and ``evaluator`` are valid in this cycle (and held until the next start).
    locator : Out(ArrayLayout(10, 8)), evaluator : Out(ArrayLayout(10, 7))

    Latency: 15 cycles, ``start`` → ``done``. Throughput: one codeword per 15 cycles.
    """
    def __init__(self):
        super().__init__({
            "start": In(1),
            "syndromes": In(data.ArrayLayout(SYMBOL_BITS, PARITY)),
            "done": Out(1),
            "locator": Out(data.ArrayLayout(SYMBOL_BITS, _LOCATOR_TERMS)),
            "evaluator": Out(data.ArrayLayout(SYMBOL_BITS, _EVALUATOR_TERMS)),
        })

    def elaborate(self, platform):
        m = Module()
        delta = [Signal(SYMBOL_BITS, name=f"delta{i}") for i in range(_PES)]
        theta = [Signal(SYMBOL_BITS, name=f"theta{i}") for i in range(_PES)]
        gamma = Signal(SYMBOL_BITS)
        k = Signal(signed(6))                     # |k| ≤ 2t
        iteration = Signal(range(PARITY + 1))
        busy = Signal()

        for i in range(_LOCATOR_TERMS):
            m.d.comb += self.locator[i].eq(delta[T + i])
        for i in range(_EVALUATOR_TERMS):
            m.d.comb += self.evaluator[i].eq(delta[i])

        m.d.sync += self.done.eq(busy & (iteration == PARITY - 1))
        with m.If(self.start):
            initial = [self.syndromes[i] if i < PARITY else C(int(i == _PES - 1), SYMBOL_BITS)
                       for i in range(_PES)]
            m.d.sync += [d.eq(v) for d, v in zip(delta, initial, strict=True)]
            m.d.sync += [t.eq(v) for t, v in zip(theta, initial, strict=True)]
            m.d.sync += [gamma.eq(1), k.eq(0), iteration.eq(0), busy.eq(1)]
        with m.Elif(busy):
            d0 = Signal(SYMBOL_BITS)
            swap = Signal()
            m.d.comb += [d0.eq(delta[0]), swap.eq((d0 != 0) & (k >= 0))]
            for i in range(_PES):
                following = delta[i + 1] if i + 1 < _PES else C(0, SYMBOL_BITS)
                if i + 1 < _PES:
                    m.d.sync += delta[i].eq(mul_var(m, gamma, following, f"pe{i}_a")
                                            ^ mul_var(m, d0, theta[i], f"pe{i}_b"))
                else:
                    m.d.sync += delta[i].eq(mul_var(m, d0, theta[i], f"pe{i}_b"))
                with m.If(swap):
                    m.d.sync += theta[i].eq(following)
            with m.If(swap):
                m.d.sync += [gamma.eq(d0), k.eq(-k - 1)]
            with m.Else():
                m.d.sync += k.eq(k + 1)
            m.d.sync += iteration.eq(iteration + 1)
            with m.If(iteration == PARITY - 1):
                m.d.sync += busy.eq(0)
        return m


class ChienForney(wiring.Component):
    """Chien search and Forney's formula over all 272 positions, Q = 2P positions per cycle.

    Position k (symbol k of the codeword, k = 0 first) has locator X = α^(271−k) and is in
    error when Λ(X^-1) = 0; its error value is ``x^14·Ω^h(x) / Λ_odd(x)`` at x = X^-1, where
    Λ_odd(x) = x·Λ'(x) is the sum of Λ's odd terms. Group g covers positions gQ…gQ+Q−1: the
    term registers hold ``Λ_i·x_g^i`` for the group's first position and are multiplied by
    α^(iQ) each cycle; each position j of the group scales them by α^(ij) (constants only).

    Pipeline per group: evaluate (Λ_even, Λ_odd, Ω at Q points) → root test and inverse-ROM
    read of Λ_odd → error value = Ω·Λ_odd^-1 (general multiplier) and the root count → the
    group's Q error values on ``pattern`` (0 where no error).

    The verdict comes with the last group: the codeword is uncorrectable when Λ = 0 or when
    the number of roots among the 272 positions differs from the degree of Λ (some roots lie
    outside the shortened code, or Λ does not split).

    Members
    -------
    start : In(1)
        Load ``locator``/``evaluator`` and scan; at most once per ``groups + 3`` cycles.
    pattern_valid : Out(1), pattern_group : Out(range(groups)), pattern : Out(10Q)
        One group's error values (symbol j of the group in ``pattern[10j+9:10j]``).
    done : Out(1), uncorrectable : Out(1), corrected : Out(4)
        The verdict, with the last group's pattern.

    Latency: ``groups + 3`` cycles from ``start`` to ``done``. Throughput: one codeword per
    ``groups + 3`` cycles.
    """
    def __init__(self, positions_per_cycle):
        self.positions_per_cycle = positions_per_cycle
        self.groups = beats_for(N, positions_per_cycle)
        Q = positions_per_cycle
        super().__init__({
            "start": In(1),
            "locator": In(data.ArrayLayout(SYMBOL_BITS, _LOCATOR_TERMS)),
            "evaluator": In(data.ArrayLayout(SYMBOL_BITS, _EVALUATOR_TERMS)),
            "pattern_valid": Out(1),
            "pattern_group": Out(range(self.groups)),
            "pattern": Out(SYMBOL_BITS * Q),
            "done": Out(1),
            "uncorrectable": Out(1),
            "corrected": Out(4),
        })

    def elaborate(self, platform):
        m = Module()
        Q, groups = self.positions_per_cycle, self.groups
        last_positions = N - (groups - 1) * Q       # positions in the last group

        # Exponent of x in each term: Λ_i x^i, and x^14·Ω_i x^i.
        locator_exp = list(range(_LOCATOR_TERMS))
        evaluator_exp = [PARITY + i for i in range(_EVALUATOR_TERMS)]

        lam = [Signal(SYMBOL_BITS, name=f"lam{i}") for i in range(_LOCATOR_TERMS)]
        omg = [Signal(SYMBOL_BITS, name=f"omg{i}") for i in range(_EVALUATOR_TERMS)]
        group = Signal(range(groups))
        busy = Signal()
        degree = Signal(range(_LOCATOR_TERMS))
        locator_zero = Signal()

        with m.If(self.start):
            # x of group 0, position 0 is α^-(271).
            for reg, exp, coeff in zip(lam, locator_exp, self.locator, strict=True):
                m.d.sync += reg.eq(mul_const(coeff, alpha_pow(-exp * (N - 1))))
            for reg, exp, coeff in zip(omg, evaluator_exp, self.evaluator, strict=True):
                m.d.sync += reg.eq(mul_const(coeff, alpha_pow(-exp * (N - 1))))
            m.d.sync += [group.eq(0), busy.eq(1),
                         locator_zero.eq(Cat(*self.locator) == 0), degree.eq(0)]
            for i in range(1, _LOCATOR_TERMS):
                with m.If(self.locator[i] != 0):
                    m.d.sync += degree.eq(i)
        with m.Elif(busy):
            for reg, exp in zip(lam, locator_exp, strict=True):
                m.d.sync += reg.eq(mul_const(reg, alpha_pow(exp * Q)))
            for reg, exp in zip(omg, evaluator_exp, strict=True):
                m.d.sync += reg.eq(mul_const(reg, alpha_pow(exp * Q)))
            m.d.sync += group.eq(group + 1)
            with m.If(group == groups - 1):
                m.d.sync += busy.eq(0)

        # Stage 1: evaluate at the Q positions of the group.
        s1_valid, s1_last = Signal(), Signal()
        s1_group = Signal(range(groups))
        s1_sum = [Signal(SYMBOL_BITS, name=f"s1_sum{j}") for j in range(Q)]     # Λ(x)
        s1_odd = [Signal(SYMBOL_BITS, name=f"s1_odd{j}") for j in range(Q)]     # x·Λ'(x)
        s1_omg = [Signal(SYMBOL_BITS, name=f"s1_omg{j}") for j in range(Q)]     # x^14·Ω(x)
        m.d.sync += [s1_valid.eq(busy), s1_last.eq(busy & (group == groups - 1)),
                     s1_group.eq(group)]
        even_terms = range(0, _LOCATOR_TERMS, 2)
        odd_terms = range(1, _LOCATOR_TERMS, 2)
        for j in range(Q):
            even = Signal(SYMBOL_BITS, name=f"even{j}")
            odd = Signal(SYMBOL_BITS, name=f"odd{j}")
            m.d.comb += [
                even.eq(mul_sum([lam[i] for i in even_terms],
                                [alpha_pow(i * j) for i in even_terms])),
                odd.eq(mul_sum([lam[i] for i in odd_terms],
                               [alpha_pow(i * j) for i in odd_terms])),
            ]
            m.d.sync += [s1_sum[j].eq(even ^ odd), s1_odd[j].eq(odd),
                         s1_omg[j].eq(mul_sum(omg, [alpha_pow(e * j) for e in evaluator_exp]))]

        # Stage 2: root test; Λ_odd^-1 from ROM (two read ports per ROM: one EBR per pair).
        s2_valid, s2_last = Signal(), Signal()
        s2_group = Signal(range(groups))
        s2_root = [Signal(name=f"s2_root{j}") for j in range(Q)]
        s2_omg = [Signal(SYMBOL_BITS, name=f"s2_omg{j}") for j in range(Q)]
        m.d.sync += [s2_valid.eq(s1_valid), s2_last.eq(s1_last), s2_group.eq(s1_group)]
        inverses = []
        for pair in range(beats_for(Q, 2)):
            rom = memory.Memory(shape=SYMBOL_BITS, depth=1 << SYMBOL_BITS,
                                init=[inverse(a) for a in range(1 << SYMBOL_BITS)])
            m.submodules[f"inverse{pair}"] = rom
            for j in range(2 * pair, min(2 * pair + 2, Q)):
                port = rom.read_port(domain="sync")
                m.d.comb += port.addr.eq(s1_odd[j])
                inverses.append(port.data)
        for j in range(Q):
            in_code = C(1) if j < last_positions else s1_group != groups - 1
            m.d.sync += [s2_root[j].eq((s1_sum[j] == 0) & in_code), s2_omg[j].eq(s1_omg[j])]

        # Stage 3: error values and the root count.
        count = Signal(range(N + 1))
        roots = Signal(range(Q + 1))
        m.d.comb += roots.eq(sum(s2_root))
        with m.If(s2_valid):
            m.d.sync += count.eq(Mux(s2_group == 0, 0, count) + roots)
        m.d.sync += [self.pattern_valid.eq(s2_valid), self.pattern_group.eq(s2_group),
                     self.done.eq(s2_last)]
        values = []
        for j in range(Q):
            value = Signal(SYMBOL_BITS, name=f"value{j}")
            m.d.comb += value.eq(Mux(s2_root[j], mul_var(m, s2_omg[j], inverses[j], f"forney{j}"), 0))
            values.append(value)
        m.d.sync += self.pattern.eq(Cat(*values))

        m.d.comb += [self.uncorrectable.eq(locator_zero | (count != degree)),
                     self.corrected.eq(Mux(self.uncorrectable, 0, count))]
        return m


@parameters(symbols_per_beat=DECODER_SYMBOLS)
class Rs272Decoder(wiring.Component):
    """Correct up to 7 symbol errors per RS(272,258) codeword; report the rest.

    A codeword is ``ceil(272/P)`` beats on ``i`` (``last`` on the final one; symbols past the
    272nd are ignored). Its 258 message symbols leave on ``o`` in ``ceil(258/P)`` beats,
    corrected, zero-padded past the 258th, with ``user.uncorrectable`` on every beat and
    ``user.corrected`` (symbols corrected, parity symbols included) on the last beat. An
    uncorrectable codeword's message leaves as received (uncorrected), flagged.

    Members
    -------
    i : In(stream.Signature(SymbolLayout(P)))
        Codewords.
    o : Out(stream.Signature(DecodedLayout(P)))
        Messages with their verdict.
    count_corrected_symbols, count_corrected_codewords, count_uncorrectable_codewords : Out(32)
        Saturating.
    count_framing_errors : Out(32)
        Beats whose ``last`` disagrees with the beat count (the decoder frames by counting).

    Latency: "codeword fill + N": the first message beat leaves ``ceil(272/P) + N`` cycles
    after the codeword's first beat arrives, N = :func:`decoder_latency` (P = 1: 156,
    P = 4: 54, P = 8: 37), when the input does not idle and the output is not held.

    Throughput: one codeword every ``ceil(272/P)`` cycles, forever (``i.ready`` stays high
    while ``o`` keeps up). Back-pressure on ``o`` fills the buffers, which hold enough
    codewords to cover the latency; then ``i.ready`` drops at a codeword boundary.

    Structure: the arithmetic is in components of its own (:class:`SyndromeUnit`,
    :class:`KeyEquationSolver`, :class:`ChienForney`); this ``elaborate`` only joins them to the
    message and error-pattern memories, the verdict FIFO and the output framing, which share
    one slot counter, so they stay together.
    """
    COUNTERS = ("corrected_symbols", "corrected_codewords", "uncorrectable_codewords",
                "framing_errors")

    def __init__(self, symbols_per_beat=8):
        self.symbols_per_beat = symbols_per_beat
        super().__init__({
            "i": In(stream.Signature(SymbolLayout(symbols_per_beat))),
            "o": Out(stream.Signature(DecodedLayout(symbols_per_beat))),
            "count": Out(Counters(self.COUNTERS)),
        })

    @property
    def latency(self):
        return decoder_latency(self.symbols_per_beat)

    def elaborate(self, platform):
        m = Module()
        P = self.symbols_per_beat
        Q = CHIEN_SPEEDUP * P
        in_beats, out_beats = beats_for(N, P), beats_for(K, P)
        out_tail = K - (out_beats - 1) * P       # message symbols in the last output beat
        pattern_rows = beats_for(out_beats, CHIEN_SPEEDUP)
        # Codewords in flight (first beat in … last beat out) when nothing stalls, plus one
        # so that a codeword can start while the oldest drains.
        slots = beats_for(in_beats + self.latency + out_beats, in_beats) + 1

        m.submodules.syndromes = syn = SyndromeUnit(P)
        m.submodules.solver = kes = KeyEquationSolver()
        m.submodules.chien = chien = ChienForney(Q)
        assert chien.groups + CHIEN_PIPELINE + 1 <= in_beats, "Chien scan too slow for P"

        counters = CounterBank(m, self.count)

        # Message buffer: the received message beats of up to `slots` codewords, in order.
        depth = slots * out_beats
        m.submodules.messages = messages = memory.Memory(shape=SYMBOL_BITS * P, depth=depth,
                                                         init=[])
        msg_write = messages.write_port()
        msg_read = messages.read_port(domain="sync")
        # Error patterns: `pattern_rows` rows of Q symbols per codeword slot.
        m.submodules.patterns = patterns = memory.Memory(
            shape=SYMBOL_BITS * Q, depth=slots * pattern_rows, init=[])
        pat_write = patterns.write_port()
        pat_read = patterns.read_port(domain="sync")
        # Verdicts of decoded codewords waiting for the output.
        m.submodules.verdicts = verdicts = fifo.SyncFIFO(width=DecodeStatusLayout().size, depth=slots)

        # Input: frame by counting beats; accept a codeword's first beat only with a free slot.
        in_index = Signal(range(in_beats))
        write_addr = Signal(range(depth))
        in_flight = Signal(range(slots + 1))
        starting = Signal()
        finishing = Signal()
        first_beat = in_index == 0
        last_beat = in_index == in_beats - 1
        m.d.comb += [
            self.i.ready.eq(~first_beat | (in_flight < slots)),
            starting.eq(self.i.valid & self.i.ready & first_beat),
            syn.beat.eq(self.i.payload.data),
            syn.strobe.eq(self.i.valid & self.i.ready),
            syn.first.eq(first_beat),
            syn.last.eq(last_beat),
            msg_write.addr.eq(write_addr),
            msg_write.data.eq(self.i.payload.data),
            msg_write.en.eq(self.i.valid & self.i.ready & (in_index < out_beats)),
        ]
        m.d.sync += in_flight.eq(in_flight + starting - finishing)
        with m.If(self.i.valid & self.i.ready):
            counters["framing_errors"].increment(m, self.i.payload.last != last_beat)
            m.d.sync += in_index.eq(Mux(last_beat, 0, in_index + 1))
            with m.If(in_index < out_beats):
                m.d.sync += write_addr.eq(Mux(write_addr == depth - 1, 0, write_addr + 1))

        # Decode chain.
        m.d.comb += [kes.start.eq(syn.done), kes.syndromes.eq(syn.syndromes),
                     chien.start.eq(kes.done), chien.locator.eq(kes.locator),
                     chien.evaluator.eq(kes.evaluator)]
        # Base row of the slot being written (kept as a running sum: no multiplier).
        pattern_base = Signal(range(slots * pattern_rows))
        m.d.comb += [
            pat_write.addr.eq(pattern_base + chien.pattern_group),
            pat_write.data.eq(chien.pattern),
            pat_write.en.eq(chien.pattern_valid & (chien.pattern_group < pattern_rows)),
            verdicts.w_data.eq(Cat(chien.uncorrectable, chien.corrected)),
            verdicts.w_en.eq(chien.done),
        ]
        with m.If(chien.done):
            m.d.sync += pattern_base.eq(Mux(pattern_base == (slots - 1) * pattern_rows, 0,
                                            pattern_base + pattern_rows))
            counters["uncorrectable_codewords"].increment(m, chien.uncorrectable)
            counters["corrected_codewords"].increment(
                m, ~chien.uncorrectable & (chien.corrected != 0))
            counters["corrected_symbols"].add(m, chien.corrected, ~chien.uncorrectable)

        # Output: read both buffers one beat ahead; the XOR of the two is the corrected beat.
        out_index = Signal(range(out_beats))
        read_addr = Signal(range(depth))
        read_base = Signal(range(slots * pattern_rows))
        advance = ~self.o.valid | self.o.ready
        issue = Signal()
        verdict = data.View(DecodeStatusLayout(), verdicts.r_data)
        m.d.comb += [
            issue.eq(advance & verdicts.r_rdy),
            finishing.eq(issue & (out_index == out_beats - 1)),
            verdicts.r_en.eq(finishing),
            msg_read.addr.eq(read_addr), msg_read.en.eq(advance),
            pat_read.addr.eq(read_base + out_index // CHIEN_SPEEDUP),
            pat_read.en.eq(advance),
        ]
        held_last = Signal()
        held_part = Signal(range(CHIEN_SPEEDUP))
        held_user = Signal(DecodeStatusLayout())
        with m.If(advance):
            m.d.sync += [
                self.o.valid.eq(issue),
                held_last.eq(out_index == out_beats - 1),
                held_part.eq(out_index % CHIEN_SPEEDUP),
                held_user.uncorrectable.eq(verdict.uncorrectable),
                held_user.corrected.eq(Mux(out_index == out_beats - 1, verdict.corrected, 0)),
            ]
        with m.If(issue):
            m.d.sync += [out_index.eq(Mux(finishing, 0, out_index + 1)),
                         read_addr.eq(Mux(read_addr == depth - 1, 0, read_addr + 1))]
            with m.If(finishing):
                m.d.sync += read_base.eq(Mux(read_base == (slots - 1) * pattern_rows, 0,
                                             read_base + pattern_rows))

        pattern = Signal(SYMBOL_BITS * P)
        rows = [pat_read.data[SYMBOL_BITS * P * part:SYMBOL_BITS * P * (part + 1)]
                for part in range(CHIEN_SPEEDUP)]
        m.d.comb += pattern.eq(Mux(held_user.uncorrectable, 0, Array(rows)[held_part]))
        corrected = Signal(SYMBOL_BITS * P)
        m.d.comb += corrected.eq(msg_read.data ^ pattern)
        if out_tail < P:
            # Symbols past the 258th (parity symbols sharing the beat) leave as zero.
            keep = Cat(C(-1, SYMBOL_BITS * out_tail), C(0, SYMBOL_BITS * (P - out_tail)))
            m.d.comb += self.o.payload.data.eq(Mux(held_last, corrected & keep, corrected))
        else:
            m.d.comb += self.o.payload.data.eq(corrected)
        m.d.comb += [self.o.payload.last.eq(held_last), self.o.payload.user.eq(held_user)]
        return m
