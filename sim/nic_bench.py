"""cocotb bench of ``nic_ls_target`` run by ``ethlink bench nic`` (``ethlink.bench``).

The scenario (``ETHLINK_SCENARIO``) names an opcode, an access size and a number of requests;
the bench sends that many requests back to back (no idle, no back-pressure, cocotbext-axi's
AXI RAM as memory, one window over all of it) and writes to ``ETHLINK_RESULT`` the cycles from
the first request beat in to the last response beat out, the payload octets moved per cycle,
the issue and response latencies of the first request, and the responses and memory octets
that differ from the golden target model (which must be 0).
"""

import json
import os
import random

import cocotb
from cocotbext.axi import AxiStreamFrame

from ethlink.rtl.forwarding.parser import LS_HEADER_OCTETS, header_geometry
from ethlink.rtl.wire import LsSize, Opcode
from ethlink.sim.models import Frame
from ethlink.sim.models.nic import LINE_OCTETS
from ethlink.sim.nic_tb import LoopbackPorts, ValidLog, open_memory, request_octets
from ethlink.sim.runner import export_params
from ethlink.sim.tb import TransferLog, axis_sink, axis_source, wait_idle


@cocotb.test()
async def back_to_back(dut):
    scenario = json.loads(os.environ.get("ETHLINK_SCENARIO", "{}"))
    params = export_params()
    width = params["beat_octets"]
    opcode = Opcode[scenario.get("opcode", "LOAD_REQ")]
    size = LsSize(scenario.get("size", 0))
    count = scenario.get("count", 100)
    rng = random.Random(scenario.get("seed", 1))
    counter, ram, model = await open_memory(dut, rng)
    memory_lines = (1 << params["addr_width"]) // LINE_OCTETS
    source = axis_source(dut, "s_axis")
    sink = axis_sink(dut, "m_axis")
    frames_in = TransferLog(dut, "s_axis", counter)
    frames_out = TransferLog(dut, "m_axis", counter)
    issue = ValidLog(dut.m_axi_arvalid if opcode == Opcode.LOAD_REQ else dut.m_axi_awvalid,
                     dut.clk, counter)
    rvalid = ValidLog(dut.m_axi_rvalid, dut.clk, counter)

    lines = size.octets // LINE_OCTETS
    frames = [Frame(opcode=opcode, dst=1, src=2, entropy=n, size=size, tag=n % 4096,
                    line=rng.randrange(memory_lines // lines) * lines,
                    payload=rng.randbytes(size.octets) if opcode == Opcode.STORE_REQ else b"")
              for n in range(count)]
    for frame in frames:
        await source.send(AxiStreamFrame(frame.body()))
    await wait_idle(dut, [source], [(sink, count)], timeout_cycles=50 * count * 40)

    mismatches = 0
    for frame in frames:
        got = bytes((await sink.recv()).tdata)
        mismatches += got != model.handle(frame).body()
    memory = ram.read(0, len(model.memory))
    mismatches += sum(a != b for a, b in zip(memory, model.memory))

    first_in = frames_in.frame_starts[0]
    th_beat, _ = header_geometry(LS_HEADER_OCTETS, width)
    last_beat = [c for c, _ in frames_in.transfers].index(frames_in.frame_starts[1]) - 1 \
        if count > 1 else len(frames_in.transfers) - 1
    after = (frames_in.transfers[th_beat][0] if opcode == Opcode.LOAD_REQ
             else frames_in.transfers[last_beat][0])
    span = frames_out.transfers[-1][0] - first_in + 1
    result = {
        "opcode": opcode.name, "size_octets": size.octets, "count": count,
        "cycles": span,
        "payload_octets_per_cycle": count * size.octets / span,
        "cycles_per_request": span / count,
        "issue_latency_cycles": issue.rises[0] - after,
        "load_response_latency_cycles": (frames_out.frame_starts[0] - rvalid.rises[0]
                                         if opcode == Opcode.LOAD_REQ else None),
        "data_mismatches": mismatches,
    }
    with open(os.environ["ETHLINK_RESULT"], "w") as f:
        json.dump(result, f)


@cocotb.test()
async def round_trip(dut):
    """On ``nic_ls_loopback``: one 64-octet load, then one 64-octet store, each alone: the
    requester's TX and RX latencies and the round trip (request taken → completion valid)."""
    rng = random.Random(1)
    dut.local_id.value, dut.drop_dst.value = 1, 0xFFF
    counter, ram, model = await open_memory(dut, rng)
    p = LoopbackPorts(dut, counter)
    result = {}
    for n, store in enumerate((0, 1)):
        await p.reqs.send(request_octets(store, 0, 2, n, 64 * n))
        if store:
            await p.data.send(AxiStreamFrame(rng.randbytes(64)))
        await wait_idle(dut, [p.reqs, p.data], [(p.cpls, 1)])
        await p.cpls.recv()
        if not store:
            await p.cpl_data.recv()
        name = "store" if store else "load"
        taken = p.req_log.transfers[n][0]
        rsp_last = [c for c, last in p.rx.transfers if last][n]
        result[f"{name}_round_trip_cycles"] = p.cpl_valid.rises[n] - taken
        result[f"{name}_tx_latency_cycles"] = p.tx.frame_starts[n] - taken
        result[f"{name}_rx_latency_cycles"] = p.cpl_valid.rises[n] - rsp_last
    with open(os.environ["ETHLINK_RESULT"], "w") as f:
        json.dump(result, f)
