"""The memory windows' check of an aligned L/S access (``Windows.granted_aligned``), in
Amaranth's simulator, against the rule of spec §11 written out line by line: an access is
granted when one window holds every one of its lines and has the permission.

Windows and accesses are drawn close to each other (small bases and sizes, lines around
every window's ends, empty windows, windows at the top of the 44-bit line space), so the
boundaries the masked compare replaces an adder at are all crossed.
"""

import random

from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from ethlink.rtl.nic import csr
from ethlink.rtl.nic.engine import LINE_BITS
from ethlink.rtl.nic.windows import Windows

COUNT = 4
TRIALS = 3000
TOP = 1 << LINE_BITS


def spec_granted(windows, line, lines, need):
    """Spec §11: one window holds lines ``line`` … ``line + lines - 1`` and grants ``need``."""
    return any(perm & need and all(base <= x < base + size for x in range(line, line + lines))
               for base, size, perm in windows)


class _Check(Elaboratable):
    def __init__(self):
        self.windows = Windows(COUNT)
        self.line = Signal(LINE_BITS)
        self.lines_log2 = Signal(2)
        self.need = Signal(2)
        self.granted = Signal()

    def elaborate(self, platform):
        m = Module()
        w = self.windows
        m.d.sync += [end.eq(base + size) for base, size, end in zip(w.base, w.size, w.end)]
        m.d.comb += self.granted.eq(w.granted_aligned(self.line, self.lines_log2, self.need))
        return m


def test_aligned_window_check_matches_spec():
    dut = _Check()
    rng = random.Random(11)
    outcomes = {True: 0, False: 0}

    async def bench(ctx):
        for trial in range(TRIALS):
            far = trial % 5 == 0            # windows at the top of the line space
            windows = []
            for k in range(COUNT):
                size = rng.choice([0, 1, 2, 3, 4, 5, 7, 8, rng.randrange(64)])
                base = rng.randrange(TOP - 80, TOP - size) if far else rng.randrange(40)
                windows.append((base, size, rng.choice([csr.PERM_READ, csr.PERM_WRITE,
                                                        csr.PERM_READ | csr.PERM_WRITE])))
                ctx.set(dut.windows.base[k], base)
                ctx.set(dut.windows.size[k], size)
                ctx.set(dut.windows.perm[k], windows[-1][2])
            await ctx.tick()                  # the ends follow a cycle later
            for _ in range(8):
                log2 = rng.randrange(3)
                lines = 1 << log2
                base, size, _ = rng.choice(windows)
                near = rng.choice([base, base + size]) + rng.randrange(-6, 6)
                line = min(max(near, 0), TOP - lines) & ~(lines - 1)
                need = rng.choice([csr.PERM_READ, csr.PERM_WRITE])
                ctx.set(dut.line, line)
                ctx.set(dut.lines_log2, log2)
                ctx.set(dut.need, need)
                expected = spec_granted(windows, line, lines, need)
                assert ctx.get(dut.granted) == expected, (windows, line, lines, need)
                outcomes[expected] += 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # Both answers must have been exercised many times, or the test proves nothing.
    assert min(outcomes.values()) > TRIALS, outcomes
