"""``PacketArbiter`` and ``round_robin`` in Amaranth's simulator, and the NIC's configuration
errors.

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

from ethlink.rtl.arbiter import PacketArbiter, round_robin
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


@pytest.mark.parametrize("n", [1, 2, 3])
def test_frames_whole_in_order_and_held(n):
    rng = random.Random(n)
    dut = PacketArbiter(n, OCTETS)
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
        with pytest.raises(ValueError, match="ports"):
            Nic(ports=5)
        with pytest.raises(ValueError, match="fec is a mask of the 2 ports"):
            NicPair(ports=2, fec=0b100)
        gc.collect()            # their finalisers run here, inside the filter


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_round_robin_every_request_and_pointer(n):
    """Every request pattern at every pointer: the grant is the first requester at or after
    the pointer, wrapping round, or nothing when none requests."""
    m = Module()
    requests, pointer = Signal(n), Signal(range(n))
    grant = round_robin(m, requests, pointer, "rr")

    async def bench(ctx):
        for ptr in range(n):
            for pattern in range(1 << n):
                ctx.set(requests, pattern)
                ctx.set(pointer, ptr)
                order = [(ptr + k) % n for k in range(n)]
                first = next((i for i in order if pattern >> i & 1), None)
                assert ctx.get(grant) == (0 if first is None else 1 << first), (pattern, ptr)

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
