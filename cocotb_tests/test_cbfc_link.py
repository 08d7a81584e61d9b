"""Two CBFC link ends back to back (export ``cbfc_pair``): per-VC credit-based flow control over
MAC + LLR, under random multi-VC traffic, random drain rates, a stopped consumer, corrupted
and lost LCWs, and link flaps.

Every run checks, per VC and from the frames themselves (sim/cbfc_tb.py): nothing lost (outside
an LLR FLUSH), no duplicate, order kept, no altered octet; and that no receive buffer ever
overflowed (``count_overruns`` = 0, the occupancy high-water mark within the credits).
"""

import itertools
import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from ethlink.sim.cbfc_tb import CBFC_PAIR_PARAMS, CbfcPairTB, assert_flows_lossless
from ethlink.sim.runner import run_cocotb

EXPORT = "cbfc_pair"
PARAMS = CBFC_PAIR_PARAMS
VCS = PARAMS["vcs"]
CREDITS = PARAMS["rx_vc_octets"] // PARAMS["credit_size"]


async def start_pair(dut, seed, **options):
    tb = CbfcPairTB(dut, VCS, seed=seed, **options)
    await tb.reset()
    return tb


def assert_no_overflow(tb):
    for end in tb.ends():
        for vc in range(VCS):
            assert end.element("count_overruns", vc) == 0, tb.counters_report()
            assert end.element("count_occupancy_high", vc) <= CREDITS
            assert end.element("count_frames_dropped", vc) == 0
        assert end.value("count_bad_vc") == 0
        assert end.value("count_bogus_updates") == 0
        assert end.value("count_bogus_syncs") == 0


async def settle_credits(tb, cycles=3000):
    """Let updates and SYNCs run until every credit is back; then each sender's view equals
    its receiver's: sent = received, limit = receiver's limit = sent + all credits."""
    await ClockCycles(tb.clk, cycles)
    for tx, rx in ((tb.a, tb.b), (tb.b, tb.a)):
        for vc in range(VCS):
            sent = tb.credits(tx, "credits_sent", vc)
            report = tb.counters_report()
            assert tb.credits(rx, "credits_received", vc) == sent, report
            assert tb.credits(rx, "rx_occupancy", vc) == 0, report
            limit = tb.credits(tx, "credit_limit", vc)
            assert limit == tb.credits(rx, "rx_limit", vc), report
            assert (limit - sent) % (1 << 20) == CREDITS, report


@cocotb.test()
async def random_traffic(dut):
    """Four VCs both ways, random lengths and idles, each VC's consumer at its own pace (0 to
    90 % paused): everything arrives, no buffer overflows, the slow VCs stall on credits."""
    rng = random.Random(21)
    tb = await start_pair(dut, 21)
    flow_list = tb.flows(rng, idle=0.1, backpressure=(0.0, 0.3, 0.6, 0.9))
    cycles = await tb.run_traffic(flow_list, rng, 120, 600, 400_000)
    assert cycles is not None, tb.counters_report()
    assert_flows_lossless(flow_list)
    assert_no_overflow(tb)
    # The 90 %-paused consumer held its sender back on credits.
    assert tb.a.element("count_stall_cycles", 3) > 0
    assert tb.a.element("count_occupancy_high", 3) + tb.b.element("count_occupancy_high", 3) > 0
    await settle_credits(tb)


@cocotb.test()
async def stopped_consumer(dut):
    """VC 1's consumer stops: VC 1 fills its credits and stalls, the other three keep the
    line's full rate (no head-of-line blocking); when it resumes, VC 1's frames all arrive."""
    rng = random.Random(22)
    tb = await start_pair(dut, 22)
    flow_list = tb.flows(rng, both=False)
    flow_list[1].sink.set_pause_generator(itertools.repeat(True))
    body = 256
    others = [f for f in flow_list if f.vc != 1]
    frames = 150
    for flow in flow_list:
        cocotb.start_soon(flow.send(rng, frames, body, fixed=True))
    start = None
    cycles = 0
    for cycles in range(1, 200_000):
        await RisingEdge(dut.clk)
        if start is None and any(f.score.received for f in others):
            start = cycles
        if all(len(f.score.received) >= frames for f in others):
            break
    assert all(len(f.score.received) == frames for f in others), tb.counters_report()
    # The running VCs and the stopped one's frames sent before its credits ran out share the
    # line: words on the wire per frame = body + FCS, start word, gap (docs/mac.md); together
    # they must use at least 95 % of it.
    wire_words = (body + 4 + 8 + 12 + 7) // 8
    stalled = flow_list[1]
    ideal = (3 * frames + tb.a.element("count_frames_sent", 1)) * wire_words
    assert (cycles - start) <= ideal / 0.95, (cycles - start, ideal, tb.counters_report())
    assert tb.a.element("count_stall_cycles", 1) > 0
    assert tb.b.element("count_occupancy_high", 1) > CREDITS - 5
    assert len(stalled.score.received) == 0
    stalled.sink.set_pause_generator(itertools.repeat(False))
    await tb.wait_until(lambda: len(stalled.score.received) >= frames, 100_000)
    assert_flows_lossless(flow_list)
    assert_no_overflow(tb)
    await settle_credits(tb)


@cocotb.test()
async def corrupted_lcws(dut):
    """Bit errors (raw BER 1e-4) and bursts on both lines: frames are replayed by the LLR,
    credit LCWs hit by an error are dropped by their crc8 and repaired by the next periodic
    update or SYNC. Nothing is lost and nothing overflows."""
    rng = random.Random(23)
    tb = await start_pair(dut, 23, ber=1e-4)
    for line in tb.lines():
        line.set(burst_length=40)
    flow_list = tb.flows(rng, idle=0.05, backpressure=(0.0, 0.5))

    async def bursts():
        for _ in range(40):
            await ClockCycles(dut.clk, rng.randint(500, 3000))
            line = rng.choice(tb.lines())
            line.set(burst=1)
            await RisingEdge(dut.clk)
            line.set(burst=0)
    cocotb.start_soon(bursts())
    cycles = await tb.run_traffic(flow_list, rng, 100, 300, 600_000)
    assert cycles is not None, tb.counters_report()
    assert_flows_lossless(flow_list)
    assert_no_overflow(tb)
    lcws_lost = tb.total("count_mac_rx_lcw_crc_errors")
    assert lcws_lost > 0, "no LCW was hit: the test did not exercise LCW loss"
    assert tb.total("count_replays") > 0
    tb.set_ber(0.0)
    await settle_credits(tb)


@cocotb.test()
async def short_flap(dut):
    """The A→B line goes down for 400 cycles mid-traffic: the LLR replays, nothing is lost,
    credits stay exact."""
    rng = random.Random(24)
    tb = await start_pair(dut, 24)
    flow_list = tb.flows(rng, idle=0.1, backpressure=(0.2,))

    async def flap():
        await ClockCycles(dut.clk, 3000)
        tb.ab.set(link_up=0)
        await ClockCycles(dut.clk, 400)
        tb.ab.set(link_up=1)
    cocotb.start_soon(flap())
    cycles = await tb.run_traffic(flow_list, rng, 80, 400, 300_000)
    assert cycles is not None, tb.counters_report()
    assert_flows_lossless(flow_list)
    assert_no_overflow(tb)
    assert tb.a.value("count_timeouts") > 0
    assert tb.a.value("count_flushes") == 0
    await settle_credits(tb)


@cocotb.test()
async def long_flap_recovers_credits(dut):
    """The A→B line stays down until A's LLR gives up (FLUSH) and re-inits. The flushed frames
    are lost (at most as many as were flushed, nothing duplicated or reordered), their credits
    leak, and CREDIT_SYNC gives them back: afterwards both views agree exactly and traffic
    runs at full credit again."""
    rng = random.Random(25)
    tb = await start_pair(dut, 25)
    flow_list = tb.flows(rng, idle=0.0, both=False)
    done = {"flap": False}

    async def flap():
        await ClockCycles(dut.clk, 2000)
        tb.ab.set(link_up=0)
        await tb.wait_until(lambda: tb.a.value("count_flushes"), 200_000)
        await ClockCycles(dut.clk, 100)
        tb.ab.set(link_up=1)
        done["flap"] = True
    cocotb.start_soon(flap())
    for flow in flow_list:
        cocotb.start_soon(flow.send(rng, 150, 300))
    total = 150 * len(flow_list)
    await tb.wait_until(lambda: done["flap"] and sum(f.delivered() for f in flow_list)
                        + tb.a.value("count_flushed_frames") >= total, 400_000)
    await ClockCycles(dut.clk, 3000)
    flushed = tb.a.value("count_flushed_frames")
    assert flushed > 0
    lost = 0
    for flow in flow_list:
        v = flow.score.verdict()
        assert v["duplicated"] == v["reordered"] == v["corrupted"] == 0, v
        lost += v["lost"]
    assert 0 < lost <= flushed, (lost, flushed, tb.counters_report())
    assert tb.b.value("count_leaked_credits") > 0
    assert_no_overflow(tb)
    await settle_credits(tb)
    # Full credit again: a second batch crosses without loss.
    for flow in flow_list:
        flow.score = type(flow.score)(tag_at=1)
    cycles = await tb.run_traffic(flow_list, rng, 60, 300, 200_000, first_index=1000,
                                  expect=60)
    assert cycles is not None, tb.counters_report()
    assert_flows_lossless(flow_list)
    dut._log.info("flap: %d frames flushed, %d lost, %d credits recovered", flushed, lost,
                  tb.b.value("count_leaked_credits"))


def test_cbfc_link(tmp_path):
    run_cocotb(EXPORT, "test_cbfc_link", PARAMS, test_dir=tmp_path)
