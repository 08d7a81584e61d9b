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

from ethlink.rtl.nic.ls_requester import LsRequester, CompletionStatus
from ethlink.rtl.wire import LsSize
from ethlink.sim.cbfc_blocks import run
from ethlink.sim.nic_blocks import (REACHABLE, UNREACHABLE, TIMEOUT_CYCLES, SteeredRequester,
                                    Watch, measure_fail_latency, request)

def test_unreachable_requests_complete_at_once():
    rng = random.Random(7)
    top = SteeredRequester()
    req = top.requester
    watch = Watch(top)
    expected = {}

    async def bench(ctx):
        ctx.set(req.local_id, 1)
        ctx.set(req.cpl.ready, 1)
        ctx.set(req.cpl_data.ready, 1)
        await request(ctx, req, 0, UNREACHABLE, False, LsSize.B64, rng)
        expected[0] = CompletionStatus.UNREACHABLE
        await ctx.tick().repeat(20)

        # A random mix, idle cycles on the GPU side, back-pressure on the completions.
        for tag in range(1, 61):
            dst = rng.choice((REACHABLE, UNREACHABLE))
            await request(ctx, req, tag, dst, rng.random() < 0.5,
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
        await request(ctx, req, 100, UNREACHABLE, False, LsSize.B64, rng)
        await ctx.tick().repeat(TIMEOUT_CYCLES + 2 * 128)
        assert watch.completions[-1][:2] == (100, CompletionStatus.TIMEOUT)
        count = len(watch.completions)
        ctx.set(top.hold, 0)
        await ctx.tick().repeat(30)
        assert len(watch.completions) == count, "a stale drop completed a request"
        assert ctx.get(req.count_stale_fails) == 1
        assert ctx.get(req.count_unreachable) == unreachable

    run(top, watch, bench)


def test_fail_latency():
    """What ``ethlink bench nic`` reports is what the requester states."""
    assert measure_fail_latency() == LsRequester.FAIL_LATENCY
