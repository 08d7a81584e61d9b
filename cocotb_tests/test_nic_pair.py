"""Two NICs back to back (``nic_pair``): each NIC's L/S requester talks to the other's target
over ``ports`` lossless links (MAC + LLR + CBFC each, FEC on some), with multipath steering;
cocotbext-axi's AXI RAM is each NIC's memory, the golden target model stands beside it.

* ``traffic``: both GPUs issue random loads and stores of every size at the same time (up to 32
  outstanding each), inside and outside the windows, with random idles, back-pressure on the
  completions and pauses on every AXI channel, over lines with raw bit errors. Every request
  completes exactly once with the model's status (no TIMEOUT: the links lose nothing), load
  data and both memories are compared octet for octet, the link layer must have replayed, and
  the frames each port sent must be exactly those the path-selection model sends there
  (spreading). Then A stores one 256 B line at a time, a burst of bit errors put into each
  store's first transmission, until a request that B's VC 0 buffer passed on to its idle
  target ends bad: in every run requests and responses (VC 0 and 1) end bad after they were
  passed on, and are seen to leave no trace.
* ``rdma``: both GPUs' DMA engines WRITE to and READ from each other at once (messages of 1
  octet to several MTUs, inside and outside the RDMA windows, some misaligned), with the same
  idles, back-pressure, pauses and bit errors. Every command completes once with the golden
  models' status, both memories match octet for octet, the target counters equal the
  model's, and every WRITE/READ_RSP packet (sprayed: entropy ``msg ^ index``) and every
  READ_REQ/ACK left on the port the path model picks for it.
* ``failover``: SENs received on a port steer every later frame away from it; with no port
  left, requests are dropped at the NIC and complete UNREACHABLE at once (within an eighth of
  ``timeout_cycles``); stale SENs are ignored.
* ``link_loss``: A's line to B on port 0 is cut under load: the frames lost in the port's LLR
  complete TIMEOUT and were never executed, the frames still queued for the port when its link
  goes down are steered to the other port and complete as the golden model says (in order:
  few lines, loads and stores mixed), and no frame enters the port from the cycle it is down.
  B, whose port 0 stays up, may answer on it after A's port went down: those responses are
  lost, so a TIMEOUT may also be a store B executed (the model tries both ways).
* ``latency``: a 64 B load alone, its cycles from request to XGMII and from XGMII to the AXI
  read (:attr:`Nic.TX_LATENCY`, :attr:`Nic.RX_LATENCY`).
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamFrame

from ethlink.rtl.nic import csr
from ethlink.rtl.nic.ls_requester import CompletionStatus
from ethlink.rtl.nic.nic import Nic, NIC_VCS
from ethlink.rtl.wire import LcwType, LsSize, SEN_PAYLOAD, XgmiiControl
from ethlink.sim.models.nic import Window
from ethlink.sim.nic_pair_scenarios import probe_latency, run_link_loss
from ethlink.sim.nic_pair_tb import (NicPairTB, PAIR_PARAMS, RdmaAreas, nic_params,
                                     random_requests, run_rdma)
from ethlink.sim.link_tb import lcw_tdata
from ethlink.sim.nic_tb import command_octets
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import wait_idle, wait_until

EXPORT = "nic_pair"
#: At most this many single stores to see one passed on and end bad.
PASS_ON_STORES = 32


async def start_pair(dut, rng, **options):
    """The pair reset (``options``: as :class:`NicPairTB`)."""
    pair = NicPairTB(dut, rng, **options)
    await pair.reset()
    return pair


async def burst_into_next_frame(pair, direction, beat=4, bits=160):
    """Flip ``bits`` consecutive line bits from about the ``beat``-th word after the next start
    word sent on any port of ``direction`` (bits beyond what the FEC corrects)."""
    lines = [pair.line(direction, p) for p in range(pair.ports)]
    for line in lines:
        line.set(burst_length=bits)
    while True:
        await RisingEdge(pair.dut.clk)
        started = [line for line in lines if line.value("tap_txc") & 1
                   and line.value("tap_txd") & 0xFF == XgmiiControl.START]
        if started:
            break
    await ClockCycles(pair.dut.clk, beat - 1)
    started[0].set(burst=1)
    await RisingEdge(pair.dut.clk)
    started[0].set(burst=0)


@cocotb.test()
async def traffic(dut):
    params = export_params()
    rng = random.Random(cocotb.RANDOM_SEED)
    pair = await start_pair(dut, rng, ber=1e-4, axi_pause=0.2, idle=0.3, backpressure=0.3)
    lines = pair.memory_lines
    windows = [Window(0, lines // 2, csr.PERM_READ | csr.PERM_WRITE),
               Window(lines // 2, lines // 4, csr.PERM_READ)]
    await pair.program_windows(windows)
    await pair.wait_links()
    count = min(params["tags"], 200)
    requests = {side.name: list(random_requests(rng, count, lines, side.peer.id))
                for side in pair.sides}
    sent_before = pair.frames_sent()
    # A request's timeout runs from its issue, so it also counts the time the request queues
    # behind the others outstanding; the target serves one request at a time (about 50 cycles
    # each on these lines), so 200 requests at once would queue past ``timeout_cycles`` (4000)
    # with nothing lost. The window keeps the queue (32 × ~50 cycles) well inside it.
    issued = [cocotb.start_soon(side.issue(requests[side.name], window=32))
              for side in pair.sides]
    expected = {side.name: await task for side, task in zip(pair.sides, issued)}
    await wait_idle(dut, [s for side in pair.sides for s in (side.reqs, side.data)],
                    [(side.cpls, count) for side in pair.sides],
                    timeout_cycles=params["timeout_cycles"] * 4 + 400 * count)
    await ClockCycles(dut.clk, 200)

    # Under that load B's target is mostly busy: a request usually waits whole in VC 0's buffer
    # and, if bad, is rolled back there rather than passed on (some seeds pass none on). With
    # the target idle a request is passed on as it arrives: A now stores 256 B (35 beats) one at
    # a time, each with a burst of bit errors a few beats into its first transmission (longer
    # than the FEC corrects), until one has ended bad after it was passed on.
    def passed_bad():
        return [sum(side.io.element(f"p{p}_count_passed_bad", vc)
                    for side in pair.sides for p in range(pair.ports)) for vc in (0, 1)]

    a, b = pair.sides
    for tag in range(count, count + PASS_ON_STORES):
        if passed_bad()[0]:
            break
        store = next(random_requests(rng, 1, lines, b.id, first_tag=tag, store_fraction=1.0,
                                     sizes=(LsSize.B256,)))
        requests[a.name].append(store)
        hit = cocotb.start_soon(burst_into_next_frame(pair, "ab"))
        expected[a.name].update(await a.issue([store]))
        await wait_until(dut.clk, lambda: a.cpls.count() == len(expected[a.name]),
                         params["timeout_cycles"] * 2, f"store {tag} did not complete")
        assert hit.done(), f"store {tag}: no start word seen on A's lines"
    dut._log.info(f"single stores with a burst: {len(requests[a.name]) - count}; ended bad "
                  f"after they were passed on, VC 0/1: {passed_bad()}")
    await ClockCycles(dut.clk, 200)

    for side in pair.sides:
        order, errors = await side.collect_completions(expected[side.name])
        assert not errors, errors
        assert side.peer.memory_matches(), f"{side.peer.name}: memory differs from the model"
        assert side.value("outstanding") == 0
        errors = side.io.counters(("timeouts", "unexpected", "mismatched", "bad_tags",
                                   "unroutable", "bad_vc", "unreachable", "stale_fails"))
        assert not any(errors.values()), f"{side.name}: {errors}"
        for p in range(pair.ports):
            assert side.value(f"p{p}_count_frames_dropped") == 0
        statuses = {answer.status for answer in expected[side.name].values()}
        assert {CompletionStatus.OK, CompletionStatus.ACCESS_DENIED} <= statuses

    # The lines damaged frames and the links replayed them.
    replays = pair.port_total("count_replays")
    bad = pair.port_total("count_mac_rx_fcs_errors")
    assert replays > 0 and bad > 0, f"replays {replays}, FCS errors {bad}"
    # Some damaged L/S requests (VC 0) and responses (VC 1) had begun to reach the target or
    # the requester when the link found them bad: they ended with an error, and the checks
    # above show they left no trace (no completion, no memory access, no mismatch).
    assert all(passed_bad()), \
        f"frames ended bad after they were passed on, VC 0/1: {passed_bad()}"

    # Spreading: every request (VC 0) and response (VC 1) left on the port the
    # path-selection model picks for it, and every port carried requests.
    pair.assert_spread(sent_before, pair.ls_spread(requests), vcs=range(2), busy_vcs=(0,),
                       what="L/S requests and responses")


@cocotb.test()
async def rdma(dut):
    """Both GPUs' DMA engines WRITE to and READ from each other at once over lines with bit
    errors; WRITE and READ_RSP packets are sprayed over the ports."""
    params = nic_params()
    rng = random.Random(cocotb.RANDOM_SEED + 5)
    pair = await start_pair(dut, rng, ber=1e-4, axi_pause=0.2, idle=0.3, backpressure=0.3)
    areas = RdmaAreas.of_build()
    await pair.program_rdma_windows(areas.windows())
    await pair.wait_links()
    count = 100
    frames = []
    sent_before = pair.frames_sent()

    def maker(side):
        # One command in ten misaligned: refused by the requester with ADDRESS_ERROR.
        return lambda rng, ident: areas.command(rng, ident, side.peer.id, params["mtu"],
                                                misaligned=0.1)

    tasks = [cocotb.start_soon(run_rdma(side, rng, count, make=maker(side), frames=frames))
             for side in pair.sides]
    results = [await task for task in tasks]
    await ClockCycles(dut.clk, 200)
    for side, result in zip(pair.sides, results):
        statuses = result.statuses
        assert not result.errors, result.errors
        assert len(statuses) == count
        assert side.memory_matches(), f"{side.name}: memory differs from the models"
        assert {CompletionStatus.OK, CompletionStatus.ACCESS_DENIED,
                CompletionStatus.ADDRESS_ERROR} <= set(statuses), statuses
        assert side.value("rdma_outstanding") == 0
        for name in ("timeouts", "unexpected", "mismatched", "axi_errors"):
            assert side.value(f"rdma_count_{name}") == 0, f"{side.name}: rdma_count_{name}"
        for name, value in side.rdma_model.counters.items():
            assert side.value(f"rdma_target_count_{name}") == value, f"{side.name}: {name}"
        dut._log.info(f"{side.name}: " + ", ".join(
            f"{s.name} {statuses.count(s)}" for s in CompletionStatus if statuses.count(s)))

    # Spreading: every RDMA frame left on the port the path model picks for its entropy, and
    # every port carried RDMA requests (VC 2) and responses (VC 3).
    sides = {side.id: side for side in pair.sides}
    want = pair.expected_spread((sides[frame.src], frame.vc, frame.dst, frame.entropy)
                                for frame in frames)
    pair.assert_spread(sent_before, want, vcs=range(NIC_VCS), busy_vcs=(2, 3),
                       what="RDMA frames")


def sen_word(endpoint, reachable, event):
    """The 6 ``tdata`` octets of a SEN LCW about ``endpoint``."""
    word = lcw_tdata(LcwType.SEN, SEN_PAYLOAD.to_int(endpoint=endpoint,
                                                     reachable=int(reachable), event=event,
                                                     port=0))
    return word.to_bytes(6, "little")


@cocotb.test()
async def failover(dut):
    params = nic_params()
    ports = params["ports"]
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    pair = await start_pair(dut, rng)
    lines = pair.memory_lines
    await pair.open_memories()
    await pair.wait_links()
    a, b = pair.sides
    next_tag = 0

    async def run(count, within=None):
        """``count`` random requests of A to B (completed ``within`` cycles if given);
        returns their completion statuses."""
        nonlocal next_tag
        await a.issue(random_requests(rng, count, lines, b.id, next_tag))
        next_tag += count
        await wait_idle(dut, [a.reqs, a.data], [(a.cpls, count)],
                        timeout_cycles=within or params["timeout_cycles"] * 3 + 200 * count)
        await ClockCycles(dut.clk, 20)
        statuses = [(await a.completion()).status for _ in range(count)]
        while not a.cpl_data.empty():
            await a.cpl_data.recv()
        return statuses

    def sens_seen():
        return sum(a.value(f"count_sen_{kind}") for kind in ("up", "down", "stale"))

    async def sen(port, reachable, event):
        """B sends a SEN about itself on ``port``: A receives it there, as from a switch.
        Returns 100 cycles after A has taken it (counted up, down or stale): a SEN waits on
        B's side behind the link's own LCWs for a time that depends on the traffic before."""
        seen = sens_seen()
        await b.lcw_sources[port].send(AxiStreamFrame(sen_word(b.id, reachable, event)))
        await wait_until(dut.clk, lambda: sens_seen() > seen, 2000,
                         f"the SEN on port {port} was not taken within 2000 cycles")
        await ClockCycles(dut.clk, 100)

    # Port 0 is announced dead: every request then leaves on the other ports.
    await sen(0, False, 1)
    assert a.value("count_sen_down") == 1
    assert a.value("count_purges") == 1, "the SEN did not purge the port's queues"
    before = a.frames_sent()[0]
    statuses = await run(40)
    after = a.frames_sent()[0]
    assert statuses == [CompletionStatus.OK] * 40
    assert after[0] == before[0], "a frame was steered to the dead port"
    assert sum(after) - sum(before) == 40

    # Every port dead: requests are dropped at the NIC and complete UNREACHABLE at once (far
    # inside the timeout); nothing hangs.
    for p in range(1, ports):
        await sen(p, False, 1)
    statuses = await run(5, within=params["timeout_cycles"] // 8)
    assert statuses == [CompletionStatus.UNREACHABLE] * 5
    assert a.value("count_unroutable") == 5
    assert a.value("count_purges") == ports
    assert a.value("count_unreachable") == 5
    assert a.value("count_timeouts") == a.value("count_stale_fails") == 0

    # DMA commands too: WRITEs of 1 and 4 packets and READs complete UNREACHABLE at once,
    # and nothing reaches B.
    areas = RdmaAreas.of_build()
    commands = [areas.command(rng, ident, b.id, params["mtu"], read=bool(ident % 2),
                              length=(64, 4 * params["mtu"])[ident // 2 % 2], misaligned=0)
                for ident in range(8)]
    packets = sum(1 if cmd.read else -(-cmd.length // params["mtu"]) for cmd in commands)
    for cmd in commands:
        await a.cmds.send(command_octets(cmd))
    await wait_idle(dut, [a.cmds], [(a.rdma_cpls, len(commands))],
                    timeout_cycles=params["timeout_cycles"] // 8)
    got = sorted([await a.rdma_completion() for _ in commands])
    assert got == [(cmd.id, CompletionStatus.UNREACHABLE) for cmd in commands]
    await ClockCycles(dut.clk, 2)           # a counter shows an event 2 cycles after it
    assert a.value("count_unroutable") == 5 + packets
    assert a.value("rdma_count_unreachable") == len(commands)
    for name in ("timeouts", "stale_fails", "fail_overflows"):
        assert a.value(f"rdma_count_{name}") == 0, f"rdma_count_{name}"
    assert b.value("rdma_target_count_write_packets") == b.value("rdma_target_count_reads") == 0

    # Port 0 comes back; a stale SEN (an old event number) does not take it away again.
    await sen(0, True, 2)
    await sen(0, False, 2)
    assert a.value("count_sen_stale") == 1
    before = a.frames_sent()[0]
    statuses = await run(20)
    after = a.frames_sent()[0]
    assert statuses == [CompletionStatus.OK] * 20
    assert after[0] - before[0] == 20, "requests did not all take the one live port"
    assert a.value("count_sen_up") == 1 and a.value("count_sen_down") == ports
    assert a.value("count_purges") == ports, "a SEN saying reachable purged a port"


@cocotb.test()
async def link_loss(dut):
    rng = random.Random(cocotb.RANDOM_SEED + 4)
    # B gives 16 credits (1 KiB) per VC on port 0: that much goes into the dead line, the
    # rest of port 0's share of the requests waits in A's queue for it. 120 requests on 64
    # 4-line areas (so many touch the same lines): about half take port 0.
    seen = await run_link_loss(dut, rng, 120, credits=16, memory_lines=256, idle=0.2,
                               backpressure=0.2)
    dut._log.info(f"link loss: {seen.sent} frames lost in the LLR, {seen.lost} "
                  f"TIMEOUT ({seen.lost_responses} with B's port 0 as response path), "
                  f"{seen.diverted} re-steered; cut at {seen.cut}, port down at {seen.down}, "
                  f"last frame into it observed at {seen.last_sent}, last re-steered at "
                  f"{seen.last_diverted}")
    assert not seen.errors, seen.errors[:10]
    assert seen.down is not None, "port 0 never went down"
    assert seen.purges == 1
    assert seen.diverted > 0, "nothing was queued for port 0 when it went down"
    # Every frame handed to the dead port's LLR was lost (TIMEOUT); any other TIMEOUT is a
    # response that took B's port 0 (still up for B, delivering nothing). No frame entered
    # the port after it went down (a counter and links_up change at the same clock edge, so
    # equal means the cycle before).
    assert seen.lost - seen.lost_responses <= seen.sent <= seen.lost, seen
    assert seen.last_sent <= seen.down, "a frame entered the port after it went down"
    assert seen.last_diverted >= seen.down


#: The 64 B load round trip span by span, as docs/nic.md states it (56 cycles in all).
LOAD_ROUND_TRIP_BUDGET = {"tx": 6, "line": 8, "rx": 10, "memory": 2, "response_tx": 5,
                          "line_back": 8, "response_rx": 17}


@cocotb.test()
async def latency(dut):
    rng = random.Random(cocotb.RANDOM_SEED + 3)
    pair = await start_pair(dut, rng)
    await pair.open_memories()
    await pair.wait_links()
    cycles = await probe_latency(pair)
    dut._log.info(f"64 B load: TX {cycles['tx']}, RX {cycles['rx']}, round trip "
                  f"{cycles['round_trip']} cycles")
    assert cycles["tx"] == Nic.TX_LATENCY, f"TX {cycles['tx']} cycles"
    assert cycles["rx"] == Nic.RX_LATENCY, f"RX {cycles['rx']} cycles"
    # Ref: docs/nic.md "The 64 B load round trip, span by span" — the spans add up to the
    # round trip (probe_latency checks that), each as the docs state it.
    assert cycles["budget"] == LOAD_ROUND_TRIP_BUDGET, cycles["budget"]


@pytest.mark.parametrize("params", [
    PAIR_PARAMS,
    pytest.param({"ports": 4, "tags": 64, "timeout_cycles": 4000, "addr_width": 16,
                  "fec": 0b0101}, marks=pytest.mark.slow),
], ids=lambda p: f"ports{p['ports']}")
def test_nic_pair(params, tmp_path):
    run_cocotb(EXPORT, "test_nic_pair", params, test_dir=tmp_path)
