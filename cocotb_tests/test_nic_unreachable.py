"""An L/S request no port reaches completes at once (spec §9): :class:`LsRequester` behind a
:class:`FrameSteer` whose path lookup says "none" for one endpoint, in Amaranth's simulator.

* Random loads and stores to a reachable and an unreachable endpoint, with idle cycles on the
  GPU side and back-pressure on the completions: the unreachable ones complete UNREACHABLE,
  their frames never leave, and the others leave and (nobody answers them) time out; each
  request completes exactly once; the counters agree.
* ``LsRequester.FAIL_LATENCY``: a dropped frame's header taken on ``fail`` → the completion.
* A drop reported after its request already timed out completes nothing (``stale_fails``).
"""

import random

from amaranth.hdl import Elaboratable, Module, Signal

from ethlink.rtl.nic.ls_requester import LsRequester, CompletionStatus
from ethlink.rtl.nic.nic import FrameSteer
from ethlink.rtl.wire import LsSize
from ethlink.sim.cbfc_blocks import run

REACHABLE, UNREACHABLE = 0x010, 0x020
TIMEOUT_CYCLES = 64


class _Steered(Elaboratable):
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
        m.d.comb += [steer.i.valid.eq(req.o.valid), steer.i.payload.eq(req.o.payload),
                     req.o.ready.eq(steer.i.ready)]
        for v in range(steer.vcs):
            m.d.comb += getattr(steer, f"o0_vc{v}").ready.eq(1)
        m.d.comb += [req.fail.valid.eq(steer.failed.valid), req.fail.payload.eq(steer.failed.payload),
                     steer.failed.ready.eq(req.fail.ready)]
        asked = Signal()
        dst = Signal(12)
        m.d.comb += [steer.result_valid.eq(asked & ~self.hold),
                     steer.result_none.eq(dst == UNREACHABLE)]
        with m.If(steer.result_valid):
            m.d.sync += asked.eq(0)
        with m.If(steer.lookup_valid):
            m.d.sync += [asked.eq(1), dst.eq(steer.lookup_dst)]
        return m


class _Watch:
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


async def _request(ctx, req, tag, dst, store, size, rng):
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


def test_unreachable_requests_complete_at_once():
    rng = random.Random(7)
    top = _Steered()
    req = top.requester
    watch = _Watch(top)
    expected = {}

    async def bench(ctx):
        ctx.set(req.local_id, 1)
        ctx.set(req.cpl.ready, 1)
        ctx.set(req.cpl_data.ready, 1)
        # Alone: the header taken on ``fail`` → the completion offered.
        await _request(ctx, req, 0, UNREACHABLE, False, LsSize.B64, rng)
        expected[0] = CompletionStatus.UNREACHABLE
        await ctx.tick().repeat(20)
        assert watch.offers[0] - watch.fails[0] == LsRequester.FAIL_LATENCY, (
            watch.offers, watch.fails)

        # A random mix, idle cycles on the GPU side, back-pressure on the completions.
        for tag in range(1, 61):
            dst = rng.choice((REACHABLE, UNREACHABLE))
            await _request(ctx, req, tag, dst, rng.random() < 0.5,
                           rng.choice((LsSize.B64, LsSize.B128, LsSize.B256)), rng)
            expected[tag] = (CompletionStatus.UNREACHABLE if dst == UNREACHABLE
                             else CompletionStatus.TIMEOUT)
            for _ in range(rng.choice((1, 1, 2, 4))):
                ctx.set(req.cpl.ready, rng.random() < 0.6)
                await ctx.tick()
        for _ in range(TIMEOUT_CYCLES + 4 * 128):
            ctx.set(req.cpl.ready, rng.random() < 0.6)
            await ctx.tick()
        ctx.set(req.cpl.ready, 1)
        await ctx.tick().repeat(TIMEOUT_CYCLES + 2 * 128)

        got = {}
        for tag, status, _ in watch.completions:
            assert tag not in got, f"tag {tag} completed twice"
            got[tag] = status
        assert got == expected
        unreachable = sum(s == CompletionStatus.UNREACHABLE for s in expected.values())
        reachable = len(expected) - unreachable
        assert watch.frames_out == reachable, "an unreachable request's frame left"
        assert ctx.get(top.steer.count_unroutable) == unreachable
        assert ctx.get(req.count_unreachable) == unreachable
        assert ctx.get(req.count_timeouts) == reachable
        assert ctx.get(req.count_stale_fails) == 0
        assert ctx.get(req.outstanding) == 0

        # The path answers only after the request timed out: the drop completes nothing.
        ctx.set(top.hold, 1)
        await _request(ctx, req, 100, UNREACHABLE, False, LsSize.B64, rng)
        await ctx.tick().repeat(TIMEOUT_CYCLES + 2 * 128)
        assert watch.completions[-1][:2] == (100, CompletionStatus.TIMEOUT)
        count = len(watch.completions)
        ctx.set(top.hold, 0)
        await ctx.tick().repeat(30)
        assert len(watch.completions) == count, "a stale drop completed a request"
        assert ctx.get(req.count_stale_fails) == 1
        assert ctx.get(req.count_unreachable) == unreachable

    run(top, watch, bench)
