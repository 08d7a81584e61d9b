"""An :class:`LsRequester` behind a :class:`FrameSteer` in Amaranth's simulator: the harness of
``test_nic_unreachable`` and the UNREACHABLE latency ``ethlink bench nic`` reports."""

import random

from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import wiring

from ethlink.rtl.nic.ls_requester import LsRequester, CompletionStatus
from ethlink.rtl.nic.nic import FrameSteer
from ethlink.rtl.wire import LsSize
from ethlink.sim.cbfc_blocks import run

__all__ = ["REACHABLE", "UNREACHABLE", "TIMEOUT_CYCLES", "SteeredRequester", "Watch",
           "request", "measure_fail_latency"]

REACHABLE, UNREACHABLE = 0x010, 0x020
TIMEOUT_CYCLES = 64


class SteeredRequester(Elaboratable):
    """``requester.o`` → ``steer`` (one port, always ready); a lookup is answered the cycle
    after it is asked unless ``hold`` is high: "none" for ``UNREACHABLE``, port 0 otherwise.
    The steer's ``failed`` goes back to the requester's ``fail``, as in the NIC."""
    def __init__(self):
        self.requester = LsRequester(8, tags=128, timeout_cycles=TIMEOUT_CYCLES)
        self.steer = FrameSteer(1)
        self.hold = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.requester = req = self.requester
        m.submodules.steer = steer = self.steer
        wiring.connect(m, req.o, steer.i)
        for v in range(steer.vcs):
            m.d.comb += getattr(steer, f"o0_vc{v}").ready.eq(1)
        wiring.connect(m, steer.failed, req.fail)
        asked = Signal()
        dst = Signal(12)
        m.d.comb += [steer.result_valid.eq(asked & ~self.hold),
                     steer.result_none.eq(dst == UNREACHABLE)]
        with m.If(steer.result_valid):
            m.d.sync += asked.eq(0)
        with m.If(steer.lookup_valid):
            m.d.sync += [asked.eq(1), dst.eq(steer.lookup_dst)]
        return m


class Watch:
    """Cycle numbers of: completions (tag, status, cycle), ``fail`` transfers, the first
    cycle of each ``cpl`` offer, and request frames leaving the steer."""
    def __init__(self, top):
        self.top = top
        self.completions = []
        self.fails = []
        self.offers = []
        self.frames_out = 0

    async def process(self, ctx):
        req, steer = self.top.requester, self.top.steer
        out = steer.o0_vc0
        now, offered = 0, False
        async for _, _, cv, cr, tag, status, fv, fr, ov, ofirst in ctx.tick().sample(
                req.cpl.valid, req.cpl.ready, req.cpl.payload.tag, req.cpl.payload.status,
                req.fail.valid, req.fail.ready, out.valid, out.payload.first):
            now += 1
            if cv and not offered:
                self.offers.append(now)
            offered = cv and not cr
            if cv and cr:
                self.completions.append((tag, CompletionStatus(status), now))
            if fv and fr:
                self.fails.append(now)
            if ov and ofirst:
                self.frames_out += 1


async def request(ctx, req, tag, dst, store, size, rng):
    ctx.set(req.req.payload, {"store": store, "size": size, "dst": dst, "tag": tag,
                              "line": rng.getrandbits(44)})
    ctx.set(req.req.valid, 1)
    await ctx.tick().until(req.req.ready)
    ctx.set(req.req.valid, 0)
    if store:
        beats = LsSize(size).octets // 8
        for k in range(beats):
            ctx.set(req.req_data.payload, {"data": rng.getrandbits(64), "keep": 0xFF,
                                           "first": k == 0, "last": k == beats - 1})
            ctx.set(req.req_data.valid, 1)
            await ctx.tick().until(req.req_data.ready)
        ctx.set(req.req_data.valid, 0)



def measure_fail_latency():
    """Cycles from a dropped request's header taken on ``fail`` to its UNREACHABLE completion
    offered, one 64 B load alone (:attr:`LsRequester.FAIL_LATENCY`)."""
    top = SteeredRequester()
    req = top.requester
    watch = Watch(top)

    async def bench(ctx):
        ctx.set(req.local_id, 1)
        ctx.set(req.cpl.ready, 1)
        await request(ctx, req, 0, UNREACHABLE, False, LsSize.B64, random.Random(1))
        await ctx.tick().repeat(20)
        assert watch.completions[0][:2] == (0, CompletionStatus.UNREACHABLE), watch.completions

    run(top, watch, bench)
    return watch.offers[0] - watch.fails[0]
