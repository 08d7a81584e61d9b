"""CbfcTx's bypass and urgent VCs, in Amaranth's simulator: a frame whose TH tells its length
skips its empty queue and leaves in the cycle it is offered; a frame with gaps between its
beats is delivered whole; under random traffic (frames whose length the TH tells and frames it does not, random
gaps, random credits and back-pressure) every frame leaves whole, in order per VC, and every
VC's credits are exactly the costs of its frames; a frame longer or shorter than its TH says
leaves malformed (an octet short of its TH, or as short as it is) and never costs the receiver
more than was charged; an urgent VC's frame waits only for the frame being sent, and the other
VCs still get their bounded share."""

import random

import pytest

from ethlink.rtl.cbfc.cbfc_tx import CbfcTx
from ethlink.rtl.cbfc.credit import frame_cost
from ethlink.rtl.wire import LS_TH, OEFH, OEFH_VERSION, LcwType, LsSize, Opcode, Status
from ethlink.sim.cbfc_blocks import Clock, lcw, offers, run, send
from ethlink.sim.cbfc_tb import vc_body

CREDIT = 64
#: Ref: docs/cbfc.md "Latency" — a bypassing frame's first beat reaches the LLR the cycle after
#: it is first offered (the cycle of the decision), its later beats as they come.
BYPASS_CYCLES = 1


def ls_frame(rng, vc, opcode, size=LsSize.B64, status=Status.OK, payload=None):
    """An L/S frame body: OEFH of ``vc``, TH, and the payload the TH announces (or
    ``payload``)."""
    oefh = OEFH.pack(ver=OEFH_VERSION, vc=vc, dst=rng.randrange(4096),
                     src=rng.randrange(4096), entropy=rng.randrange(1 << 16))
    th = LS_TH.pack(opcode=opcode, size=size, status=status, tag=rng.randrange(4096),
                    line=rng.randrange(1 << 44))
    if payload is None:
        carries = opcode == Opcode.STORE_REQ or (opcode == Opcode.LOAD_RSP
                                                  and status == Status.OK)
        payload = rng.randbytes(64 << size) if carries else b""
    return oefh + th + payload


def queued_body(rng, vc, index, octets):
    """A body of ``octets`` whose first beat does not tell its length (no TH opcode of the L/S
    kind): it goes the store-and-forward way."""
    body = vc_body(rng, vc, index, octets, fixed=True)
    return body[:6] + bytes([0xF0]) + body[7:]


def th_octets(body):
    """The body length the frame's TH announces (L/S only)."""
    opcode, size, status = body[6] >> 4, body[6] >> 2 & 3, body[6] & 3
    carries = opcode == Opcode.STORE_REQ or (opcode == Opcode.LOAD_RSP and status == Status.OK)
    return 14 + (64 << size if carries else 0)


class _Out:
    """Every frame taken on ``o`` (bodies in order) and the edge its first beat left at."""
    def __init__(self, port, clock):
        self.port, self.clock = port, clock
        self.frames, self.firsts = [], []

    async def process(self, ctx):
        port = self.port
        body = b""
        async for _, _, valid, ready, data, keep, last in ctx.tick().sample(
                port.valid, port.ready, port.payload.data, port.payload.keep,
                port.payload.last):
            if valid and ready:
                if not body:
                    self.firsts.append(self.clock.now + 1)
                body += data.to_bytes(8, "little")[:bin(keep).count("1")]
                if last:
                    self.frames.append(body)
                    body = b""


def test_bypass_latency_and_gaps():
    rng = random.Random(11)
    dut = CbfcTx(2, credit_size=CREDIT, queue_octets=4096, sync_period=1 << 16, bypass=True)
    # "offered0": every cycle a first beat is offered on i[0], taken or not.
    clock = Clock({"o": dut.o, "i0": dut.i[0], "offered0": offers(dut.i[0])}, lcw=dut.lcw_rx)
    out = _Out(dut.o, clock)
    done = {}

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        await lcw(ctx, dut.lcw_rx, LcwType.CREDIT_UPDATE, 0, 100)
        await ctx.tick().repeat(3)
        # A LOAD_REQ (14 octets, 18 with its FCS) on an idle VC with credits: its first beat
        # is held the cycle the arbiter decides on it and leaves in the next, taken from i[0]
        # as it leaves.
        load = ls_frame(rng, 0, Opcode.LOAD_REQ)
        await send(ctx, clock, dut.i[0], load)
        await ctx.tick().repeat(5)
        assert clock.firsts["o"] == [clock.firsts["offered0"][0] + BYPASS_CYCLES]
        assert clock.firsts["i0"] == clock.firsts["o"]
        assert out.frames == [load]
        assert ctx.get(dut.sent[0]) == frame_cost(14, CREDIT)
        # A 64 B STORE_REQ with idle cycles between its beats: it goes through as it comes,
        # gaps and all, and arrives whole.
        store = ls_frame(rng, 0, Opcode.STORE_REQ)
        await send(ctx, clock, dut.i[0], store, idle=lambda: rng.randint(0, 3))
        await ctx.tick().repeat(5)
        assert clock.firsts["o"][1] == clock.firsts["i0"][1]
        assert out.frames[1] == store
        assert ctx.get(dut.sent[0]) == frame_cost(14, CREDIT) + frame_cost(78, CREDIT)
        # A body whose first beat does not tell its length (no TH opcode of the L/S kind)
        # goes the store-and-forward way: first beat out LATENCY cycles after its last in.
        other = queued_body(rng, 0, 3, 64)
        await send(ctx, clock, dut.i[0], other)
        await ctx.tick().repeat(16)
        assert clock.firsts["o"][2] == clock.lasts["i0"][2] + CbfcTx.LATENCY
        assert out.frames[2] == other
        # No credits on VC 1: its frame waits in the queue (no bypass), then leaves.
        await send(ctx, clock, dut.i[1], ls_frame(rng, 1, Opcode.STORE_RSP))
        await ctx.tick().repeat(5)
        assert len(out.frames) == 3
        await lcw(ctx, dut.lcw_rx, LcwType.CREDIT_UPDATE, 1, 1)
        await ctx.tick().repeat(5)
        assert len(out.frames) == 4 and ctx.get(dut.count.frames_sent[1]) == 1
        assert ctx.get(dut.count.frames_dropped[0]) == 0
        done["ok"] = True

    run(dut, clock, bench, out.process)
    assert done


def test_bypass_malformed():
    """A frame longer than its TH says leaves cut an octet short of the TH (the receiver
    drops it as malformed) and the rest is discarded; a shorter one leaves as it is; both
    are charged the TH's cost (at least what the receiver frees) and counted dropped."""
    rng = random.Random(12)
    dut = CbfcTx(1, credit_size=CREDIT, queue_octets=4096, sync_period=1 << 16, bypass=True)
    clock = Clock({"o": dut.o, "i0": dut.i[0]}, lcw=dut.lcw_rx)
    out = _Out(dut.o, clock)
    done = {}

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        await lcw(ctx, dut.lcw_rx, LcwType.CREDIT_UPDATE, 0, 100)
        long = ls_frame(rng, 0, Opcode.LOAD_REQ, payload=rng.randbytes(20))   # 34 octets
        short = ls_frame(rng, 0, Opcode.STORE_REQ, payload=rng.randbytes(30))  # TH: 78
        good = ls_frame(rng, 0, Opcode.LOAD_RSP)
        for body in (long, short, good):
            await send(ctx, clock, dut.i[0], body, idle=lambda: rng.randint(0, 1))
        await ctx.tick().repeat(10)
        assert out.frames == [long[:13], short, good], [len(f) for f in out.frames]
        assert ctx.get(dut.count.frames_dropped[0]) == 2
        assert ctx.get(dut.sent[0]) == sum(frame_cost(n, CREDIT) for n in (14, 78, 78))
        done["ok"] = True

    run(dut, clock, bench, out.process)
    assert done


def test_urgent_vcs():
    """An urgent VC's frame waits only for the frame on ``o``, never for frames of other VCs
    queued before it; under a saturating urgent VC the others still get one grant in
    ``urgent_burst + 1``; every frame leaves whole and in order per VC; no frame is chosen
    while ``o`` is not ready."""
    rng = random.Random(14)
    burst = 2
    dut = CbfcTx(3, credit_size=CREDIT, queue_octets=4096, sync_period=1 << 16, bypass=True,
                 urgent_vcs=0b001, urgent_burst=burst)
    clock = Clock({"o": dut.o, **{f"i{v}": dut.i[v] for v in range(3)}}, lcw=dut.lcw_rx)
    out = _Out(dut.o, clock)
    done = {}

    def vc_of(frames):
        return [f[0] >> 3 & 7 for f in frames]

    async def bench(ctx):
        for v in range(3):
            await lcw(ctx, dut.lcw_rx, LcwType.CREDIT_UPDATE, v, 4000)
        # Two bulk frames queued on VCs 1 and 2 each (bodies whose TH the bypass does not
        # know: they are queued whole) while ``o`` is held; then ``o`` takes the first.
        bulk = {v: [queued_body(rng, v, k, 200) for k in range(2)] for v in (1, 2)}
        for k in range(2):
            for v in (1, 2):
                await send(ctx, clock, dut.i[v], bulk[v][k])
        await ctx.tick().repeat(4)
        assert not out.firsts, "a frame was chosen while o was not ready"
        ctx.set(dut.o.ready, 1)
        while not out.firsts:
            await ctx.tick()
        # An urgent LOAD_REQ arrives while that frame is on ``o``: it is the next to go,
        # before the three bulk frames queued before it (round robin would send VC 2 next).
        urgent = ls_frame(rng, 0, Opcode.LOAD_REQ)
        await send(ctx, clock, dut.i[0], urgent)
        while len(out.frames) < 5:
            await ctx.tick()
        assert vc_of(out.frames) == [1, 0, 1, 2, 2], vc_of(out.frames)
        assert out.frames[1] == urgent
        # The urgent VC with a backlog beside the others' bulk frames (all queued while
        # ``o`` is held): at most ``burst`` urgent grants in a row while another VC waits.
        ctx.set(dut.o.ready, 0)
        start = len(out.frames)
        more = {v: [queued_body(rng, v, 10 + k, 120) for k in range(3)] for v in (1, 2)}
        loads = [ls_frame(rng, 0, Opcode.LOAD_RSP) for _ in range(24)]
        for v in (1, 2):
            for body in more[v]:
                await send(ctx, clock, dut.i[v], body)
        for body in loads:
            await send(ctx, clock, dut.i[0], body)
        ctx.set(dut.o.ready, 1)
        while len(out.frames) < start + len(loads) + 6:
            await ctx.tick()
            assert clock.now < 20000
        order = vc_of(out.frames[start:])
        others_left = 6
        run_length = 0
        runs = []           # urgent runs that ended with another VC's grant
        for vc in order:
            if vc == 0:
                run_length += 1
                assert run_length <= burst or others_left == 0, order
            else:
                others_left -= 1
                runs.append(run_length)
                run_length = 0
        assert burst in runs, order         # the bound was reached, not only respected
        for v, frames in ((0, [urgent] + loads), (1, bulk[1] + more[1]), (2, bulk[2] + more[2])):
            assert [f for f in out.frames if f[0] >> 3 & 7 == v] == frames, f"VC {v}"
        done["ok"] = True

    run(dut, clock, bench, out.process)
    assert done


@pytest.mark.parametrize("urgent_vcs", [0, 0b010])
def test_bypass_random_traffic(urgent_vcs):
    rng = random.Random(13)
    vcs = 3
    dut = CbfcTx(vcs, credit_size=CREDIT, queue_octets=4096, sync_period=1 << 16,
                 bypass=True, urgent_vcs=urgent_vcs, urgent_burst=2)
    clock = Clock({"o": dut.o, **{f"i{v}": dut.i[v] for v in range(vcs)}}, lcw=dut.lcw_rx)
    out = _Out(dut.o, clock)
    sent = {v: [] for v in range(vcs)}
    finished = set()
    done = {}

    def frame(v, index):
        kind = rng.random()
        if kind < 0.3:
            return queued_body(rng, v, index, 120)       # no TH the bypass knows
        opcode = rng.choice([Opcode.LOAD_REQ, Opcode.STORE_REQ, Opcode.LOAD_RSP,
                             Opcode.STORE_RSP])
        return ls_frame(rng, v, opcode, rng.choice([LsSize.B64, LsSize.B128]),
                        rng.choice([Status.OK, Status.OK, Status.ACCESS_DENIED]))

    def source(v):
        async def process(ctx):
            for index in range(40):
                body = frame(v, index)
                sent[v].append(body)
                await send(ctx, clock, dut.i[v], body,
                           idle=lambda: rng.choice([0, 0, 0, 1, 2]))
                # Mostly busy, with quiet spells in which the queues drain and frames bypass.
                await ctx.tick().repeat(rng.choice([1, 1, 2, 5, 20, 150, 300]))
            finished.add(v)
        return process

    async def consumer(ctx):
        while True:
            ctx.set(dut.o.ready, rng.random() < 0.8)
            await ctx.tick()

    async def bench(ctx):
        limits = [0] * vcs
        while len(finished) < vcs or len(out.frames) < sum(len(s) for s in sent.values()):
            v = rng.randrange(vcs)
            limits[v] += rng.randint(0, 8)
            await lcw(ctx, dut.lcw_rx, LcwType.CREDIT_UPDATE, v, limits[v])
            await ctx.tick().repeat(rng.randint(1, 10))
            assert clock.now < 60000
        by_vc = {v: [f for f in out.frames if f[0] >> 3 & 7 == v] for v in range(vcs)}
        for v in range(vcs):
            assert by_vc[v] == sent[v], f"VC {v}: frames altered, lost or reordered"
            assert ctx.get(dut.sent[v]) == sum(frame_cost(len(f), CREDIT) for f in sent[v])
            assert ctx.get(dut.count.frames_sent[v]) == len(sent[v])
            assert ctx.get(dut.count.frames_dropped[v]) == 0
        # Some frames took the bypass: a VC's k-th frame left in the cycle its first beat came
        # in (each VC's frames keep their order). With an urgent VC the point is the order of
        # everything, not how often a queue was empty.
        left = {v: [t for t, f in zip(clock.firsts["o"], out.frames) if f[0] >> 3 & 7 == v]
                for v in range(vcs)}
        bypassed = sum(t_in == t_out for v in range(vcs)
                       for t_in, t_out in zip(clock.firsts[f"i{v}"], left[v]))
        assert bypassed > (10 if not urgent_vcs else 0), bypassed
        done["ok"] = True

    run(dut, clock, bench, out.process, consumer, *(source(v) for v in range(vcs)))
    assert done
