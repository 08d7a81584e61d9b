"""``TwoEntryFifo`` against Amaranth's own ``SyncFIFO(depth=2)`` (and with ``clear`` against a
model of its contract), and ``SkidBuffer`` against the stream rules and a plain wire, in
Amaranth's simulator.

Both queues get the same random writes (valid on and off, random data) and the same random
reads (ready on and off) for thousands of cycles; in every cycle their ``w_stream.ready``,
``r_stream.valid``, ``r_stream.payload`` (when valid) and ``level`` must be equal. The library
FIFO is the reference: ``TwoEntryFifo`` claims its behaviour with the head in a register.
"""

import random

from amaranth.hdl import Elaboratable, Module
from amaranth.lib.fifo import SyncFIFO
from amaranth.sim import Simulator

from ethlink.rtl.queue import SkidBuffer, TwoEntryFifo

WIDTH = 12
CYCLES = 4000


def _simulate(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


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

    _simulate(dut, bench)
    # The comparison covered reads and a full queue.
    assert seen["reads"] > CYCLES // 10 and seen["full"] > CYCLES // 20, seen


def test_skid_buffer():
    """Random entries in (each held until taken, as the stream rules require) and a random
    ``ready`` out: every entry comes out once and in order; ``o`` holds an entry until it is
    taken; an entry offered to an empty stage is on ``o`` in the same cycle; and ``i.ready``
    does not move when ``o.ready`` does within a cycle (it is a register)."""
    dut = SkidBuffer(WIDTH)
    rng = random.Random(6)
    sent, got = [], []
    seen = {"same_cycle": 0, "kept": 0}

    async def bench(ctx):
        offered = None
        held = None                    # (payload) on o not taken in the cycle before
        for cycle in range(CYCLES):
            bias = 0.8 if (cycle // 200) % 2 else 0.3
            if offered is None and rng.random() < bias:
                offered = rng.getrandbits(WIDTH)
            ctx.set(dut.i.valid, offered is not None)
            ctx.set(dut.i.payload, offered or 0)
            ctx.set(dut.o.ready, 0)
            in_ready = ctx.get(dut.i.ready)
            ready = rng.random() > bias
            ctx.set(dut.o.ready, ready)
            assert ctx.get(dut.i.ready) == in_ready, f"cycle {cycle}: i.ready follows o.ready"
            valid, payload = ctx.get(dut.o.valid), ctx.get(dut.o.payload)
            if held is not None:
                assert valid and payload == held, f"cycle {cycle}: o dropped or changed"
            if offered is not None and in_ready and held is None:
                assert valid and payload == offered, f"cycle {cycle}: not passed through"
                seen["same_cycle"] += 1
            if valid and ready:
                got.append(payload)
            held = payload if valid and not ready else None
            seen["kept"] += held is not None and offered is not None and in_ready
            if offered is not None and in_ready:
                sent.append(offered)
                offered = None
            await ctx.tick()

    _simulate(dut, bench)
    assert got == sent[:len(got)] and len(sent) - len(got) <= 1
    assert len(got) > CYCLES // 8 and seen["same_cycle"] > 100 and seen["kept"] > 100, seen


def test_two_entry_fifo_clear():
    """``TwoEntryFifo(clear=True)`` against a model of its contract: a queue of two, emptied at
    the end of a ``clear`` cycle, an entry written in it dropped too (the head may still
    leave), ``w_stream.ready`` the same whatever ``clear`` is.
    Random writes, reads and clears; in every cycle ``w_stream.ready``, ``r_stream.valid``,
    the head and ``level`` must be the model's, and every entry read is the oldest one
    written and not cleared."""
    dut = TwoEntryFifo(WIDTH, clear=True)
    rng = random.Random(8)
    seen = {"reads": 0, "full": 0, "cleared": 0}

    async def bench(ctx):
        model = []
        for cycle in range(CYCLES):
            clear = rng.random() < 0.05
            valid, ready = rng.random() < 0.6, rng.random() < 0.5
            data = rng.getrandbits(WIDTH)
            ctx.set(dut.clear, clear)
            ctx.set(dut.w_stream.valid, valid)
            ctx.set(dut.w_stream.payload, data)
            ctx.set(dut.r_stream.ready, ready)
            w_ready = len(model) < 2
            assert ctx.get(dut.w_stream.ready) == w_ready, f"cycle {cycle}: w_stream.ready"
            assert ctx.get(dut.r_stream.valid) == bool(model), f"cycle {cycle}: r_stream.valid"
            assert ctx.get(dut.level) == len(model), f"cycle {cycle}: level"
            if model:
                assert ctx.get(dut.r_stream.payload) == model[0], f"cycle {cycle}: head"
            if model and ready:
                model.pop(0)
                seen["reads"] += 1
            if clear:
                seen["cleared"] += bool(model)
                model = []
            elif valid and w_ready:
                model.append(data)
            seen["full"] += len(model) == 2
            await ctx.tick()

    _simulate(dut, bench)
    assert seen["reads"] > CYCLES // 10 and seen["full"] > CYCLES // 20, seen
    assert seen["cleared"] > 20, seen
