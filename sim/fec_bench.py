"""cocotb benches of the RS(272,258) FEC, driven by ``ethlink bench fec``.

* ``timing`` (on ``rs272_encoder`` or ``rs272_decoder``): back-to-back codewords without idles
  or back-pressure; first symbol in → first symbol out in cycles, and codewords per cycle.
* ``ber_sweep`` (on ``fec_channel_loop``): random messages through encoder → channel →
  decoder at each raw bit error rate of ``ETHLINK_SCENARIO``; counts uncorrectable codewords
  and miscorrections (a message out, not flagged, that differs from the one sent).

Each writes its measurements to ``ETHLINK_RESULT`` (JSON).
"""

import json
import os
import random

import cocotb
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamFrame

from ethlink.sim.models.fec import K, N, encode
from ethlink.sim.runner import export_params
from ethlink.sim.tb import TransferLog, start, symbol_stream_pair, wait_idle


def _write(result):
    with open(os.environ["ETHLINK_RESULT"], "w") as f:
        json.dump(result, f)


@cocotb.test()
async def timing(dut):
    rng = random.Random(1)
    counter = await start(dut)
    source, sink = symbol_stream_pair(dut)
    log_in = TransferLog(dut, "s_axis", counter)
    log_out = TransferLog(dut, "m_axis", counter)
    count = 16
    decoder = hasattr(dut, "count_uncorrectable_codewords")
    for _ in range(count):
        message = [rng.randrange(1 << 10) for _ in range(K)]
        await source.send(AxiStreamFrame(encode(message) if decoder else message))
    await wait_idle(dut, [source], [(sink, count)])
    starts_in, starts_out = log_in.frame_starts, log_out.frame_starts
    _write({
        "latency_cycles": starts_out[0] - starts_in[0],
        "codewords_per_cycle": (count - 1) / (starts_in[-1] - starts_in[0]),
        "input_stall_cycles": log_in.stalls,
    })


@cocotb.test()
async def ber_sweep(dut):
    scenario = json.loads(os.environ["ETHLINK_SCENARIO"])
    per_beat = export_params()["symbols_per_beat"]
    width = 10 * per_beat
    injectors = 4
    rng = random.Random(scenario["seed"])
    dut.link_up.value = 1
    dut.seed.value = scenario["seed"]
    dut.error_threshold.value = 0
    dut.burst.value = 0
    dut.burst_length.value = 0
    dut.reseed.value = 0
    await start(dut)
    source, sink = symbol_stream_pair(dut)
    points = []
    for ber in scenario["bers"]:
        dut.error_threshold.value = min(round(ber * width * 2 ** 32 / injectors), 2 ** 32 - 1)
        flipped_before = int(dut.count_flipped_bits.value)
        uncorrectable_before = int(dut.count_uncorrectable_codewords.value)
        messages = [[rng.randrange(1 << 10) for _ in range(K)]
                    for _ in range(scenario["codewords"])]
        for message in messages:
            await source.send(AxiStreamFrame(message))
        await wait_idle(dut, [source], [(sink, len(messages))], timeout_cycles=10 ** 7)
        await ClockCycles(dut.clk, 4)
        miscorrected = uncorrectable = 0
        for message in messages:
            got = await sink.recv()
            flags = got.tuser if isinstance(got.tuser, int) else got.tuser[0]
            if flags & 1:
                uncorrectable += 1
            elif list(got.tdata)[:K] != message:
                miscorrected += 1
        flipped = int(dut.count_flipped_bits.value) - flipped_before
        assert uncorrectable == int(dut.count_uncorrectable_codewords.value) \
            - uncorrectable_before
        points.append({
            "ber_set": ber,
            "ber_measured": flipped / (len(messages) * N * 10),
            "codewords": len(messages),
            "uncorrectable": uncorrectable,
            "miscorrected": miscorrected,
            "codeword_error_rate": (uncorrectable + miscorrected) / len(messages),
        })
    assert int(dut.count_overruns.value) == 0, "the decoder did not keep up with the line"
    _write({"points": points})
