"""CbfcTx and CbfcRx on their own in Amaranth's simulator: stream helpers for their tests, and
the latencies ``ethlink bench cbfc`` reports (measured, cycle by cycle)."""

import random
from types import SimpleNamespace

from amaranth.hdl import Const
from amaranth.sim import Simulator

from ethlink.rtl.cbfc.cbfc_rx import CbfcRx
from ethlink.rtl.cbfc.cbfc_tx import CbfcTx
from ethlink.rtl.wire import (CREDIT_PAYLOAD, LS_TH, OEFH, OEFH_VERSION, LcwType, LsSize,
                              Opcode)
from ethlink.sim.cbfc_tb import vc_body

__all__ = ["Clock", "offers", "send", "lcw", "run", "measure_latencies"]


def _beats(body):
    """(data, keep, first, last) of each 8-octet beat of ``body``."""
    chunks = [body[i:i + 8] for i in range(0, len(body), 8)]
    return [(int.from_bytes(c.ljust(8, b"\0"), "little"), (1 << len(c)) - 1,
             i == 0, i == len(chunks) - 1) for i, c in enumerate(chunks)]


class Clock:
    """Numbers the clock edges and records at which edge each watched stream transferred a
    first beat (``firsts``) or a last beat (``lasts``), or an LCW was received (``lcws``)."""
    def __init__(self, streams, lcw=None):
        self.now = 0
        self.streams = streams
        self.lcw = lcw
        self.firsts = {name: [] for name in streams}
        self.lasts = {name: [] for name in streams}
        self.lcws = []

    async def process(self, ctx):
        signals = [s for port in self.streams.values()
                   for s in (port.valid, port.ready, port.payload.first, port.payload.last)]
        if self.lcw is not None:
            signals.append(self.lcw.valid)
        async for _, _, *values in ctx.tick().sample(*signals):
            self.now += 1
            for k, name in enumerate(self.streams):
                valid, ready, first, last = values[4 * k:4 * k + 4]
                if valid and ready and first:
                    self.firsts[name].append(self.now)
                if valid and ready and last:
                    self.lasts[name].append(self.now)
            if self.lcw is not None and values[-1]:
                self.lcws.append(self.now)


def offers(port):
    """``port`` as :class:`Clock` should watch it to record every cycle a beat is offered on
    it, taken or not (its ``ready`` read as always high)."""
    return SimpleNamespace(valid=port.valid, ready=Const(1), payload=port.payload)


async def send(ctx, clock, port, body, idle=None, error=False):
    """Offer ``body`` on packet stream ``port``, back to back or, with ``idle`` (a function
    returning a number of cycles), with that many idle cycles after each beat. On a cut-through
    stream (:func:`~ethlink.rtl.link.layouts.CutFrameStream`) ``error`` is the verdict its last
    beat carries."""
    for data, keep, first, last in _beats(body):
        ctx.set(port.valid, 1)
        ctx.set(port.payload.data, data)
        ctx.set(port.payload.keep, keep)
        ctx.set(port.payload.first, first)
        ctx.set(port.payload.last, last)
        if hasattr(port.payload, "user"):
            ctx.set(port.payload.user.error, error and last)
        await ctx.tick().until(port.ready)
        gap = idle() if idle else 0
        if gap:
            ctx.set(port.valid, 0)
            await ctx.tick().repeat(gap)
    ctx.set(port.valid, 0)


async def lcw(ctx, port, lcw_type, vc, credits):
    ctx.set(port.valid, 1)
    ctx.set(port.payload.type, lcw_type)
    ctx.set(port.payload.payload, CREDIT_PAYLOAD.to_int(vc=vc, credits=credits))
    await ctx.tick()
    ctx.set(port.valid, 0)


def run(dut, clock, bench, *background, watchers=()):
    """Simulate ``dut`` with ``clock``'s process until ``bench`` returns; ``background``
    testbenches (endless models of the block's surroundings) run beside it, and ``watchers``
    (processes that sample the block every cycle, like ``clock``'s)."""
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_process(clock.process)
    for watcher in watchers:
        sim.add_process(watcher)
    sim.add_testbench(bench)
    for model in background:
        sim.add_testbench(model, background=True)
    sim.run()


def measure_latencies():
    """Cycles, measured: a frame's last beat into CbfcTx (credits available, output idle) →
    its first beat out (store and forward); a frame's last beat into CbfcRx → its first beat
    out (store and forward: the link layer cuts through to it); a CREDIT_UPDATE into CbfcTx
    that frees a waiting frame → that frame's first beat out; a 64 B LOAD_REQ's first beat
    first offered to a CbfcTx with ``bypass`` (its VC idle, credits available) → that beat
    out."""
    result = {}
    rng = random.Random(1)

    tx = CbfcTx(1, credit_size=64, queue_octets=4096, sync_period=1 << 16)
    tx_clock = Clock({"i": tx.i[0], "o": tx.o}, lcw=tx.lcw_rx)

    async def tx_bench(ctx):
        ctx.set(tx.o.ready, 1)
        await send(ctx, tx_clock, tx.i[0], vc_body(rng, 0, 0, 64, fixed=True))
        await ctx.tick().repeat(10)
        await lcw(ctx, tx.lcw_rx, LcwType.CREDIT_UPDATE, 0, 64)
        await ctx.tick().repeat(20)
        result["cbfc_update_to_frame_cycles"] = tx_clock.firsts["o"][0] - tx_clock.lcws[0]
        await send(ctx, tx_clock, tx.i[0], vc_body(rng, 0, 1, 64, fixed=True))
        await ctx.tick().repeat(20)
        result["cbfc_tx_latency_cycles"] = tx_clock.firsts["o"][1] - tx_clock.lasts["i"][1]

    run(tx, tx_clock, tx_bench)

    rx = CbfcRx(1, credit_size=64, buffer_octets=4096, update_period=1 << 16)
    rx_clock = Clock({"i": rx.i, "o": rx.o[0]})

    async def rx_bench(ctx):
        ctx.set(rx.o[0].ready, 1)
        await send(ctx, rx_clock, rx.i, vc_body(rng, 0, 0, 64, fixed=True))
        await ctx.tick().repeat(20)
        result["cbfc_rx_latency_cycles"] = rx_clock.firsts["o"][0] - rx_clock.lasts["i"][0]

    run(rx, rx_clock, rx_bench)

    bypass = CbfcTx(1, credit_size=64, queue_octets=4096, sync_period=1 << 16, bypass=True)
    bypass_clock = Clock({"offered": offers(bypass.i[0]), "o": bypass.o}, lcw=bypass.lcw_rx)
    load = OEFH.pack(ver=OEFH_VERSION, vc=0) + LS_TH.pack(opcode=Opcode.LOAD_REQ,
                                                         size=LsSize.B64)

    async def bypass_bench(ctx):
        ctx.set(bypass.o.ready, 1)
        await lcw(ctx, bypass.lcw_rx, LcwType.CREDIT_UPDATE, 0, 64)
        await ctx.tick().repeat(3)
        await send(ctx, bypass_clock, bypass.i[0], load)
        await ctx.tick().repeat(5)
        result["cbfc_bypass_latency_cycles"] = (bypass_clock.firsts["o"][0]
                                                - bypass_clock.firsts["offered"][0])

    run(bypass, bypass_clock, bypass_bench)
    return result
