"""Two NICs' L/S halves back to back (``nic_ls_loopback``: LsRequester → lossy path → LsTarget
→ LsRequester), cocotbext-axi's AXI RAM as the target's memory, against the golden target
model.

Random loads and stores of every size, inside and outside the windows, some to an endpoint
whose request frames are lost (they must complete with TIMEOUT), some with a tag beyond the
table (BAD_TAG, never sent); random idles on the GPU side, back-pressure on the completions
and on every AXI channel. Every request completes exactly once with the model's status, every
load's data and the whole memory are compared octet for octet. Then the cycle latencies.
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from ethlink.rtl.nic import csr
from ethlink.rtl.nic.ls_requester import CompletionStatus, LsRequester
from ethlink.rtl.wire import LsSize
from ethlink.sim.models.nic import LINE_OCTETS, Window
from ethlink.sim.nic_tb import Answer, LsLoopbackTB, LsRequest
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import wait_idle

EXPORT = "nic_ls_loopback"
LOCAL_ID = 0x021
REMOTE = 0x155
LOST = 0x3FF          # request frames to this endpoint are dropped on the way


async def start_loopback(dut, rng, **options):
    """The loopback reset, with a read/write window over the first half of memory and a
    read-only one over the next quarter."""
    tb = LsLoopbackTB(dut, rng, LOCAL_ID, LOST, **options)
    await tb.reset()
    lines = tb.memory_lines
    await tb.program_windows([Window(0, lines // 2, csr.PERM_READ | csr.PERM_WRITE),
                              Window(lines // 2, lines // 4, csr.PERM_READ)])
    return tb


@cocotb.test()
async def random_requests(dut):
    params = export_params()
    tags = params["tags"]
    rng = random.Random(cocotb.RANDOM_SEED)
    tb = await start_loopback(dut, rng, axi_pause=0.2, idle=0.3, backpressure=0.3)
    model, memory_lines = tb.model, tb.memory_lines
    reqs, data, cpls, cpl_data = tb.reqs, tb.data, tb.cpls, tb.cpl_data

    expected = {}           # tag -> Answer
    count = min(tags, 200)
    for n in range(count + 4):
        store = rng.random() < 0.5
        size = rng.choice([LsSize.B64, LsSize.B128, LsSize.B256])
        lines = LsSize(size).octets // LINE_OCTETS
        line = rng.randrange(memory_lines // lines) * lines
        # The first request is always lost, so every seed covers the TIMEOUT path.
        dst = LOST if n == 0 or rng.random() < 0.05 else REMOTE
        tag = n if n < count else tags + n      # the last four: beyond the table
        payload = rng.randbytes(LsSize(size).octets) if store else b""
        request = LsRequest(store, size, dst, tag, line, payload)
        if tag >= tags:
            expected[tag] = Answer(CompletionStatus.BAD_TAG)
        elif dst == LOST:
            expected[tag] = Answer(CompletionStatus.TIMEOUT)
        else:
            expected[tag] = Answer.of(request, model, LOCAL_ID)
        await tb.send(request)

    await wait_idle(dut, [reqs, data], [(cpls, len(expected))],
                    timeout_cycles=params["timeout_cycles"] * 4 + 200 * count)
    await ClockCycles(dut.clk, 100)
    got = {}
    for _ in range(len(expected)):
        tag, status = await tb.completion()
        assert tag not in got, f"tag {tag} completed twice"
        got[tag] = status
    assert cpls.empty(), "more completions than requests"
    want_data = [tag for tag in got if tag in expected and expected[tag].data is not None]
    for tag, status in got.items():
        assert tag in expected, f"completion for unknown tag {tag}"
        assert status == expected[tag].status, f"tag {tag}: {status.name}, expected " \
                                               f"{expected[tag].status.name}"
    # Load data comes in completion order.
    order = [tag for tag in got if expected[tag].data is not None]
    assert cpl_data.count() == len(order)
    for tag in order:
        assert bytes((await cpl_data.recv()).tdata) == expected[tag].data, f"tag {tag} data"
    assert tb.memory_matches(), "memory differs from model"
    assert int(dut.outstanding.value) == 0
    statuses = [answer.status for answer in expected.values()]
    assert int(dut.count_timeouts.value) == statuses.count(CompletionStatus.TIMEOUT) > 0
    assert int(dut.count_bad_tags.value) == statuses.count(CompletionStatus.BAD_TAG)
    assert int(dut.count_unexpected.value) == int(dut.count_mismatched.value) == 0
    assert {CompletionStatus.OK, CompletionStatus.ACCESS_DENIED} <= set(statuses)
    assert want_data


@cocotb.test()
async def latency(dut):
    """TX: request taken → first frame beat; RX: last response beat → completion valid."""
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    p = await start_loopback(dut, rng)
    await p.send(LsRequest(False, LsSize.B64, REMOTE, 5, 64))
    await wait_idle(dut, [p.reqs], [(p.cpls, 1)])
    tag, status = await p.completion()
    assert (tag, status) == (5, CompletionStatus.OK)
    tx_latency = p.tx.frame_starts[0] - p.req_log.transfers[0][0]
    rx_latency = p.cpl_valid.rises[0] - p.rx.transfers[-1][0]
    round_trip = p.cpl_valid.rises[0] - p.req_log.transfers[0][0]
    assert tx_latency == LsRequester.TX_LATENCY, f"TX {tx_latency} cycles"
    assert rx_latency == LsRequester.RX_LATENCY, f"RX {rx_latency} cycles"
    dut._log.info(f"TX {tx_latency}, RX {rx_latency}, 64 B load round trip {round_trip} cycles")


#: Ref: docs/nic.md §4 — a lost request's TIMEOUT completion is offered between
#: ``timeout_cycles`` + 2 and ``timeout_cycles + tags`` + 1 cycles after its ``req`` transfer
#: while the completion side is free (the scanner judges each tag once per ``tags`` cycles).
TIMEOUT_EARLIEST, TIMEOUT_SLACK = 2, 1


@cocotb.test()
async def timeout_bound(dut):
    """Lost requests one at a time, at random points of the scanner's round: each TIMEOUT
    completion comes no earlier than the timeout and no later than the documented bound."""
    params = export_params()
    timeout, tags = params["timeout_cycles"], params["tags"]
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    p = await start_loopback(dut, rng)
    deltas = []
    for n in range(6):
        await ClockCycles(dut.clk, rng.randrange(tags))
        await p.send(LsRequest(False, LsSize.B64, LOST, n, 0))
        await wait_idle(dut, [p.reqs], [(p.cpls, 1)], timeout_cycles=2 * (timeout + tags))
        assert await p.completion() == (n, CompletionStatus.TIMEOUT)
        deltas.append(p.cpl_valid.rises[n] - p.req_log.transfers[n][0])
    dut._log.info(f"request -> TIMEOUT completion: {deltas} cycles (timeout {timeout}, "
                  f"{tags} tags)")
    for delta in deltas:
        assert timeout + TIMEOUT_EARLIEST <= delta <= timeout + tags + TIMEOUT_SLACK, deltas


@pytest.mark.parametrize("params", [
    {"beat_octets": 8, "tags": 256, "timeout_cycles": 2000, "addr_width": 16},
    {"beat_octets": 64, "tags": 64, "timeout_cycles": 500, "addr_width": 16},
], ids=lambda p: f"w{p['beat_octets']}")
def test_nic_ls_loopback(params, tmp_path):
    run_cocotb(EXPORT, "test_nic_ls_loopback", params, test_dir=tmp_path)
