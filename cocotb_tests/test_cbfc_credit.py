"""The CBFC credit counters (CreditSender, CreditReceiver) against the golden model of
sim/models/cbfc.py, cycle by cycle, in Amaranth's simulator: random frames, releases, drains,
idle cycles and LCW back-pressure, with bogus input mixed in (updates behind ``sent`` or
going backwards, random limits, SYNCs beyond the limit or stale, unknown VCs, other LCW
types), counters starting just below the 2^20 wrap. Every output and every counter is
compared in every cycle. The end-to-end behaviour is in test_cbfc_link.py, the proof in
test_cbfc_formal.py."""

import random

import pytest
from amaranth.sim import Simulator

from ethlink.rtl.counters import counter_values
from ethlink.rtl.cbfc.credit import CreditReceiver, CreditSender, max_frame_cost
from ethlink.rtl.wire import CREDIT_PAYLOAD, LcwType
from ethlink.sim.models.cbfc import MOD, CreditReceiverModel, CreditSenderModel

CYCLES = 3000
INIT = MOD - 300
VCS = 3


def _lcw(rng, vcs, near):
    """A random received LCW: mostly plausible credit words near ``near[vc]``, some bogus."""
    kind = rng.random()
    if kind < 0.5:
        return None
    vc = rng.randrange(vcs) if rng.random() < 0.9 else rng.randrange(32)
    lcw_type = rng.choice([LcwType.CREDIT_UPDATE] * 3 + [LcwType.CREDIT_SYNC] * 3
                          + [LcwType.LLR_ACK, LcwType.SEN])
    if kind < 0.9:
        value = (near[min(vc, vcs - 1)] + rng.randint(-20, 60)) % MOD
    else:
        value = rng.randrange(MOD)
    return int(lcw_type), CREDIT_PAYLOAD.to_int(vc=vc, credits=value)


def _check_lcw_and_counters(ctx, dut, offered, counts, cycle):
    """The LCW the block offers equals the model's, and its counters the model's ``counts`` of
    a cycle before (a counter registers its events, :class:`SaturatingCounter`); True if it
    offers an LCW."""
    assert ctx.get(dut.lcw_tx.valid) == (offered is not None), cycle
    if offered is not None:
        assert (ctx.get(dut.lcw_tx.payload.type),
                ctx.get(dut.lcw_tx.payload.payload)) == offered, cycle
    # The model names its counters as the exports do (``count_<name>``).
    for name, value in counts.items():
        assert ctx.get(counter_values(dut.count)[name.removeprefix("count_")]) == value, \
            (cycle, name)
    return offered is not None


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


#: Graded costs (CreditSender's ``costs``): those of the frames the CBFC bypass grades at 32
#: octets a credit.
GRADES = (1, 3, 5, 9)


@pytest.mark.parametrize("seed,graded", [(1, False), (2, False), (3, True)])
def test_sender_matches_model(seed, graded):
    """``graded``: half the costs offered are graded (``cost_grade`` names the value; the
    ungraded cost then random), the others not (``ungraded_cost`` is the cost)."""
    rng = random.Random(seed)
    dut = CreditSender(VCS, sync_period=37, counter_init=INIT, costs=GRADES if graded else ())
    model = CreditSenderModel(VCS, 37, INIT)
    stats = {"granted": 0, "refused": 0, "bogus": 0, "syncs": 0}

    async def bench(ctx):
        counts, stalls = dict(model.counts), list(model.stalls)     # as the counters show them
        for cycle in range(CYCLES):
            costs = [rng.randint(1, max_frame_cost(32)) for _ in range(VCS)]
            waiting = [rng.random() < 0.7 for _ in range(VCS)]
            take = rng.random() < 0.5
            take_vc = rng.randrange(VCS)
            release = rng.random() < 0.4
            release_vc, release_cost = rng.randrange(VCS), rng.randint(1, 20)
            lcw = _lcw(rng, VCS, model.sent)
            ready = rng.random() < 0.6
            for v in range(VCS):
                if graded and rng.random() < 0.5:
                    grade = rng.randrange(len(GRADES))
                    costs[v] = GRADES[grade]
                    ctx.set(dut.cost_grade[v], 1 << grade)
                    ctx.set(dut.ungraded_cost[v], rng.randint(1, max_frame_cost(32)))
                elif graded:
                    ctx.set(dut.cost_grade[v], 0)
                    ctx.set(dut.ungraded_cost[v], costs[v])
                ctx.set(dut.cost[v], costs[v])
            ctx.set(dut.waiting, sum(w << v for v, w in enumerate(waiting)))
            ctx.set(dut.take, take)
            ctx.set(dut.take_vc, take_vc)
            ctx.set(dut.release, release)
            ctx.set(dut.release_vc, release_vc)
            ctx.set(dut.release_cost, release_cost)
            ctx.set(dut.lcw_rx.valid, lcw is not None)
            if lcw is not None:
                ctx.set(dut.lcw_rx.payload.type, lcw[0])
                ctx.set(dut.lcw_rx.payload.payload, lcw[1])
            ctx.set(dut.lcw_tx.ready, ready)

            ok = model.ok(costs)
            assert [ctx.get(dut.ok[v]) for v in range(VCS)] == ok, cycle
            for v in range(VCS):
                assert ctx.get(dut.sent[v]) == model.sent[v], (cycle, v)
                assert ctx.get(dut.limit[v]) == model.limit[v], (cycle, v)
                assert ctx.get(dut.settled[v]) == model.settled[v], (cycle, v)
                assert ctx.get(dut.count.stall_cycles[v]) == stalls[v], (cycle, v)
            if _check_lcw_and_counters(ctx, dut, model.lcw_tx(), counts, cycle):
                stats["syncs"] += ready
            counts, stalls = dict(model.counts), list(model.stalls)
            granted = model.step(costs, waiting, take, take_vc, release, release_vc,
                                 release_cost, lcw, ready)
            assert ctx.get(dut.granted) == granted, cycle
            stats["granted"] += granted
            stats["refused"] += take and not granted
            await ctx.tick()
        stats["bogus"] = model.counts["count_bogus_updates"]

    _run(dut, bench)
    # The run exercised every branch: grants, refusals, bogus updates, SYNCs, the wrap.
    assert min(stats.values()) > 10, stats
    assert any(s < INIT for s in model.sent), "the counters never wrapped"


@pytest.mark.parametrize("seed,threshold", [(1, 5), (2, 0)])
def test_receiver_matches_model(seed, threshold):
    """``threshold`` 0: the automatic threshold, which follows the run-time credits."""
    rng = random.Random(seed)
    capacity = 40
    dut = CreditReceiver(VCS, capacity, update_threshold=threshold, update_period=53,
                         counter_init=INIT)
    model = CreditReceiverModel(VCS, capacity, threshold, 53, INIT)
    stats = {"updates": 0, "leaks": 0, "bogus_syncs": 0, "deferred": 0}

    async def bench(ctx):
        credits = 0
        counts = dict(model.counts)                 # as the counters show them, a cycle late
        for cycle in range(CYCLES):
            if cycle % 500 == 0:
                credits = rng.choice([0, 0, 10, 25, 40])
            occupancy = [model.occupancy(v) for v in range(VCS)]
            arrive = rng.random() < 0.4
            arrive_vc = rng.randrange(VCS)
            arrive_cost = rng.randint(1, 10)
            drain_vc = rng.randrange(VCS)
            drain = rng.random() < 0.5 and occupancy[drain_vc] > 0
            drain_cost = rng.randint(1, max(1, min(occupancy[drain_vc], 30)))
            sync = rng.random() < 0.2
            sync_vc = rng.randrange(VCS) if rng.random() < 0.9 else VCS
            base = model.received[min(sync_vc, VCS - 1)]
            sync_value = (base + rng.randint(-10, 50)) % MOD
            ready = rng.random() < 0.5
            for name, value in (("arrive", arrive), ("arrive_vc", arrive_vc),
                                ("arrive_cost", arrive_cost), ("drain", drain),
                                ("drain_vc", drain_vc), ("drain_cost", drain_cost),
                                ("sync", sync), ("sync_vc", sync_vc),
                                ("sync_value", sync_value), ("credits", credits)):
                ctx.set(getattr(dut, name), value)
            ctx.set(dut.lcw_tx.ready, ready)

            for v in range(VCS):
                assert ctx.get(dut.received[v]) == model.received[v], (cycle, v)
                assert ctx.get(dut.freed[v]) == model.freed[v], (cycle, v)
                assert ctx.get(dut.limit[v]) == model.limit(v, credits), (cycle, v)
                assert ctx.get(dut.occupancy[v]) == model.occupancy(v), (cycle, v)
            assert ctx.get(dut.sync_ready) == model.sync_ready(arrive, arrive_vc, sync_vc)
            stats["deferred"] += sync and not model.sync_ready(arrive, arrive_vc, sync_vc)
            if _check_lcw_and_counters(ctx, dut, model.lcw_tx(credits), counts, cycle):
                stats["updates"] += ready
            counts = dict(model.counts)
            model.step(arrive, arrive_vc, arrive_cost, drain, drain_vc, drain_cost, sync,
                       sync_vc, sync_value, ready, credits)
            await ctx.tick()
        stats["leaks"] = model.counts["count_leaked_credits"]
        stats["bogus_syncs"] = model.counts["count_bogus_syncs"]

    _run(dut, bench)
    assert min(stats.values()) > 5, stats
