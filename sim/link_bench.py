"""cocotb benches of the link layer, driven by ``ethlink bench link``.

* ``mac_tx_timing`` (on ``mac_tx``): a frame offered to an idle MAC → its ``/S/`` word on
  ``txd``, in cycles.
* ``mac_rx_timing`` (on ``mac_rx``): a frame's ``/S/`` word on ``rxd`` → its first body beat
  on ``m_axis``, in cycles.
* ``end_timing`` (on ``link_end``, against the scripted partner of sim/link_tb.py): the same
  two paths through LLR + MAC, and the replay reaction (LLR_NACK word on ``rxd`` → first word
  of the replayed frame on ``txd``), with the line idle and with a long frame on it.
* ``goodput`` (on ``link_pair``): saturated traffic both ways at each raw bit error rate of
  ``ETHLINK_SCENARIO``; goodput = frame-body octets delivered per cycle / 8 (an XGMII word per
  cycle is the line rate), and the loss/duplication/reordering verdict of every frame.

Each writes its measurements to ``ETHLINK_RESULT`` (JSON).
"""

import json
import os
import random

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from ethlink.rtl.wire import LcwType, XgmiiControl
from ethlink.sim.link_tb import LinkEndTB, LinkPairTB
from ethlink.sim.models.mac import frame_words
from ethlink.sim.models.transcode import IDLE_WORD
from ethlink.sim.tb import CLOCK_NS, axis_sink, axis_source, start

#: Body of the timing frames: a 64-octet store as an L/S frame carries it (OEFH + TH + 64).
TIMING_BODY_OCTETS = 6 + 8 + 64


def _write(result):
    with open(os.environ["ETHLINK_RESULT"], "w") as f:
        json.dump(result, f)


def _is_start(data, ctrl):
    return (ctrl & 1) and (data & 0xFF) == XgmiiControl.START


async def _first_cycle(dut, clock, condition, limit=10_000):
    """Cycle number of the first cycle (from now) in which ``condition()`` holds (sampled
    after the edge, once the design has settled)."""
    for _ in range(limit):
        await RisingEdge(dut.clk)
        await ReadOnly()
        if condition():
            return clock.now
    raise AssertionError("condition never met")


@cocotb.test()
async def mac_tx_timing(dut):
    dut.s_axis_lcw_tvalid.value = 0
    dut.abort.value = 0
    clock = await start(dut)
    await ClockCycles(dut.clk, 20)          # past the gap after reset
    source = axis_source(dut, "s_axis")
    await source.send(random.Random(1).randbytes(TIMING_BODY_OCTETS))
    offered = await _first_cycle(dut, clock, lambda: int(dut.s_axis_tvalid.value))
    started = await _first_cycle(dut, clock, lambda: _is_start(int(dut.txd.value),
                                                              int(dut.txc.value)))
    _write({"latency_cycles": started - offered})


@cocotb.test()
async def mac_rx_timing(dut):
    dut.rxd.value, dut.rxc.value = IDLE_WORD.data, IDLE_WORD.ctrl
    dut.m_axis_tready.value = 1
    dut.m_axis_lcw_tready.value = 1
    clock = await start(dut)
    words, _ = frame_words(random.Random(2).randbytes(TIMING_BODY_OCTETS), seq=5)
    await ClockCycles(dut.clk, 4)
    for n, word in enumerate(words + [IDLE_WORD] * 4):
        await RisingEdge(dut.clk)
        dut.rxd.value, dut.rxc.value = word.data, word.ctrl
        if n == 0:
            sent = clock.now + 1             # sampled by the MAC at the next edge
            watcher = cocotb.start_soon(_first_cycle(dut, clock,
                                                     lambda: int(dut.m_axis_tvalid.value)))
    first_beat = await watcher
    _write({"latency_cycles": first_beat - sent})


@cocotb.test()
async def end_timing(dut):
    rng = random.Random(3)
    tb = LinkEndTB(dut, replay_timeout=100_000)
    await tb.reset()
    clock, partner = tb.counter, tb.partner
    sink = axis_sink(dut, "m_axis")
    source = axis_source(dut, "s_axis")
    result = {}

    # TX: a frame offered to an idle link end → its /S/ on txd.
    await ClockCycles(dut.clk, 20)
    await source.send(rng.randbytes(TIMING_BODY_OCTETS))
    offered = await _first_cycle(dut, clock, lambda: int(dut.s_axis_tvalid.value))
    started = await _first_cycle(dut, clock, lambda: _is_start(int(dut.txd.value),
                                                              int(dut.txc.value)))
    result["tx_latency_cycles"] = started - offered

    # RX: the partner's /S/ on rxd → the first body beat on m_axis (after the frame is whole:
    # the LLR receiver stores and forwards).
    partner.send_lcw(LcwType.LLR_INIT, seq=0, nonce=1)
    await ClockCycles(dut.clk, 20)
    await partner.idle()
    partner.send_frame(rng.randbytes(TIMING_BODY_OCTETS), 0)
    first = len(partner.sent_at)
    arrived = await _first_cycle(dut, clock, lambda: int(dut.m_axis_tvalid.value))
    start_word = next(c for c, w in partner.sent_at[first:] if _is_start(w.data, w.ctrl))
    result["rx_latency_cycles"] = arrived - start_word
    result["rx_frame_words"] = len(frame_words(bytes(TIMING_BODY_OCTETS))[0])
    await sink.recv()

    # Replay reaction, line idle: NACK of the frame before the one sent → replay of frame 0.
    for key, long_frame in (("replay_reaction_cycles", False),
                            ("replay_reaction_cut_cycles", True)):
        await ClockCycles(dut.clk, 50)
        if long_frame:
            await source.send(rng.randbytes(1500))
            await _first_cycle(dut, clock, lambda: _is_start(int(dut.txd.value),
                                                            int(dut.txc.value)))
            await ClockCycles(dut.clk, 20)
        partner.send_lcw(LcwType.LLR_NACK, seq=(1 << 20) - 1)
        await partner.idle()
        nack_cycle = partner.sent_at[-1][0]
        replayed = await _first_cycle(dut, clock, lambda: _is_start(int(dut.txd.value),
                                                                   int(dut.txc.value)))
        result[key] = replayed - nack_cycle
    _write(result)


@cocotb.test()
async def goodput(dut):
    scenario = json.loads(os.environ["ETHLINK_SCENARIO"])
    rng = random.Random(scenario["seed"])
    tb = LinkPairTB(dut, seed=scenario["seed"])
    await tb.reset()
    dirs = tb.directions(rng)
    await ClockCycles(dut.clk, 3000)          # INIT done, first round trips measured
    points = {}
    index = 0
    body = scenario["body_octets"]
    for ber in scenario["bers"]:
        tb.set_ber(ber, scenario["line_bits"])
        flipped = tb.line_total("count_flipped_bits")
        replays = tb.total("count_replays")
        cycles = await tb.run_traffic(dirs, rng, scenario["frames"], body,
                                      scenario["timeout_cycles"], first_index=index, fixed=True)
        index += scenario["frames"]
        if cycles is None:
            raise AssertionError(f"BER {ber}: not delivered in {scenario['timeout_cycles']} "
                                 f"cycles: {[d.delivered() for d in dirs]} of {index}; "
                                 f"{[d.score.verdict() for d in dirs]}; "
                                 f"{tb.state_report()}")
        # Steady state: from the first arrival of the batch to its last, per direction (the
        # ramp-up and the last frame's trip are latency, not throughput).
        rates = []
        for d in dirs:
            times = d.arrivals[-scenario["frames"]:]
            rates.append((len(times) - 1) * body / ((times[-1] - times[0]) / CLOCK_NS) / 8)
        flipped = tb.line_total("count_flipped_bits") - flipped
        points[str(ber)] = {
            "ber_set": ber,
            # Bits on each line: one beat per cycle, or 34 per 40 cycles through the FEC.
            "ber_measured": flipped / (2 * cycles * scenario["line_bits"]
                                       * scenario["line_duty"]),
            "cycles": cycles,
            "frames_each_way": scenario["frames"],
            "goodput": round(min(rates), 4),
            "replays": tb.total("count_replays") - replays,
        }
    tb.set_ber(0)
    await ClockCycles(dut.clk, 2000)
    first = 0
    for point in points.values():
        batch = range(first, first + point["frames_each_way"])
        first += point["frames_each_way"]
        parts = [d.score.verdict(batch) for d in dirs]
        point.update({key: sum(v[key] for v in parts)
                      for key in ("lost", "duplicated", "reordered", "corrupted")})
    verdicts = [d.score.verdict() for d in dirs]
    total = {key: sum(v[key] for v in verdicts) for key in (
        "frames_sent", "frames_delivered", "lost", "duplicated", "reordered", "corrupted")}
    _write({"points": points, **total, "rtt_cycles": tb.a.value("rtt"),
            "flushes": tb.total("count_flushes")})


@cocotb.test()
async def void_frames(dut):
    """On ``link_pair``, clean lines: ``frames`` frames each way of up to ``body_octets``
    octets, each voided by its sender with probability ``void`` (spec v1.1 §7), sources
    without pauses inside a frame. Reports the frames voided, the void frames that went on the
    wire (a frame voided before the MAC started it never does), those the receivers dropped as
    void, the NACKs and replays they caused (none are due), and the scoreboard's verdict."""
    scenario = json.loads(os.environ["ETHLINK_SCENARIO"])
    rng = random.Random(scenario["seed"])
    tb = LinkPairTB(dut, seed=scenario["seed"])
    await tb.reset()
    dirs = tb.directions(rng)
    tasks = [cocotb.start_soon(d.send(rng, scenario["frames"], scenario["body_octets"],
                                      void=scenario["void"])) for d in dirs]
    cycles = await tb.wait_until(
        lambda: all(t.done() for t in tasks)
        and all(len(d.score.received) >= len(d.score.sent) for d in dirs),
        scenario["timeout_cycles"])
    if cycles is None:
        raise AssertionError(f"not delivered: {[d.score.verdict() for d in dirs]}")
    await ClockCycles(dut.clk, 300)
    verdicts = [d.score.verdict() for d in dirs]
    _write({
        "frames_each_way": scenario["frames"],
        "voided": sum(v["voided"] for v in verdicts),
        "on_wire": tb.total("count_mac_tx_void_frames"),
        "dropped_as_void": tb.total("count_void_frames"),
        "void_delivered": sum(v["void_delivered"] for v in verdicts),
        "nacks": tb.total("count_nacks_sent"), "replays": tb.total("count_replays"),
        **{key: sum(v[key] for v in verdicts)
           for key in ("lost", "duplicated", "reordered", "corrupted")},
    })
