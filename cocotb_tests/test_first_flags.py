"""The ``first`` flag of the packet streams, which AXI4-Stream exports do not carry.

Inside the project a block may rely on ``first`` (the parser restarts on it), so the parser's
and the deparser's ``first`` outputs are checked here, in Amaranth's own simulator: ``first``
is set on exactly the first beat of every packet.
"""

import random

import pytest
from amaranth.sim import Simulator

from ethlink.rtl.forwarding import OefhDeparser, OefhParser
from ethlink.sim.models import header_value, random_frame


def beats_of(octets, width):
    """``(data, keep, first, last)`` of the packet stream beats carrying ``octets``."""
    chunks = [octets[i:i + width] for i in range(0, len(octets), width)] or [b""]
    return [(int.from_bytes(chunk.ljust(width, b"\0"), "little"), (1 << len(chunk)) - 1,
             n == 0, n == len(chunks) - 1) for n, chunk in enumerate(chunks)]


async def put(ctx, stream, **fields):
    """Offer one transfer on ``stream`` (payload fields by name, or ``value=`` for the whole
    payload) and wait until it is taken."""
    for name, value in fields.items():
        target = stream.payload.as_value() if name == "value" else getattr(stream.payload, name)
        ctx.set(target, value)
    ctx.set(stream.valid, 1)
    while not (await ctx.tick().sample(stream.ready))[2]:
        pass
    ctx.set(stream.valid, 0)


def feeder(stream, packets, width):
    async def drive(ctx):
        for octets in packets:
            for data, keep, first, last in beats_of(octets, width):
                await put(ctx, stream, data=data, keep=keep, first=first, last=last)
    return drive


def first_last_flags(dut, out, benches, n_packets, always_ready=()):
    """Run ``benches`` and return ``(first, last)`` of every beat on ``out``."""
    seen = []

    async def sink(ctx):
        for stream in (out, *always_ready):
            ctx.set(stream.ready, 1)
        packets = 0
        while packets < n_packets:
            _, _, valid, payload = await ctx.tick().sample(out.valid, out.payload)
            if valid:
                seen.append((payload.first, payload.last))
                packets += payload.last

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    for bench in (*benches, sink):
        sim.add_testbench(bench)
    sim.run()
    return seen


def assert_first_on_first_beats(seen, n_packets):
    assert sum(last for _, last in seen) == n_packets
    expect_first = True
    for n, (first, last) in enumerate(seen):
        assert first == expect_first, f"beat {n}: first={first}, expected {int(expect_first)}"
        expect_first = bool(last)


@pytest.mark.parametrize("width", [8, 16, 64])
def test_parser_first(width):
    frames = [random_frame(random.Random(width * 100 + n), max_payload=150) for n in range(40)]
    dut = OefhParser(width)
    seen = first_last_flags(dut, dut.o, [feeder(dut.i, [f.body() for f in frames], width)],
                            len(frames), always_ready=[dut.header])
    assert_first_on_first_beats(seen, len(frames))


@pytest.mark.parametrize("width", [8, 16, 64])
def test_deparser_first(width):
    frames = [random_frame(random.Random(width * 100 + n), max_payload=150) for n in range(40)]
    dut = OefhDeparser(width)

    async def headers(ctx):
        for frame in frames:
            await put(ctx, dut.header, value=header_value(frame))

    seen = first_last_flags(dut, dut.o, [headers, feeder(dut.i, [f.payload for f in frames],
                                                         width)], len(frames))
    assert_first_on_first_beats(seen, len(frames))
