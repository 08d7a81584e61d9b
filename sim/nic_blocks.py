"""A requester (:class:`LsRequester` or :class:`RdmaRequester`) behind a :class:`FrameSteer` in
Amaranth's simulator: the harness of ``test_nic_unreachable`` and the UNREACHABLE latencies
``ethlink bench nic`` reports."""

import random

from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import wiring

from ethlink.rtl.nic.axi import RESP_OKAY
from ethlink.rtl.nic.ls_requester import LsRequester, CompletionStatus
from ethlink.rtl.nic.nic import FrameSteer
from ethlink.rtl.nic.rdma_requester import RdmaRequester
from ethlink.rtl.wire import LsSize
from ethlink.sim.cbfc_blocks import run

__all__ = ["REACHABLE", "UNREACHABLE", "TIMEOUT_CYCLES", "SteeredRequester", "Watch",
           "request", "command", "read_server", "wait_for", "measure_fail_latency"]

REACHABLE, UNREACHABLE = 0x010, 0x020
TIMEOUT_CYCLES = 64


class SteeredRequester(Elaboratable):
    """``requester.o`` → ``steer`` (one port, always ready); a lookup is answered the cycle
    after it is asked unless ``hold`` is high: "none" for ``UNREACHABLE`` (for every dst while
    ``drop_all`` is high), port 0 otherwise. The steer's ``failed`` goes back to the
    requester's ``fail``, as in the NIC. ``rdma`` picks an :class:`RdmaRequester` (16
    messages, 256-octet MTU) instead of an :class:`LsRequester` (128 tags)."""
    def __init__(self, rdma=False, timeout_cycles=TIMEOUT_CYCLES):
        self.requester = (RdmaRequester(8, messages=16, mtu=256, timeout_cycles=timeout_cycles)
                          if rdma else LsRequester(8, tags=128, timeout_cycles=timeout_cycles))
        self.steer = FrameSteer(1)
        self.hold = Signal()
        self.drop_all = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.requester = req = self.requester
        m.submodules.steer = steer = self.steer
        wiring.connect(m, req.o, steer.i)
        for v in range(steer.vcs):
            m.d.comb += steer.o[0][v].ready.eq(1)
        wiring.connect(m, steer.failed, req.fail)
        asked = Signal()
        dst = Signal(12)
        m.d.comb += [steer.result.valid.eq(asked & ~self.hold),
                     steer.result.none.eq((dst == UNREACHABLE) | self.drop_all)]
        with m.If(steer.result.valid):
            m.d.sync += asked.eq(0)
        with m.If(steer.lookup.valid):
            m.d.sync += [asked.eq(1), dst.eq(steer.lookup.dst)]
        return m


class Watch:
    """Cycle numbers of: completions (tag, status, cycle), ``fail`` transfers (``fails``:
    cycle, header), the first cycle of each ``cpl`` offer; the cycles in which
    ``cpl`` was valid (``cpl_valid``, indexed by cycle); the frames leaving the steer
    (``frames_out``) and the cycle (``now``)."""
    def __init__(self, top):
        self.top = top
        self.now = 0
        self.completions = []
        self.fails = []
        self.offers = []
        self.cpl_valid = [False]
        self.frames_out = 0

    async def process(self, ctx):
        req, steer = self.top.requester, self.top.steer
        outs = [steer.o[0][v] for v in range(steer.vcs)]
        offered = False
        async for _, _, cv, cr, tag, status, fv, fr, header, *out in ctx.tick().sample(
                req.cpl.valid, req.cpl.ready, req.cpl.payload.tag, req.cpl.payload.status,
                req.fail.valid, req.fail.ready, req.fail.payload,
                *(s for o in outs for s in (o.valid, o.payload.first))):
            self.now += 1
            self.cpl_valid.append(bool(cv))
            if cv and not offered:
                self.offers.append(self.now)
            offered = cv and not cr
            if cv and cr:
                self.completions.append((tag, CompletionStatus(status), self.now))
            if fv and fr:
                self.fails.append((self.now, header))
            self.frames_out += sum(v and first for v, first in zip(out[::2], out[1::2]))


async def request(ctx, req, tag, dst, store, size, rng):
    """One L/S request (and a store's data) into ``req``."""
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


async def command(ctx, req, ident, dst, read, length):
    """One DMA command into ``req`` (8-octet aligned addresses inside 64 KiB)."""
    ctx.set(req.cmd.payload, {"read": read, "dst": dst, "id": ident, "remote": 0x1000,
                              "local": 0x2000, "length": length})
    ctx.set(req.cmd.valid, 1)
    await ctx.tick().until(req.cmd.ready)
    ctx.set(req.cmd.valid, 0)


def read_server(req, rng):
    """A testbench: an AXI4 subordinate that answers ``req``'s reads (``m_axi.ar*``/``r*``) with
    random data, one burst at a time (a WRITE's payload; its writes are never needed here)."""
    async def serve(ctx):
        ctx.set(req.m_axi.rresp, RESP_OKAY)
        while True:
            ctx.set(req.m_axi.arready, 1)
            arvalid = False
            while not arvalid:
                _, _, arvalid, arlen = await ctx.tick().sample(req.m_axi.arvalid,
                                                               req.m_axi.arlen)
            ctx.set(req.m_axi.arready, 0)
            for k in range(arlen + 1):
                ctx.set(req.m_axi.rdata, rng.getrandbits(64))
                ctx.set(req.m_axi.rlast, k == arlen)
                ctx.set(req.m_axi.rvalid, 1)
                rready = False
                while not rready:
                    _, _, rready = await ctx.tick().sample(req.m_axi.rready)
            ctx.set(req.m_axi.rvalid, 0)
    return serve


async def wait_for(ctx, condition, cycles=20000):
    """Tick until ``condition()`` holds (at most ``cycles`` cycles)."""
    for _ in range(cycles):
        if condition():
            return
        await ctx.tick()
    raise AssertionError(f"waited {cycles} cycles")


def measure_fail_latency(rdma=False):
    """Cycles from a dropped request's header taken on ``fail`` to its UNREACHABLE completion
    offered: a 64 B load alone (:attr:`LsRequester.FAIL_LATENCY`), or with ``rdma`` a 64 B
    READ alone (:attr:`RdmaRequester.FAIL_LATENCY`)."""
    top = SteeredRequester(rdma)
    req = top.requester
    watch = Watch(top)

    async def bench(ctx):
        ctx.set(req.local_id, 1)
        ctx.set(req.cpl.ready, 1)
        if rdma:
            await command(ctx, req, 0, UNREACHABLE, True, 64)
        else:
            await request(ctx, req, 0, UNREACHABLE, False, LsSize.B64, random.Random(1))
        await ctx.tick().repeat(20)
        assert watch.completions[0][:2] == (0, CompletionStatus.UNREACHABLE), watch.completions

    run(top, watch, bench)
    return watch.offers[0] - watch.fails[0][0]
