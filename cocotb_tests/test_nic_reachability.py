"""The NIC's reachability table and path steering against the golden model
(sim/models/path.py: ReachabilityModel, select_port), cycle for cycle.

After the reset sweep, random SENs on every port (fresh, duplicated, reordered, for a small set
of endpoints so that they collide with lookups), other LCW types, links going down and up, and
a lookup in most cycles; every answer is checked against the model in the cycle the docstring
states, including the lookups issued in the cycle after a SEN is taken, the first that must
avoid the port it took away (failover). Then the
spreading over the ports and the counters.
"""

import random
from collections import Counter

import cocotb
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

from ethlink.rtl.nic.reachability import ENDPOINT_IDS, Reachability
from ethlink.rtl.wire import LcwType, SEN_PAYLOAD
from ethlink.sim.link_tb import lcw_tdata
from ethlink.sim.models.path import ReachabilityModel, select_port
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import read_counters, start

EXPORT = "nic_reachability"


def idle_inputs(dut, ports):
    dut.i_valid.value = 0
    dut.i_dst.value = 0
    dut.i_entropy.value = 0
    dut.links_up.value = (1 << ports) - 1
    for p in range(ports):
        getattr(dut, f"s_axis_lcw{p}_tvalid").value = 0
        getattr(dut, f"s_axis_lcw{p}_tdata").value = 0


@cocotb.test()
async def reset_sweep(dut):
    """``busy`` for exactly 4096 cycles after reset; lookups meanwhile find no port."""
    ports = export_params()["ports"]
    idle_inputs(dut, ports)
    await start(dut)
    dut.i_valid.value = 1
    busy_cycles, answers = 0, []
    for _ in range(ENDPOINT_IDS + 10):
        await RisingEdge(dut.clk)
        await ReadOnly()
        busy_cycles += int(dut.busy.value)
        if int(dut.o_valid.value):
            answers.append((int(dut.busy.value), int(dut.o_none.value)))
    # busy is high in the 4096 cycles after reset; the samples start after the second edge
    # out of reset (start() returns after the first).
    assert busy_cycles == ENDPOINT_IDS - 2, f"busy for {busy_cycles} cycles"
    assert all(none for busy, none in answers if busy), "a lookup found a port during the sweep"
    assert any(not none for busy, none in answers if not busy)


@cocotb.test()
async def random_sen_and_lookups(dut):
    """Every answer as the model says, LATENCY cycles after its lookup."""
    ports = export_params()["ports"]
    rng = random.Random(cocotb.RANDOM_SEED)
    idle_inputs(dut, ports)
    await start(dut)
    while True:
        await RisingEdge(dut.clk)
        if not int(dut.busy.value):
            break

    model = ReachabilityModel(ports)
    endpoints = [rng.randrange(1024) for _ in range(12)]
    events = [rng.randrange(256) for _ in range(ports)]
    links_up = (1 << ports) - 1
    pending = {}            # cycle of the answer -> (dst, entropy)
    spread = Counter()
    cycles = 8000
    failovers = 0
    sent_down = set()       # endpoints a SEN of the previous cycle took a port from
    for k in range(cycles + Reachability.LATENCY + 1):
        await RisingEdge(dut.clk)
        # Inputs of cycle k (sampled at the next edge). A SEN of cycle k is written to the table
        # in cycle k + 1: the lookup of cycle k sees the table as the SENs of cycle k - 1 and
        # before leave it, and is the first to avoid a port a SEN of cycle k - 1 took away.
        lookup = k < cycles and rng.random() < 0.8
        dut.i_valid.value = int(lookup)
        if lookup:
            dst = rng.choice(endpoints + sorted(sent_down) * 4)
            entropy = rng.getrandbits(16)
            dut.i_dst.value, dut.i_entropy.value = dst, entropy
            pending[k + Reachability.LATENCY] = (dst, entropy, dst in sent_down,
                                                 model.reachable_mask(dst))
        sent_down = set()
        for p in range(ports):
            valid = k < cycles and rng.random() < 0.05
            tvalid = getattr(dut, f"s_axis_lcw{p}_tvalid")
            tdata = getattr(dut, f"s_axis_lcw{p}_tdata")
            tvalid.value = int(valid)
            if not valid:
                continue
            kind = rng.random()
            if kind < 0.1:
                lcw_type = rng.choice([LcwType.CREDIT_UPDATE, LcwType.PING, LcwType.LLR_ACK])
                tdata.value = lcw_tdata(lcw_type, rng.getrandbits(40))
                continue
            if kind < 0.8:
                events[p] = (events[p] + 1) % 256
                event = events[p]
            else:           # a duplicate or reordered event
                event = (events[p] - rng.randrange(0, 130)) % 256
            endpoint, state = rng.choice(endpoints), rng.random() < 0.5
            tdata.value = lcw_tdata(LcwType.SEN, SEN_PAYLOAD.to_int(
                endpoint=endpoint, reachable=int(state), event=event, port=rng.randrange(256)))
            before = model.reachable_mask(endpoint)
            model.sen(p, endpoint, state, event)
            if before & ~model.reachable_mask(endpoint):
                sent_down.add(endpoint)
        # links_up of cycle k applies to the lookup of cycle k - 1.
        if rng.random() < 0.01:
            links_up ^= 1 << rng.randrange(ports)
        dut.links_up.value = links_up
        if k - 1 + Reachability.LATENCY in pending:
            dst, entropy, failover, mask = pending[k - 1 + Reachability.LATENCY]
            pending[k - 1 + Reachability.LATENCY] = (
                dst, entropy, failover, select_port(dst, entropy, mask, links_up))
        await ReadOnly()
        answer = pending.pop(k, None)
        valid = int(dut.o_valid.value)
        assert valid == (answer is not None), f"cycle {k}: o_valid = {valid}"
        if answer is None:
            continue
        dst, entropy, failover, want = answer
        got = None if int(dut.o_none.value) else int(dut.o_port.value)
        assert got == want, (f"cycle {k}: dst {dst:#x} entropy {entropy:#06x}: port {got}, "
                             f"expected {want}")
        spread[got] += 1
        failovers += failover
    assert read_counters(dut, model.counters) == model.counters
    assert model.counters["sen_stale"] and model.counters["sen_down"] and failovers
    dut._log.info(f"answers per port {dict(spread)}, counters {model.counters}, "
                  f"{failovers} lookups in the cycle after a SEN that took a port away")


@pytest.mark.parametrize("ports", [4, 2])
def test_nic_reachability(ports, tmp_path):
    run_cocotb(EXPORT, "test_nic_reachability", {"ports": ports}, test_dir=tmp_path)
