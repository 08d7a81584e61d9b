"""FrameFifo on its own, in Amaranth's simulator: random frames with random gaps in and random
back-pressure out, through the four shapes the CBFC ends build (a receive buffer that drops
when full and passes frames on as they arrive, a transmit queue that waits, the same with a
spare slot for re-steered frames, a store-and-forward buffer that drops). Every cycle the
queue's ``empty`` must say ``frames == 0``; every frame that finds no slot — ``frames`` at
the queue's limit, or one below it when the spare slot is not asked for — must be dropped
(or wait, without ``drop_when_full``), and no other; every other frame must come out whole and
in order."""

import random

import pytest

from ethlink.rtl.cbfc.frame_fifo import FrameFifo
from ethlink.sim.cbfc_blocks import Clock, run, send

SLOTS = 4
WORDS = 512            # far more than SLOTS frames of the lengths below: only slots run out


def _no_slot(frames, spare_slot, use_spare):
    """The slot check as the FrameFifo docstring states it: a frame finds no slot when the
    queue holds ``SLOTS`` frames, or ``SLOTS - 1`` with a spare slot it does not ask for."""
    if spare_slot and not use_spare:
        return frames >= SLOTS - 1
    return frames == SLOTS


def _cost(body, credit_size):
    """Spec §8: a frame costs ceil((OEFH + TH + payload + FCS) / credit_size) credits; the
    body here is all of it but the 4-octet FCS."""
    return -(-(len(body) + 4) // credit_size)


@pytest.mark.parametrize("drop_when_full, spare_slot, cut_through, credit_size", [
    (True, False, True, 32),       # a CbfcRx buffer that passes frames on
    (True, False, False, 64),      # a CbfcRx buffer that stores and forwards
    (False, False, False, 128),    # a CbfcTx queue
    (False, True, False, 64),      # a CbfcTx queue that takes re-steered frames
], ids=["rx-pass", "rx-store", "tx", "tx-spare"])
def test_random_frames_and_slot_flags(drop_when_full, spare_slot, cut_through, credit_size):
    rng = random.Random(4 * drop_when_full + 2 * spare_slot + cut_through)
    dut = FrameFifo(words=WORDS, frames=SLOTS, credit_size=credit_size,
                    drop_when_full=drop_when_full, spare_slot=spare_slot,
                    cut_through=cut_through)
    clock = Clock({"i": dut.i, "o": dut.o})
    sent, expect_dropped, received = [], [], []
    seen = {"cycles": 0, "first_offers": 0, "no_slot_offers": 0, "stored": 0, "dropped": 0}
    costs = {"stored": [], "dropped": [], "popped": []}

    async def watcher(ctx):
        signals = [dut.frames, dut.empty, dut.i.valid, dut.i.ready, dut.i.payload.first,
                   dut.stored, dut.dropped, dut.stored_cost, dut.dropped_cost, dut.popped,
                   dut.popped_cost]
        if spare_slot:
            signals.append(dut.use_spare)
        async for (_, _, frames, empty, valid, ready, first, stored, dropped, stored_cost,
                   dropped_cost, popped, popped_cost, *use) in ctx.tick().sample(*signals):
            seen["cycles"] += 1
            assert empty == (frames == 0), f"cycle {seen['cycles']}: {frames} frames"
            assert frames <= SLOTS
            seen["stored"] += stored
            seen["dropped"] += dropped
            for name, strobe, cost in (("stored", stored, stored_cost),
                                       ("dropped", dropped, dropped_cost),
                                       ("popped", popped, popped_cost)):
                if strobe:
                    costs[name].append(cost)
            if valid and first:
                no_slot = _no_slot(frames, spare_slot, bool(use and use[0]))
                seen["no_slot_offers"] += no_slot
                if drop_when_full:
                    assert ready
                    seen["first_offers"] += 1
                    expect_dropped.append(no_slot)
                else:
                    assert ready == (not no_slot), f"cycle {seen['cycles']}: {frames} frames"
                    if ready:
                        seen["first_offers"] += 1

    async def consumer(ctx):
        body = b""
        async for _, _, valid, ready, data, keep, last in ctx.tick().sample(
                dut.o.valid, dut.o.ready, dut.o.payload.data, dut.o.payload.keep,
                dut.o.payload.last):
            if valid and ready:
                body += data.to_bytes(8, "little")[:bin(keep).count("1")]
                if last:
                    received.append(body)
                    body = b""
            ctx.set(dut.o.ready, rng.random() < 0.6)

    async def bench(ctx):
        for index in range(160):
            if spare_slot:
                ctx.set(dut.use_spare, rng.random() < 0.3)
            body = bytes([index & 0xFF]) + rng.randbytes(rng.randint(8, 200))
            sent.append(body)
            await send(ctx, clock, dut.i, body,
                       idle=lambda: rng.randint(1, 3) if rng.random() < 0.1 else 0)
            if rng.random() < 0.2:
                await ctx.tick().repeat(rng.randint(1, 30))
        await ctx.tick().repeat(600)

    run(dut, clock, bench, consumer, watchers=[watcher])
    kept = [b for b, drop in zip(sent, expect_dropped) if not drop] if drop_when_full else sent
    assert received == kept
    assert seen["first_offers"] == len(sent)
    assert seen["stored"] == len(kept) and seen["dropped"] == len(sent) - len(kept)
    # Every frame's cost, stored or dropped, and again as it leaves, is the spec's.
    assert costs["stored"] == costs["popped"] == [_cost(b, credit_size) for b in kept]
    lost = [b for b, drop in zip(sent, expect_dropped) if drop]
    assert costs["dropped"] == [_cost(b, credit_size) for b in lost]
    assert len(set(costs["stored"])) > 1      # frames of more than one cost
    # The slot check was exercised: the queue was full at some first beats, not at others.
    assert 0 < seen["no_slot_offers"] < seen["cycles"]
