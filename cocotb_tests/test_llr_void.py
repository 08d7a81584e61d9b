"""Void frames (spec v1.1 §7) across two link ends (export ``link_pair``): random traffic both
ways in which the senders void random frames (``tuser`` = 1 with the last beat), with random
idles, random back-pressure and bit errors.

Every run checks, from the frames themselves (sim/link_tb.py): every frame not voided is
delivered exactly once and in order, unaltered; no voided frame is ever delivered. And the
counters: each sender counts every frame voided (``count_voided_frames``); a voided frame goes
on the wire (``count_mac_tx_void_frames``) only if it had started when it was voided; each
receiver's LLR drops every void frame its MAC recognised (``count_void_frames`` =
``count_mac_rx_void_frames``), and no more than went out: those the line corrupted arrive as
bad frames. On a clean line the two are equal and void frames cause no NACK and no replay.
"""

import random

import cocotb
from cocotb.triggers import ClockCycles

from ethlink.sim.link_tb import LinkPairTB
from ethlink.sim.runner import run_cocotb

EXPORT = "link_pair"
DELAY = 8
#: As test_llr_link: no FLUSH at a raw BER of 1e-3 (docs/link.md, sizing).
REPLAY_MAX = 64
VOID_FRACTION = 0.25


async def void_traffic(dut, seed, ber, frames, max_octets, idle=0.1, backpressure=0.2,
                       timeout=400_000):
    rng = random.Random(seed)
    tb = LinkPairTB(dut, seed=seed, ber=ber)
    await tb.reset()
    dirs = tb.directions(rng, idle, backpressure)
    tasks = [cocotb.start_soon(d.send(rng, frames, max_octets, void=VOID_FRACTION))
             for d in dirs]
    cycles = await tb.wait_until(
        lambda: all(t.done() for t in tasks)
        and all(len(d.score.received) >= len(d.score.sent) for d in dirs), timeout)
    assert cycles is not None, \
        f"not delivered in {timeout} cycles: {[d.delivered() for d in dirs]}; " \
        f"{tb.state_report()}"
    await ClockCycles(dut.clk, 300)
    for name, sender, receiver, d in (("A->B", tb.a, tb.b, dirs[0]),
                                      ("B->A", tb.b, tb.a, dirs[1])):
        v = d.score.verdict()
        assert v["lost"] == v["duplicated"] == v["reordered"] == v["corrupted"] == 0, \
            f"{name}: {v}"
        assert v["void_delivered"] == 0, f"{name}: {v}"
        voided = v["voided"]
        assert voided > frames // 8, f"{name}: only {voided} frames voided"
        on_wire = sender.value("count_mac_tx_void_frames")
        dropped = receiver.value("count_void_frames")
        assert sender.value("count_voided_frames") == voided, name
        assert on_wire <= voided, name
        assert dropped == receiver.value("count_mac_rx_void_frames"), name
        assert dropped <= on_wire, (name, dropped, on_wire)
        assert receiver.value("count_frames_received") == d.delivered(), name
        assert sender.value("count_flushes") == 0, name
        dut._log.info("%s: %d frames, %d voided, %d void frames on the wire, %d dropped as "
                      "void, %d cycles", name, frames, voided, on_wire, dropped, cycles)
    return tb, dirs


@cocotb.test()
async def clean_line(dut):
    """No bit errors, sources without pauses inside a frame (the producer contract of LlrTx;
    a pause starves the MAC, which is then repaired like a bit error): every void frame that
    went out is dropped as void, with no NACK and no replay; frames sent new = frames
    delivered + void frames on the wire."""
    tb, dirs = await void_traffic(dut, 21, 0.0, 300, 300, idle=0.0)
    # A frame voided before the MAC started it never goes out: how many do depends on how far
    # the writer runs ahead of the line, so the count is asserted over both directions.
    total = tb.total("count_mac_tx_void_frames")
    assert total > 10, f"only {total} void frames went out"
    for sender, receiver, d in ((tb.a, tb.b, dirs[0]), (tb.b, tb.a, dirs[1])):
        on_wire = sender.value("count_mac_tx_void_frames")
        assert receiver.value("count_void_frames") == on_wire
        assert receiver.value("count_nacks_sent") == 0
        assert sender.value("count_replays") == 0
        assert sender.value("count_frames_sent") == d.delivered() + on_wire


@cocotb.test()
async def bit_errors_1e4(dut):
    """Raw BER 1e-4: lossless, no void frame delivered."""
    await void_traffic(dut, 22, 1e-4, 300, 300)


@cocotb.test()
async def bit_errors_1e3(dut):
    """Raw BER 1e-3 (short frames, as test_llr_link): lossless, no void frame delivered; some
    void frames arrive corrupted and are NACKed as bad frames."""
    await void_traffic(dut, 23, 1e-3, 300, 128)


@cocotb.test()
async def heavy_backpressure(dut):
    """Slow receivers (70 % back-pressure) and bursty sources: the receive buffers fill,
    frames are refused and replayed, void frames keep vanishing."""
    await void_traffic(dut, 24, 1e-4, 200, 300, idle=0.3, backpressure=0.7)


def test_llr_void(tmp_path):
    run_cocotb(EXPORT, "test_llr_void", {"delay": DELAY, "replay_max": REPLAY_MAX},
               test_dir=tmp_path)
