"""Rs272Encoder against the galois golden encoder (sim/models/fec.py).

Back-to-back random messages with random source idles and sink back-pressure, the codeword
compared symbol for symbol (padding symbols must be zero); then latency and the codeword rate
without idles, and a message whose tlast is misplaced (counted, alignment kept).
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamFrame

from ethlink.rtl.phy.fec.symbols import beats_for
from ethlink.sim.models.fec import K, N, encode
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import StreamChecker, TransferLog, start, symbol_stream_pair, wait_idle

EXPORT = "rs272_encoder"


def check_codeword(got, message, n):
    symbols = list(got.tdata)
    want = encode(message)
    first_difference = next((i for i, (a, b) in enumerate(zip(symbols, want, strict=False))
                             if a != b), min(len(symbols), N))
    assert symbols[:N] == want, f"codeword {n}: {len(symbols)} symbols, first difference " \
        f"at symbol {first_difference}"
    assert not any(symbols[N:]), f"codeword {n}: padding symbols are not zero"


@cocotb.test()
async def random_codewords(dut):
    """Random messages back to back, random idles and back-pressure: every codeword right."""
    rng = random.Random(cocotb.RANDOM_SEED)
    await start(dut)
    source, sink = symbol_stream_pair(dut, rng, idle=0.3, backpressure=0.3)
    checker = StreamChecker(dut, "m_axis")
    messages = [[rng.randrange(1024) for _ in range(K)] for _ in range(30)]
    messages += [[0] * K, [1023] * K]
    for message in messages:
        await source.send(AxiStreamFrame(message))
    await wait_idle(dut, [source], [(sink, len(messages))])
    for n, message in enumerate(messages):
        check_codeword(await sink.recv(), message, n)
    checker.assert_clean()
    assert int(dut.count_framing_errors.value) == 0


@cocotb.test()
async def latency_and_rate(dut):
    """1 cycle first symbol in → first symbol out; one codeword every ceil(272/P) cycles."""
    per_beat = export_params()["symbols_per_beat"]
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    counter = await start(dut)
    source, sink = symbol_stream_pair(dut)
    log_in = TransferLog(dut, "s_axis", counter)
    log_out = TransferLog(dut, "m_axis", counter)
    messages = [[rng.randrange(1024) for _ in range(K)] for _ in range(8)]
    for message in messages:
        await source.send(AxiStreamFrame(message))
    await wait_idle(dut, [source], [(sink, len(messages))])
    for n, message in enumerate(messages):
        check_codeword(await sink.recv(), message, n)

    latency = log_out.frame_starts[0] - log_in.frame_starts[0]
    assert latency == 1, f"first symbol out {latency} cycles after the first symbol in"
    period = beats_for(N, per_beat)
    gaps = {b - a for a, b in zip(log_out.frame_starts, log_out.frame_starts[1:], strict=False)}
    assert gaps == {period}, f"codewords every {gaps} cycles, expected {period}"
    assert len(log_out.transfers) == len(messages) * period


@cocotb.test()
async def misplaced_tlast(dut):
    """A message with a tlast one beat early is counted, and changes nothing: the encoder
    frames codewords by counting beats, so both codewords come out right."""
    per_beat = export_params()["symbols_per_beat"]
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    await start(dut)
    source, sink = symbol_stream_pair(dut)
    beats = beats_for(K, per_beat)   # at least 9: P is at most 32
    bad = [rng.randrange(1024) for _ in range(K)]
    # tlast on the second-to-last beat, then the last beat as a frame of its own.
    await source.send(AxiStreamFrame(bad[:(beats - 1) * per_beat]))
    await source.send(AxiStreamFrame(bad[(beats - 1) * per_beat:]))
    good = [rng.randrange(1024) for _ in range(K)]
    await source.send(AxiStreamFrame(good))
    await wait_idle(dut, [source], [(sink, 2)])
    await ClockCycles(dut.clk, 2)
    assert int(dut.count_framing_errors.value) == 1
    assert sink.count() == 2
    check_codeword(await sink.recv(), bad, 0)
    check_codeword(await sink.recv(), good, 1)


@pytest.mark.parametrize("symbols_per_beat", [1, 4, 8])
def test_rs272_encoder(symbols_per_beat, tmp_path):
    run_cocotb(EXPORT, "test_rs272_encoder", {"symbols_per_beat": symbols_per_beat},
               test_dir=tmp_path)
