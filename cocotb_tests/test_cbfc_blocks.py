"""CbfcTx and CbfcRx on their own, in Amaranth's simulator: the latencies their docstrings
state, credits gating the VC arbiter, a stopped VC not blocking another, and the bad input
each must drop and count (a frame on the wrong VC queue, a frame of an unknown VC, a frame that
overruns its buffer, a frame longer than any the MAC passes)."""

import random

from amaranth.hdl import Elaboratable, Module, Signal

from ethlink.rtl.cbfc.cbfc_rx import CbfcRx
from ethlink.rtl.cbfc.cbfc_tx import CbfcTx
from ethlink.rtl.cbfc.credit import frame_cost
from ethlink.rtl.link.llr_tx import MAX_FRAME_WORDS
from ethlink.rtl.stream import PacketStream
from ethlink.rtl.wire import LcwType
from ethlink.sim.cbfc_blocks import Clock, lcw, measure_latencies, run, send
from ethlink.sim.cbfc_tb import vc_body


def test_latencies_match_the_docstrings():
    """What ``ethlink bench cbfc`` reports is what the blocks state."""
    measured = measure_latencies()
    assert measured == {"cbfc_tx_latency_cycles": CbfcTx.LATENCY,
                        "cbfc_rx_latency_cycles": CbfcRx.LATENCY,
                        "cbfc_update_to_frame_cycles": 2,
                        # Ref: docs/cbfc.md "Latency" — the bypass decision's cycle.
                        "cbfc_bypass_latency_cycles": 1}, measured


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
        assert ctx.get(dut.count.stall_cycles[0]) > 10
        await lcw(ctx, dut.lcw_rx, LcwType.CREDIT_UPDATE, 0, 10)
        await ctx.tick().repeat(40)
        # The update is taken in cycle c, `ok` rises in c + 1 where the grant is registered,
        # and the first beat is on `o` in c + 2.
        assert clock.firsts["o"] == [clock.lcws[-1] + 2], (clock.firsts, clock.lcws)
        assert ctx.get(dut.sent[0]) == frame_cost(100, 64)
        assert ctx.get(dut.count.frames_dropped[0]) == 1
        assert ctx.get(dut.count.frames_sent[0]) == 1

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
        assert ctx.get(dut.count.frames_sent[1]) == 0
        assert ctx.get(dut.count.stall_cycles[1]) > 0
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
        # Ref: docs/cbfc.md — last beat in t, first beat out on o[0] in t + 2: the VC buffer
        # is the frame's one store-and-forward copy (the link layer cuts through to it).
        await send(ctx, clock, dut.i, vc_body(rng, 0, 0, 100, fixed=True))
        await ctx.tick().repeat(20)
        end = clock.lasts["i"][-1]
        assert clock.firsts["o0"] == [end + 2], (clock.firsts, end)
        # A frame the link layer found bad (error on its last beat) is rolled back: it never
        # leaves, costs no credit and is not an overrun.
        await send(ctx, clock, dut.i, vc_body(rng, 0, 1, 300), error=True)
        await ctx.tick().repeat(20)
        assert len(clock.firsts["o0"]) == 1
        assert ctx.get(dut.count.frames_received[0]) == 1
        assert ctx.get(dut.count.overruns[0]) == 0
        assert ctx.get(dut.received[0]) == frame_cost(100, 64)
        assert ctx.get(dut.freed[0]) == frame_cost(100, 64)
        # A frame of VC 5 (this end has 2): dropped and counted.
        await send(ctx, clock, dut.i, vc_body(rng, 5, 1, 50))
        await ctx.tick().repeat(2)          # a counter shows an event 2 cycles after it
        assert ctx.get(dut.count.bad_vc) == 1
        # One whose VC reads 6 and that the link layer found bad (a bit error in its OEFH):
        # the MAC's count, not a bad VC.
        await send(ctx, clock, dut.i, vc_body(rng, 6, 2, 50), error=True)
        await ctx.tick().repeat(2)
        assert ctx.get(dut.count.bad_vc) == 1
        # VC 1 stopped and its sender ignoring credits: 4096 octets hold 16 frames of 256
        # octets (and one word in the output register); the 17th and 18th overrun the buffer
        # and are dropped whole, their credits freed at once; the others stay stored and VC 0
        # keeps flowing.
        for index in range(18):
            await send(ctx, clock, dut.i, vc_body(rng, 1, 10 + index, 256, fixed=True))
        await send(ctx, clock, dut.i, vc_body(rng, 0, 99, 64))
        await ctx.tick().repeat(20)
        assert ctx.get(dut.count.overruns[1]) == 2
        assert ctx.get(dut.count.frames_received[1]) == 16
        assert ctx.get(dut.occupancy[1]) == 16 * frame_cost(256, 64)
        assert len(clock.firsts["o0"]) == 2
        ctx.set(dut.o[1].ready, 1)
        await ctx.tick().repeat(16 * 33 + 20)
        assert len(clock.firsts["o1"]) == 16
        assert ctx.get(dut.occupancy[1]) == 0
        done["ok"] = True

    run(dut, clock, bench)
    assert done


class _Looped(Elaboratable):
    """A :class:`CbfcTx` with re-steering whose diverted frames, while ``loop`` is high, go
    straight back into VC 0's queue in the same cycle (as when the NIC finds the port still
    good for them): the hardest case for the queue's frame slots."""
    def __init__(self):
        self.tx = CbfcTx(2, credit_size=64, queue_octets=4096, sync_period=1 << 16,
                         resteer=True)
        self.loop = Signal()
        self.i0 = PacketStream(8).flip().create()
        self.divert_ready = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.tx = tx = self.tx
        with m.If(self.loop):
            m.d.comb += [tx.i[0].valid.eq(tx.resteer.divert.valid), tx.i[0].payload.eq(tx.resteer.divert.payload),
                         tx.resteer.divert.ready.eq(tx.i[0].ready)]
        with m.Else():
            m.d.comb += [tx.i[0].valid.eq(self.i0.valid), tx.i[0].payload.eq(self.i0.payload),
                         self.i0.ready.eq(tx.i[0].ready), tx.resteer.divert.ready.eq(self.divert_ready)]
        return m


class _Frames:
    """Every frame taken from each of ``ports`` (bodies, in order), all the time."""
    def __init__(self, **ports):
        self.ports = ports
        self.frames = {name: [] for name in ports}

    async def process(self, ctx):
        bodies = {name: b"" for name in self.ports}
        signals = [s for port in self.ports.values() for s in (
            port.valid, port.ready, port.payload.data, port.payload.keep, port.payload.last)]
        async for _, _, *values in ctx.tick().sample(*signals):
            for k, name in enumerate(self.ports):
                valid, ready, data, keep, last = values[5 * k:5 * k + 5]
                if valid and ready:
                    bodies[name] += data.to_bytes(8, "little")[:bin(keep).count("1")]
                    if last:
                        self.frames[name].append(bodies[name])
                        bodies[name] = b""


def test_cbfc_tx_resteer():
    """Pause and purge: the frames queued at the strobe (and only those) leave on ``divert``,
    VC by VC in order, none on ``o``; a frame already on its way to the LLR finishes there;
    diverted frames fed straight back, in the same cycles, into a queue whose frame slots are
    all taken never deadlock and keep their order."""
    rng = random.Random(5)
    top = _Looped()
    dut = top.tx
    clock = Clock({"o": dut.o, "i0": top.i0, "i1": dut.i[1]}, lcw=dut.lcw_rx)
    seen = _Frames(o=dut.o, divert=dut.resteer.divert)
    frames = seen.frames
    done = {}

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        ctx.set(top.divert_ready, 1)
        ctx.set(dut.resteer.pause, 1)
        for vc in range(2):
            await lcw(ctx, dut.lcw_rx, LcwType.CREDIT_UPDATE, vc, 4000)
        queued = [vc_body(rng, 0, k, 120) for k in range(3)]
        queued += [vc_body(rng, 1, k, 120) for k in range(3, 5)]
        for k, body in enumerate(queued):
            await send(ctx, clock, top.i0 if k < 3 else dut.i[1], body)
        await ctx.tick().repeat(10)
        assert clock.firsts["o"] == [], "a frame left while paused"
        ctx.set(dut.resteer.purge, 1)
        await ctx.tick()
        ctx.set(dut.resteer.purge, 0)
        assert ctx.get(dut.resteer.purging)
        later = vc_body(rng, 0, 9, 40)
        # Queued while the others are diverted: it stays.
        await send(ctx, clock, top.i0, later)
        await ctx.tick().repeat(80)
        assert frames["divert"] == queued, "not the frames queued at the strobe, in order"
        assert not ctx.get(dut.resteer.purging)
        assert [ctx.get(dut.count.frames_diverted[vc]) for vc in range(2)] == [3, 2]
        assert frames["o"] == []
        ctx.set(dut.resteer.pause, 0)
        await ctx.tick().repeat(30)
        assert frames["o"] == [later], "the frame queued after the strobe did not stay"

        # A frame on its way to the LLR when the strobe comes finishes there.
        first, second = vc_body(rng, 0, 10, 200, fixed=True), vc_body(rng, 0, 11, 60)
        await send(ctx, clock, top.i0, first)
        await send(ctx, clock, top.i0, second)
        await ctx.tick().until(dut.o.valid)
        ctx.set(dut.resteer.purge, 1)
        await ctx.tick()
        ctx.set(dut.resteer.purge, 0)
        # o is mid-frame: the rest of it leaves there, the second frame is diverted.
        await ctx.tick().repeat(40)
        assert frames["o"][1:] == [first], "the frame on its way to the LLR was cut"
        assert frames["divert"][5:] == [second]

        # Fill VC 0's queue up to its frame slots with minimum (2-beat) frames (one slot is
        # kept for re-steering), then divert them all back into it.
        ctx.set(dut.resteer.pause, 1)
        slots = dut.queue_words // 8
        small = [vc_body(rng, 0, 100 + k, 16, fixed=True) for k in range(slots - 1)]
        for body in small:
            await send(ctx, clock, top.i0, body)
        ctx.set(top.i0.valid, 1)
        ctx.set(top.i0.payload.first, 1)
        await ctx.tick()
        assert not ctx.get(top.i0.ready), "the slot kept for re-steering was given away"
        ctx.set(top.i0.valid, 0)
        ctx.set(top.loop, 1)
        ctx.set(dut.resteer.purge, 1)
        await ctx.tick()
        ctx.set(dut.resteer.purge, 0)
        await ctx.tick().repeat(3 * slots + 20)
        assert not ctx.get(dut.resteer.purging), "re-queueing diverted frames into their own queue hangs"
        assert ctx.get(dut.count.frames_diverted[0]) == 4 + len(small)
        ctx.set(top.loop, 0)
        # The LLR acknowledges every frame at once, so the record of frames in flight
        # never fills.
        ctx.set(dut.llr_head, 2 + len(small))
        ctx.set(dut.resteer.pause, 0)
        await ctx.tick().repeat(3 * slots + 20)
        assert frames["o"][2:] == small, "re-queued frames lost their order"
        done["ok"] = True

    run(top, clock, bench, watchers=[seen.process])
    assert done


async def _send_random(ctx, clock, port, rng, vc, index):
    """Send frame ``index`` of the receive-buffer tests on ``port``: a random length up to the
    longest frame, every 15th longer than that; one in five bad (``error`` on its last beat);
    random gaps inside and after it. Returns ``(body, bad)``."""
    longest = MAX_FRAME_WORDS * 8
    if index % 15 == 7:
        body = vc_body(rng, vc, index, longest + rng.randint(1, 40), fixed=True)
    else:
        body = vc_body(rng, vc, index, rng.choice((40, 300, longest)))
    bad = rng.random() < 0.2
    await send(ctx, clock, port, body, error=bad,
               idle=lambda: rng.randint(1, 4) if rng.random() < 0.05 else 0)
    gap = rng.choice((0, 0, 1, 20))
    if gap:
        await ctx.tick().repeat(gap)
    return body, bad


def test_cbfc_rx_rollback():
    """CbfcRx's VC buffer is the one copy of a frame the link layer cuts through to it: random
    frames up to the longest (and some longer), random gaps inside and between them, one in
    five found bad at its end (``error`` on the last beat), a consumer ready one cycle in five
    and a sender ignoring credits, so that frames overrun the buffer all the time. Every good
    frame comes out whole and in order, or is dropped whole and counted (overrun, or longer
    than :data:`MAX_FRAME_WORDS` words); no bad frame ever comes out, none counts as an
    overrun or costs a credit; the credits all come back."""
    rng = random.Random(6)
    dut = CbfcRx(1, credit_size=64, buffer_octets=4096, update_period=1 << 16)
    clock = Clock({"i": dut.i})
    seen = _Frames(o=dut.o[0])
    longest = MAX_FRAME_WORDS * 8
    sent = []       # (body, bad)
    done = {}

    async def consumer(ctx):
        while True:
            ctx.set(dut.o[0].ready, rng.random() < 0.2)
            await ctx.tick()

    async def bench(ctx):
        for index in range(150):
            sent.append(await _send_random(ctx, clock, dut.i, rng, 0, index))
        await ctx.tick().repeat(4096 * 3)
        dropped, too_long = check()
        assert dropped > 10 and too_long > 0, (dropped, too_long)
        assert ctx.get(dut.count.overruns[0]) == dropped + too_long
        assert ctx.get(dut.count.frames_received[0]) == len(seen.frames["o"])
        assert ctx.get(dut.occupancy[0]) == 0
        # Credits of good frames only: stored ones when they left, dropped ones at once.
        good = [body for body, bad in sent if not bad]
        assert ctx.get(dut.received[0]) == sum(frame_cost(len(b), 64) for b in good)
        assert ctx.get(dut.received[0]) == ctx.get(dut.freed[0])
        done["ok"] = True

    def check():
        out = seen.frames["o"]
        k = dropped = too_long = 0
        for body, bad in sent:
            if k < len(out) and out[k] == body:
                assert not bad, f"a bad frame came out ({k})"
                assert len(body) <= longest
                k += 1
            elif not bad:
                if len(body) > longest:
                    too_long += 1
                else:
                    dropped += 1
        assert k == len(out), f"frame {k} of {len(out)} out was never sent (or out of order)"
        return dropped, too_long

    run(dut, clock, bench, consumer, watchers=[seen.process])
    assert done


def test_cbfc_rx_pass_through():
    """A VC of ``pass_vcs`` passes each frame on as it arrives, its verdict on the last beat:
    the same random traffic as the rollback test (bad frames, too-long frames, a sender
    ignoring credits, a slow consumer). Every good frame that fits comes out whole, in order,
    ending with ``user.error`` 0; every other output is the beginning of a frame that was bad,
    too long or had no room, ending with ``user.error`` 1 on a beat with ``keep = 0``; no bad
    frame costs a credit, the credits all come back. On an idle buffer a beat is offered the
    cycle after it came (docs/cbfc.md)."""
    rng = random.Random(7)
    dut = CbfcRx(2, credit_size=64, buffer_octets=4096, update_period=1 << 16, pass_vcs=0b10)
    clock = Clock({"i": dut.i, "o": dut.o[1]})
    out = []        # (body, error) of each frame ended on o[1]
    longest = MAX_FRAME_WORDS * 8
    sent = []       # (body, bad)
    done = {}

    async def collect(ctx):
        port = dut.o[1]
        body = b""
        async for _, _, valid, ready, data, keep, last, error in ctx.tick().sample(
                port.valid, port.ready, port.payload.data, port.payload.keep,
                port.payload.last, port.payload.user.error):
            if valid and ready:
                assert not (error and not last)
                if error:
                    assert keep == 0
                body += data.to_bytes(8, "little")[:bin(keep).count("1")]
                if last:
                    out.append((body, error))
                    body = b""

    ready = {"p": 1.0}

    async def consumer(ctx):
        while True:
            ctx.set(dut.o[1].ready, rng.random() < ready["p"])
            await ctx.tick()

    async def bench(ctx):
        # Idle, always ready: each beat out the cycle after it came.
        sent.append((vc_body(rng, 1, 0, 64, fixed=True), False))
        await send(ctx, clock, dut.i, sent[0][0])
        await ctx.tick().repeat(10)
        assert clock.firsts["o"] == [clock.firsts["i"][0] + 1], clock.firsts
        assert clock.lasts["o"] == [clock.lasts["i"][0] + 1], clock.lasts
        for index in range(1, 150):
            # A slow consumer (frames overrun the buffer), then a fast one (it reads the
            # frame arriving, so bad ones end on o).
            ready["p"] = 0.1 if (index // 25) % 2 else 0.97
            sent.append(await _send_random(ctx, clock, dut.i, rng, 1, index))
        await ctx.tick().repeat(4096 * 3)
        dropped, too_long, ended_bad = check()
        assert dropped > 3 and too_long > 0 and ended_bad > 5, (dropped, too_long, ended_bad)
        assert ctx.get(dut.count.overruns[1]) == dropped + too_long
        assert ctx.get(dut.count.passed_bad[1]) == ended_bad
        assert ctx.get(dut.count.passed_bad[0]) == 0
        good_out = [body for body, error in out if not error]
        assert ctx.get(dut.count.frames_received[1]) == len(good_out)
        assert ctx.get(dut.occupancy[1]) == 0
        good = [body for body, bad in sent if not bad]
        assert ctx.get(dut.received[1]) == sum(frame_cost(len(b), 64) for b in good)
        assert ctx.get(dut.received[1]) == ctx.get(dut.freed[1])
        done["ok"] = True

    def check():
        k = dropped = too_long = ended_bad = 0
        for body, bad in sent:
            whole = k < len(out) and out[k] == (body, False)
            begun = k < len(out) and out[k][1] and body.startswith(out[k][0])
            if whole:
                assert not bad, f"a bad frame came out whole ({k})"
                assert len(body) <= longest
            elif not bad:
                if len(body) > longest:
                    too_long += 1
                else:
                    dropped += 1
            if whole or begun:
                ended_bad += begun
                k += 1
        assert k == len(out), f"output {k} of {len(out)} is no frame sent (or out of order)"
        return dropped, too_long, ended_bad

    run(dut, clock, bench, consumer, watchers=[collect])
    assert done
