"""cocotb benches of ``switch_core`` run by ``ethlink bench switch`` (``ethlink.bench``).

Each test reads its scenario from ``ETHLINK_SCENARIO`` and writes its figures to
``ETHLINK_RESULT`` (JSON). Every port behaves like its link (``ifg`` line pacing, see
:class:`~ethlink.sim.switch_tb.SwitchTB`), so throughput is a fraction of the line rate:
XGMII words of the frames delivered (start word, frame, FCS, gap) over the words the egress
lines could carry. Every run is checked against the golden model like the tests are: the
figures include the frames lost and reordered, which must be 0.
"""

import json
import os
import random

import cocotb
from cocotb.triggers import ClockCycles

from ethlink.sim.runner import export_params
from ethlink.sim.switch_tb import SwitchTB, make_body, line_words

#: Traffic mixes of the bench (frame kinds of :func:`~ethlink.sim.switch_tb.make_body`, drawn
#: with equal chances): L/S requests and responses and RDMA packets up to 1 KiB, or L/S alone.
MIXES = {"mixed": ("load", "store", "load_rsp", "write", "read_rsp"),
         "ls": ("load", "store", "load_rsp")}


def _scenario():
    return json.loads(os.environ.get("ETHLINK_SCENARIO", "{}"))


def _write(result):
    with open(os.environ["ETHLINK_RESULT"], "w") as f:
        json.dump(result, f)


class Generator:
    """Frames for every ingress with uniform random destinations (every port, its own
    included), arriving as a Poisson process at ``load`` of the line rate, or always
    waiting (``load`` = None: saturation)."""
    def __init__(self, h, rng, radix, load, kinds, ifg=12):
        self.h, self.rng, self.radix, self.load, self.kinds, self.ifg = h, rng, radix, load, \
            kinds, ifg
        self.serial = 0
        self.next_at = [rng.expovariate(1.0) * 20 for _ in range(radix)]

    def body(self, ingress):
        self.serial += 1
        dst = self.rng.randrange(self.radix)
        return make_body(self.serial, ingress, dst, self.rng.choice(self.kinds), self.rng)

    def __call__(self, cycle):
        for p in range(self.radix):
            if self.load is None:
                while len(self.h.pending[p]) < 2:
                    self.h.send(p, self.body(p))
            elif cycle >= self.next_at[p]:
                body = self.body(p)
                self.h.send(p, body)
                mean_gap = line_words(len(body), self.ifg) / self.load
                self.next_at[p] += self.rng.expovariate(1.0 / mean_gap)


async def _measure(dut, load, warmup, window, seed, mix, ifg=12):
    radix = export_params().get("radix", 8)
    rng = random.Random(seed)
    h = SwitchTB(dut, radix, rng, ifg=ifg)
    await h.reset(clear_ids=radix)
    for e in range(radix):
        h.route(e, e)
    await ClockCycles(dut.clk, radix + 4)
    gen = Generator(h, rng, radix, load, MIXES[mix], ifg=ifg)
    h.on_cycle = gen
    await ClockCycles(dut.clk, warmup)
    start, first_out = h.cycle, len(h.frames_out)
    await ClockCycles(dut.clk, window)
    end = h.cycle
    window_frames = [f for f in h.frames_out[first_out:] if start <= f[0] < end]
    words = sum(line_words(len(body), ifg) for _, _, body, _ in window_frames)
    # Stop offering and let everything drain: lost frames are the ones that never leave.
    h.on_cycle = None
    for p in range(radix):
        h.pending[p].clear()
    await h.drain(timeout=20000)
    latencies = sorted(latency for *_, latency in window_frames)
    return {
        "offered_load": load,
        "mix": mix,
        "throughput": words / (radix * (end - start)),
        "frames": len(window_frames),
        "latency_mean_cycles": sum(latencies) / len(latencies) if latencies else None,
        "latency_p99_cycles": latencies[int(0.99 * (len(latencies) - 1))] if latencies
        else None,
        "lost": h.lost(),
        "reordered": sum("reordered" in e for e in h.errors),
        "errors": len(h.errors),
    }


@cocotb.test()
async def zero_load(dut):
    """One frame at a time from every ingress to every egress: first beat in to first beat
    out, in cycles."""
    radix = export_params().get("radix", 8)
    rng = random.Random(1)
    h = SwitchTB(dut, radix, rng)
    await h.reset(clear_ids=radix)
    for e in range(radix):
        h.route(e, e)
    await ClockCycles(dut.clk, radix + 4)
    serial = 0
    for ingress in range(radix):
        for egress in range(radix):
            for kind in ("load", "store", "write"):
                serial += 1
                h.send(ingress, make_body(serial, ingress, egress, kind, rng))
                await h.drain()
    latencies = [latency for *_, latency in h.frames_out]
    _write({"latencies": sorted(set(latencies)), "frames": len(latencies),
            "lost": h.lost(), "errors": h.errors[:5]})


@cocotb.test()
async def load_point(dut):
    """One offered load (``load``: fraction of line rate, or null for saturation)."""
    s = _scenario()
    _write(await _measure(dut, s.get("load"), s.get("warmup", 2000), s.get("window", 10000),
                          s.get("seed", 1), s.get("mix", "mixed")))
