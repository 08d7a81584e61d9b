""":class:`FrameSteer`'s lookups ahead, with a real :class:`Reachability`, in Amaranth's
simulator: a frame whose port was looked up (``hint``) when its request was taken leaves
through the output register the cycle after its first beat is offered, on the port the path
selection gives; without a hint, or when the paths changed after it (a SEN taken, a link's
state changed), the frame waits for its own lookup (:attr:`Reachability.LATENCY` cycles) as
well and takes the port of the paths as they are now; a frame whose ``dst`` or ``entropy``
differs from the hint is not fooled by it."""

import random

from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from ethlink.rtl.nic.nic import FrameSteer
from ethlink.rtl.nic.reachability import Reachability
from ethlink.rtl.wire import LS_TH, OEFH, OEFH_VERSION, LcwType, Opcode, SEN_PAYLOAD
from ethlink.sim.models.path import select_port

PORTS = 2
#: Ref: docs/nic.md §8 — a steered beat leaves through one register stage.
STAGE = 1


class _Steer(Elaboratable):
    """A :class:`FrameSteer` with one hint source on a :class:`Reachability`, ``changed``
    wired as the NIC wires it."""
    def __init__(self):
        self.steer = FrameSteer(PORTS, hints=1)
        self.reach = Reachability(PORTS)
        self.links_up = Signal(PORTS)

    def elaborate(self, platform):
        m = Module()
        m.submodules.steer = steer = self.steer
        m.submodules.reach = reach = self.reach
        m.d.comb += [reach.i.valid.eq(steer.lookup.valid), reach.i.dst.eq(steer.lookup.dst),
                     reach.i.entropy.eq(steer.lookup.entropy),
                     steer.result.valid.eq(reach.o.valid), steer.result.port.eq(reach.o.port),
                     steer.result.none.eq(reach.o.none), reach.links_up.eq(self.links_up)]
        before = Signal(PORTS)
        m.d.sync += before.eq(self.links_up)
        m.d.comb += steer.changed.eq(reach.changed | (before != self.links_up))
        return m


def load_req(dst, entropy):
    return (OEFH.pack(ver=OEFH_VERSION, vc=0, dst=dst, src=1, entropy=entropy)
            + LS_TH.pack(opcode=Opcode.LOAD_REQ, tag=7, line=0x1000))


def test_lookup_ahead():
    rng = random.Random(5)
    top = _Steer()
    steer, reach = top.steer, top.reach
    now = {"cycle": 0}
    out = []        # (cycle, port) of every first beat taken on an output

    async def clock(ctx):
        signals = [s for p in range(PORTS) for s in (steer.o[p][0].valid,
                                                       steer.o[p][0].payload.first)]
        async for _, _, *values in ctx.tick().sample(*signals):
            for p in range(PORTS):
                if values[2 * p] and values[2 * p + 1]:
                    out.append((now["cycle"], p))
            now["cycle"] += 1

    async def offer(ctx, body):
        """Offer ``body`` from the next cycle on; returns the cycle of its first beat."""
        start = now["cycle"]
        chunks = [body[i:i + 8] for i in range(0, len(body), 8)]
        for k, chunk in enumerate(chunks):
            ctx.set(steer.i.valid, 1)
            ctx.set(steer.i.payload.data, int.from_bytes(chunk.ljust(8, b"\0"), "little"))
            ctx.set(steer.i.payload.keep, (1 << len(chunk)) - 1)
            ctx.set(steer.i.payload.first, k == 0)
            ctx.set(steer.i.payload.last, k == len(chunks) - 1)
            await ctx.tick().until(steer.i.ready)
        ctx.set(steer.i.valid, 0)
        return start

    async def hint(ctx, dst, entropy):
        ctx.set(steer.hint[0].valid, 1)
        ctx.set(steer.hint[0].dst, dst)
        ctx.set(steer.hint[0].entropy, entropy)
        await ctx.tick()
        ctx.set(steer.hint[0].valid, 0)

    async def sen(ctx, port, endpoint, reachable, event):
        ctx.set(reach.lcw[port].valid, 1)
        ctx.set(reach.lcw[port].payload.type, LcwType.SEN)
        ctx.set(reach.lcw[port].payload.payload, SEN_PAYLOAD.to_int(
            endpoint=endpoint, reachable=reachable, event=event, port=0))
        await ctx.tick()
        ctx.set(reach.lcw[port].valid, 0)

    async def bench(ctx):
        for p in range(PORTS):
            ctx.set(steer.o[p][0].ready, 1)
        ctx.set(top.links_up, (1 << PORTS) - 1)
        await ctx.tick().until(~reach.busy)
        await ctx.tick().repeat(3)
        checked = 0
        for _ in range(40):
            dst, entropy = rng.randrange(4096), rng.randrange(1 << 16)
            port = select_port(dst, entropy, (1 << PORTS) - 1)
            # Looked up ahead, the frame offered when the answer arrives or later: at once.
            await hint(ctx, dst, entropy)
            await ctx.tick().repeat(rng.choice([1, 1, 3, 10]))
            offered = await offer(ctx, load_req(dst, entropy))
            await ctx.tick().repeat(2)
            assert out[-1] == (offered + STAGE, port), (out[-1], offered, port)
            # Without a hint (another entropy): its own lookup.
            other = entropy ^ 1
            offered = await offer(ctx, load_req(dst, other))
            await ctx.tick().repeat(2)
            assert out[-1] == (offered + STAGE + Reachability.LATENCY,
                               select_port(dst, other, (1 << PORTS) - 1))
            checked += 1
        # The frame offered in the answer's cycle (as the NIC's requester offers it).
        dst, entropy = 77, 0x1234
        ctx.set(steer.hint[0].valid, 1)
        ctx.set(steer.hint[0].dst, dst)
        ctx.set(steer.hint[0].entropy, entropy)
        await ctx.tick()
        ctx.set(steer.hint[0].valid, 0)
        await ctx.tick()
        offered = await offer(ctx, load_req(dst, entropy))
        await ctx.tick().repeat(2)
        assert out[-1] == (offered + STAGE, select_port(dst, entropy, 3))
        # A SEN taken between the hint and the frame: the port it named is gone for dst.
        for event, (dst, entropy) in enumerate([(100, 5), (200, 9), (300, 77)]):
            port = select_port(dst, entropy, 3)
            await hint(ctx, dst, entropy)
            await sen(ctx, port, dst, 0, event + 1)
            offered = await offer(ctx, load_req(dst, entropy))
            await ctx.tick().repeat(2)
            assert out[-1] == (offered + STAGE + Reachability.LATENCY, 1 - port), (out[-1], offered)
        # A link going down after the answer was kept: the next frame looks up again.
        dst, entropy = 400, 4
        await hint(ctx, dst, entropy)
        await ctx.tick().repeat(4)
        ctx.set(top.links_up, 0b01)
        await ctx.tick()
        offered = await offer(ctx, load_req(dst, entropy))
        await ctx.tick().repeat(2)
        assert out[-1] == (offered + STAGE + Reachability.LATENCY, 0)
        assert checked == 40
        assert ctx.get(steer.count.unroutable) == 0

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_process(clock)
    sim.add_testbench(bench)
    sim.run()


def _frame(rng, ident):
    """A frame of 1…4 beats on a random VC to a random dst, its octets 6…7 naming it."""
    dst, entropy, vc = rng.randrange(4096), rng.randrange(1 << 16), rng.randrange(4)
    oefh = OEFH.to_int(ver=OEFH_VERSION, vc=vc, dst=dst, src=1, entropy=entropy)
    body = oefh.to_bytes(6, "big") + ident.to_bytes(2, "little")
    body += bytes(rng.randrange(256) for _ in range(rng.randrange(25)))
    return dst, entropy, vc, body


def test_random_traffic_under_back_pressure():
    """Random frames with gaps, lookups ahead for some of them, every output back-pressured at
    random: each frame leaves whole on the port the path selection gives and on its own VC,
    in order, and none is lost — also when an output cannot take the first beat in the cycle
    the frame's port is answered."""
    rng = random.Random(11)
    top = _Steer()
    steer, reach = top.steer, top.reach
    frames = [_frame(rng, k) for k in range(300)]
    expected = {(p, v): [] for p in range(PORTS) for v in range(4)}
    for dst, entropy, vc, body in frames:
        expected[select_port(dst, entropy, (1 << PORTS) - 1), vc].append(body)
    got = {key: [] for key in expected}
    partial = {key: b"" for key in expected}

    async def bench(ctx):
        ctx.set(top.links_up, (1 << PORTS) - 1)
        await ctx.tick().until(~reach.busy)
        index, beat, hinted, quiet = 0, 0, -1, 0
        for cycle in range(20000):
            # Outputs: each ready in a random share of cycles (some hardly ever).
            for p in range(PORTS):
                for v in range(4):
                    ctx.set(steer.o[p][v].ready, rng.random() < (0.9 if v == 0 else 0.4))
            # Hints: now and then, for the frame about to be offered.
            ctx.set(steer.hint[0].valid, 0)
            if index < len(frames) and beat == 0 and hinted < index and rng.random() < 0.3:
                ctx.set(steer.hint[0].valid, 1)
                ctx.set(steer.hint[0].dst, frames[index][0])
                ctx.set(steer.hint[0].entropy, frames[index][1])
                hinted = index
            # The input: a beat when not in a gap, held until taken.
            offering = index < len(frames) and quiet == 0
            ctx.set(steer.i.valid, offering)
            if offering:
                body = frames[index][3]
                chunks = [body[k:k + 8] for k in range(0, len(body), 8)]
                chunk = chunks[beat]
                ctx.set(steer.i.payload.data, int.from_bytes(chunk.ljust(8, b"\0"), "little"))
                ctx.set(steer.i.payload.keep, (1 << len(chunk)) - 1)
                ctx.set(steer.i.payload.first, beat == 0)
                ctx.set(steer.i.payload.last, beat == len(chunks) - 1)
            for p in range(PORTS):
                for v in range(4):
                    out = steer.o[p][v]
                    if ctx.get(out.valid) and ctx.get(out.ready):
                        keep = ctx.get(out.payload.keep)
                        data = ctx.get(out.payload.data).to_bytes(8, "little")
                        partial[p, v] += data[:bin(keep).count("1")]
                        if ctx.get(out.payload.last):
                            got[p, v].append(partial[p, v])
                            partial[p, v] = b""
            took = offering and ctx.get(steer.i.ready)
            await ctx.tick()
            if quiet:
                quiet -= 1
            elif took:
                beat += 1
                if beat == len(chunks):
                    index, beat = index + 1, 0
                if rng.random() < 0.2:
                    quiet = rng.choice([1, 2, 5])
            if index == len(frames) and got == expected:
                break
        delivered = sum(map(len, got.values()))
        assert got == expected, f"{index} frames taken, {delivered} of {len(frames)} delivered"
        assert ctx.get(steer.count.unroutable) == 0 and ctx.get(steer.count.bad_vc) == 0

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
