"""OefhParser against the golden parser model (sim/models/forwarding.py).

Random frames of every opcode and length mixed with malformed ones (bad version, bad opcode,
reserved size, truncated inside the header), with random source idles and random back-pressure
on both outputs; then the latency and full-rate checks without idles.
"""

import random

import cocotb
import pytest
from amaranth.sim import Simulator
from cocotb.triggers import ClockCycles

from ethlink.sim.models import (random_frame, with_bad_version, with_bad_opcode, with_bad_size,
                                FCS_OCTETS)
from ethlink.sim.models.forwarding import DROP_REASONS, parse
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import (StreamChecker, TransferLog, axis_sink, axis_source, read_counters,
                            start, wait_idle)
from ethlink.rtl.forwarding.parser import OefhParser
from ethlink.rtl.wire import Opcode

EXPORT = "oefh_parser"


def random_body(rng):
    """A frame body: mostly good, sometimes malformed in one of the ways spec §11 lists."""
    frame = random_frame(rng, max_payload=rng.choice([16, 64, 300])).to_bytes()
    kind = rng.random()
    if kind < 0.05:
        frame = with_bad_version(frame, rng.choice([0, 2, 3]))
    elif kind < 0.10:
        frame = with_bad_opcode(frame, rng.choice([0, 5, 6, 7, 12, 15]))
    elif kind < 0.15 and not Opcode(frame[6] >> 4).is_rdma:
        frame = with_bad_size(frame)
    body = frame[:-FCS_OCTETS]
    if 0.15 <= kind < 0.22:
        body = body[:rng.randrange(0, 22)]    # truncated, often inside the header
    return body


def expected(bodies):
    results = [parse(body) for body in bodies]
    good = [r for r in results if r.drop is None]
    drops = {reason: sum(r.drop == reason for r in results) for reason in DROP_REASONS}
    return good, drops


async def check_counters(dut, good, drops):
    await ClockCycles(dut.clk, 2)
    assert int(dut.count_frames.value) == len(good), \
        f"count_frames {int(dut.count_frames.value)}, expected {len(good)}"
    actual = read_counters(dut, drops)
    assert actual == drops, f"drop counters {actual}, expected {drops}"


async def send_bodies(source, bodies):
    for body in bodies:
        if body:
            await source.send(body)


@cocotb.test()
async def random_traffic(dut):
    """Good and malformed frames, random idles and back-pressure: nothing lost or altered."""
    rng = random.Random(cocotb.RANDOM_SEED)
    await start(dut)
    source = axis_source(dut, "s_axis", rng, idle=0.3)
    headers = axis_sink(dut, "m_axis_hdr", rng, backpressure=0.3)
    payloads = axis_sink(dut, "m_axis", rng, backpressure=0.3)
    checkers = [StreamChecker(dut, "m_axis"), StreamChecker(dut, "m_axis_hdr")]

    bodies = [body for body in (random_body(rng) for _ in range(400)) if body]
    good, drops = expected(bodies)
    await send_bodies(source, bodies)
    await wait_idle(dut, [source], [(headers, len(good)), (payloads, len(good))])

    for n, want in enumerate(good):
        # The header stream's tdata is in lane order: its octets are the header's wire octets.
        got = int.from_bytes(bytes((await headers.recv()).tdata), "big")
        assert got == want.header, f"frame {n}: header {got:#046x}, expected {want.header:#046x}"
        payload = await payloads.recv()
        assert bytes(payload.tdata) == want.payload, \
            f"frame {n}: payload {bytes(payload.tdata).hex()}, expected {want.payload.hex()}"
    assert headers.empty() and payloads.empty()
    await check_counters(dut, good, drops)
    for checker in checkers:
        checker.assert_clean()


@cocotb.test()
async def latency_and_full_rate(dut):
    """Header 1 cycle after its completing beat; back-to-back frames at one beat per cycle."""
    width = export_params()["beat_octets"]
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    counter = await start(dut)
    source = axis_source(dut, "s_axis")
    headers = axis_sink(dut, "m_axis_hdr")
    payloads = axis_sink(dut, "m_axis")
    frames_in = TransferLog(dut, "s_axis", counter)
    headers_out = TransferLog(dut, "m_axis_hdr", counter)
    payload_out = TransferLog(dut, "m_axis", counter)

    # One frame of each header length, alone: the latency of each.
    for opcode, header_octets in ((Opcode.LOAD_REQ, 14), (Opcode.WRITE, 22)):
        body = random_frame(rng, opcode=opcode, max_payload=64).to_bytes()[:-FCS_OCTETS]
        start_index = len(frames_in.transfers)
        start_headers = len(headers_out.transfers)
        await source.send(body)
        await wait_idle(dut, [source], [(headers, start_headers + 1)])
        completing_beat = (header_octets - 1) // width
        beat_cycle = frames_in.transfers[start_index + completing_beat][0]
        header_cycle = headers_out.transfers[start_headers][0]
        assert header_cycle - beat_cycle == 1, \
            f"{opcode.name}: header {header_cycle - beat_cycle} cycles after its last beat, " \
            f"expected 1"
        dut._log.info("%s header latency: 1 cycle after beat %d", opcode.name, completing_beat)
        await ClockCycles(dut.clk, 4)
    first_payload = payload_out.transfers[0][0] - frames_in.transfers[0][0]
    dut._log.info("first payload beat %d cycles after the first frame beat", first_payload)

    # Back-to-back frames, malformed ones among them, with ready consumers: the input never
    # waits, and every good frame still comes out.
    bodies = [body for body in (random_body(rng) for _ in range(300)) if body]
    good, drops = expected(bodies)
    stalls_before = frames_in.stalls
    first = len(frames_in.transfers)
    await send_bodies(source, bodies)
    await wait_idle(dut, [source], [(headers, len(good) + 2), (payloads, len(good) + 2)])
    beats = frames_in.transfers[first:]
    span = beats[-1][0] - beats[0][0] + 1
    assert sum(drops.values()) > 0
    await ClockCycles(dut.clk, 8)
    assert headers.count() == payloads.count() == len(good) + 2, \
        f"{headers.count()} headers, {payloads.count()} payloads, expected {len(good) + 2}"
    assert frames_in.stalls == stalls_before, \
        f"input stalled {frames_in.stalls - stalls_before} cycles at full rate"
    assert span == len(beats), f"{len(beats)} beats took {span} cycles"


@pytest.mark.parametrize("beat_octets", [8, 16, 32, 64])
def test_oefh_parser(beat_octets, tmp_path):
    run_cocotb(EXPORT, "test_oefh_parser", {"beat_octets": beat_octets}, test_dir=tmp_path)


def test_oefh_parser_verdict():
    """``verdict``: frames passed on before they are judged. Random good frames of every
    opcode, a third of them bad (``user.error`` on the last beat), some of those cut short
    by an early closing beat with ``keep = 0`` (as a cut-through buffer ends a frame it gave
    up), with random idles and back-pressure: every frame whose header came out gives its
    payload (as far as it came), the verdict on the payload's last beat only; a bad frame cut
    before its TH ends gives nothing and is not counted ``short``."""
    rng = random.Random(12)
    dut = OefhParser(8, verdict=True)
    frames = []          # (octets sent, error)
    for _ in range(120):
        body = random_frame(rng, max_payload=rng.choice([16, 64, 300])).to_bytes()[:-FCS_OCTETS]
        bad = rng.random() < 0.33
        if bad and rng.random() < 0.5:
            body = body[:8 * rng.randint(1, max(1, len(body) // 8))]
        frames.append((body, bad))
    want = [(parse(body).payload, bad) for body, bad in frames if parse(body).drop is None]
    got, payload = [], {"octets": b""}
    done = {}

    async def source(ctx):
        for body, bad in frames:
            words = [body[k:k + 8] for k in range(0, len(body), 8)]
            early = bad and len(body) % 8 == 0 and rng.random() < 0.5
            beats = [(w, False) for w in words] + ([(b"", True)] if early else [])
            for n, (word, closing) in enumerate(beats):
                last = n == len(beats) - 1
                ctx.set(dut.i.valid, 1)
                ctx.set(dut.i.payload.data, int.from_bytes(word.ljust(8, b"\0"), "little"))
                ctx.set(dut.i.payload.keep, (1 << len(word)) - 1)
                ctx.set(dut.i.payload.first, n == 0)
                ctx.set(dut.i.payload.last, last)
                ctx.set(dut.i.payload.user.error, bad and last)
                await ctx.tick().until(dut.i.ready)
                if rng.random() < 0.1:
                    ctx.set(dut.i.valid, 0)
                    await ctx.tick().repeat(rng.randint(1, 3))
            ctx.set(dut.i.valid, 0)
        await ctx.tick().repeat(50)
        done["count"] = (ctx.get(dut.count.frames), ctx.get(dut.count.short))

    async def sink(ctx):
        while True:
            ctx.set(dut.header.ready, rng.random() < 0.7)
            ctx.set(dut.o.ready, rng.random() < 0.7)
            await ctx.tick()

    async def watch(ctx):
        o = dut.o
        async for _, _, valid, ready, data, keep, last, error in ctx.tick().sample(
                o.valid, o.ready, o.payload.data, o.payload.keep, o.payload.last,
                o.payload.user.error):
            if valid and ready:
                assert last or not error, "a verdict on a beat that is not the last"
                payload["octets"] += data.to_bytes(8, "little")[:bin(keep).count("1")]
                if last:
                    got.append((payload["octets"], bool(error)))
                    payload["octets"] = b""

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(source)
    sim.add_testbench(sink, background=True)
    sim.add_process(watch)
    sim.run()
    assert got == want
    assert sum(bad for _, bad in want) > 20
    assert done["count"] == (len(want), 0)
