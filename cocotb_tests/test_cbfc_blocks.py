"""CbfcTx and CbfcRx on their own, in Amaranth's simulator: the latencies their docstrings
state, credits gating the VC arbiter, a stopped VC not blocking another, and the bad input
each must drop and count (a frame on the wrong VC queue, a frame of an unknown VC, a frame that
overruns its buffer)."""

import random

from ethlink.rtl.cbfc.cbfc_rx import CbfcRx
from ethlink.rtl.cbfc.cbfc_tx import CbfcTx
from ethlink.rtl.cbfc.credit import frame_cost
from ethlink.rtl.wire import LcwType
from ethlink.sim.cbfc_blocks import Clock, lcw, measure_latencies, run, send
from ethlink.sim.cbfc_tb import vc_body


def test_latencies_match_the_docstrings():
    """What ``ethlink bench cbfc`` reports is what the blocks state."""
    measured = measure_latencies()
    assert measured == {"cbfc_tx_latency_cycles": CbfcTx.LATENCY,
                        "cbfc_rx_latency_cycles": CbfcRx.LATENCY,
                        "cbfc_update_to_frame_cycles": 2}, measured


def test_cbfc_tx():
    rng = random.Random(3)
    dut = CbfcTx(2, credit_size=64, queue_octets=4096, sync_period=1 << 16)
    clock = Clock({"o": dut.o, "i0": dut.i[0]}, lcw=dut.lcw_rx)
    done = {}

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        # A frame whose OEFH says VC 1, offered on VC 0's queue: dropped and counted.
        await send(ctx, clock, dut.i[0], vc_body(rng, 1, 0, 40))
        # No credits yet: a good frame waits, and the wait is counted as stall cycles.
        await send(ctx, clock, dut.i[0], vc_body(rng, 0, 1, 100, fixed=True))
        await ctx.tick().repeat(20)
        assert clock.firsts["o"] == [], "a frame left without credits"
        assert ctx.get(dut.count_stall_cycles[0]) > 10
        await lcw(ctx, dut.lcw_rx, LcwType.CREDIT_UPDATE, 0, 10)
        await ctx.tick().repeat(40)
        # The update is taken in cycle c, `ok` rises in c + 1 where the grant is registered,
        # and the first beat is on `o` in c + 2.
        assert clock.firsts["o"] == [clock.lcws[-1] + 2], (clock.firsts, clock.lcws)
        assert ctx.get(dut.sent[0]) == frame_cost(100, 64)
        assert ctx.get(dut.count_frames_dropped[0]) == 1
        assert ctx.get(dut.count_frames_sent[0]) == 1

        # With credits: last beat taken in t, first beat out in t + 3 (commit, grant, out).
        await send(ctx, clock, dut.i[0], vc_body(rng, 0, 2, 64))
        await ctx.tick().repeat(30)
        last = clock.lasts["i0"][-1]
        assert clock.firsts["o"][-1] - last == CbfcTx.LATENCY, (clock.firsts, last)

        # VC 1 has no credits, VC 0 has: VC 0's frames pass VC 1's waiting one.
        await send(ctx, clock, dut.i[1], vc_body(rng, 1, 3, 64))
        before = len(clock.firsts["o"])
        await send(ctx, clock, dut.i[0], vc_body(rng, 0, 4, 16))
        await ctx.tick().repeat(30)
        assert len(clock.firsts["o"]) == before + 1
        assert ctx.get(dut.count_frames_sent[1]) == 0
        assert ctx.get(dut.count_stall_cycles[1]) > 0
        done["ok"] = True

    run(dut, clock, bench)
    assert done


def test_cbfc_rx():
    rng = random.Random(4)
    dut = CbfcRx(2, credit_size=64, buffer_octets=4096, update_period=1 << 16)
    clock = Clock({"o0": dut.o[0], "o1": dut.o[1], "i": dut.i})
    done = {}

    async def bench(ctx):
        ctx.set(dut.o[0].ready, 1)
        ctx.set(dut.o[1].ready, 0)          # VC 1's consumer is stopped
        # Latency: last beat in t, first beat out on o[0] in t + LATENCY.
        await send(ctx, clock, dut.i, vc_body(rng, 0, 0, 100, fixed=True))
        await ctx.tick().repeat(20)
        last = clock.lasts["i"][-1]
        assert clock.firsts["o0"] == [last + CbfcRx.LATENCY], (clock.firsts, last)
        assert ctx.get(dut.received[0]) == frame_cost(100, 64)
        assert ctx.get(dut.freed[0]) == frame_cost(100, 64)
        # A frame of VC 5 (this end has 2): dropped and counted.
        await send(ctx, clock, dut.i, vc_body(rng, 5, 1, 50))
        assert ctx.get(dut.count_bad_vc) == 1
        # VC 1 stopped and its sender ignoring credits: 4096 octets hold 16 frames of 256
        # octets (and one word in the output register); the 17th and 18th overrun the buffer
        # and are dropped whole, their credits freed at once; the others stay stored and VC 0
        # keeps flowing.
        for index in range(18):
            await send(ctx, clock, dut.i, vc_body(rng, 1, 10 + index, 256, fixed=True))
        await send(ctx, clock, dut.i, vc_body(rng, 0, 99, 64))
        await ctx.tick().repeat(20)
        assert ctx.get(dut.count_overruns[1]) == 2
        assert ctx.get(dut.count_frames_received[1]) == 16
        assert ctx.get(dut.occupancy[1]) == 16 * frame_cost(256, 64)
        assert len(clock.firsts["o0"]) == 2
        ctx.set(dut.o[1].ready, 1)
        await ctx.tick().repeat(16 * 33 + 20)
        assert len(clock.firsts["o1"]) == 16
        assert ctx.get(dut.occupancy[1]) == 0
        done["ok"] = True

    run(dut, clock, bench)
    assert done
