"""Two link ends back to back through the channel model (export ``link_pair``): MAC + LLR in
both directions under random traffic, random idles, random back-pressure, bit errors, bursts and
link outages.

Every run checks, from the frames themselves (sim/link_tb.py): nothing lost outside FLUSH, no
duplicate, order kept, no altered octet; and the counters against what happened.
"""

import math
import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from ethlink.rtl.link.llr_tx import TxState
from ethlink.sim.link_tb import Direction, counter, run_traffic, setup_pair, state_report
from ethlink.sim.runner import run_cocotb

EXPORT = "link_pair"
DELAY = 8
#: Consecutive replays without progress before FLUSH. At a raw BER of 1e-3 without FEC a
#: 128-octet frame fails 3 times in 4, so 8 (the default) would FLUSH now and then; 64 makes
#: that 1e-8 per frame (docs/link.md, sizing).
REPLAY_MAX = 64
#: Longest body at each BER: beyond ~128 octets a frame rarely survives a 1e-3 line unprotected.
MAX_OCTETS = {1e-3: 128}
OUTAGE_TIMEOUT = 200


def directions(dut, rng, idle=0.1, backpressure=0.2):
    return [Direction(dut, "a", "b", rng, idle, backpressure),
            Direction(dut, "b", "a", rng, idle, backpressure)]


def assert_lossless(direction_list):
    for name, d in zip(("A->B", "B->A"), direction_list):
        v = d.score.verdict()
        assert v["lost"] == v["duplicated"] == v["reordered"] == v["corrupted"] == 0, \
            f"{name}: {v}"


def assert_counters(dut, direction_list):
    """Frames accepted by each receiver = frames delivered; every accepted frame left its
    sender at least once; nothing flushed."""
    for sender, receiver, d in (("a", "b", direction_list[0]), ("b", "a", direction_list[1])):
        delivered = d.delivered()
        assert counter(dut, f"{receiver}_count_frames_received") == delivered
        assert counter(dut, f"{sender}_count_frames_sent") == delivered
        assert counter(dut, f"{sender}_count_flushes") == 0
        assert counter(dut, f"{receiver}_count_overflows") >= 0


async def traffic(dut, seed, ber, frames, max_octets=300, idle=0.1, backpressure=0.2,
                  timeout=400_000):
    rng = random.Random(seed)
    await setup_pair(dut, seed=seed, ber=ber)
    dirs = directions(dut, rng, idle, backpressure)
    cycles = await run_traffic(dut, dirs, rng, frames, max_octets, timeout)
    assert cycles is not None, \
        f"not delivered in {timeout} cycles: {[d.delivered() for d in dirs]} of {frames}; " \
        f"{state_report(dut)}"
    await ClockCycles(dut.clk, 200)
    assert_lossless(dirs)
    assert_counters(dut, dirs)
    return dirs, cycles


@cocotb.test()
async def clean_line(dut):
    """No errors: every frame crosses once, no replay, no NACK, the round trip is measured."""
    await traffic(dut, 11, 0.0, 400)
    for end in "ab":
        assert counter(dut, f"{end}_count_replays") == 0
        assert counter(dut, f"{end}_count_nacks_sent") == 0
        assert counter(dut, f"{end}_count_frames_replayed") == 0
        assert int(getattr(dut, f"{end}_rtt_valid").value) == 1
        rtt = counter(dut, f"{end}_rtt")
        assert 2 * DELAY <= rtt < 2 * DELAY + 700, rtt


@cocotb.test()
@cocotb.parametrize(ber=[1e-3, 1e-6, 1e-5, 1e-4])
async def bit_errors(dut, ber):
    """Random bit errors from 1e-6 to 1e-3 on both lines: errors are repaired by replay,
    nothing is lost, and the damage is counted (FCS errors, LCW crc8 errors, NACKs, replays)."""
    frames = 300
    dirs, cycles = await traffic(dut, round(-10 * math.log10(ber)), ber, frames,
                                 max_octets=MAX_OCTETS.get(ber, 300))
    replays = sum(counter(dut, f"{e}_count_replays") for e in "ab")
    fcs = sum(counter(dut, f"{e}_count_mac_rx_fcs_errors") for e in "ab")
    dut._log.info("BER %g: %d frames each way in %d cycles, %d replays, %d FCS errors, "
                  "%d LCW crc errors", ber, frames, cycles, replays, fcs,
                  sum(counter(dut, f"{e}_count_mac_rx_lcw_crc_errors") for e in "ab"))
    if ber >= 1e-4:
        assert replays > 0 and fcs > 0
        assert sum(counter(dut, f"{e}_count_nacks_sent") for e in "ab") > 0


@cocotb.test()
async def error_bursts(dut):
    """Bursts of 1 … 200 flipped bits every few hundred cycles on both lines."""
    rng = random.Random(31)
    await setup_pair(dut, seed=31)
    dirs = directions(dut, rng)

    async def bursts():
        while True:
            await ClockCycles(dut.clk, rng.randint(100, 600))
            for line in ("ab", "ba"):
                getattr(dut, f"{line}_burst_length").value = rng.randint(1, 200)
                getattr(dut, f"{line}_burst").value = 1
            await RisingEdge(dut.clk)
            for line in ("ab", "ba"):
                getattr(dut, f"{line}_burst").value = 0
    task = cocotb.start_soon(bursts())
    cycles = await run_traffic(dut, dirs, rng, 400, 300, 400_000)
    task.cancel()
    assert cycles is not None
    await ClockCycles(dut.clk, 200)
    assert_lossless(dirs)
    assert_counters(dut, dirs)
    assert counter(dut, "ab_count_flipped_bits") > 0


@cocotb.test()
async def short_outage(dut):
    """Both lines down for a few hundred cycles mid-traffic (shorter than the replay budget):
    the frames caught in the outage are replayed, none is lost, no FLUSH."""
    rng = random.Random(41)
    await setup_pair(dut, seed=41)
    dirs = directions(dut, rng, idle=0.0, backpressure=0.0)

    async def outage():
        await ClockCycles(dut.clk, 3000)
        for line in ("ab", "ba"):
            getattr(dut, f"{line}_link_up").value = 0
        await ClockCycles(dut.clk, 300)
        for line in ("ab", "ba"):
            getattr(dut, f"{line}_link_up").value = 1
    cocotb.start_soon(outage())
    cycles = await run_traffic(dut, dirs, rng, 600, 300, 400_000)
    assert cycles is not None
    await ClockCycles(dut.clk, 200)
    assert_lossless(dirs)
    assert_counters(dut, dirs)
    assert counter(dut, "ab_count_lost") > 0
    assert sum(counter(dut, f"{e}_count_timeouts") for e in "ab") > 0


@cocotb.test()
async def long_outage_flushes(dut):
    """A line down far longer than the replay budget: the sender FLUSHes, counts each frame
    it drops, reports the failure and re-initialises by itself; traffic then flows again.
    Every frame that never arrived was flushed; none is duplicated or reordered."""
    rng = random.Random(51)
    await setup_pair(dut, seed=51, replay_timeout=OUTAGE_TIMEOUT)
    dirs = directions(dut, rng, idle=0.0, backpressure=0.0)
    failed_seen = []

    async def watch():
        while True:
            await RisingEdge(dut.clk)
            if int(dut.a_failed.value):
                failed_seen.append(1)
                return
    cocotb.start_soon(watch())

    async def outage():
        await ClockCycles(dut.clk, 2000)
        dut.ab_link_up.value = 0
        await ClockCycles(dut.clk, OUTAGE_TIMEOUT * (REPLAY_MAX + 20))
        dut.ab_link_up.value = 1
    cocotb.start_soon(outage())
    cocotb.start_soon(dirs[0].send(rng, 500, 300))
    for _ in range(300_000):
        await RisingEdge(dut.clk)
        if dirs[0].source.idle() and int(dut.a_tx_state.value) == TxState.ADVANCE.value \
                and counter(dut, "a_count_flushes") and dirs[0].delivered() \
                and counter(dut, "b_count_frames_received") + counter(dut, "a_count_flushed_frames") >= 500:
            break
    await ClockCycles(dut.clk, 2000)
    v = dirs[0].score.verdict()
    flushed = counter(dut, "a_count_flushed_frames")
    assert failed_seen, "the link failure was never reported"
    assert counter(dut, "a_count_flushes") >= 1
    assert v["duplicated"] == v["reordered"] == v["corrupted"] == 0, v
    assert 0 < v["lost"] <= flushed, (v, flushed)
    # Frames the receiver took whose ACK the outage swallowed were flushed too.
    assert v["frames_delivered"] + flushed >= 500
    assert int(dut.a_tx_state.value) == TxState.ADVANCE.value
    assert int(dut.a_failed.value) == 0
    assert v["frames_delivered"] == counter(dut, "b_count_frames_received")
    dut._log.info("outage: %d frames flushed, %d lost, %d delivered", flushed, v["lost"],
                  v["frames_delivered"])


def test_llr_link(tmp_path):
    run_cocotb(EXPORT, "test_llr_link", {"delay": DELAY, "replay_max": REPLAY_MAX},
               test_dir=tmp_path)
