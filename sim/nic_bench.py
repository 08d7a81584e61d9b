"""cocotb benches of the NIC run by ``ethlink bench nic`` (``ethlink.bench``) and
``ethlink demo``: ``back_to_back`` on ``nic_ls_target``, ``round_trip`` on ``nic_ls_loopback``,
``pair``, ``ls_under_rdma``, ``rdma_goodput`` and ``failover`` on ``nic_pair`` (see each
testcase).

``back_to_back``:
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
from dataclasses import asdict

import cocotb
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamFrame

from ethlink.rtl.forwarding.parser import LS_HEADER_OCTETS, header_geometry
from ethlink.rtl.nic.ls_requester import CompletionStatus
from ethlink.rtl.wire import LsSize, Opcode
from ethlink.sim.models import Frame
from ethlink.sim.models.nic import LINE_OCTETS
from ethlink.sim.models.path import ls_entropy, select_port
from ethlink.sim.models.rdma import RdmaCommand
from ethlink.sim.nic_pair_scenarios import probe_latency, run_link_loss
from ethlink.sim.nic_pair_tb import NicPairTB, RdmaAreas, nic_params, random_requests, run_rdma
from ethlink.sim.nic_tb import LsLoopbackTB, LsRequest, LsTargetTB
from ethlink.sim.runner import export_params
from ethlink.sim.tb import TransferLog, ValidLog, wait_idle


@cocotb.test()
async def back_to_back(dut):
    scenario = json.loads(os.environ.get("ETHLINK_SCENARIO", "{}"))
    params = export_params()
    width = params["beat_octets"]
    opcode = Opcode[scenario.get("opcode", "LOAD_REQ")]
    size = LsSize(scenario.get("size", 0))
    count = scenario.get("count", 100)
    rng = random.Random(scenario.get("seed", 1))
    tb = LsTargetTB(dut, rng)
    await tb.reset()
    await tb.open_memory()
    counter, ram, model, source, sink = tb.counter, tb.ram, tb.model, tb.source, tb.sink
    memory_lines = tb.memory_lines
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
    p = LsLoopbackTB(dut, rng, local_id=1, drop_dst=0xFFF)
    await p.reset()
    await p.open_memory()
    result = {}
    for n, store in enumerate((False, True)):
        await p.send(LsRequest(store, LsSize.B64, 2, n, 64 * n,
                               rng.randbytes(64) if store else b""))
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


@cocotb.test()
async def pair(dut):
    """On ``nic_pair``: a 64 B load and a 64 B store alone (TX, RX and round-trip cycles
    through two NICs), then both GPUs issuing random loads and stores to each other with no
    idle, each keeping ``window`` requests outstanding, over lines of raw bit error rate
    ``ber``, and (with ``rdma_commands``) both DMA engines running that many random RDMA
    commands each at the same time, at most ``rdma_window`` outstanding (default: every
    message id): latency of every L/S request (taken → completion taken) and RDMA command,
    payload goodput, and every way completions, load data or memories differ from the golden
    models (``data_mismatches``, must be 0)."""
    scenario = json.loads(os.environ.get("ETHLINK_SCENARIO", "{}"))
    params = export_params()
    rng = random.Random(scenario.get("seed", 1))
    pair = NicPairTB(dut, rng, ber=scenario.get("ber", 0.0))
    await pair.reset()
    lines = pair.memory_lines
    await pair.open_memories()
    rdma_commands = scenario.get("rdma_commands", 0)
    areas = RdmaAreas.of_build()
    await pair.program_rdma_windows(areas.windows())
    await pair.wait_links()
    result = {"load": await probe_latency(pair, store=False, tag=0),
              "store": await probe_latency(pair, store=True, tag=1)}
    first_tag = 2               # after the two probes' tags

    # Tags are not reused: at most tags - first_tag requests per NIC after the probes.
    count = min(scenario.get("requests", 250), params["tags"] - first_tag)
    window = scenario.get("window", 16)
    logs = {side.name: (TransferLog(dut, f"s_axis_req_{side.name}", pair.counter),
                        TransferLog(dut, f"m_axis_cpl_{side.name}", pair.counter))
            for side in pair.sides}
    # With RDMA running, L/S keeps to the first quarter of memory, which RDMA leaves alone.
    ls_lines = areas.local // LINE_OCTETS if rdma_commands else lines
    requests = {side.name: list(random_requests(rng, count, ls_lines, side.peer.id, first_tag))
                for side in pair.sides}
    start = pair.counter.now
    rdma = [cocotb.start_soon(run_rdma(side, rng, rdma_commands, scenario.get("rdma_window")))
            for side in pair.sides]
    tasks = [cocotb.start_soon(side.issue(requests[side.name], window))
             for side in pair.sides]
    expected = {side.name: await task for side, task in zip(pair.sides, tasks)}
    await wait_idle(dut, [s for side in pair.sides for s in (side.reqs, side.data)],
                    [(side.cpls, count) for side in pair.sides],
                    timeout_cycles=params["timeout_cycles"] * 4 + 400 * count)
    ls_cycles = pair.counter.now - start
    rdma = [await task for task in rdma]
    cycles = pair.counter.now - start
    errors, latencies, octets = [], [], 0
    for side in pair.sides:
        order, side_errors = await side.collect_completions(expected[side.name])
        errors += side_errors
        if not side.peer.memory_matches():
            errors.append(f"{side.peer.name}: memory differs from the model")
        taken = [cycle for cycle, _ in logs[side.name][0].transfers]
        done = [cycle for cycle, _ in logs[side.name][1].transfers]
        # Requests were taken in tag order from first_tag; completions in ``order``.
        latencies += [done[k] - taken[tag - first_tag] for k, tag in enumerate(order)]
        octets += sum(LsSize(request.size).octets for request in requests[side.name])
    replays = pair.port_total("count_replays")
    statuses = [status.name for run in rdma for status in run.statuses]
    errors += [error for run in rdma for error in run.errors]
    result.update({
        "requests": 2 * count, "window": window, "cycles": ls_cycles, "latencies": latencies,
        "rdma": {"commands": 2 * rdma_commands, "cycles": cycles,
                 "latencies": [c for run in rdma for c in run.cycles],
                 "statuses": {name: statuses.count(name) for name in sorted(set(statuses))},
                 "payload_octets": sum(run.octets for run in rdma),
                 "timeouts": sum(side.value("rdma_count_timeouts") for side in pair.sides)},
        "payload_octets": octets, "data_mismatches": len(errors), "errors": errors[:10],
        "timeouts": sum(side.value("count_timeouts") for side in pair.sides),
        "replays": replays,
        "frames_per_port": pair.frames_sent(),
    })
    with open(os.environ["ETHLINK_RESULT"], "w") as f:
        json.dump(result, f)


@cocotb.test()
async def ls_under_rdma(dut):
    """On ``nic_pair``: both DMA engines WRITE ``size``-octet messages to each other without a
    pause, every message id outstanding (WRITE packets are sprayed over every port), while
    each GPU issues ``loads`` 64 B loads to the other at a light rate: one every ``interval``
    cycles on average (uniform within half of it either side), from ``warmup`` cycles after
    the WRITEs began, on random lines of the quarter of memory RDMA leaves alone. With
    ``avoid_fec`` the lines are those whose request and response paths both take ports
    without FEC, as the idle probe's (:func:`probe_latency`), so the figures compare with the
    idle round trip. For every load the cycles from request taken to completion valid (the
    completion sink never back-pressures: taken in the cycle it is valid); for the window
    from the first load taken to the last completion, the WRITE frames (VC 2) each port of
    each NIC sent and their payload octets per cycle; and every way completions, load data or
    memories differ from the golden models (``data_mismatches``, must be 0)."""
    scenario = json.loads(os.environ.get("ETHLINK_SCENARIO", "{}"))
    params = nic_params()
    rng = random.Random(scenario.get("seed", 1))
    pair = NicPairTB(dut, rng, ber=scenario.get("ber", 0.0))
    await pair.reset()
    await pair.open_memories()
    areas = RdmaAreas.of_build()
    await pair.program_rdma_windows(areas.windows())
    await pair.wait_links()
    size, mtu = scenario.get("size", areas.slot), params["mtu"]
    # Whole packets only: the payload a port carried is then its WRITE frames × mtu.
    assert size <= areas.slot and size % mtu == 0, (size, areas.slot, mtu)
    count = min(scenario.get("loads", 40), params["tags"])
    interval = scenario.get("interval", 200)
    fec = params.get("fec", 0)
    everything = (1 << pair.ports) - 1

    def clear_of_fec(side, line):
        entropy = ls_entropy(line)
        return not any(fec >> select_port(end.id, entropy, everything) & 1
                       for end in (side, side.peer))
    lines = {side.name: [line for line in range(areas.local // LINE_OCTETS)
                         if not scenario.get("avoid_fec", True) or clear_of_fec(side, line)]
             for side in pair.sides}
    logs = {side.name: (TransferLog(dut, f"s_axis_req_{side.name}", pair.counter),
                        TransferLog(dut, f"m_axis_cpl_{side.name}", pair.counter))
            for side in pair.sides}
    loads_done = False

    def writes(side):
        def make(rng, ident):
            return RdmaCommand(read=False, dst=side.peer.id, id=ident,
                               remote=areas.remote + ident * areas.slot,
                               local=areas.local + ident * areas.slot, length=size)
        return make
    rdma_start = pair.counter.now
    rdma = [cocotb.start_soon(run_rdma(side, rng, None, make=writes(side),
                                       until=lambda: loads_done))
            for side in pair.sides]
    await ClockCycles(dut.clk, scenario.get("warmup", 500))

    async def issue(side):
        expected = {}
        for tag in range(count):
            request = LsRequest(False, LsSize.B64, side.peer.id, tag,
                                rng.choice(lines[side.name]), b"")
            expected.update(await side.issue([request]))
            await ClockCycles(dut.clk, rng.randint(interval // 2, interval * 3 // 2))
        return expected
    frames_before = pair.frames_sent()
    start = pair.counter.now
    tasks = [cocotb.start_soon(issue(side)) for side in pair.sides]
    expected = {side.name: await task for side, task in zip(pair.sides, tasks)}
    await wait_idle(dut, [side.reqs for side in pair.sides],
                    [(side.cpls, count) for side in pair.sides],
                    timeout_cycles=params["timeout_cycles"] * 2)
    frames_after = pair.frames_sent()
    window = pair.counter.now - start
    loads_done = True
    runs = [await task for task in rdma]
    rdma_cycles = pair.counter.now - rdma_start
    errors, latencies, statuses = [], [], []
    for side in pair.sides:
        order, side_errors = await side.collect_completions(expected[side.name])
        errors += side_errors
        statuses += [expected[side.name][tag].status.name for tag in order]
        if not side.memory_matches():
            errors.append(f"{side.name}: memory differs from the models")
        taken = [cycle for cycle, _ in logs[side.name][0].transfers]
        done = [cycle for cycle, _ in logs[side.name][1].transfers]
        # Requests were taken in tag order from 0; completions in ``order``.
        latencies += [done[k] - taken[tag] for k, tag in enumerate(order)]
    errors += [error for run in runs for error in run.errors]
    rdma_statuses = [status.name for run in runs for status in run.statuses]
    vc = 2                      # RDMA requests: WRITE packets
    frames = {side.name: [frames_after[side.name][vc][p] - frames_before[side.name][vc][p]
                          for p in range(pair.ports)] for side in pair.sides}
    result = {
        "loads": 2 * count, "interval": interval, "window_cycles": window,
        "latencies": latencies,
        "statuses": {name: statuses.count(name) for name in sorted(set(statuses))},
        "lines": {name: len(candidates) for name, candidates in lines.items()},
        "timeouts": sum(side.value("count_timeouts") for side in pair.sides),
        "rdma": {"size": size, "commands": len(rdma_statuses), "cycles": rdma_cycles,
                 "statuses": {name: rdma_statuses.count(name)
                              for name in sorted(set(rdma_statuses))},
                 "payload_octets": sum(run.octets for run in runs),
                 "write_frames_per_port": frames,
                 # Payload each NIC sent during the loads, per cycle.
                 "window_octets_per_cycle": {name: round(sum(per_port) * mtu / window, 3)
                                             for name, per_port in frames.items()},
                 "timeouts": sum(side.value("rdma_count_timeouts") for side in pair.sides)},
        "replays": pair.port_total("count_replays"),
        "data_mismatches": len(errors), "errors": errors[:10],
    }
    with open(os.environ["ETHLINK_RESULT"], "w") as f:
        json.dump(result, f)


@cocotb.test()
async def rdma_goodput(dut):
    """On ``nic_pair``: NIC A's DMA engine WRITEs, then READs, ``count`` messages of each size
    in ``sizes`` to and from NIC B over lines of raw bit error rate ``ber``, keeping as many
    outstanding as fit side by side in B's read/write RDMA window (at most the message ids);
    for each, the payload octets per cycle from the first command taken to the last
    completion. Every command must complete OK and both memories must match the golden models
    (``data_mismatches``, must be 0)."""
    scenario = json.loads(os.environ.get("ETHLINK_SCENARIO", "{}"))
    params = nic_params()
    rng = random.Random(scenario.get("seed", 1))
    pair = NicPairTB(dut, rng, ber=scenario.get("ber", 0.0))
    await pair.reset()
    areas = RdmaAreas.of_build()
    await pair.program_rdma_windows(areas.windows())
    await pair.wait_links()
    a, b = pair.sides
    result = {"write": {}, "read": {}, "windows": {}, "errors": []}
    total = scenario.get("octets", 1 << 16)
    for op in ("write", "read"):
        for size in scenario.get("sizes", (64, 256, 1024, 4096, 16384)):
            window = max(1, min(params["messages"], areas.quarter // size))
            count = max(window, total // size)

            def make(rng, ident, size=size, op=op):
                return RdmaCommand(read=op == "read", dst=b.id, id=ident,
                                   remote=areas.remote + ident * size,
                                   local=areas.local + ident * size, length=size)

            start = pair.counter.now
            run = await run_rdma(a, rng, count, window, make)
            cycles = pair.counter.now - start
            result["errors"] += run.errors + [f"{op} {size}: {s.name}" for s in run.statuses
                                              if s != CompletionStatus.OK]
            result[op][size] = round(count * size / cycles, 3)
            result["windows"][size] = window
    for side in pair.sides:
        if not side.memory_matches():
            result["errors"].append(f"{side.name}: memory differs from the models")
    result["data_mismatches"] = len(result["errors"])
    result["errors"] = result["errors"][:10]
    result["replays"] = pair.port_total("count_replays")
    with open(os.environ["ETHLINK_RESULT"], "w") as f:
        json.dump(result, f)


@cocotb.test()
async def failover(dut):
    """On ``nic_pair``: the link-loss scenario of :func:`~ethlink.sim.nic_tb.run_link_loss` (B
    advertising ``credits`` per VC on port 0, A's line to B on port 0 cut, ``requests``
    random requests of A): the cycles from the cut to A's port going down, to the last frame
    handed to the dead port's LLR and to the last queued frame re-steered, the frames lost
    and re-steered, and every way completions or memory differ from the golden model
    (``data_mismatches``, must be 0)."""
    scenario = json.loads(os.environ.get("ETHLINK_SCENARIO", "{}"))
    rng = random.Random(scenario.get("seed", 1))
    seen = asdict(await run_link_loss(dut, rng, scenario.get("requests", 120),
                                      credits=scenario.get("credits", 16),
                                      replay_timeout=scenario.get("replay_timeout", 100)))
    errors = seen.pop("errors")
    seen.update({"data_mismatches": len(errors), "errors": errors[:10]})
    with open(os.environ["ETHLINK_RESULT"], "w") as f:
        json.dump(seen, f)
