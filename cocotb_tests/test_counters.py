"""``SaturatingCounter`` against a plain Python model of spec §11's rule, in Amaranth's
simulator: a counter may never wrap silently, so it sticks at its maximum.

Narrow counters (5 bits) reach the top within the run: each kind gets random events for
hundreds of cycles, and in every cycle the counter must show the model's value of the events
two cycles before (the counter's documented latency), never more than the top, never less
than it once there. ``count`` counts by 1, ``add`` adds an amount up to 7 (sums that jump past
the top must clamp to it, not wrap), ``max`` keeps the largest value seen.
"""

import random

import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from ethlink.rtl.counters import SaturatingCounter

WIDTH = 5
TOP = (1 << WIDTH) - 1
CYCLES = 300
#: Docs (rtl/counters.py): the events of cycle t show from cycle t + 2 on.
LATENCY = 2


class _Counted(Elaboratable):
    def __init__(self, kind):
        self.kind = kind
        self.event = Signal()
        self.amount = Signal(3)
        self.counter = SaturatingCounter("count_probe", WIDTH)

    def elaborate(self, platform):
        m = Module()
        if self.kind == "count":
            self.counter.increment(m, self.event)
        elif self.kind == "add":
            self.counter.add(m, self.amount, self.event)
        else:
            self.counter.track_max(m, self.amount)
        return m


@pytest.mark.parametrize("kind", ["count", "add", "max"])
def test_counter_saturates(kind):
    dut = _Counted(kind)
    rng = random.Random(kind)
    history = []                      # the model's value after each cycle's event
    seen = {"top": 0}

    async def bench(ctx):
        model = 0
        for cycle in range(CYCLES):
            event, amount = rng.random() < 0.5, rng.randrange(8)
            if kind == "max":
                # Rising slowly, so that every value is seen before the largest.
                amount = min(amount, cycle // 40)
            ctx.set(dut.event, event)
            ctx.set(dut.amount, amount)
            got = ctx.get(dut.counter.value)
            expected = history[cycle - LATENCY] if cycle >= LATENCY else 0
            assert got == expected, f"{kind}, cycle {cycle}: {got}, model {expected}"
            seen["top"] += got == TOP
            if kind == "count":
                model = min(TOP, model + event)
            elif kind == "add":
                model = min(TOP, model + amount * event)
            else:
                model = max(model, amount)
            history.append(model)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    if kind != "max":
        # The run must have held the counter at its top for a while, or it tested nothing.
        assert seen["top"] > CYCLES // 3, seen
