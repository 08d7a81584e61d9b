"""PathSelect against the golden path-selection model (sim/models/path.py), cycle for cycle.

One selection may be asked for in every cycle. Every test drives the inputs cycle by cycle and
checks every output cycle: ``o_valid`` must be ``i_valid`` of exactly ``LATENCY`` cycles before,
and each valid output must be ``select_port`` of those inputs. The tests: the spec §9 vectors;
random requests with random idle cycles (garbage on the data inputs while idle); all 16
reachable masks for a few (dst, entropy); back-to-back requests at full rate; and the spread of
the hash over the ports.
"""

import random

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from ethlink.rtl.nic.path_select import PathSelect
from ethlink.sim.models import select_port
from ethlink.sim.runner import run_cocotb
from ethlink.sim.tb import start

EXPORT = "path_select"
LATENCY = PathSelect.LATENCY

#: Spec §9 vectors: (dst, entropy, reachable, port or None).
SPEC_VECTORS = [
    (0x123, 0xBEEF, 0b1111, 1),
    (0x123, 0xBEEF, 0b1011, 1),
    (0x007, 0x0000, 0b0011, 0),
    (0x3FF, 0xFFFF, 0b0111, 2),
    (0x005, 0x0001, 0b0000, None),
]


def request(dst, entropy, reachable):
    return (1, dst, entropy, reachable)


def idle(rng=None):
    """An idle cycle; with ``rng``, random values on the data inputs (they must not matter)."""
    if rng is None:
        return (0, 0, 0, 0)
    return (0, rng.randrange(1 << 12), rng.randrange(1 << 16), rng.randrange(16))


async def setup(dut):
    for name in ("i_valid", "i_dst", "i_entropy", "i_reachable"):
        getattr(dut, name).value = 0
    await start(dut)


async def drive(dut, cycles):
    """Drive one ``(valid, dst, entropy, reachable)`` per cycle, then idles until the pipeline
    is empty; check every output cycle against the model. Returns ``(results, valid_cycles)``:
    the selection of each request in order (a port or ``None``), and the indices of the cycles
    (counted from the first driven one) in which ``o_valid`` was high."""
    cycles = list(cycles) + [idle()] * (LATENCY + 1)
    results, valid_cycles = [], []
    for n, (valid, dst, entropy, reachable) in enumerate(cycles):
        await FallingEdge(dut.clk)
        dut.i_valid.value = valid
        dut.i_dst.value = dst
        dut.i_entropy.value = entropy
        dut.i_reachable.value = reachable
        await RisingEdge(dut.clk)
        await ReadOnly()
        # Sampled after the edge that ends input cycle n: output cycle n + 1, which carries
        # the inputs of cycle n + 1 - LATENCY (idle before the first driven cycle).
        source = n + 1 - LATENCY
        expected_valid = cycles[source][0] if source >= 0 else 0
        o_valid = int(dut.o_valid.value)
        assert o_valid == expected_valid, \
            f"cycle {n}: o_valid = {o_valid}, expected {expected_valid} (i_valid {LATENCY} " \
            f"cycle(s) before)"
        if not o_valid:
            continue
        valid_cycles.append(n)
        _, dst, entropy, reachable = cycles[source]
        o_none, o_port = int(dut.o_none.value), int(dut.o_port.value)
        got = None if o_none else o_port
        expected = select_port(dst, entropy, reachable)
        assert got == expected, \
            f"dst {dst:#05x} entropy {entropy:#06x} reachable {reachable:#06b}: " \
            f"got {got}, expected {expected}"
        if o_none:
            assert o_port == 0, f"o_none with o_port = {o_port}"
        results.append(got)
    return results, valid_cycles


@cocotb.test()
async def spec_vectors(dut):
    """The five vectors of spec §9, back to back."""
    await setup(dut)
    results, _ = await drive(dut, [request(d, e, r) for d, e, r, _ in SPEC_VECTORS])
    assert results == [port for *_, port in SPEC_VECTORS]


@cocotb.test()
async def random_requests(dut):
    """3000 random requests with about 30 % idle cycles, every output checked; o_valid exactly
    LATENCY cycles after i_valid and never otherwise."""
    rng = random.Random(cocotb.RANDOM_SEED)
    cycles, requests = [], 0
    while requests < 3000:
        if rng.random() < 0.3:
            cycles.append(idle(rng))
        else:
            cycles.append(request(rng.randrange(1 << 12), rng.randrange(1 << 16),
                                  rng.randrange(16)))
            requests += 1
    await setup(dut)
    results, _ = await drive(dut, cycles)
    assert len(results) == requests
    assert None in results and set(results) - {None} == {0, 1, 2, 3}


@cocotb.test()
async def all_reachable_masks(dut):
    """All 16 reachable masks for a few (dst, entropy), including the extreme ones."""
    await setup(dut)
    for dst, entropy in ((0x000, 0x0000), (0xFFF, 0xFFFF), (0x123, 0xBEEF), (0x3FF, 0x8001),
                         (0x005, 0x0001)):
        results, _ = await drive(dut, [request(dst, entropy, mask) for mask in range(16)])
        assert len(results) == 16
        assert results[0] is None and None not in results[1:]
        for mask, port in enumerate(results[1:], start=1):
            assert mask >> port & 1, f"mask {mask:#06b}: port {port} is not reachable"


@cocotb.test()
async def latency_and_full_rate(dut):
    """One selection per cycle: N back-to-back requests give N back-to-back outputs, the first
    LATENCY cycles after the first request."""
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    await setup(dut)
    cycles = [idle()] * 3 + [request(rng.randrange(1 << 12), rng.randrange(1 << 16),
                                     rng.randrange(16)) for _ in range(200)]
    _, valid_cycles = await drive(dut, cycles)
    # Input cycle 3 is the first request; it is on the outputs in cycle 3 + LATENCY, which
    # drive() samples at index 3 + LATENCY - 1.
    first = 3 + LATENCY - 1
    assert valid_cycles == list(range(first, first + 200)), \
        f"outputs in cycles {valid_cycles[:3]}...{valid_cycles[-3:]}, expected {first}..."


@cocotb.test()
async def hash_spreads(dut):
    """Random entropies to one destination: with 4 ports each gets 20 % to 30 % of the
    requests, with 3 ports (h mod 3) each gets 28 % to 39 %."""
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    await setup(dut)
    for dst in (0x123, 0x007):
        for mask, ports, low, high in ((0b1111, (0, 1, 2, 3), 0.20, 0.30),
                                       (0b1101, (0, 2, 3), 0.28, 0.39)):
            count = 2000
            results, _ = await drive(dut, [request(dst, rng.randrange(1 << 16), mask)
                                           for _ in range(count)])
            for port in ports:
                share = results.count(port) / count
                assert low <= share <= high, \
                    f"dst {dst:#05x}, mask {mask:#06b}: port {port} got {share:.1%}"


def test_path_select(tmp_path):
    run_cocotb(EXPORT, "test_path_select", test_dir=tmp_path)
