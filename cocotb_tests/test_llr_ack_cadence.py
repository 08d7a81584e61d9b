"""The LLR receiver's ACK cadence, cycle by cycle against the rule it implements.

Ref: spec §7 — the receiver acknowledges cumulatively at least every ``ack_every`` frames or
``ack_timer`` cycles. docs/link.md states when: an ACK is due from the cycle after the frame
that makes ``ack_every`` unacknowledged, or after ``ack_timer`` cycles with one
unacknowledged, in SEND_ACKS, not in the cycle of an LLR_INIT; an ACK sent (or an INIT)
settles every frame accepted before its cycle. The model below is that rule, and this checks
that ``due`` is the rule's in every cycle, under random commits, ACKs, INITs and state
changes (Amaranth's simulator): a change that moves the count (a commit counted through a
register, to take the acceptance off the clock's path) must keep it.
"""

import random

import pytest
from amaranth.sim import Simulator

from ethlink.rtl.link.llr_rx import AckCadence, RxState


class CadenceModel:
    """Frames accepted and not yet acknowledged, and cycles since the oldest of them."""
    def __init__(self, ack_every, ack_timer):
        self.ack_every, self.ack_timer = ack_every, ack_timer
        self.unacked = 0
        self.age = 0

    def cause(self, state, init):
        """Why an ACK is due now: ``"frames"`` (``ack_every`` unacknowledged), ``"timer"``
        (the oldest waited ``ack_timer`` cycles), or None (not due)."""
        if state != RxState.SEND_ACKS or init:
            return None
        if self.unacked >= self.ack_every:
            return "frames"
        if self.unacked > 0 and self.age >= self.ack_timer:
            return "timer"
        return None

    def step(self, committed, ack_sent, init):
        """The end of a cycle: an ACK or INIT settles the frames before this cycle's."""
        if ack_sent or init:
            self.unacked, self.age = int(committed), 0
        else:
            self.age += self.unacked > 0
            self.unacked += committed


@pytest.mark.parametrize("ack_every,ack_timer,seed", [(1, 4, 1), (4, 16, 2), (8, 128, 3),
                                                      (3, 1, 4)])
def test_ack_due_follows_the_rule(ack_every, ack_timer, seed):
    dut = AckCadence(ack_every, ack_timer)
    model = CadenceModel(ack_every, ack_timer)
    rng = random.Random(seed)
    cycles = 12000
    seen = {"frames": 0, "timer": 0, "mismatch": []}

    async def bench(ctx):
        state = RxState.SEND_ACKS
        for cycle in range(cycles):
            # Bursts of commits and quiet spells longer than the timer, so that both limits
            # are reached.
            committed = rng.random() < (0.7 if (cycle // 600) % 2 else 0.01)
            init = rng.random() < 0.005
            if rng.random() < 0.01:
                state = rng.choice([RxState.SEND_ACKS, RxState.NACK_SENT])
            ctx.set(dut.events.committed, committed)
            ctx.set(dut.events.init, init)
            ctx.set(dut.events.state, state)
            due = ctx.get(dut.due)
            # An ACK leaves when one is due (most of the time: the MAC may hold it back), or
            # on its own (a duplicate asked for one).
            ack_sent = (due and rng.random() < 0.8) or rng.random() < 0.002
            ctx.set(dut.ack_sent, ack_sent)
            cause = model.cause(state, init)
            if bool(due) != (cause is not None):
                seen["mismatch"].append((cycle, bool(due), cause, model.unacked, model.age))
            if cause:
                seen[cause] += 1
            model.step(committed, ack_sent, init)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert not seen["mismatch"], seen["mismatch"][:5]
    # Both limits were reached (with ``ack_every`` = 1 the frame limit always comes first).
    assert seen["frames"] > 20
    assert seen["timer"] > 5 or ack_every == 1
