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
from ethlink.sim.link_tb import LinkPairTB
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


def assert_lossless(direction_list):
    for name, d in zip(("A->B", "B->A"), direction_list):
        v = d.score.verdict()
        assert v["lost"] == v["duplicated"] == v["reordered"] == v["corrupted"] == 0, \
            f"{name}: {v}"


def assert_counters(tb, direction_list):
    """Frames accepted by each receiver = frames delivered; every accepted frame left its
    sender at least once; nothing flushed."""
    for sender, receiver, d in ((tb.a, tb.b, direction_list[0]), (tb.b, tb.a, direction_list[1])):
        delivered = d.delivered()
        assert receiver.value("count_frames_received") == delivered
        assert sender.value("count_frames_sent") == delivered
        assert sender.value("count_flushes") == 0
        assert receiver.value("count_overflows") >= 0


async def start_pair(dut, seed, **options):
    tb = LinkPairTB(dut, seed=seed, **options)
    await tb.reset()
    return tb


async def traffic(dut, seed, ber, frames, max_octets=300, idle=0.1, backpressure=0.2,
                  timeout=400_000):
    rng = random.Random(seed)
    tb = await start_pair(dut, seed, ber=ber)
    dirs = tb.directions(rng, idle, backpressure)
    cycles = await tb.run_traffic(dirs, rng, frames, max_octets, timeout)
    assert cycles is not None, \
        f"not delivered in {timeout} cycles: {[d.delivered() for d in dirs]} of {frames}; " \
        f"{tb.state_report()}"
    await ClockCycles(dut.clk, 200)
    assert_lossless(dirs)
    assert_counters(tb, dirs)
    return tb, dirs, cycles


@cocotb.test()
async def clean_line(dut):
    """No errors: every frame crosses once, no replay, no NACK, the round trip is measured."""
    tb, _, _ = await traffic(dut, 11, 0.0, 400)
    for end in tb.ends():
        assert end.value("count_replays") == 0
        assert end.value("count_nacks_sent") == 0
        assert end.value("count_frames_replayed") == 0
        assert end.value("rtt_valid") == 1
        rtt = end.value("rtt")
        assert 2 * DELAY <= rtt < 2 * DELAY + 700, rtt


@cocotb.test()
@cocotb.parametrize(ber=[1e-3, 1e-6, 1e-5, 1e-4])
async def bit_errors(dut, ber):
    """Random bit errors from 1e-6 to 1e-3 on both lines: errors are repaired by replay,
    nothing is lost, and the damage is counted (FCS errors, LCW crc8 errors, NACKs, replays)."""
    frames = 300
    tb, dirs, cycles = await traffic(dut, round(-10 * math.log10(ber)), ber, frames,
                                     max_octets=MAX_OCTETS.get(ber, 300))
    replays = tb.total("count_replays")
    fcs = tb.total("count_mac_rx_fcs_errors")
    dut._log.info("BER %g: %d frames each way in %d cycles, %d replays, %d FCS errors, "
                  "%d LCW crc errors", ber, frames, cycles, replays, fcs,
                  tb.total("count_mac_rx_lcw_crc_errors"))
    if ber >= 1e-4:
        assert replays > 0 and fcs > 0
        assert tb.total("count_nacks_sent") > 0


@cocotb.test()
@cocotb.parametrize(seed=range(101, 107))
async def bit_errors_1e3_seeds(dut, seed):
    """Raw BER 1e-3 without FEC, several seeds, 150 frames of 8…128 octets each way: nothing
    lost, duplicated or reordered (spec v1.1 §7). The start-word check is what makes this
    hold: a seq hit by the line fails C and its frame is NACKed, instead of being taken for
    the expected one. About 3 % of start words take a hit at this BER, so every run sees it
    (``count_mac_rx_start_check_errors``)."""
    tb, _, cycles = await traffic(dut, seed, 1e-3, 150, max_octets=MAX_OCTETS[1e-3])
    checks = tb.total("count_mac_rx_start_check_errors")
    dut._log.info("seed %d: %d cycles, %d replays, %d start-check errors", seed, cycles,
                  tb.total("count_replays"), checks)
    assert checks > 0


@cocotb.test()
async def error_bursts(dut):
    """Bursts of 1 … 200 flipped bits every few hundred cycles on both lines."""
    rng = random.Random(31)
    tb = await start_pair(dut, 31)
    dirs = tb.directions(rng, idle=0.1, backpressure=0.2)

    async def bursts():
        while True:
            await ClockCycles(dut.clk, rng.randint(100, 600))
            for line in tb.lines():
                line.set(burst_length=rng.randint(1, 200), burst=1)
            await RisingEdge(dut.clk)
            for line in tb.lines():
                line.set(burst=0)
    task = cocotb.start_soon(bursts())
    cycles = await tb.run_traffic(dirs, rng, 400, 300, 400_000)
    task.cancel()
    assert cycles is not None
    await ClockCycles(dut.clk, 200)
    assert_lossless(dirs)
    assert_counters(tb, dirs)
    assert tb.ab.value("count_flipped_bits") > 0


@cocotb.test()
async def short_outage(dut):
    """Both lines down for a few hundred cycles mid-traffic (shorter than the replay budget):
    the frames caught in the outage are replayed, none is lost, no FLUSH."""
    rng = random.Random(41)
    tb = await start_pair(dut, 41)
    dirs = tb.directions(rng)

    async def outage():
        await ClockCycles(dut.clk, 3000)
        for line in tb.lines():
            line.set(link_up=0)
        await ClockCycles(dut.clk, 300)
        for line in tb.lines():
            line.set(link_up=1)
    cocotb.start_soon(outage())
    cycles = await tb.run_traffic(dirs, rng, 600, 300, 400_000)
    assert cycles is not None
    await ClockCycles(dut.clk, 200)
    assert_lossless(dirs)
    assert_counters(tb, dirs)
    assert tb.ab.value("count_lost") > 0
    assert tb.total("count_timeouts") > 0


@cocotb.test()
async def long_outage_flushes(dut):
    """A line down far longer than the replay budget: the sender FLUSHes, counts each frame
    it drops, reports the failure and re-initialises by itself; traffic then flows again.
    Every frame that never arrived was flushed; none is duplicated or reordered."""
    rng = random.Random(51)
    tb = await start_pair(dut, 51, replay_timeout=OUTAGE_TIMEOUT)
    dirs = tb.directions(rng)
    failed_seen = []

    async def watch():
        await tb.wait_until(lambda: tb.a.value("failed"), None)
        failed_seen.append(1)
    cocotb.start_soon(watch())

    async def outage():
        await ClockCycles(dut.clk, 2000)
        tb.ab.set(link_up=0)
        await ClockCycles(dut.clk, OUTAGE_TIMEOUT * (REPLAY_MAX + 20))
        tb.ab.set(link_up=1)
    cocotb.start_soon(outage())
    cocotb.start_soon(dirs[0].send(rng, 500, 300))
    await tb.wait_until(
        lambda: dirs[0].source.idle() and tb.a.value("tx_state") == TxState.ADVANCE.value
        and tb.a.value("count_flushes") and dirs[0].delivered()
        and tb.b.value("count_frames_received") + tb.a.value("count_flushed_frames") >= 500,
        300_000)
    await ClockCycles(dut.clk, 2000)
    v = dirs[0].score.verdict()
    flushed = tb.a.value("count_flushed_frames")
    assert failed_seen, "the link failure was never reported"
    assert tb.a.value("count_flushes") >= 1
    assert v["duplicated"] == v["reordered"] == v["corrupted"] == 0, v
    assert 0 < v["lost"] <= flushed, (v, flushed)
    # Frames the receiver took whose ACK the outage swallowed were flushed too.
    assert v["frames_delivered"] + flushed >= 500
    assert tb.a.value("tx_state") == TxState.ADVANCE.value
    assert tb.a.value("failed") == 0
    assert v["frames_delivered"] == tb.b.value("count_frames_received")
    dut._log.info("outage: %d frames flushed, %d lost, %d delivered", flushed, v["lost"],
                  v["frames_delivered"])


def test_llr_link(tmp_path):
    run_cocotb(EXPORT, "test_llr_link", {"delay": DELAY, "replay_max": REPLAY_MAX},
               test_dir=tmp_path)


#: The scenarios run again with ``tx_register`` (a register queue between each end's replay
#: buffer and its MAC, emptied when the LLR cuts a frame): errors, bursts and an outage, the
#: cases in which the LLR cuts frames on the wire.
TX_REGISTER_TESTS = ["clean_line", "bit_errors", "error_bursts", "short_outage"]


def test_llr_link_tx_register(tmp_path):
    run_cocotb(EXPORT, "test_llr_link", {"delay": DELAY, "replay_max": REPLAY_MAX,
                                         "tx_register": 1},
               testcase=TX_REGISTER_TESTS, test_dir=tmp_path)
