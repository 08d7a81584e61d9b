"""Link channel model: the line between two link ends, with delay, bit errors, error bursts and
link loss, all seeded and repeatable.

The channel carries a beat stream (a symbol stream of the FEC, an XGMII word stream, ...) from
one link end to the other. Simulations put it between two ends to test FEC, LLR and link
recovery; FPGA builds can put it on a real board link. Only ``data`` bits are corrupted; ``last``
(the start/end-of-codeword flag) passes untouched (spec §6: "the simulation channel keeps it").

Random numbers come from xorshift64 generators (Marsaglia, shifts 13, 7, 17; period 2^64 − 1).
Generator *g* starts, when ``rst`` or ``reseed`` is high, from the 32-bit ``seed``::

    state_g = (seed ^ (SEED_HI · (2g+1) mod 2^32)) << 32  |  (seed ^ (SEED_LO · (2g+1) mod 2^32))

which is never zero (the two halves would need ``seed`` to equal two different constants).
Generator 0 places bursts, generators 1…``injectors`` drive the injectors. A bit position is
the high half of a state scaled to the beat: ``(hi · width) >> 32`` (a multiply-high). Each
position then gets ⌊2^32/width⌋ or ⌈2^32/width⌉ of the 2^32 values, so its probability is
1/width within a relative 2^-32·width (below 2·10^-8 at width 80; exact when width is a power of
two), with no rejection loop and one position per generator step.

Ref: spec §6 (FEC sublayer, start-of-codeword flag kept by the simulation channel), §11
(counters saturate).
"""

from amaranth.hdl import Module, Signal, Mux, Cat, ResetSignal, Shape, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..counters import CounterBank, Counters
from ..params import IntRange, Param, parameters

__all__ = ["LinkChannel", "LineBeatLayout", "DelayLine", "RandomBitErrors", "BurstErrors",
           "RandomSource", "channel_controls", "WIDTH", "DELAY", "INJECTORS",
           "MAX_WIDTH", "MAX_DELAY", "MAX_INJECTORS", "BURST_LENGTH_BITS",
           "SEED_HI", "SEED_LO", "XORSHIFT64_SHIFTS"]

MAX_WIDTH = 512
MAX_DELAY = 4096
MAX_INJECTORS = 16
#: Width of ``burst_length``: a burst is up to 65535 bits.
BURST_LENGTH_BITS = 16

#: xorshift64 step: x ^= x << 13; x ^= x >> 7; x ^= x << 17.
XORSHIFT64_SHIFTS = (13, 7, 17)
#: Seed expansion constants (the two halves of the 64-bit golden-ratio constant 0x9E3779B97F4A7C15).
SEED_HI = 0x9E3779B9
SEED_LO = 0x7F4A7C15


WIDTH = Param("data bits per beat", IntRange(1, MAX_WIDTH))
#: A line's delay (and the largest one a line with a run-time delay can hold), in cycles.
DELAY = Param("line delay in cycles", IntRange(1, MAX_DELAY))
INJECTORS = Param("random bit-error injectors per beat", IntRange(1, MAX_INJECTORS))


def channel_controls():
    """The run-time controls of a line (:class:`LinkChannel`), as members of the block that
    has them; a block holding a channel shows them under the same names
    (:func:`~ethlink.rtl.compose.forward`)."""
    return {"error_threshold": In(32), "burst_length": In(BURST_LENGTH_BITS), "burst": In(1),
            "link_up": In(1), "seed": In(32), "reseed": In(1)}


class LineBeatLayout(data.StructLayout):
    """One beat on the line: ``width`` data bits and the framing flag ``last``. The same shape as
    :class:`~ethlink.rtl.phy.fec.symbols.SymbolLayout`, so a symbol stream plugs in directly."""
    def __init__(self, width):
        super().__init__({"data": unsigned(WIDTH.validate("width", width)),
                          "last": unsigned(1)})


def _position_shape(width):
    # At least one bit, so that a 1-bit beat still has a (constant 0) position signal.
    return unsigned(max(1, ceil_log2(width)))


def _tree_sum(terms):
    # A balanced adder tree: a chain of additions would be as deep as there are terms.
    while len(terms) > 1:
        pairs = [a + b for a, b in zip(terms[0::2], terms[1::2], strict=False)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


def _scale(value, width):
    """``(value · width) >> len(value)``: a uniform ``value`` mapped onto ``0 … width−1``.

    Written as shifts and adds of the constant's one bits, so it takes no DSP block."""
    product = _tree_sum([value << k for k in range(width.bit_length()) if (width >> k) & 1])
    return product[len(value):]


def _xorshift64(x):
    a, b, c = XORSHIFT64_SHIFTS
    x = x ^ (x << a)[:64]
    x = x ^ (x >> b)
    return x ^ (x << c)[:64]


class RandomSource(wiring.Component):
    """Draw one pseudo-random decision word and one bit position per step (generator ``index``).

    Behaviour: the state is an xorshift64 generator (see the module docstring). ``load`` sets it
    from ``seed``; otherwise ``advance`` steps it. ``load`` wins.

    Members
    -------
    seed : In(32)
        Seed, taken while ``load`` is high.
    load : In(1)
        Restart the sequence from ``seed`` at the clock edge.
    advance : In(1)
        Step to the next value at the clock edge.
    next_word : Out(32)
        Low half of the state from the next cycle on (combinational from ``load``, ``advance``
        and ``seed``): uniform over 0 … 2^32−1, for a decision registered beside the state.
    position : Out(ceil(log2(width)))
        ``(high half · width) >> 32`` of the current state: uniform over the ``width`` bits of
        a beat.

    Latency: ``position`` is a register; it changes 1 cycle after ``load`` or ``advance``.
    Throughput: one step per cycle.
    """
    def __init__(self, index, width):
        self.index, self.width = index, WIDTH.validate("width", width)
        super().__init__({
            "seed": In(32), "load": In(1), "advance": In(1),
            "next_word": Out(32), "position": Out(_position_shape(width)),
        })

    def elaborate(self, platform):
        m = Module()
        odd = 2 * self.index + 1
        # Loaded from `seed` under `rst`: a reset value would override the load.
        state = Signal(64, reset_less=True)
        position = Signal(_position_shape(self.width), reset_less=True)
        start = Cat(self.seed ^ ((SEED_LO * odd) & 0xFFFF_FFFF),
                    self.seed ^ ((SEED_HI * odd) & 0xFFFF_FFFF))
        following = Signal(64)
        m.d.comb += following.eq(Mux(self.load, start,
                                     Mux(self.advance, _xorshift64(state), state)))
        # `position` is scaled from the state it goes with before that state is used, so the
        # multiply sits between two registers instead of in front of the data path.
        m.d.sync += [state.eq(following), position.eq(_scale(following[32:], self.width))]
        m.d.comb += [self.next_word.eq(following[:32]), self.position.eq(position)]
        return m


def _one_hot(position, width):
    return Cat(*(position == j for j in range(width)))


class RandomBitErrors(wiring.Component):
    """Choose the random bit errors of the next beat: ``injectors`` independent injectors.

    Behaviour: injector *k* (generator *k*+1) fires with probability ``threshold``/2^32 and then
    picks one bit, uniform over the beat. ``mask`` is the OR of the bits picked (two injectors
    on one bit flip it once). Each ``advance`` (a beat taking the mask) draws the next mask.

    Members
    -------
    seed, load : In
        As :class:`RandomSource`.
    advance : In(1)
        A beat takes ``mask`` in this cycle; the next beat gets fresh draws.
    threshold : In(32)
        Per-injector firing threshold. It is registered: a beat uses the value of the cycle
        before it.
    mask : Out(width)
        Bits to flip in this cycle's beat.

    Latency: ``mask`` is combinational from registers; it follows ``advance``, ``load`` and
    ``threshold`` 1 cycle later. Throughput: one mask per cycle.
    """
    def __init__(self, width, injectors):
        self.width = WIDTH.validate("width", width)
        self.injectors = INJECTORS.validate("injectors", injectors)
        super().__init__({
            "seed": In(32), "load": In(1), "advance": In(1), "threshold": In(32),
            "mask": Out(width),
        })

    def elaborate(self, platform):
        m = Module()
        hits = []
        for k in range(self.injectors):
            source = RandomSource(k + 1, self.width)
            m.submodules[f"injector{k}"] = source
            m.d.comb += [source.seed.eq(self.seed), source.load.eq(self.load),
                         source.advance.eq(self.advance)]
            # The decision is registered beside the state it is drawn from, so the 32-bit
            # comparison is not in front of the data path. Like the state, it is loaded
            # under `rst`.
            fire = Signal(name=f"fire{k}", reset_less=True)
            m.d.sync += fire.eq(source.next_word < self.threshold)
            hits.append(Mux(fire, _one_hot(source.position, self.width), 0))
        m.d.comb += self.mask.eq(_or_all(hits))
        return m


def _or_all(values):
    result = values[0]
    for value in values[1:]:
        result = result | value
    return result


class BurstErrors(wiring.Component):
    """Flip a run of consecutive data bits on request: the error burst of a noisy line.

    Behaviour: ``strobe`` starts a burst of ``length`` bits when no burst is pending or in
    progress and ``length`` is not zero (``started`` says it was taken; other strobes are
    ignored). The burst begins at a random bit (generator 0, uniform over the beat) of the first
    beat after the strobe's cycle, and goes on from bit 0 of the following beats until
    ``length`` bits are flipped. Only beats consume burst bits: idle cycles do not. ``load``
    cancels a burst and restarts the generator from ``seed``.

    Members
    -------
    seed, load : In
        As :class:`RandomSource`.
    strobe : In(1)
        Start a burst.
    length : In(16)
        Burst length in bits, taken with the strobe.
    advance : In(1)
        A beat takes ``mask`` in this cycle.
    mask : Out(width)
        Burst bits to flip in this cycle's beat.
    started : Out(1)
        The strobe of this cycle was taken.

    Latency: the burst hits the first beat after the strobe's cycle; ``mask`` is combinational
    from registers. Throughput: one mask per cycle.
    """
    def __init__(self, width):
        self.width = WIDTH.validate("width", width)
        super().__init__({
            "seed": In(32), "load": In(1), "strobe": In(1), "length": In(BURST_LENGTH_BITS),
            "advance": In(1), "mask": Out(width), "started": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        width = self.width
        m.submodules.source = source = RandomSource(0, width)
        # The burst is kept as the bits to flip in the next beat, begin … end−1, and the bits
        # left for the beats after it, so the mask is two small comparisons per bit.
        begin = Signal(_position_shape(width))
        end = Signal(range(width + 1))             # 0: no burst
        rest = Signal(BURST_LENGTH_BITS)
        active = end != 0

        def carry(total):
            """The next beat gets bits up to `total` (from its bit 0), the rest goes on."""
            over = total > width
            m.d.sync += [end.eq(Mux(over, width, total)), rest.eq(Mux(over, total - width, 0))]

        # A bit past the largest value `begin` can hold needs no comparison.
        last_begin = (1 << len(begin)) - 1
        from_begin = [(begin <= j) if j < last_begin else 1 for j in range(width)]
        m.d.comb += [
            self.mask.eq(Cat(*(after & (j < end) for j, after in enumerate(from_begin)))),
            source.seed.eq(self.seed), source.load.eq(self.load),
            self.started.eq(self.strobe & ~active & (self.length != 0) & ~self.load),
            # Each burst takes one position, when it starts.
            source.advance.eq(self.started),
        ]
        with m.If(self.load):
            m.d.sync += [begin.eq(0), end.eq(0), rest.eq(0)]
        with m.Elif(self.started):
            m.d.sync += begin.eq(source.position)
            carry(source.position + self.length)
        with m.Elif(self.advance & active):
            m.d.sync += begin.eq(0)
            carry(rest)
        return m


class DelayLine(wiring.Component):
    """Delay every cycle's slot (a beat or an idle cycle) by a run-time number of cycles.

    Behaviour: the line is a FIFO of slots in a memory of ``2^ceil(log2 max_delay)`` rows (at
    least 2). With ``n`` slots held at the start of a cycle and target ``D`` (``delay`` clamped
    to 1 … ``max_delay``), each cycle:

    * ``n = D − 1``: the cycle's slot goes in, the oldest comes out (latency exactly ``D``);
    * ``n < D − 1`` (``delay`` went up): the slot goes in, nothing comes out, so the output
      shows one extra idle cycle; the beats already in the line wait, none is lost;
    * ``n > D − 1`` (``delay`` went down): an idle input cycle is not stored, a beat is; the
      oldest slot comes out. The line shortens by one for each idle input cycle until ``n =
      D − 1``: no beat is dropped, repeated or reordered, but at full rate (no idle cycle) a
      decrease waits for the first gap.

    After reset the line is empty, so it starts in the second case.

    Members
    -------
    i_valid : In(1)
        This cycle carries a beat.
    i_beat : In(shape)
        The beat.
    delay : In(range(max_delay + 1))
        Target latency in cycles; 0 acts as 1, values above ``max_delay`` as ``max_delay``.
    o_valid : Out(1)
        A beat comes out in this cycle.
    o_beat : Out(shape)
        The beat.

    Latency: ``D`` cycles from ``i_valid`` to ``o_valid`` at a steady ``delay``. Throughput: one
    slot per cycle. The output is the memory's read register (``o_valid`` is the AND of two
    registers).
    """
    def __init__(self, shape, max_delay):
        self.shape, self.max_delay = shape, DELAY.validate("max_delay", max_delay)
        super().__init__({
            "i_valid": In(1), "i_beat": In(shape), "delay": In(range(max_delay + 1)),
            "o_valid": Out(1), "o_beat": Out(shape),
        })

    def elaborate(self, platform):
        m = Module()
        depth = 1 << max(1, ceil_log2(self.max_delay))
        beat_bits = Shape.cast(self.shape).width
        m.submodules.memory = memory = Memory(shape=unsigned(1 + beat_bits), depth=depth,
                                              init=[])
        write = memory.write_port()
        # Transparent: at delay 1 the slot written in a cycle is the one read in that cycle.
        read = memory.read_port(transparent_for=(write,))

        write_at = Signal(range(depth))
        read_at = Signal(range(depth))
        # The latency a slot that goes in now gets: the slots held, plus 1. Kept in a register
        # (not computed from the pointers) so that the decisions below are one comparison away
        # from registers.
        latency = Signal(range(1, self.max_delay + 1), init=1)
        target = Signal(range(1, self.max_delay + 1))
        clamped = Mux(self.delay == 0, 1, self.delay)
        if (1 << len(self.delay)) - 1 > self.max_delay:   # the port can name a longer delay
            clamped = Mux(self.delay > self.max_delay, self.max_delay, clamped)
        m.d.comb += target.eq(clamped)
        grow, shrink = latency < target, latency > target
        push = self.i_valid | ~shrink
        pop = ~grow
        with m.If(push & ~pop):
            m.d.sync += latency.eq(latency + 1)
        with m.Elif(pop & ~push):
            m.d.sync += latency.eq(latency - 1)

        m.d.comb += [
            write.addr.eq(write_at), write.data.eq(Cat(self.i_valid, self.i_beat)),
            write.en.eq(push),
            read.addr.eq(read_at),
        ]
        with m.If(push):
            m.d.sync += write_at.eq(write_at + 1)
        with m.If(pop):
            m.d.sync += read_at.eq(read_at + 1)
        popped = Signal()
        m.d.sync += popped.eq(pop)
        m.d.comb += [self.o_valid.eq(popped & read.data[0]),
                     self.o_beat.eq(read.data[1:])]
        return m


@parameters(width=WIDTH, max_delay=DELAY, injectors=INJECTORS)
class LinkChannel(wiring.Component):
    """Carry a beat stream across a simulated line: delay, random bit errors, bursts, link loss.

    Behaviour (Ref: spec §6):

    * **Never back-pressures.** ``i.ready`` is always 1. ``o.valid`` does not wait for
      ``o.ready``: a beat offered while ``o.ready`` is low is lost and counted
      (``count_overruns``), as on a real line.
    * **Delay.** Each beat on ``i`` is on ``o`` exactly ``delay`` cycles later; idle cycles are
      carried too, so the gaps between beats are kept. ``delay`` may change at any time: an
      increase by Δ shows at once as Δ extra idle cycles on ``o``, a decrease takes effect one
      cycle per idle cycle on ``i``; no beat is ever lost, repeated or reordered by a change
      (:class:`DelayLine`). 0 acts as 1, values above ``max_delay`` as ``max_delay``.
    * **Random bit errors.** Each of ``injectors`` injectors fires on a beat with probability
      ``error_threshold``/2^32 and flips one bit, uniform over the ``width`` data bits; two
      injectors on one bit flip it once. The bit error rate is therefore
      ``BER = 1 − (1 − error_threshold / 2^32 / width)^injectors ≈ injectors ·
      error_threshold / 2^32 / width``; for a target BER set ``error_threshold = round(BER ·
      width · 2^32 / injectors)``. Errors in one beat are independent of those in any other,
      and within a beat independent bit errors are approximated well while ``BER · width`` (the
      mean errors per beat) is small compared with 1; a beat never carries more than
      ``injectors`` random errors.
    * **Bursts.** ``burst`` (a strobe) flips ``burst_length`` consecutive data bits starting at a
      random bit of the first beat after the strobe, continuing into the following beats
      (:class:`BurstErrors`). A strobe during a burst, or with ``burst_length`` 0, is ignored.
    * **Link down.** While ``link_up`` is low, ``o.valid`` is 0: the beats due in those cycles
      are lost and counted (``count_lost``). Beats still in the line come out once it is up.
    * **Framing.** ``last`` passes untouched; only ``data`` bits are flipped.
    * **Determinism.** ``seed`` is loaded into every generator while ``rst`` or ``reseed`` is
      high; the same seed and the same input (beats and their cycles, settings) give the same
      output, cycle for cycle. Random draws advance only on beats (one draw per beat and
      injector), so the errors of the n-th beat after a (re)seed do not depend on the idle
      cycles between beats. A beat in the ``reseed`` cycle still takes the old draws. ``reseed``
      also cancels a burst.

    Members
    -------
    i : In(stream.Signature(LineBeatLayout(width)))
        Beats sent by one link end.
    o : Out(stream.Signature(LineBeatLayout(width)))
        Beats received by the other end.
    delay : In(range(max_delay + 1))
        Latency in cycles, 1 … ``max_delay``.
    error_threshold : In(32)
        Per-injector firing probability · 2^32; a change applies to beats from the next cycle.
    burst_length : In(16)
        Bits flipped by a burst.
    burst : In(1)
        Strobe: start a burst.
    link_up : In(1)
        The line carries beats; low: ``o.valid`` is 0 and beats are lost.
    seed : In(32)
        Seed of the random generators, loaded while ``rst`` or ``reseed`` is high.
    reseed : In(1)
        Restart the random sequences from ``seed`` (the line itself keeps its beats).
    count : Out(Counters)
        ``flipped_bits``: data bits flipped (random and burst); ``errored_beats``: beats
        with at least one flipped bit; ``bursts``: burst strobes taken; ``lost``: beats lost
        because ``link_up`` was low when they were due on ``o``; ``overruns``: beats lost
        because ``o.ready`` was low.

    The counters saturate at 2^32 − 1. ``flipped_bits`` and ``errored_beats``
    include a beat 4 and 2 cycles after it enters the line; the others count in the cycle of
    the event (visible the next cycle).

    Latency: exactly ``delay`` cycles from a beat on ``i`` to the same beat on ``o`` (with the
    ``delay`` of the last change settled, see above).

    Throughput: one beat per cycle, back to back, in both directions. ``i.ready`` is constant;
    ``o.valid`` and ``o.payload`` come from registers, ``o.valid`` also combinationally from
    ``link_up``.
    """
    COUNTERS = ("flipped_bits", "errored_beats", "bursts", "lost", "overruns")

    def __init__(self, width=80, max_delay=64, injectors=4):
        self.width = width
        self.max_delay = max_delay
        self.injectors = injectors
        layout = LineBeatLayout(width)
        super().__init__({
            "i": In(stream.Signature(layout)),
            "o": Out(stream.Signature(layout)),
            "delay": In(range(max_delay + 1)),
            **channel_controls(),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        width = self.width
        m.submodules.random = random = RandomBitErrors(width, self.injectors)
        m.submodules.bursts = bursts = BurstErrors(width)
        m.submodules.line = line = DelayLine(LineBeatLayout(width), self.max_delay)

        load = Signal()
        beat = self.i.valid
        mask = Signal(width)
        m.d.comb += [
            self.i.ready.eq(1),
            load.eq(ResetSignal() | self.reseed),
            random.seed.eq(self.seed), random.load.eq(load), random.advance.eq(beat),
            random.threshold.eq(self.error_threshold),
            bursts.seed.eq(self.seed), bursts.load.eq(load), bursts.advance.eq(beat),
            bursts.strobe.eq(self.burst), bursts.length.eq(self.burst_length),
            mask.eq(random.mask | bursts.mask),
            line.delay.eq(self.delay),
            line.i_valid.eq(beat),
            line.i_beat.data.eq(self.i.payload.data ^ mask),
            line.i_beat.last.eq(self.i.payload.last),
            self.o.valid.eq(line.o_valid & self.link_up),
            self.o.payload.eq(line.o_beat),
        ]

        counters = CounterBank(m, self.count)
        flipped_bits, errored_beats = counters.flipped_bits, counters.errored_beats
        bursts_taken, lost, overruns = counters.bursts, counters.lost, counters.overruns
        # Counting flipped bits needs a population count of the mask: registered masks, bits
        # counted per octet, then the octets summed, each a pipeline stage, keep it (and the
        # 32-bit add) off the data path and short.
        flips = Signal(width)
        m.d.sync += flips.eq(Mux(beat, mask, 0))
        octet_counts = []
        for n, low in enumerate(range(0, width, 8)):
            bits = [flips[j] for j in range(low, min(low + 8, width))]
            count = Signal(range(len(bits) + 1), name=f"flips_octet{n}")
            m.d.sync += count.eq(_tree_sum(bits))
            octet_counts.append(count)
        flip_count = Signal(range(width + 1))
        m.d.sync += flip_count.eq(_tree_sum(octet_counts))
        flipped_bits.add(m, flip_count, flip_count != 0)
        errored_beats.increment(m, flips != 0)
        bursts_taken.increment(m, bursts.started)
        lost.increment(m, line.o_valid & ~self.link_up)
        overruns.increment(m, self.o.valid & ~self.o.ready)
        return m
