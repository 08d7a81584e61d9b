"""``TwoEntryFifo`` against Amaranth's own ``SyncFIFO(depth=2)``, in Amaranth's simulator.

Both queues get the same random writes (valid on and off, random data) and the same random
reads (ready on and off) for thousands of cycles; in every cycle their ``w_stream.ready``,
``r_stream.valid``, ``r_stream.payload`` (when valid) and ``level`` must be equal. The library
FIFO is the reference: ``TwoEntryFifo`` claims its behaviour with the head in a register.
"""

import random

from amaranth.hdl import Elaboratable, Module
from amaranth.lib.fifo import SyncFIFO
from amaranth.sim import Simulator

from ethlink.rtl.queue import TwoEntryFifo

WIDTH = 12
CYCLES = 4000


class _Both(Elaboratable):
    def __init__(self):
        self.ours = TwoEntryFifo(WIDTH)
        self.reference = SyncFIFO(width=WIDTH, depth=2)

    def elaborate(self, platform):
        m = Module()
        m.submodules.ours = self.ours
        m.submodules.reference = self.reference
        return m


def test_two_entry_fifo_matches_sync_fifo():
    dut = _Both()
    ours, ref = dut.ours, dut.reference
    rng = random.Random(5)
    seen = {"reads": 0, "full": 0}

    async def bench(ctx):
        for cycle in range(CYCLES):
            # Phases of mostly writing and mostly reading, so that the queue fills and drains.
            bias = 0.8 if (cycle // 200) % 2 else 0.3
            valid, ready = rng.random() < bias, rng.random() > bias
            data = rng.getrandbits(WIDTH)
            for fifo in (ours, ref):
                ctx.set(fifo.w_stream.valid, valid)
                ctx.set(fifo.w_stream.payload, data)
                ctx.set(fifo.r_stream.ready, ready)
            got = [(ctx.get(fifo.w_stream.ready), ctx.get(fifo.r_stream.valid),
                    ctx.get(fifo.level)) for fifo in (ours, ref)]
            assert got[0] == got[1], f"cycle {cycle}: ours {got[0]}, SyncFIFO {got[1]}"
            if got[1][1]:
                assert ctx.get(ours.r_stream.payload) == ctx.get(ref.r_stream.payload), cycle
                seen["reads"] += ready
            seen["full"] += got[1][2] == 2
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # The comparison covered reads and a full queue.
    assert seen["reads"] > CYCLES // 10 and seen["full"] > CYCLES // 20, seen
