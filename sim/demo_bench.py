"""cocotb bench of the demo domain (:class:`ethlink.rtl.harness.loopback.ForwardingLoopback`).

It sends the scenario that ``ethlink demo`` describes (in ``ETHLINK_SCENARIO``, JSON), checks
every frame against the golden model, times each block from cycle-stamped transfer logs, and
writes its measurements to ``ETHLINK_RESULT`` (JSON) for the report.
"""

import json
import os
import random

import cocotb

from ethlink.rtl.wire import HEADER_OCTETS, Opcode
from ethlink.sim.models import random_frame
from ethlink.sim.runner import export_params
from ethlink.sim.tb import (TransferLog, axis_sink, axis_source, read_counters, send_split,
                            start, wait_idle)

LS_OPCODES = [op for op in Opcode if not op.is_rdma]
RDMA_OPCODES = [op for op in Opcode if op.is_rdma]


def scenario_frames(scenario):
    rng = random.Random(scenario["seed"])
    frames = []
    for _ in range(scenario["frames"]):
        if rng.random() < scenario["ls_fraction"]:
            frames.append(random_frame(rng, rng.choice(LS_OPCODES)))
        else:
            frames.append(random_frame(rng, rng.choice(RDMA_OPCODES),
                                       max_payload=scenario["rdma_max_payload"]))
    return frames


def completing_beat(frame, width):
    return (len(frame.header_bytes()) - 1) // width


@cocotb.test()
async def demo(dut):
    scenario = json.loads(os.environ["ETHLINK_SCENARIO"])
    width = export_params()["beat_octets"]
    counter = await start(dut)
    headers = axis_source(dut, "s_axis_hdr")
    payloads = axis_source(dut, "s_axis")
    header_sink = axis_sink(dut, "m_axis_hdr")
    payload_sink = axis_sink(dut, "m_axis")
    log_in = TransferLog(dut, "s_axis_hdr", counter)
    log_tap = TransferLog(dut, "tap", counter)
    log_out = TransferLog(dut, "m_axis_hdr", counter)
    log_payload = TransferLog(dut, "m_axis", counter)

    frames = scenario_frames(scenario)
    # The first frame alone: zero-load latency. Then the rest back to back.
    await send_split(headers, payloads, frames[0])
    await wait_idle(dut, [headers, payloads], [(header_sink, 1), (payload_sink, 1)])
    for frame in frames[1:]:
        await send_split(headers, payloads, frame)
    await wait_idle(dut, [headers, payloads],
                    [(header_sink, len(frames)), (payload_sink, len(frames))])

    mismatches = 0
    for frame in frames:
        header = bytes((await header_sink.recv()).tdata)
        payload = bytes((await payload_sink.recv()).tdata)
        mismatches += header != frame.header_bytes().ljust(HEADER_OCTETS, b"\0")
        mismatches += payload != frame.payload

    # Per-frame timing from the logs: the tap's beats are grouped into frames by tlast.
    tap_frames, beats = [], []
    for cycle, last in log_tap.transfers:
        beats.append(cycle)
        if last:
            tap_frames.append(beats)
            beats = []
    deparser, parser, end_to_end = [], [], []
    for n, frame in enumerate(frames):
        accepted = log_in.transfers[n][0]
        out = log_out.transfers[n][0]
        deparser.append(tap_frames[n][0] - accepted)
        parser.append(out - tap_frames[n][completing_beat(frame, width)])
        end_to_end.append(out - accepted)

    loaded = slice(1, None)
    tap_beats = len(log_tap.transfers) - len(tap_frames[0])
    busy = tap_frames[-1][-1] - tap_frames[1][0] + 1
    result = {
        "frames": len(frames),
        "frames_ls": sum(not frame.opcode.is_rdma for frame in frames),
        "frames_rdma": sum(frame.opcode.is_rdma for frame in frames),
        "payload_octets": sum(len(frame.payload) for frame in frames),
        "frame_octets": sum(len(frame.body()) for frame in frames),
        "cycles": counter.now,
        "mismatches": mismatches,
        "dropped": sum(read_counters(dut, ("short", "bad_version", "bad_opcode",
                                           "bad_size")).values()),
        "frames_sent": int(dut.count_frames_sent.value),
        "frames_received": int(dut.count_frames.value),
        "zero_load_latency_cycles": {
            "deparser": deparser[0], "parser_header": parser[0], "end_to_end": end_to_end[0],
            "parser_first_payload": (log_payload.frame_starts[0] - tap_frames[0][0]),
        },
        "loaded_latency_cycles": {
            "deparser": sorted(deparser[loaded]), "parser_header": sorted(parser[loaded]),
            "end_to_end": sorted(end_to_end[loaded]),
        },
        "tap_beats": tap_beats,
        "tap_busy_cycles": busy,
        "beat_octets": width,
    }
    with open(os.environ["ETHLINK_RESULT"], "w") as file:
        json.dump(result, file)
    assert mismatches == 0, f"{mismatches} frames differ from the golden model"
    assert result["dropped"] == 0
