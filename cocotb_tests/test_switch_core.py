"""switch_core against the golden switch model (sim/models/switch.py), through sim/switch_tb.py.

Every test checks, frame by frame, that what the model forwards leaves once on the model's
egress port, unchanged and in order per (ingress, egress, VC), that nothing else leaves, and at
the end that every port counter read over the register bus equals the model's.
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from ethlink.rtl.regbus import word_value
from ethlink.rtl.switch import csr
from ethlink.rtl.switch.core import ZERO_LOAD_LATENCY
from ethlink.sim.models import fcs, with_bad_version, with_bad_opcode, with_bad_size, FCS_OCTETS
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.switch_tb import SwitchTB, make_body

EXPORT = "switch_core"
KINDS = ("load", "store", "load_rsp", "write", "read_rsp")
#: Endpoints per port in the tests: endpoint e is attached behind port e % radix.
ENDPOINTS_PER_PORT = 4


def setup(dut, seed, **options):
    params = export_params()
    radix = params.get("radix", 8)
    rng = random.Random(seed)
    return SwitchTB(dut, radix, rng, **options), rng, radix


def program_routes(h, radix):
    for e in range(radix * ENDPOINTS_PER_PORT):
        h.route(e, e % radix)


class Traffic:
    """Unique frames from the endpoints behind each port."""
    def __init__(self, h, rng, radix):
        self.h, self.rng, self.radix = h, rng, radix
        self.serial = 0

    def body(self, ingress, dst, kind=None):
        self.serial += 1
        src = ingress + self.radix * self.rng.randrange(ENDPOINTS_PER_PORT)
        return make_body(self.serial, src, dst, kind or self.rng.choice(KINDS), self.rng)

    def endpoint_behind(self, port):
        return port + self.radix * self.rng.randrange(ENDPOINTS_PER_PORT)

    def send(self, ingress, egress, kind=None):
        self.h.send(ingress, self.body(ingress, self.endpoint_behind(egress), kind))


def spoil(spoiler, body, *args):
    """``body`` changed by one of the frame model's spoilers (which work on body + FCS)."""
    return spoiler(body + fcs(body), *args)[:-FCS_OCTETS]


async def finish(h):
    await h.drain()
    h.assert_clean()
    await h.check_counters()


@cocotb.test()
async def registers(dut):
    """ID, build parameters, port configuration read back; a route to a port at or above
    the radix is stored as no route."""
    h, rng, radix = setup(dut, 1)
    await h.reset()
    values = await h.read_all([csr.ID, csr.PARAMS])
    assert values[0] == csr.ID_VALUE
    params = export_params()
    build = csr.ParamsWord.from_bits(values[1])
    assert build.radix == radix
    assert build.vc_classes == params.get("vc_classes", 2)
    assert build.fifo == params.get("fifo", 0)
    assert await h.read_all([csr.PORT_CONFIG + p for p in range(radix)]) == \
        [csr.NO_ENDPOINT] * radix
    h.port_config(1, 0x123, 1)
    assert await h.read_all([csr.PORT_CONFIG + 1]) == [word_value(csr.PortConfigWord, attached=0x123, src_check=1)]
    h.port_config(1, csr.NO_ENDPOINT, 0)
    if radix < 16:
        h.route(5, radix)          # no such port: no route
        traffic = Traffic(h, rng, radix)
        h.send(0, traffic.body(0, 5))
    await finish(h)
    if radix < 16:
        assert h.frames_in[-1][3].reason == "unroutable"


@cocotb.test()
async def zero_load_latency(dut):
    """One frame at a time between every pair of ports: first beat out exactly
    ZERO_LOAD_LATENCY cycles after first beat in, then one beat per cycle."""
    h, rng, radix = setup(dut, 2)
    await h.reset()
    program_routes(h, radix)
    traffic = Traffic(h, rng, radix)
    await ClockCycles(dut.clk, radix * ENDPOINTS_PER_PORT + 4)
    for ingress in range(radix):
        for egress in range(radix):
            traffic.send(ingress, egress, "write")
            await h.drain()
    h.assert_clean()
    latencies = {latency for _, _, _, latency in h.frames_out}
    assert latencies == {ZERO_LOAD_LATENCY}, f"latencies {sorted(latencies)}"
    await h.check_counters()


async def run_traffic(dut, seed, pick_egress, frames, *, idle=0.3, backpressure=0.3,
                      bad=0.0, ingress_ports=None):
    """``frames`` frames per ingress to ``pick_egress(rng, ingress)``, with random idles and
    back-pressure; a fraction ``bad`` of them malformed, unroutable, spoofed or crossing
    partitions."""
    h, rng, radix = setup(dut, seed, idle=idle, backpressure=backpressure)
    await h.reset()
    program_routes(h, radix)
    traffic = Traffic(h, rng, radix)
    unroutable = radix * ENDPOINTS_PER_PORT          # no route programmed
    if bad:
        # Port 0 checks sources; endpoint `radix` (behind port 0) lives in partition 1.
        h.port_config(0, 0, 1)
        h.write(csr.PARTITION + radix, 1)
    await ClockCycles(dut.clk, unroutable + 8)
    for ingress in ingress_ports or range(radix):
        for _ in range(frames):
            egress = pick_egress(rng, ingress)
            body = traffic.body(ingress, traffic.endpoint_behind(egress))
            if rng.random() < bad:
                kind = rng.randrange(7)
                if kind == 0:
                    body = spoil(with_bad_version, body, rng.choice([0, 2, 3]))
                elif kind == 1:
                    body = spoil(with_bad_opcode, body, rng.choice([0, 5, 7, 12, 15]))
                elif kind == 2 and body[6] >> 4 < 8:
                    body = spoil(with_bad_size, body)
                elif kind == 3:
                    body = body[:rng.randrange(0, 9)]       # ends within the first beat
                elif kind == 4:
                    body = traffic.body(ingress, unroutable + rng.randrange(64))
                elif kind == 5:
                    body = traffic.body(ingress, radix)     # partition 1 from partition 0
                else:
                    body = make_body(traffic.serial + 10**6, 0x3FF, 1, "store", rng)  # spoof
            if body:
                h.send(ingress, body)
    await finish(h)
    forwarded = sum(d.egress is not None for *_, d in h.frames_in)
    assert len(h.frames_out) == forwarded
    return h


@cocotb.test()
async def uniform_random(dut):
    """Uniform random destinations, every frame kind, 10 % bad frames of every reason."""
    radix = export_params().get("radix", 8)
    h = await run_traffic(dut, 3, lambda rng, i: rng.randrange(radix), 60, bad=0.1)
    reasons = {d.reason for *_, d in h.frames_in if d.egress is None}
    assert reasons == {"malformed", "spoofed", "unroutable", "partition"}, reasons


@cocotb.test()
async def all_to_all(dut):
    """Every ingress sends to every egress in turn (a permutation each round)."""
    radix = export_params().get("radix", 8)
    counters = [0] * radix

    def next_egress(rng, ingress):
        counters[ingress] += 1
        return (ingress + counters[ingress]) % radix
    await run_traffic(dut, 4, next_egress, 6 * radix, idle=0.1, backpressure=0.1)


@cocotb.test()
async def hotspot(dut):
    """70 % of the frames of every ingress go to port 0."""
    radix = export_params().get("radix", 8)
    await run_traffic(dut, 5, lambda rng, i: 0 if rng.random() < 0.7 else rng.randrange(radix),
                      40)


@cocotb.test()
async def incast(dut):
    """Every other port sends to port 0, whose egress is paused half the time."""
    radix = export_params().get("radix", 8)
    await run_traffic(dut, 6, lambda rng, i: 0, 30, idle=0.0, backpressure=0.5,
                      ingress_ports=range(1, radix))


@cocotb.test()
async def route_changes_under_traffic(dut):
    """Routes and partitions are rewritten while frames flow; each frame follows the tables
    as they were when its first beat arrived (the model is told each write in its cycle)."""
    h, rng, radix = setup(dut, 7, idle=0.2, backpressure=0.2)
    await h.reset()
    program_routes(h, radix)
    traffic = Traffic(h, rng, radix)
    await ClockCycles(dut.clk, radix * ENDPOINTS_PER_PORT + 8)
    for ingress in range(radix):
        for _ in range(50):
            h.send(ingress, traffic.body(ingress, rng.randrange(radix * ENDPOINTS_PER_PORT)))
    for _ in range(40):
        await ClockCycles(dut.clk, rng.randrange(5, 40))
        dst = rng.randrange(radix * ENDPOINTS_PER_PORT)
        if rng.random() < 0.8:
            h.route(dst, rng.randrange(radix), valid=rng.random() < 0.9)
        else:
            h.write(csr.PARTITION + dst, rng.randrange(2))
    await finish(h)
    moved = {d.egress for *_, d in h.frames_in} - {None}
    assert len(moved) == radix


@pytest.mark.parametrize("params", [
    {},                                                       # radix 8, 2 classes, 1 iteration
    # Small queues and the smallest egress FIFO, which the hot spot fills.
    {"radix": 4, "vc_classes": 1, "iterations": 2, "voq_beats": 32, "egress_beats": 4},
    {"radix": 4, "fifo": 1},                                  # the baseline is a switch too
], ids=["default", "r4-c1-i2-small", "fifo"])
def test_switch_core(params, tmp_path):
    run_cocotb(EXPORT, "test_switch_core", params, test_dir=tmp_path)
