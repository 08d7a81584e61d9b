"""Rs272Decoder against the galois golden decoder (sim/models/fec.py).

Codewords from galois' encoder with every kind of error pattern the FEC meets — none, 1…7
random symbol errors, bursts, whole-symbol errors, errors in the parity symbols, and 8 or more
errors — back to back with random source idles and sink back-pressure. Each output message is
compared with galois' decoding of the same received word: the corrected symbols, the number of
corrected symbols and the uncorrectable flag. A word of 8 or more errors that both decoders
"correct" into another codeword (a miscorrection, possible for any bounded-distance decoder) is
counted and reported; it must still match galois symbol for symbol. Then latency and rate
without idles, and a misplaced tlast.
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamFrame

from ethlink.rtl.phy.fec.decoder import decoder_latency
from ethlink.rtl.phy.fec.symbols import beats_for
from ethlink.sim.models.fec import K, N, T, decode, encode
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import StreamChecker, TransferLog, start, symbol_stream_pair, wait_idle

EXPORT = "rs272_decoder"


def corrupt(codeword, positions, rng, whole=False):
    """``codeword`` with the symbols at ``positions`` changed (all ten bits if ``whole``)."""
    received = list(codeword)
    for p in positions:
        received[p] ^= 0x3FF if whole else rng.randrange(1, 1 << 10)
    return received


def error_cases(rng):
    """``(kind, sent codeword, received word)`` triples covering the error patterns of the
    FEC, including words that any bounded-distance decoder miscorrects."""
    cases = []

    def add(kind, positions=(), whole=False, codeword=None):
        if codeword is None:
            codeword = encode([rng.randrange(1 << 10) for _ in range(K)])
        cases.append((kind, codeword, corrupt(codeword, positions, rng, whole)))

    add("clean")
    add("all zero", codeword=encode([0] * K))
    for errors in range(1, T + 1):
        add(f"{errors} random", rng.sample(range(N), errors))
    for length in (2, 4, T):
        start_at = rng.randrange(N - length + 1)
        add(f"burst of {length}", range(start_at, start_at + length))
    add("whole symbols", rng.sample(range(N), T), whole=True)
    add("parity only", rng.sample(range(K, N), T))
    add("first and last", [0, N - 1])
    for errors in (T + 1, T + 2, 12, 20):
        add(f"{errors} random", rng.sample(range(N), errors))
    add("burst of 9", range(100, 109))
    # g(x) is a codeword of the minimum weight 15 (the encoding of the message 0…0 1). Adding
    # 8 of its 15 symbols to a codeword c gives a word 8 symbols from c and 7 from c + g(x):
    # a bounded-distance decoder "corrects" it to c + g(x).
    g = encode([0] * (K - 1) + [1])
    support = [p for p, symbol in enumerate(g) if symbol]
    sent = encode([rng.randrange(1 << 10) for _ in range(K)])
    received = list(sent)
    for p in rng.sample(support, T + 1):
        received[p] ^= g[p]
    cases.append(("miscorrection", sent, received))
    return cases


def check_message(got, sent, received, kind, n):
    """Compare one output message with galois' decoding of ``received``. Returns True for a
    miscorrection: a message that is not flagged but differs from the one ``sent``."""
    per_beat = export_params()["symbols_per_beat"]
    symbols = list(got.tdata)
    beats = beats_for(K, per_beat)
    assert len(symbols) == beats * per_beat, f"codeword {n} ({kind}): {len(symbols)} symbols"
    # cocotbext-axi keeps a tuser per symbol, folded into one int when all are equal.
    users = [got.tuser] * beats if isinstance(got.tuser, int) else got.tuser[::per_beat]
    uncorrectable = [u & 1 for u in users]
    assert len(set(uncorrectable)) == 1, \
        f"codeword {n} ({kind}): uncorrectable flag differs between beats: {uncorrectable}"
    assert all(u >> 1 == 0 for u in users[:-1]), \
        f"codeword {n} ({kind}): corrected count on a beat other than the last"
    corrected = users[-1] >> 1
    assert not any(symbols[K:]), f"codeword {n} ({kind}): padding symbols are not zero"

    want, want_corrected = decode(received)
    if want is None:
        assert uncorrectable[0] == 1, f"codeword {n} ({kind}): galois finds it " \
            f"uncorrectable, the decoder corrected {corrected} symbols"
        assert corrected == 0
        assert symbols[:K] == received[:K], \
            f"codeword {n} ({kind}): an uncorrectable message must leave as received"
        return False
    assert uncorrectable[0] == 0, f"codeword {n} ({kind}): galois corrects " \
        f"{want_corrected} symbols, the decoder says uncorrectable"
    assert corrected == want_corrected, \
        f"codeword {n} ({kind}): corrected {corrected} symbols, galois {want_corrected}"
    difference = next((i for i, (a, b) in enumerate(zip(symbols, want)) if a != b), None)
    assert difference is None, f"codeword {n} ({kind}): first wrong symbol at {difference}"
    return symbols[:K] != sent[:K]


async def run_cases(dut, cases, rng, idle, backpressure):
    source, sink = symbol_stream_pair(dut, rng, idle=idle, backpressure=backpressure)
    checker = StreamChecker(dut, "m_axis")
    for _, _, received in cases:
        await source.send(AxiStreamFrame(received))
    await wait_idle(dut, [source], [(sink, len(cases))])
    miscorrections = 0
    for n, (kind, sent, received) in enumerate(cases):
        miscorrections += check_message(await sink.recv(), sent, received, kind, n)
    checker.assert_clean()
    return miscorrections


def expected_counters(cases):
    symbols = codewords = uncorrectable = 0
    for _, _, received in cases:
        message, corrected = decode(received)
        if message is None:
            uncorrectable += 1
        elif corrected:
            symbols += corrected
            codewords += 1
    return {"count_corrected_symbols": symbols, "count_corrected_codewords": codewords,
            "count_uncorrectable_codewords": uncorrectable, "count_framing_errors": 0}


@cocotb.test()
async def error_patterns(dut):
    """Every error pattern, back to back, with random idles and back-pressure."""
    rng = random.Random(cocotb.RANDOM_SEED)
    await start(dut)
    cases = error_cases(rng) + error_cases(rng)
    rng.shuffle(cases)
    miscorrections = await run_cases(dut, cases, rng, idle=0.3, backpressure=0.3)
    await ClockCycles(dut.clk, 2)
    for name, value in expected_counters(cases).items():
        assert int(getattr(dut, name).value) == value, \
            f"{name} = {int(getattr(dut, name).value)}, expected {value}"
    # The two constructed miscorrections, and any chance one among the heavy words.
    assert miscorrections >= 2, f"{miscorrections} miscorrections, expected at least 2"
    dut._log.info("%d codewords, %d miscorrections (each as galois decodes it)", len(cases),
                  miscorrections)


@cocotb.test()
async def heavy_errors(dut):
    """Words with 8 to 16 random errors: each reported uncorrectable exactly when galois
    says so; miscorrections counted and matched against galois."""
    rng = random.Random(cocotb.RANDOM_SEED + 3)
    await start(dut)
    cases = []
    for _ in range(40):
        errors = rng.randint(T + 1, 16)
        sent = encode([rng.randrange(1 << 10) for _ in range(K)])
        cases.append((f"{errors} random", sent, corrupt(sent, rng.sample(range(N), errors), rng)))
    miscorrections = await run_cases(dut, cases, rng, idle=0.1, backpressure=0.5)
    await ClockCycles(dut.clk, 2)
    uncorrectable = int(dut.count_uncorrectable_codewords.value)
    assert uncorrectable + miscorrections == len(cases)
    dut._log.info("%d words of > t errors: %d uncorrectable, %d miscorrections",
                  len(cases), uncorrectable, miscorrections)


@cocotb.test()
async def latency_and_rate(dut):
    """Without idles or back-pressure: first symbol out exactly ceil(272/P) + N cycles after
    the first symbol in, codewords accepted back to back with no stall, messages every
    ceil(272/P) cycles."""
    per_beat = export_params()["symbols_per_beat"]
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    counter = await start(dut)
    source, sink = symbol_stream_pair(dut)
    log_in = TransferLog(dut, "s_axis", counter)
    log_out = TransferLog(dut, "m_axis", counter)
    cases = error_cases(rng)[:12]
    for _, _, received in cases:
        await source.send(AxiStreamFrame(received))
    await wait_idle(dut, [source], [(sink, len(cases))])
    for n, (kind, sent, received) in enumerate(cases):
        check_message(await sink.recv(), sent, received, kind, n)

    period = beats_for(N, per_beat)
    want = period + decoder_latency(per_beat)
    latencies = {b - a for a, b in zip(log_in.frame_starts, log_out.frame_starts, strict=True)}
    assert latencies == {want}, f"latency {latencies} cycles, expected {want}"
    assert log_in.stalls == 0, f"s_axis_tready low for {log_in.stalls} cycles"
    in_gaps = {b - a for a, b in zip(log_in.frame_starts, log_in.frame_starts[1:])}
    out_gaps = {b - a for a, b in zip(log_out.frame_starts, log_out.frame_starts[1:])}
    assert in_gaps == {period} and out_gaps == {period}, (in_gaps, out_gaps)


@cocotb.test()
async def held_output(dut):
    """The sink holds off for a long time: the decoder fills its buffers, drops tready at a
    codeword boundary, and loses nothing when the sink resumes."""
    per_beat = export_params()["symbols_per_beat"]
    rng = random.Random(cocotb.RANDOM_SEED + 4)
    await start(dut)
    source, sink = symbol_stream_pair(dut)
    sink.pause = True
    cases = error_cases(rng)[:10]
    for _, _, received in cases:
        await source.send(AxiStreamFrame(received))
    await ClockCycles(dut.clk, 12 * beats_for(N, per_beat) + 400)
    assert not source.idle(), "the decoder took more codewords than it can hold"
    assert int(dut.s_axis_tready.value) == 0
    sink.pause = False
    await wait_idle(dut, [source], [(sink, len(cases))])
    for n, (kind, sent, received) in enumerate(cases):
        check_message(await sink.recv(), sent, received, kind, n)


@cocotb.test()
async def misplaced_tlast(dut):
    """A codeword with its tlast one beat early is counted and changes nothing: the decoder
    frames by counting beats."""
    per_beat = export_params()["symbols_per_beat"]
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    await start(dut)
    source, sink = symbol_stream_pair(dut)
    beats = beats_for(N, per_beat)
    cases = error_cases(rng)[2:4]
    bad = cases[0][2]
    await source.send(AxiStreamFrame(bad[:(beats - 1) * per_beat]))
    await source.send(AxiStreamFrame(bad[(beats - 1) * per_beat:]))
    await source.send(AxiStreamFrame(cases[1][2]))
    await wait_idle(dut, [source], [(sink, 2)])
    await ClockCycles(dut.clk, 2)
    assert int(dut.count_framing_errors.value) == 1
    for n, (kind, sent, received) in enumerate(cases):
        check_message(await sink.recv(), sent, received, kind, n)


@pytest.mark.parametrize("symbols_per_beat", [1, 4, 8])
def test_rs272_decoder(symbols_per_beat, tmp_path):
    run_cocotb(EXPORT, "test_rs272_decoder", {"symbols_per_beat": symbols_per_beat},
               test_dir=tmp_path)
