"""``PacketArbiter`` in Amaranth's simulator, and the NIC's configuration errors.

Frames from several inputs with random idles and random back-pressure come out whole, each
input's in order, none lost; a beat once offered stays offered, unchanged, until taken (the
stream rule whose breach once sent a frame down the wrong VC); a lone frame on an idle output
passes in the cycle it is offered."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import Module, Signal, UnusedElaboratable
from amaranth.sim import Simulator

from ethlink.rtl.arbiter import PacketArbiter
from ethlink.rtl.harness.pairs import NicPair
from ethlink.rtl.nic.nic import Nic

OCTETS = 8


def clocked(dut):
    """``dut`` in a module with a ``sync`` domain (one input is a bare wire)."""
    m = Module()
    m.submodules.dut = dut
    toggle = Signal()
    m.d.sync += toggle.eq(~toggle)
    return m


def frames_of(rng, k, count):
    """``count`` frames of input ``k``: lists of beat data, unique per beat."""
    return [[(k << 24) | (n << 8) | b for b in range(rng.randint(1, 5))] for n in range(count)]


@pytest.mark.parametrize("n, priority", [(1, 0), (2, 0), (3, 0), (3, 0b101)])
def test_frames_whole_in_order_and_held(n, priority):
    rng = random.Random(n)
    dut = PacketArbiter(n, OCTETS, priority=priority)
    inputs = dut.i
    sent = [frames_of(rng, k, 30) for k in range(n)]
    received = []

    async def source(ctx, k):
        port = inputs[k]
        for frame in sent[k]:
            for index, data in enumerate(frame):
                while rng.random() < 0.3:
                    await ctx.tick()
                ctx.set(port.valid, 1)
                ctx.set(port.payload.data, data)
                ctx.set(port.payload.keep, (1 << OCTETS) - 1)
                ctx.set(port.payload.first, index == 0)
                ctx.set(port.payload.last, index == len(frame) - 1)
                await ctx.tick().until(port.ready)
                ctx.set(port.valid, 0)

    async def sink(ctx):
        frame, offered = [], None
        total = sum(len(frames) for frames in sent)
        while len(received) < total:
            ready = rng.random() < 0.7
            ctx.set(dut.o.ready, ready)
            await ctx.delay(1e-9)
            if ctx.get(dut.o.valid):
                beat = (ctx.get(dut.o.payload.data), ctx.get(dut.o.payload.first),
                        ctx.get(dut.o.payload.last))
                if offered is not None:
                    assert beat == offered, "an offered beat changed before it was taken"
                offered = None if ready else beat
                if ready:
                    frame.append(beat[0])
                    assert beat[1] == (len(frame) == 1)
                    if beat[2]:
                        received.append(frame)
                        frame = []
            else:
                assert offered is None, "an offered beat was withdrawn"
            await ctx.tick()

    def source_of(k):
        async def run(ctx):
            await source(ctx, k)
        return run

    sim = Simulator(clocked(dut))
    sim.add_clock(1e-8)
    for k in range(n):
        sim.add_testbench(source_of(k), background=True)
    sim.add_testbench(sink)
    sim.run()
    for k in range(n):
        mine = [frame for frame in received if frame[0] >> 24 == k]
        assert mine == sent[k], f"input {k}: frames lost, split or reordered"


def test_priority_frame_waits_for_one_frame_at_most():
    """Inputs 0 and 1 offer 6-beat frames without pause; input 2 (priority) offers a 1-beat
    frame now and then: it is granted as soon as the frame being sent ends, before any other
    waiting frame, and the others still share the rest round robin."""
    dut = PacketArbiter(3, OCTETS, priority=0b100)
    order = []

    async def transfer(ctx, port):
        # One beat offered until taken (no ``until``: the bench ends with these still running).
        while True:
            taken = ctx.get(port.ready)
            await ctx.tick()
            if taken:
                return

    def busy_source(k):
        async def run(ctx):
            port = dut.i[k]
            n = 0
            while True:
                for b in range(6):
                    ctx.set(port.valid, 1)
                    ctx.set(port.payload.data, (k << 24) | (n << 8) | b)
                    ctx.set(port.payload.first, b == 0)
                    ctx.set(port.payload.last, b == 5)
                    await transfer(ctx, port)
                n += 1
        return run

    async def urgent(ctx):
        port = dut.i[2]
        for n in range(8):
            await ctx.tick().repeat(13 + 5 * n)
            ctx.set(port.valid, 1)
            ctx.set(port.payload.data, (2 << 24) | (n << 8))
            ctx.set(port.payload.first, 1)
            ctx.set(port.payload.last, 1)
            order.append(("offer", n))
            await transfer(ctx, port)
            ctx.set(port.valid, 0)

    async def sink(ctx):
        ctx.set(dut.o.ready, 1)
        for _ in range(600):
            await ctx.delay(1e-9)
            if ctx.get(dut.o.valid) and ctx.get(dut.o.payload.last):
                order.append(("end", ctx.get(dut.o.payload.data) >> 24))
            await ctx.tick()

    sim = Simulator(clocked(dut))
    sim.add_clock(1e-8)
    for k in (0, 1):
        sim.add_testbench(busy_source(k), background=True)
    sim.add_testbench(urgent, background=True)
    sim.add_testbench(sink)
    sim.run()
    offers = [i for i, e in enumerate(order) if e[0] == "offer"]
    assert len(offers) == 8
    for i in offers:
        ends = [e for e in order[i + 1:] if e[0] == "end"]
        # At most the frame being sent, then the priority frame.
        assert 2 in [k for _, k in ends[:2]], order[i:i + 4]
    others = [k for kind, k in order if kind == "end" and k != 2]
    assert others.count(0) > 20 and abs(others.count(0) - others.count(1)) <= 1


def test_priority_does_not_starve_the_others():
    """Inputs 0 and 1 (priority) offer frames without pause, input 2 too: input 2 still gets
    one frame in every ``URGENT_RUN`` + 1, and 0 and 1 share the rest."""
    dut = PacketArbiter(3, OCTETS, priority=0b011)
    ends = []

    def busy_source(k):
        async def run(ctx):
            port = dut.i[k]
            n = 0
            while True:
                for b in range(3):
                    ctx.set(port.valid, 1)
                    ctx.set(port.payload.data, (k << 24) | (n << 8) | b)
                    ctx.set(port.payload.first, b == 0)
                    ctx.set(port.payload.last, b == 2)
                    while True:
                        taken = ctx.get(port.ready)
                        await ctx.tick()
                        if taken:
                            break
                n += 1
        return run

    async def sink(ctx):
        ctx.set(dut.o.ready, 1)
        for _ in range(300):
            await ctx.delay(1e-9)
            if ctx.get(dut.o.valid) and ctx.get(dut.o.payload.last):
                ends.append(ctx.get(dut.o.payload.data) >> 24)
            await ctx.tick()

    sim = Simulator(clocked(dut))
    sim.add_clock(1e-8)
    for k in range(3):
        sim.add_testbench(busy_source(k), background=True)
    sim.add_testbench(sink)
    sim.run()
    run = PacketArbiter.URGENT_RUN
    assert ends.count(2) >= len(ends) // (run + 1) - 1, ends
    positions = [n for n, k in enumerate(ends) if k == 2]
    assert all(b - a == run + 1 for a, b in zip(positions, positions[1:])), ends
    assert abs(ends.count(0) - ends.count(1)) <= 1, ends


def test_lone_frame_passes_in_its_cycle():
    dut = PacketArbiter(3, OCTETS)

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        await ctx.tick().repeat(3)
        ctx.set(dut.i[2].valid, 1)
        ctx.set(dut.i[2].payload.first, 1)
        ctx.set(dut.i[2].payload.last, 1)
        ctx.set(dut.i[2].payload.data, 0x55)
        await ctx.delay(1e-9)
        assert ctx.get(dut.o.valid) and ctx.get(dut.o.payload.data) == 0x55
        assert ctx.get(dut.i[2].ready)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_bad_configurations_fail_at_elaboration():
    with warnings.catch_warnings():
        # The refused objects are never elaborated, as intended.
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="at least one input"):
            PacketArbiter(0, OCTETS)
        with pytest.raises(ValueError, match="priority mask"):
            PacketArbiter(2, OCTETS, priority=0b100)
        with pytest.raises(ValueError, match="ports"):
            Nic(ports=5)
        with pytest.raises(ValueError, match="fec is a mask of the 2 ports"):
            NicPair(ports=2, fec=0b100)
        gc.collect()            # their finalisers run here, inside the filter
