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
from ethlink.rtl.nic.rdma_requester import RdmaRequester
from ethlink.rtl.wire import LsSize, Opcode
from ethlink.sim.cbfc_blocks import run
from ethlink.sim.nic_blocks import (REACHABLE, UNREACHABLE, TIMEOUT_CYCLES, SteeredRequester,
                                    Watch, command, measure_fail_latency, request,
                                    read_server, wait_for)

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
        assert ctx.get(top.steer.count.unroutable) == unreachable
        assert ctx.get(req.count.unreachable) == unreachable
        assert ctx.get(req.count.timeouts) == reachable
        assert ctx.get(req.count.stale_fails) == 0
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
        assert ctx.get(req.count.stale_fails) == 1
        assert ctx.get(req.count.unreachable) == unreachable

    run(top, watch, bench)


#: The figures docs/nic.md §4 and docs/rdma.md state (not the RTL's constants: a pipeline and
#: its constant could change together unnoticed).
LS_FAIL_LATENCY = 5
RDMA_FAIL_LATENCY = 4


def test_fail_latency():
    """What ``ethlink bench nic`` reports is what the docs state, and the requester says."""
    assert measure_fail_latency() == LS_FAIL_LATENCY == LsRequester.FAIL_LATENCY


#: The RDMA harness's timeout: far above the time a 1 KiB WRITE takes to be read and sent, so
#: that an UNREACHABLE completion that waited for it would show.
RDMA_TIMEOUT = 512


#: The requester's queue of dropped packets' headers: ``messages`` entries (docs/rdma.md), 16
#: in this harness.
RDMA_FAIL_DEPTH = 16


def test_rdma_unreachable_messages_complete_at_once():
    """Random WRITEs and READs, 1 octet to 1 KiB (1 to 4 packets), to a reachable and an
    unreachable endpoint, completions back-pressured: every message completes once, the
    unreachable ones UNREACHABLE without a packet leaving, the others (nobody answers)
    TIMEOUT.

    An UNREACHABLE completion is timed from the drop of its message's last packet (its header
    taken on ``fail``), not from the command: before the drop the message waits for the
    packets of the messages sent before it, as any message does. From the drop, the response
    side (one event at a time, docs/rdma.md) offers it ``RDMA_FAIL_LATENCY`` cycles later,
    plus the events queued before it: each completion until it is taken, plus its idle and
    check cycles (2), and each other header (2: idle, check), at most ``RDMA_FAIL_DEPTH`` - 1
    of them. The bound holds whatever the back-pressure, far below the timeout."""
    rng = random.Random(11)
    top = SteeredRequester(rdma=True, timeout_cycles=RDMA_TIMEOUT)
    req = top.requester
    watch = Watch(top)
    expected = {}
    packets = 0

    async def bench(ctx):
        nonlocal packets
        ctx.set(req.local_id, 1)
        for n in range(48):
            ident = n % 16
            while sum(tag == ident for tag, _, _ in watch.completions) < n // 16:
                ctx.set(req.cpl.ready, rng.random() < 0.6)
                await ctx.tick()
            read, dst = rng.random() < 0.5, rng.choice((REACHABLE, UNREACHABLE))
            length = rng.choice((rng.randint(1, 64), rng.randint(1, 1024), 256, 1024))
            await command(ctx, req, ident, dst, read, length)
            expected[n] = (CompletionStatus.UNREACHABLE if dst == UNREACHABLE
                           else CompletionStatus.TIMEOUT)
            if dst == REACHABLE:
                packets += 1 if read else -(-length // 256)
            for _ in range(rng.choice((0, 1, 3))):
                ctx.set(req.cpl.ready, rng.random() < 0.6)
                await ctx.tick()
        while len(watch.completions) < 48:
            ctx.set(req.cpl.ready, rng.random() < 0.6)
            await ctx.tick()
        await ctx.tick().repeat(RDMA_TIMEOUT + 100)

        got = {}
        drops = [(cycle, header.th.rdma.msg) for cycle, header in watch.fails]
        for (tag, status, _), offered in zip(watch.completions, watch.offers):
            n = next(n for n in range(tag, 48, 16) if n not in got)
            got[n] = status
            if status == CompletionStatus.UNREACHABLE:
                dropped = max(cycle for cycle, msg in drops if msg == tag and cycle < offered)
                held = sum(watch.cpl_valid[dropped + 1:offered])
                before = sum(dropped < cycle < offered for cycle in watch.offers)
                bound = RDMA_FAIL_LATENCY + held + 2 * before + 2 * (RDMA_FAIL_DEPTH - 1)
                assert offered - dropped <= bound, \
                    f"message {n} offered {offered - dropped} cycles after its drop ({bound})"
        assert got == expected
        unreachable = sum(s == CompletionStatus.UNREACHABLE for s in expected.values())
        assert watch.frames_out == packets, "an unreachable message's packet left"
        assert ctx.get(req.count.unreachable) == unreachable
        assert ctx.get(req.count.timeouts) == 48 - unreachable
        assert ctx.get(req.count.stale_fails) == ctx.get(req.count.fail_overflows) == 0
        assert ctx.get(req.outstanding) == 0

    run(top, watch, bench, read_server(req, rng))


def test_rdma_partly_unreachable_write():
    """A 4-packet WRITE whose paths die while it is sent: a dropped middle packet makes the
    message complete UNREACHABLE (when it would have timed out: the target cannot finish it),
    a dropped last packet at once."""
    rng = random.Random(12)
    top = SteeredRequester(rdma=True, timeout_cycles=RDMA_TIMEOUT)
    req = top.requester
    watch = Watch(top)

    async def bench(ctx):
        ctx.set(req.local_id, 1)
        ctx.set(req.cpl.ready, 1)
        for ident, dropped in ((3, 1), (4, 3)):
            out = watch.frames_out
            await command(ctx, req, ident, REACHABLE, False, 1024)
            start = watch.now
            # Packet ``dropped`` (0…3) finds no path; the others leave.
            await wait_for(ctx, lambda: watch.frames_out == out + dropped)
            ctx.set(top.drop_all, 1)
            fails = len(watch.fails)
            await wait_for(ctx, lambda: len(watch.fails) > fails)
            ctx.set(top.drop_all, 0)
            await wait_for(ctx, lambda: len(watch.completions) > ident - 3)
            tag, status, cycle = watch.completions[-1]
            assert (tag, status) == (ident, CompletionStatus.UNREACHABLE)
            waited = cycle - start
            if dropped < 3:
                assert waited > RDMA_TIMEOUT, "completed before the rest of it was sent"
                assert watch.frames_out == out + 3
            else:
                assert waited < 200, f"the last packet's drop completed it {waited} cycles on"
        await ctx.tick().repeat(2)          # a counter shows an event 2 cycles after it
        assert ctx.get(req.count.unreachable) == 2
        assert ctx.get(req.count.timeouts) == 0

    run(top, watch, bench, read_server(req, rng))


def test_rdma_stale_fails():
    """A dropped packet's header that does not name an outstanding message of its dst and
    kind completes nothing (``stale_fails``); the one that does completes it."""
    req = RdmaRequester(8, messages=16, mtu=256, timeout_cycles=RDMA_TIMEOUT)
    completions = Completions(req)

    async def fail(ctx, msg, dst, opcode):
        ctx.set(req.fail.payload, {"oefh": {"dst": dst},
                                   "th": {"rdma": {"opcode": opcode, "msg": msg, "last": 1}}})
        ctx.set(req.fail.valid, 1)
        await ctx.tick()
        ctx.set(req.fail.valid, 0)
        await ctx.tick().repeat(8)

    async def bench(ctx):
        ctx.set(req.local_id, 1)
        ctx.set(req.o.ready, 1)
        ctx.set(req.cpl.ready, 1)
        await command(ctx, req, 5, REACHABLE, True, 64)
        await ctx.tick().repeat(10)
        await fail(ctx, 6, REACHABLE, Opcode.READ_REQ)       # not outstanding
        await fail(ctx, 5, UNREACHABLE, Opcode.READ_REQ)     # another dst
        await fail(ctx, 5, REACHABLE, Opcode.WRITE)          # another kind
        assert completions == [] and ctx.get(req.count.stale_fails) == 3
        await fail(ctx, 5, REACHABLE, Opcode.READ_REQ)
        assert completions == [(5, CompletionStatus.UNREACHABLE)]
        assert ctx.get(req.count.stale_fails) == 3 and ctx.get(req.count.unreachable) == 1

    run(req, completions, bench)


class Completions(list):
    """The (tag, status) of every completion ``req`` gives."""
    def __init__(self, req):
        super().__init__()
        self.req = req

    async def process(self, ctx):
        cpl = self.req.cpl
        async for _, _, valid, ready, tag, status in ctx.tick().sample(
                cpl.valid, cpl.ready, cpl.payload.tag, cpl.payload.status):
            if valid and ready:
                self.append((tag, CompletionStatus(status)))


def test_rdma_fail_latency():
    assert measure_fail_latency(rdma=True) == RDMA_FAIL_LATENCY == RdmaRequester.FAIL_LATENCY
