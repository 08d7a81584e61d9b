"""Traffic and scoreboard for a pair of link ends (export ``link_pair``), shared by the link
tests and ``ethlink bench link``.

Every frame body carries its index in its first four octets, so the receiving side can tell a
lost, duplicated or reordered frame from a good one without any help from the design. A
direction's :class:`Scoreboard` records what was offered and what arrived; :func:`verdict`
turns that into the figures the issue asks for (``lost``, ``duplicated``, ``reordered``).
"""

import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from ethlink.sim.models.channel import threshold_for_ber
from ethlink.sim.tb import axis_sink, axis_source, start

__all__ = ["LINE_BITS", "tagged_body", "Scoreboard", "Direction", "setup_pair", "set_ber",
           "counter", "run_traffic"]

#: Bits of one XGMII word on the line (64 data + 8 control flags), the channel's width.
LINE_BITS = 72
_TAG_OCTETS = 4


def tagged_body(rng, index, max_octets):
    """A frame body of 4 … ``max_octets`` octets whose first four octets are ``index``."""
    length = rng.choice([rng.randint(_TAG_OCTETS, 64), rng.randint(_TAG_OCTETS, max_octets)])
    return index.to_bytes(_TAG_OCTETS, "big") + rng.randbytes(length - _TAG_OCTETS)


class Scoreboard:
    """What one direction was given and what it delivered."""
    def __init__(self):
        self.sent = {}           # index -> body
        self.received = []       # indices in arrival order
        self.corrupted = 0       # bodies that arrived with a known index but other octets

    def arrived(self, body):
        index = int.from_bytes(body[:_TAG_OCTETS], "big")
        if self.sent.get(index) != body:
            self.corrupted += 1
        self.received.append(index)

    def verdict(self):
        seen = set()
        duplicated = reordered = 0
        newest = -1
        for index in self.received:
            if index in seen:
                duplicated += 1
                continue
            seen.add(index)
            if index < newest:
                reordered += 1
            newest = max(newest, index)
        lost = sorted(set(self.sent) - seen)
        return {"frames_sent": len(self.sent), "frames_delivered": len(seen),
                "lost": len(lost), "lost_indices": lost, "duplicated": duplicated,
                "reordered": reordered, "corrupted": self.corrupted}


class Direction:
    """One direction of the pair: the source at ``sender``'s input, the sink at
    ``receiver``'s output, and its scoreboard."""
    def __init__(self, dut, sender, receiver, rng, idle=0.0, backpressure=0.0):
        self.dut = dut
        self.source = axis_source(dut, f"s_axis_{sender}", rng, idle)
        self.sink = axis_sink(dut, f"m_axis_{receiver}", rng, backpressure)
        self.score = Scoreboard()
        self.octets = 0
        cocotb.start_soon(self._collect())

    async def _collect(self):
        while True:
            frame = await self.sink.recv()
            self.score.arrived(bytes(frame.tdata))

    async def send(self, rng, count, max_octets, first_index=0):
        for index in range(first_index, first_index + count):
            body = tagged_body(rng, index, max_octets)
            self.score.sent[index] = body
            self.octets += len(body)
            await self.source.send(body)

    def delivered(self):
        return len(set(self.score.received))


def set_ber(dut, line, ber, injectors=4):
    """Set line ``line`` ("ab" or "ba") to raw bit error rate ``ber`` (per line bit)."""
    getattr(dut, f"{line}_error_threshold").value = threshold_for_ber(ber, LINE_BITS, injectors)


async def setup_pair(dut, seed=1, ber=0.0, replay_timeout=0):
    """Clock, reset and the controls of both ends and both lines; returns the cycle counter."""
    for end in "ab":
        getattr(dut, f"{end}_enable").value = 1
        getattr(dut, f"{end}_replay_timeout").value = replay_timeout
    for n, line in enumerate(("ab", "ba")):
        set_ber(dut, line, ber)
        getattr(dut, f"{line}_burst_length").value = 0
        getattr(dut, f"{line}_burst").value = 0
        getattr(dut, f"{line}_link_up").value = 1
        getattr(dut, f"{line}_seed").value = seed * 2 + n + 1
        getattr(dut, f"{line}_reseed").value = 0
    if hasattr(dut, "fec_bypass"):
        dut.fec_bypass.value = 0
    return await start(dut)


def counter(dut, name):
    return int(getattr(dut, name).value)


async def run_traffic(dut, directions, rng, frames, max_octets, timeout_cycles):
    """Send ``frames`` frames in each direction and wait until each has delivered all of them
    (or ``timeout_cycles`` pass); returns the cycles it took."""
    begin = 0
    for direction in directions:
        cocotb.start_soon(direction.send(rng, frames, max_octets))
    for cycle in range(timeout_cycles):
        await RisingEdge(dut.clk)
        if all(d.delivered() >= frames for d in directions):
            return cycle + 1 - begin
    return None
