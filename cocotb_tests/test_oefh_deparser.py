"""OefhDeparser against the golden frame model (sim/models/frame.py).

Random frames of every opcode and payload length, header and payload from two independent
sources with random idles, random back-pressure on the frame output; then the latency and the
full-rate checks without idles.
"""

import random

import cocotb
import pytest

from ethlink.rtl.wire import Opcode
from ethlink.sim.models import random_frame
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import (StreamChecker, TransferLog, axis_sink, axis_source, send_split,
                            start, wait_idle)

EXPORT = "oefh_deparser"


def frames_for(rng, n):
    return [random_frame(rng, max_payload=rng.choice([0, 7, 64, 300])) for _ in range(n)]


@cocotb.test()
async def random_traffic(dut):
    """Every frame comes out as OEFH + TH + payload, whatever the idles and back-pressure."""
    rng = random.Random(cocotb.RANDOM_SEED)
    await start(dut)
    headers = axis_source(dut, "s_axis_hdr", rng, idle=0.3)
    payloads = axis_source(dut, "s_axis", rng, idle=0.3)
    sink = axis_sink(dut, "m_axis", rng, backpressure=0.3)
    checker = StreamChecker(dut, "m_axis")

    frames = frames_for(rng, 300)
    for frame in frames:
        await send_split(headers, payloads, frame)
    await wait_idle(dut, [headers, payloads], [(sink, len(frames))])
    for n, frame in enumerate(frames):
        got = bytes((await sink.recv()).tdata)
        assert got == frame.body(), f"frame {n}: {got.hex()}, expected {frame.body().hex()}"
    assert int(dut.count_frames.value) == len(frames)
    checker.assert_clean()


@cocotb.test()
async def latency_and_full_rate(dut):
    """First frame beat 1 cycle after the header; back-to-back frames without a bubble."""
    width = export_params()["beat_octets"]
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    counter = await start(dut)
    headers = axis_source(dut, "s_axis_hdr")
    payloads = axis_source(dut, "s_axis")
    sink = axis_sink(dut, "m_axis")
    headers_in = TransferLog(dut, "s_axis_hdr", counter)
    frames_out = TransferLog(dut, "m_axis", counter)

    for n, opcode in enumerate((Opcode.LOAD_REQ, Opcode.WRITE)):
        await send_split(headers, payloads, random_frame(rng, opcode=opcode, max_payload=64))
        await wait_idle(dut, [headers, payloads], [(sink, n + 1)])
        latency = frames_out.frame_starts[n] - headers_in.transfers[n][0]
        assert latency == 1, f"{opcode.name}: first beat {latency} cycles after the header"

    frames = frames_for(rng, 200)
    first = len(frames_out.transfers)
    for frame in frames:
        await send_split(headers, payloads, frame)
    await wait_idle(dut, [headers, payloads], [(sink, len(frames) + 2)])
    beats = frames_out.transfers[first:]
    expected_beats = sum(-(-len(frame.body()) // width) for frame in frames)
    assert len(beats) == expected_beats, f"{len(beats)} beats, expected {expected_beats}"
    span = beats[-1][0] - beats[0][0] + 1
    assert span == len(beats), f"{len(beats)} beats took {span} cycles (bubbles)"


@pytest.mark.parametrize("beat_octets", [8, 16, 32, 64])
def test_oefh_deparser(beat_octets, tmp_path):
    run_cocotb(EXPORT, "test_oefh_deparser", {"beat_octets": beat_octets}, test_dir=tmp_path)
