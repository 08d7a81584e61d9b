"""LinkChannel against its golden model (sim/models/channel.py), cycle for cycle.

Every cocotb test records the channel's inputs and outputs in every cycle and replays them
through the model at the end: each beat must come out in the predicted cycle with the predicted
bits flipped, and the counters must agree. Each test also checks its own property directly,
without the model: exact latency and full rate, the measured bit error rate against the
configured one, bursts as runs of consecutive bits, beats lost while the link is down, same
seed same output, and delay changes that lose, repeat or reorder nothing.

The plain pytest functions at the end check the model's generators (no simulator).
"""

import gc
import math
import random
import warnings

import cocotb
import pytest
from amaranth.hdl import UnusedElaboratable
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSource

from ethlink.exports import EXPORTS
from ethlink.rtl.phy.channel import LinkChannel
from ethlink.sim.models.channel import (ChannelModel, CycleInputs, CycleOutputs,
                                        ber_for_threshold, scale, seed_state,
                                        threshold_for_ber, xorshift64)
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import TransferLog, axis_sink, pauses, read_counters, start

EXPORT = "link_channel"

#: The channel's configuration inputs (plain ports of the export).
SETTINGS = ("delay", "error_threshold", "burst_length", "burst", "link_up", "seed", "reseed")
COUNTERS = ("flipped_bits", "errored_beats", "bursts", "lost", "overruns")


class Line:
    """The channel under test: drives its settings, records every cycle, replays the model.

    ``cycles[n]`` is ``(CycleInputs, CycleOutputs)`` of the n-th recorded cycle (sampled after
    each rising edge, reset cycles included), the form :class:`ChannelModel` takes.
    """
    def __init__(self, dut):
        self.dut = dut
        self.params = {key: export_params().get(key, default)
                       for key, (default, _) in EXPORTS[EXPORT].params.items()}
        self.width = self.params["width"]
        self.max_delay = self.params["max_delay"]
        self.cycles = []
        self.errors = []
        self.set(delay=1, error_threshold=0, burst_length=0, burst=0, link_up=1, seed=1,
                 reseed=0)
        cocotb.start_soon(self._record())

    def set(self, **settings):
        for name, value in settings.items():
            getattr(self.dut, name).value = value

    async def pulse(self, **settings):
        """Hold ``settings`` for exactly one cycle (strobes: ``burst=1``, ``reseed=1``)."""
        await RisingEdge(self.dut.clk)
        self.set(**settings)
        await RisingEdge(self.dut.clk)
        self.set(**{name: 0 for name in settings if name in ("burst", "reseed")})

    async def reset(self, seed):
        await RisingEdge(self.dut.clk)
        self.set(seed=seed)
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, 2)
        self.dut.rst.value = 0

    def source(self, rng, idle=0.0):
        """A cocotbext-axi source whose "bytes" are whole beats."""
        source = AxiStreamSource(AxiStreamBus.from_prefix(self.dut, "s_axis"), self.dut.clk,
                                 self.dut.rst, byte_size=self.width)
        source.log.setLevel("WARNING")
        source.set_pause_generator(pauses(rng, idle))
        return source

    async def drain(self, source):
        """Wait until ``source`` has sent everything and the line is empty and settled."""
        while not source.idle():
            await RisingEdge(self.dut.clk)
        await ClockCycles(self.dut.clk, 2 * self.max_delay + 8)

    @property
    def now(self):
        return len(self.cycles)

    async def _record(self):
        d = self.dut
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            x = CycleInputs(valid=int(d.s_axis_tvalid.value), data=int(d.s_axis_tdata.value),
                            last=int(d.s_axis_tlast.value), ready=int(d.m_axis_tready.value),
                            rst=int(d.rst.value),
                            **{name: int(getattr(d, name).value) for name in SETTINGS})
            y = CycleOutputs(valid=int(d.m_axis_tvalid.value), data=int(d.m_axis_tdata.value),
                             last=int(d.m_axis_tlast.value))
            if not int(d.s_axis_tready.value):
                self.errors.append(f"cycle {len(self.cycles)}: s_axis_tready low")
            self.cycles.append((x, y))

    def beats_in(self, begin=0):
        """``(cycle, data, last)`` of every beat sent from cycle ``begin`` on."""
        return [(n, x.data, x.last) for n, (x, _) in enumerate(self.cycles[begin:], begin)
                if x.valid and not x.rst]

    def beats_out(self, begin=0):
        """``(cycle, data, last)`` of every beat delivered from cycle ``begin`` on."""
        return [(n, y.data, y.last) for n, (_, y) in enumerate(self.cycles[begin:], begin)
                if y.valid]

    def counters(self):
        return read_counters(self.dut, COUNTERS)

    def check_model(self):
        """Replay every recorded cycle through the model; outputs and counters must match."""
        assert not self.errors, self.errors[:5]
        model = ChannelModel(**self.params)
        mismatches = []
        for n, (x, got) in enumerate(self.cycles):
            want = model.step(x)
            if got.valid != want.valid or want.valid and (got.data, got.last) != (want.data,
                                                                                 want.last):
                mismatches.append(f"cycle {n}: got valid={got.valid} data={got.data:#x} "
                                  f"last={got.last}, model valid={want.valid} "
                                  f"data={want.data:#x} last={want.last} "
                                  f"(flipped {got.data ^ want.data:#x})")
        assert not mismatches, f"{len(mismatches)} cycles differ from the model:\n" + \
            "\n".join(mismatches[:8])
        # Counters are read after the last recorded cycle's edge, which the model has not
        # yet applied; the tests end with a quiet line, so nothing changes there.
        want = {name: getattr(model.counters, name) for name in COUNTERS}
        assert self.counters() == want, f"counters {self.counters()}, model {want}"


def random_frames(rng, width, count, max_beats=12):
    return [AxiStreamFrame([rng.getrandbits(width) for _ in range(rng.randint(1, max_beats))])
            for _ in range(count)]


async def send(source, frames):
    for frame in frames:
        await source.send(frame)


def popcount(value):
    return bin(value).count("1")


@cocotb.test()
async def random_traffic(dut):
    """Random frames with random idles and a little back-pressure, while delay, error rate,
    bursts, link state and seed change at random: every cycle as the model says."""
    rng = random.Random(cocotb.RANDOM_SEED)
    line = Line(dut)
    line.set(seed=rng.getrandbits(32), delay=rng.randint(1, line.max_delay))
    await start(dut)
    source = line.source(rng, idle=0.3)
    sink = axis_sink(dut, "m_axis", rng, backpressure=0.05)
    delay_port_max = (1 << len(dut.delay)) - 1

    async def disturb():
        """Each cycle, maybe change a setting: the line must follow any of them at any time."""
        down = 0
        while True:
            await RisingEdge(dut.clk)
            line.set(burst=0, reseed=0)
            down = max(0, down - 1)
            line.set(link_up=int(down == 0))
            roll = rng.random()
            if roll < 0.01:
                # Mostly in range; 0 and values above max_delay are clamped.
                line.set(delay=rng.choice([rng.randint(1, line.max_delay)] * 6 +
                                          [0, rng.randint(line.max_delay, delay_port_max)]))
            elif roll < 0.016:
                line.set(burst=1, burst_length=rng.randint(1, 4 * line.width))
            elif roll < 0.019:
                down = rng.randint(1, 20)
            elif roll < 0.021:
                line.set(reseed=1, seed=rng.getrandbits(32))
            elif roll < 0.026:
                line.set(error_threshold=threshold_for_ber(rng.choice([0, 1e-4, 1e-3, 1e-2]),
                                                           line.width, line.params["injectors"]))

    task = cocotb.start_soon(disturb())
    await send(source, random_frames(rng, line.width, 400))
    while not source.idle():
        await RisingEdge(dut.clk)
    task.cancel()
    line.set(burst=0, reseed=0, link_up=1)
    await line.drain(source)
    line.check_model()
    counters = line.counters()
    assert counters["overruns"] == sum(1 for x, y in line.cycles if y.valid and not x.ready)
    # The run exercised what it claims to.
    assert sink.count() > 0
    assert all(counters[name] > 0 for name in COUNTERS), counters


@cocotb.test()
async def latency_and_full_rate(dut):
    """Without idles or errors: every beat on m_axis exactly `delay` cycles after it entered,
    unchanged (tlast too), one beat per cycle, for delays 1, 2, max_delay/2 and max_delay."""
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    line = Line(dut)
    counter = await start(dut)
    source = line.source(rng)
    axis_sink(dut, "m_axis")
    log_in = TransferLog(dut, "s_axis", counter)
    log_out = TransferLog(dut, "m_axis", counter)
    for delay in sorted({1, 2, max(1, line.max_delay // 2), line.max_delay}):
        line.set(delay=delay)
        await line.drain(source)
        first_in, first_out = len(log_in.transfers), len(log_out.transfers)
        frames = random_frames(rng, line.width, 12)
        await send(source, frames)
        await line.drain(source)
        sent = [beat for frame in frames for beat in frame.tdata]
        times_in = [cycle for cycle, _ in log_in.transfers[first_in:]]
        times_out = [cycle for cycle, _ in log_out.transfers[first_out:]]
        assert len(times_out) == len(sent), f"delay {delay}: {len(times_out)} beats out of " \
            f"{len(sent)}"
        latencies = {b - a for a, b in zip(times_in, times_out, strict=True)}
        assert latencies == {delay}, f"delay {delay}: latencies {latencies}"
        assert times_out == list(range(times_out[0], times_out[0] + len(sent))), \
            f"delay {delay}: not one beat per cycle"
    beats_in, beats_out = line.beats_in(), line.beats_out()
    assert [(d, last) for _, d, last in beats_out] == [(d, last) for _, d, last in beats_in]
    line.check_model()


@cocotb.test()
async def bit_error_rate(dut):
    """Full-rate random beats: the flipped bits match the configured BER within 5 sigma, no
    beat carries more than `injectors` random errors, and the counters count them; at the
    largest threshold nearly every injector fires on every beat."""
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    line = Line(dut)
    injectors = line.params["injectors"]
    ber = 1e-3
    threshold = threshold_for_ber(ber, line.width, injectors)
    line.set(seed=rng.getrandbits(32), delay=rng.randint(1, line.max_delay),
             error_threshold=threshold)
    await start(dut)
    source = line.source(rng)
    axis_sink(dut, "m_axis")

    async def flips_per_beat(beats):
        begin = line.now
        await send(source, [AxiStreamFrame([rng.getrandbits(line.width)
                                            for _ in range(beats)])])
        await line.drain(source)
        sent, got = line.beats_in(begin), line.beats_out(begin)
        assert [last for *_, last in got] == [last for *_, last in sent]
        return [popcount(a ^ b) for (_, a, _), (_, b, _) in zip(sent, got, strict=True)]

    beats = 10000
    flips = await flips_per_beat(beats)
    expected = beats * line.width * ber_for_threshold(threshold, line.width, injectors)
    measured = sum(flips)
    # At most one error per injector and beat: the count's variance is below its mean.
    assert abs(measured - expected) <= 5 * expected ** 0.5, \
        f"{measured} bits flipped in {beats} beats, expected {expected:.0f} (BER {ber})"
    assert max(flips) <= injectors
    counters = line.counters()
    assert counters["flipped_bits"] == measured
    assert counters["errored_beats"] == sum(1 for n in flips if n)

    line.set(error_threshold=(1 << 32) - 1)
    flips = await flips_per_beat(500)
    # Every injector fires (unless its word is 2^32-1); distinct bits are flipped once.
    distinct = line.width * (1 - (1 - 1 / line.width) ** injectors)
    assert abs(sum(flips) / len(flips) - distinct) < 0.2, sum(flips) / len(flips)
    line.check_model()


def runs(bits):
    """``(start, length)`` of each run of ones in the integer ``bits``."""
    found, position = [], 0
    while bits:
        while not bits & 1:
            bits >>= 1
            position += 1
        length = 0
        while bits & 1:
            bits >>= 1
            length += 1
        found.append((position, length))
        position += length
    return found


@cocotb.test()
async def bursts(dut):
    """On all-zero beats with idles, each burst is one run of exactly burst_length ones that
    starts in the first beat after the strobe and runs on across beats (idles consume none);
    strobes during a burst or with burst_length 0 are ignored."""
    rng = random.Random(cocotb.RANDOM_SEED + 3)
    line = Line(dut)
    width = line.width
    line.set(seed=rng.getrandbits(32), delay=rng.randint(1, line.max_delay))
    await start(dut)
    source = line.source(rng, idle=0.3)
    axis_sink(dut, "m_axis")
    taken = 0
    lengths = [1, 2, width - 1, width, width + 1, 3 * width + 5, rng.randint(1, 6 * width)]
    for length in lengths + [0]:
        begin = line.now
        await line.pulse(burst=1, burst_length=length)
        taken += length != 0
        await line.pulse(burst=1)                  # while the burst waits for a beat: ignored
        beats = (length + 2 * width - 1) // width + 1   # the burst, and at least one beat more
        if length > width:
            await send(source, [AxiStreamFrame([0])])
            while not source.idle():
                await RisingEdge(dut.clk)
            await line.pulse(burst=1)              # in the middle of the burst: ignored
            await send(source, [AxiStreamFrame([0] * (beats - 1))])
        else:
            await send(source, [AxiStreamFrame([0] * beats)])
        await line.drain(source)
        out = line.beats_out(begin)
        assert len(out) == beats
        bits = sum(data << (n * width) for n, (_, data, _) in enumerate(out))
        if length == 0:
            assert bits == 0, "a strobe with burst_length 0 flipped bits"
            continue
        found = runs(bits)
        assert len(found) == 1 and found[0][1] == length and found[0][0] < width, \
            f"burst of {length} bits: runs (start, length) {found}"
        assert line.counters()["bursts"] == taken
    line.check_model()


@cocotb.test()
async def link_down_and_up(dut):
    """While link_up is low, m_axis_tvalid stays low and every beat due is counted lost; the
    beats due after it comes back are delivered, on time."""
    rng = random.Random(cocotb.RANDOM_SEED + 4)
    line = Line(dut)
    delay = rng.randint(1, line.max_delay)
    line.set(seed=rng.getrandbits(32), delay=delay)
    await start(dut)
    source = line.source(rng, idle=0.2)
    axis_sink(dut, "m_axis")
    begin = line.now
    task = cocotb.start_soon(send(source, random_frames(rng, line.width, 120)))
    for _ in range(3):
        await ClockCycles(dut.clk, rng.randint(40, 120))
        line.set(link_up=0)
        await ClockCycles(dut.clk, rng.randint(5, 60))
        line.set(link_up=1)
    await task
    await line.drain(source)

    cycles = line.cycles
    due = {n + delay: (data, last) for n, data, last in line.beats_in(begin)}
    down = [n for n in range(begin, len(cycles)) if not cycles[n][0].link_up]
    assert down and all(not cycles[n][1].valid for n in down)
    lost = sum(1 for n in down if n in due)
    delivered = {n: (data, last) for n, data, last in line.beats_out(begin)}
    assert delivered == {n: beat for n, beat in due.items() if cycles[n][0].link_up}
    assert lost > 0 and max(delivered) > max(down), "traffic did not resume after the link"
    assert line.counters()["lost"] == lost
    line.check_model()


@cocotb.test()
async def same_seed_same_output(dut):
    """The same seed gives the same beats out, after a reset or a reseed; another seed gives
    other errors. Random errors and a burst, full rate."""
    rng = random.Random(cocotb.RANDOM_SEED + 5)
    line = Line(dut)
    seed = rng.getrandbits(32)
    line.set(seed=seed, delay=rng.randint(1, line.max_delay), burst_length=2 * line.width,
             error_threshold=threshold_for_ber(1e-2, line.width, line.params["injectors"]))
    await start(dut)
    source = line.source(rng)
    axis_sink(dut, "m_axis")
    frames = random_frames(rng, line.width, 20)

    async def run():
        begin = line.now
        await line.pulse(burst=1)
        await send(source, frames)
        await line.drain(source)
        return [(data, last) for _, data, last in line.beats_out(begin)]

    first = await run()
    await line.reset(seed)
    assert await run() == first, "same seed after a reset: different output"
    await line.pulse(reseed=1, seed=seed)
    assert await run() == first, "same seed after a reseed: different output"
    await line.pulse(reseed=1, seed=seed ^ 0x5A5A_5A5A)
    other = await run()
    assert [last for _, last in other] == [last for _, last in first]
    assert other != first, "another seed gave the same errors"
    line.check_model()


@cocotb.test()
async def delay_change(dut):
    """At full rate, a delay increase by d shows as exactly d idle cycles on m_axis; after a
    decrease, each idle input cycle shortens the line by one until it reaches the new delay.
    No beat is lost, repeated or reordered."""
    rng = random.Random(cocotb.RANDOM_SEED + 6)
    line = Line(dut)
    low = rng.randint(1, max(1, line.max_delay // 2))
    high = rng.randint(low + 1, line.max_delay) if line.max_delay > low else low
    line.set(seed=rng.getrandbits(32), delay=low)
    await start(dut)
    source = line.source(rng)
    axis_sink(dut, "m_axis")
    begin = line.now
    beats = [rng.getrandbits(line.width) for _ in range(3 * line.max_delay + 40)]
    task = cocotb.start_soon(send(source, [AxiStreamFrame(beats)]))
    await ClockCycles(dut.clk, line.max_delay + 10)
    line.set(delay=high)
    await task
    await line.drain(source)
    out = line.beats_out(begin)
    assert [data for _, data, _ in out] == beats
    gaps = [b - a - 1 for (a, _, _), (b, _, _) in zip(out, out[1:], strict=False)]
    assert [gap for gap in gaps if gap] == ([high - low] if high > low else []), gaps

    # Back down, with idles: a beat's latency is the old delay less the idle input cycles
    # since the change, down to the new delay.
    begin = line.now
    line.set(delay=low)
    source.set_pause_generator(pauses(rng, 0.5))
    await send(source, random_frames(rng, line.width, 60))
    await line.drain(source)
    sent, got = line.beats_in(begin), line.beats_out(begin)
    assert [(d, last) for _, d, last in got] == [(d, last) for _, d, last in sent]
    change = next(n for n in range(begin, line.now) if line.cycles[n][0].delay == low)
    idle_before = [0]
    for x, _ in line.cycles[change:]:
        idle_before.append(idle_before[-1] + (not x.valid))
    for (cycle_in, _, _), (cycle_out, _, _) in zip(sent, got, strict=True):
        want = max(low, high - idle_before[cycle_in - change])
        assert cycle_out - cycle_in == want, \
            f"beat of cycle {cycle_in}: latency {cycle_out - cycle_in}, expected {want}"
    assert cycle_out - cycle_in == low
    line.check_model()


def test_bad_parameters():
    # A constructor that raises still leaves a half-built component behind; when the garbage
    # collector finds it later, Amaranth warns that it was never elaborated, in whichever test
    # happens to run then. Collect it here, where that warning is expected.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        for kwargs in ({"width": 0}, {"width": 513}, {"max_delay": 0}, {"max_delay": 4097},
                       {"injectors": 0}, {"injectors": 17}, {"width": 8.0}):
            with pytest.raises(ValueError, match=next(iter(kwargs))):
                LinkChannel(**kwargs)
        gc.collect()
    with pytest.raises(ValueError, match="width must be an integer from 1 to 512"):
        EXPORTS[EXPORT].resolve_params({"width": "600"})


def _gf2_power(columns, exponent):
    """``M^exponent`` of a 64x64 GF(2) matrix given as 64 column bitmasks."""
    def apply(matrix, vector):
        result = 0
        for i in range(64):
            if (vector >> i) & 1:
                result ^= matrix[i]
        return result

    result = [1 << i for i in range(64)]
    while exponent:
        if exponent & 1:
            result = [apply(columns, c) for c in result]
        columns = [apply(columns, c) for c in columns]
        exponent >>= 1
    return result


def test_model_xorshift_full_period():
    """xorshift64 (13, 7, 17) visits all 2^64 - 1 nonzero states: its matrix has that order."""
    step = [xorshift64(1 << i) for i in range(64)]
    identity = [1 << i for i in range(64)]
    period = (1 << 64) - 1
    assert _gf2_power(step, period) == identity
    for prime in (3, 5, 17, 257, 641, 65537, 6700417):
        assert _gf2_power(step, period // prime) != identity


def test_model_seed_states_nonzero_and_distinct():
    for seed in (0, 0x9E3779B9, 0x7F4A7C15, (1 << 32) - 1, 12345):
        states = [seed_state(seed, g) for g in range(17)]
        assert all(states) and len(set(states)) == len(states)


@pytest.mark.parametrize("width", [72, 80, 1, 512])
def test_model_positions_uniform(width):
    """Bit positions from the scaled generator are uniform: chi-square within 6 sigma."""
    state, counts = seed_state(7, 1), [0] * width
    draws = 400 * width if width > 1 else 100
    for _ in range(draws):
        counts[scale(state >> 32, width)] += 1
        state = xorshift64(state)
    if width == 1:
        assert counts == [draws]
        return
    mean = draws / width
    chi2 = sum((c - mean) ** 2 / mean for c in counts)
    assert abs(chi2 - (width - 1)) < 6 * (2 * (width - 1)) ** 0.5, chi2


def test_model_threshold_rate():
    """An injector fires with probability threshold / 2^32."""
    state, threshold, draws = seed_state(11, 2), 1 << 29, 80000
    fired = 0
    for _ in range(draws):
        fired += (state & 0xFFFF_FFFF) < threshold
        state = xorshift64(state)
    p = threshold / 2 ** 32
    assert abs(fired - draws * p) < 5 * (draws * p * (1 - p)) ** 0.5


def _symbols_hit_per_beat(q, symbols=8, injectors=4):
    """Distribution of the distinct symbols hit in one beat when each of ``injectors`` fires
    with probability ``q`` on a bit uniform over ``symbols`` 10-bit symbols (exact)."""
    # hit[k][d]: after k firing injectors, probability that d distinct symbols are hit.
    hit = [[1.0]]
    for k in range(1, injectors + 1):
        row = [0.0] * (k + 1)
        for d, p in enumerate(hit[-1]):
            row[d] += p * d / symbols
            row[d + 1] += p * (symbols - d) / symbols
        hit.append(row)
    beat = [0.0] * (injectors + 1)
    for k in range(injectors + 1):
        fires = math.comb(injectors, k) * q ** k * (1 - q) ** (injectors - k)
        for d, p in enumerate(hit[k]):
            beat[d] += fires * p
    return beat


def _convolve(a, b):
    out = [0.0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def test_model_codeword_symbol_errors():
    """The injectors are independent: symbol errors per 34-beat codeword (80-bit beats, RS(272,
    258) at 8 symbols per beat) follow the exact distribution of independent injectors.

    A correlation between the generators (they are seeded from one seed) would show here as
    too many codewords with many errors; it is what the FEC's uncorrectable rate depends on.
    """
    width, injectors, beats, codewords = 80, 4, 34, 6000
    threshold = 1 << 27                       # q = 1/32 per injector and beat
    q = threshold / 2 ** 32
    expected = [1.0]
    beat = _symbols_hit_per_beat(q, width // 10, injectors)
    for _ in range(beats):
        expected = _convolve(expected, beat)
    states = [seed_state(3, g) for g in range(1, injectors + 1)]
    counts = [0] * len(expected)
    for _ in range(codewords):
        hit = set()
        for b in range(beats):
            for g, state in enumerate(states):
                if state & 0xFFFF_FFFF < threshold:
                    hit.add(b * 8 + scale(state >> 32, width) // 10)
                states[g] = xorshift64(state)
        counts[len(hit)] += 1
    # Chi-square over bins holding at least 5 expected codewords, the tails pooled.
    first = next(d for d, p in enumerate(expected) if p * codewords >= 5)
    last = max(d for d, p in enumerate(expected) if p * codewords >= 5)
    bins = ([sum(expected[:first + 1])] + expected[first + 1:last]
            + [sum(expected[last:])])
    observed = [sum(counts[:first + 1])] + counts[first + 1:last] + [sum(counts[last:])]
    chi2 = sum((o - p * codewords) ** 2 / (p * codewords) for o, p in zip(observed, bins))
    dof = len(bins) - 1
    assert abs(chi2 - dof) < 6 * (2 * dof) ** 0.5, (chi2, dof, observed)
    # The tail the FEC cares about: codewords with more than 7 symbol errors.
    tail = sum(counts[8:])
    mean = codewords * sum(expected[8:])
    assert abs(tail - mean) < 5 * mean ** 0.5, (tail, mean)


@pytest.mark.parametrize("width,max_delay,injectors", [(80, 64, 4), (72, 20, 3)])
def test_link_channel(width, max_delay, injectors, tmp_path):
    run_cocotb(EXPORT, "test_link_channel",
               {"width": width, "max_delay": max_delay, "injectors": injectors},
               test_dir=tmp_path)
