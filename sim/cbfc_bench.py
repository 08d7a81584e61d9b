"""cocotb bench of credit-based flow control, driven by ``ethlink bench cbfc``.

``throughput`` (on ``cbfc_pair`` built with :data:`~ethlink.sim.cbfc_tb.CBFC_PAIR_PARAMS`), one
cocotb test per ``(delay, credits)`` point of ``ETHLINK_SCENARIO["points"]``: each needs its own
reset, as the line delay and the credits advertised are set in reset. VC 0 from A to B is
saturated with ``body_octets`` bodies (the sender's queue never runs dry, B's consumer never
pauses); after ``skip_frames`` deliveries and one more credit loop of settling, a window of
``window_cycles`` measures:

* ``goodput``: body octets delivered per cycle / 8 (an XGMII word per cycle is the line
  rate), from the arrivals in the window (:func:`steady_goodput`);
* ``stall_cycles``: cycles VC 0 had a frame waiting and no credits for it (A);
* ``updates_sent`` (B) and ``syncs_sent`` (A): the credit LCWs of the A → B direction;
* ``lost``, ``duplicated``, ``reordered``, ``corrupted`` of every frame up to the last one
  delivered (those after it are still on their way when the run ends), ``overruns`` (frames
  a receive buffer had no room for, both ends, every VC) and ``dropped`` (at A's queue);
* ``rtt_cycles``: the link's round trip measured by PING (``a_rtt``).

``isolation`` (unless ``ETHLINK_SCENARIO["isolation"]`` is false), on the line of the build
(8 cycles, every credit): a 64-octet VC 1 frame's latency from A to B on the idle link and
while VC 0 saturates it with ``body_octets`` frames (:func:`~ethlink.sim.cbfc_tb.
measure_vc_isolation`); ``lost`` etc. of both flows once VC 0 has delivered all its frames.

Every point's figures go to ``ETHLINK_RESULT`` (JSON, keyed ``"delay/credits"``, and
``"isolation"``), rewritten after each test.
"""

import json
import os
import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from ethlink.sim.cbfc_tb import (CBFC_PAIR_PARAMS, CbfcPairTB, VcFlow, measure_vc_isolation,
                                 vc_body)
from ethlink.sim.tb import CLOCK_NS

_SCENARIO = json.loads(os.environ.get("ETHLINK_SCENARIO") or "{}")
#: ``(delay, credits)`` of each test; read at import, as cocotb makes the tests then.
POINTS = [tuple(p) for p in _SCENARIO.get("points", [(8, 128)])]
VCS = CBFC_PAIR_PARAMS["vcs"]
#: Frames kept waiting in the source model: enough that VC 0's queue never runs dry.
_AHEAD = 4

_results = {}


def _write():
    with open(os.environ["ETHLINK_RESULT"], "w") as f:
        json.dump(_results, f)


def _drain_outputs(dut):
    """Every output drained (only VC 0 A → B has a sink). Stray inputs left valid by the
    previous point's source are cleared by :class:`~ethlink.sim.cbfc_tb.CbfcPairTB`."""
    for vc in range(VCS):
        for end in "ab":
            getattr(dut, f"m_axis_vc{vc}_{end}_tready").value = 1


async def _feed(flow, rng, body_octets, state):
    """Keep a few frames queued on VC 0 until ``state["stop"]`` (the last one recorded may
    never be sent: the verdict only covers frames up to the last delivered)."""
    flow.source.queue_occupancy_limit_frames = _AHEAD
    index = 0
    while not state["stop"]:
        body = vc_body(rng, flow.vc, index, body_octets, fixed=True)
        flow.score.sent[index] = body
        await flow.source.send(body)
        index += 1


def steady_goodput(cycles, body_octets):
    """Body octets per cycle / 8 from the arrival cycles of consecutive frames. When the
    credits come back in bursts (frames arrive in groups), only whole bursts count: from
    the first frame after a pause to the last such frame, so the window's phase does not bias
    the figure."""
    if len(cycles) < 2:
        return 0.0
    gaps = [b - a for a, b in zip(cycles, cycles[1:])]
    shortest = min(gaps)
    starts = [n for n in range(1, len(cycles)) if gaps[n - 1] > 1.5 * shortest]
    first, last = (starts[0], starts[-1]) if len(starts) >= 2 else (0, len(cycles) - 1)
    return (last - first) * body_octets / (8 * (cycles[last] - cycles[first]))


def _snapshot(tb):
    return {"cycle": tb.counter.now,
            "stall_cycles": tb.a.element("count_stall_cycles", 0),
            "updates_sent": tb.b.value("count_updates_sent"),
            "syncs_sent": tb.a.value("count_syncs_sent")}


@cocotb.test()
@cocotb.parametrize((("delay", "credits"), POINTS))
async def throughput(dut, delay, credits):
    seed = _SCENARIO.get("seed", 1)
    body_octets = _SCENARIO.get("body_octets", 256)
    rng = random.Random(seed * 1000 + delay * 200 + credits)
    _drain_outputs(dut)
    tb = CbfcPairTB(dut, VCS, seed=seed, delay=delay, credits=credits)
    await tb.reset()
    clock = tb.counter
    flow = VcFlow(dut, "a", "b", 0, rng)
    state = {"stop": False}
    cocotb.start_soon(_feed(flow, rng, body_octets, state))

    # Ramp-up: the INIT handshake, the first CREDIT_UPDATE, the first frames; then a round trip
    # and more so that the credit loop runs as it will for the rest of the run.
    limit = clock.now + _SCENARIO.get("ramp_limit_cycles", 200_000)
    while len(flow.score.received) < _SCENARIO.get("skip_frames", 8):
        assert clock.now < limit, f"delay {delay}, credits {credits}: no traffic"
        await RisingEdge(dut.clk)
    await ClockCycles(dut.clk, 2 * delay + _SCENARIO.get("settle_cycles", 300))

    window = _SCENARIO.get("window_cycles", 8000)
    before = _snapshot(tb)
    first = len(flow.arrivals)
    await ClockCycles(dut.clk, window)
    after = _snapshot(tb)
    arrivals = [t / CLOCK_NS for t in flow.arrivals[first:]]
    state["stop"] = True

    score = flow.score
    newest = max(score.received)
    verdict = score.verdict(range(newest + 1))
    point = {
        "delay": delay, "credits": credits, "body_octets": body_octets,
        "window_cycles": after["cycle"] - before["cycle"],
        "frames_in_window": len(arrivals),
        "goodput": steady_goodput(arrivals, body_octets),
        **{key: after[key] - before[key] for key in ("stall_cycles", "updates_sent",
                                                     "syncs_sent")},
        "frames_sent": len(score.sent), "frames_delivered": verdict["frames_delivered"],
        "lost": verdict["lost"], "duplicated": verdict["duplicated"],
        "reordered": verdict["reordered"], "corrupted": score.corrupted,
        "overruns": sum(sum(end.elements("count_overruns", VCS)) for end in tb.ends()),
        "dropped": tb.a.element("count_frames_dropped", 0),
        "occupancy_high": tb.b.element("count_occupancy_high", 0),
        "rtt_cycles": tb.a.value("rtt") if tb.a.value("rtt_valid") else None,
    }
    _results[f"{delay}/{credits}"] = point
    _write()


@cocotb.test(skip=not _SCENARIO.get("isolation", True))
async def isolation(dut):
    body_octets = _SCENARIO.get("body_octets", 256)
    bulk_frames = _SCENARIO.get("isolation_bulk_frames", 600)
    rng = random.Random(_SCENARIO.get("seed", 1))
    _drain_outputs(dut)
    tb = CbfcPairTB(dut, VCS, seed=_SCENARIO.get("seed", 1))
    await tb.reset()
    run = await measure_vc_isolation(tb, rng, body_octets, bulk_frames=bulk_frames,
                                     probes=_SCENARIO.get("isolation_probes", 20))
    saturated = len(run["bulk"].score.received) < bulk_frames
    await tb.wait_until(lambda: len(run["bulk"].score.received) >= bulk_frames, 200_000)
    verdicts = [flow.score.verdict() for flow in run["flows"][:2]]
    _results["isolation"] = {
        "probe_octets": 64, "bulk_octets": body_octets, "idle_cycles": run["idle"],
        "loaded_cycles": run["loaded"], "line_saturated": saturated,
        **{key: sum(v[key] for v in verdicts) for key in ("lost", "duplicated", "reordered",
                                                           "corrupted")},
        "overruns": sum(sum(end.elements("count_overruns", VCS)) for end in tb.ends()),
    }
    _write()
