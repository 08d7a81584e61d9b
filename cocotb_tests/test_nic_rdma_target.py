"""The NIC's RDMA target alone (``nic_rdma_target``) against the golden target model, fed
frames directly: WRITE messages of many sizes from several sources with their packets
shuffled and interleaved, READ_REQs, requests inside, across and outside the windows, and the
bad inputs of spec §11 — WRITEs whose payload disagrees with their length, empty or
over-MTU WRITEs, READ_REQs with a payload or no length, opcodes that are not requests,
truncated frames, more messages at once than there are contexts, a message that never
finishes. Random idles on the input, back-pressure on the output, pauses on every AXI
channel. Every response frame, the memory and every counter must equal the model's.
"""

import inspect
import random
from dataclasses import replace

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from ethlink.rtl.nic import csr
from ethlink.rtl.nic.rdma_target import RdmaTarget
from ethlink.rtl.wire import LsSize, Opcode
from ethlink.sim.models import Frame
from ethlink.sim.models.nic import LINE_OCTETS, Window
from ethlink.sim.models.rdma import RdmaCommand, RdmaTargetModel, command_frames
from ethlink.sim.nic_tb import CsrBus, gpu_memory
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import (TB, read_counters, StreamChecker, axis_sink, axis_source, payload_frame,
                            wait_idle)

EXPORT = "nic_rdma_target"
LOCAL = 0x155
PEERS = (0x021, 0x022, 0x3FE)


def params():
    """The build's parameters, defaults included."""
    return {**{name: p.default for name, p in inspect.signature(RdmaTarget).parameters.items()},
            **export_params()}


class RdmaTargetTB(TB):
    """``nic_rdma_target``: request frames in on ``source`` (idle ``idle`` of the time),
    responses out on ``sink`` (refusing ``backpressure`` of the beats, checked by
    ``checker``), the memory (``ram``, every AXI channel paused ``axi_pause`` of the time) and
    the golden RDMA target model beside it (``model``), which notes the responses it expects
    (``expected``)."""
    def __init__(self, dut, rng, idle=0.0, backpressure=0.0, axi_pause=0.0):
        super().__init__(dut)
        self.p = params()
        self.rng = rng
        self.csr = CsrBus(dut)
        self.ram, ls_model = gpu_memory(dut, rng, axi_pause)
        self.size = 1 << self.p["addr_width"]
        self.model = RdmaTargetModel(ls_model.memory, [], self.p["addr_width"], self.p["mtu"],
                                     self.p["beat_octets"], self.p["contexts"])
        self.source = axis_source(dut, "s_axis", rng, idle)
        self.sink = axis_sink(dut, "m_axis", rng, backpressure)
        self.checker = StreamChecker(dut, "m_axis")
        self.expected = []

    async def reset(self):
        """Reset, then a read/write window over the first half of memory and a read-only one
        over the next quarter."""
        await super().reset()
        lines = self.size // LINE_OCTETS
        await self.csr.program_windows(self.model, [
            Window(0, lines // 2, csr.PERM_READ | csr.PERM_WRITE),
            Window(lines // 2, lines // 4, csr.PERM_READ)])

    async def send(self, frame, octets=None):
        """Send ``frame`` (or the raw ``octets`` of a damaged one, which the model never
        sees) and note the responses the model gives."""
        if octets is None:
            self.expected += self.model.handle(frame)
            octets = frame.body()
        await self.source.send(payload_frame(octets))

    def write_message(self, msg, src, length, where=None):
        """The WRITE packets of a message of ``length`` octets (random data) to a random
        beat-aligned address: mostly inside the read/write window, some across or outside
        it, some misaligned."""
        rng, beat = self.rng, self.p["beat_octets"]
        where = rng.random() if where is None else where
        addr = rng.randrange(0, self.size - length, beat)
        if where < 0.6:
            addr = rng.randrange(0, self.size // 2 - length, beat)
        elif where < 0.65:
            addr += rng.randrange(1, beat)
        cmd = RdmaCommand(read=False, dst=LOCAL, id=msg, remote=addr, local=0, length=length)
        return command_frames(cmd, src, rng.randbytes(length), self.p["mtu"])

    def read_request(self, msg, src, length, within=None):
        """A READ_REQ of ``length`` octets anywhere in memory, or in its first ``within``."""
        rng, beat = self.rng, self.p["beat_octets"]
        addr = rng.randrange(0, (within or self.size) - length, beat)
        cmd = RdmaCommand(read=True, dst=LOCAL, id=msg, remote=addr, local=0, length=length)
        return command_frames(cmd, src, b"", self.p["mtu"])[0]

    async def check(self, timeout=200000):
        await wait_idle(self.dut, [self.source], [(self.sink, len(self.expected))],
                        timeout_cycles=timeout)
        await ClockCycles(self.dut.clk, 100)
        for n, want in enumerate(self.expected):
            got = bytes((await self.sink.recv()).tdata)
            assert got == want.body(), f"response {n}: {Frame.from_bytes(got, False)}, " \
                                       f"model {want}"
        assert self.sink.empty(), "more responses than the model gives"
        self.expected = []
        memory = self.ram.read(0, self.size)
        differ = [a for a in range(self.size) if memory[a] != self.model.memory[a]]
        assert not differ, f"memory differs at {len(differ)} octets from {differ[0]:#x} to " \
                           f"{differ[-1]:#x}"
        names = [name for name in RdmaTarget.COUNTERS if name != "stale"]
        assert read_counters(self.dut, names) == {name: self.model.counters[name]
                                                  for name in names}
        self.checker.assert_clean()


@cocotb.test()
async def random_traffic(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    tb = RdmaTargetTB(dut, rng, idle=0.3, backpressure=0.3, axi_pause=0.2)
    await tb.reset()
    mtu = tb.p["mtu"]
    # Up to four messages at once (fewer than the contexts), their packets interleaved and
    # each message's packets in random order, with READ_REQs and bad frames between them.
    for round_ in range(12):
        packets = []
        for k in range(rng.randint(1, 4)):
            msg = rng.randrange(4096)
            length = rng.choice([rng.randint(1, 64), rng.randint(1, 3 * mtu), mtu])
            frames = tb.write_message(msg, PEERS[k % len(PEERS)], length)
            rng.shuffle(frames)
            packets.append(frames)
        stream = []
        while any(packets):
            frames = rng.choice([f for f in packets if f])
            stream.append(frames.pop())
            if rng.random() < 0.2:
                stream.append(tb.read_request(rng.randrange(4096), rng.choice(PEERS),
                                              rng.randint(1, 2 * mtu)))
        # Every round reads at least once inside the read/write window (the random ones above
        # may all miss: seed 1796152751 had no accepted read).
        stream.insert(rng.randrange(len(stream) + 1),
                      tb.read_request(rng.randrange(4096), rng.choice(PEERS),
                                      rng.randint(1, 2 * mtu), within=tb.size // 2))
        for frame in stream:
            dut._log.debug(f"{frame.opcode.name} addr {frame.addr:#x} length {frame.length}")
            await tb.send(frame)
        await bad_frames(tb, rng)
    await tb.check()
    c = tb.model.counters
    assert c["acks"] > 0 and c["reads"] > 0 and c["write_packets"] > 0
    assert c["denied"] > 0 and c["address_errors"] > 0 and c["malformed"] > 0
    assert c["unexpected"] > 0 and c["no_context"] == 0
    assert int(dut.count_rx_short.value) > 0


async def bad_frames(tb, rng):
    """One of each kind of bad input (spec §11), a misaligned message and one partly
    outside the windows."""
    mtu, src, beat = tb.p["mtu"], rng.choice(PEERS), tb.p["beat_octets"]
    good = tb.write_message(rng.randrange(4096), src, rng.randint(16, mtu), where=0)[0]
    cut = rng.randint(1, len(good.payload) - 1)
    dut = tb.dut
    for frame in (
            replace(good, payload=good.payload[:-cut]),         # shorter than its length
            replace(good, payload=good.payload + bytes(8)),     # longer
            replace(good, payload=b"", length=0),
            replace(good, payload=bytes(mtu + 8), length=mtu + 8),
            replace(tb.read_request(1, src, 64), payload=bytes(8)),
            replace(tb.read_request(2, src, 64), length=0),
            Frame(opcode=Opcode.LOAD_REQ, dst=LOCAL, src=src, size=LsSize.B64, line=4),
            Frame(opcode=Opcode.ACK, dst=LOCAL, src=src, msg=3, first=True, last=True)):
        dut._log.debug(f"bad {frame.opcode.name} addr {frame.addr:#x} length {frame.length} "
                       f"payload {len(frame.payload)}")
        await tb.send(frame)
    # A misaligned message: refused packet by packet, one ACK with ADDRESS_ERROR.
    for frame in tb.write_message(rng.randrange(4096), src, rng.randint(1, 2 * mtu),
                                  where=0.62):
        await tb.send(frame)
    # A message across the end of the read/write window, its packets in reverse: the first
    # to arrive are refused (the read-only window grants no write), the last ones placed;
    # its ACK carries the first refusal, not the status of the packet that completes it.
    end = tb.size // 2
    cmd = RdmaCommand(read=False, dst=LOCAL, id=rng.randrange(4096), length=3 * mtu,
                      remote=end - mtu - rng.randrange(1, mtu // beat) * beat, local=0)
    for frame in reversed(command_frames(cmd, src, rng.randbytes(3 * mtu), mtu)):
        await tb.send(frame)
    # Cut inside the RDMA TH: the parser drops it (count_rx_short), the model never sees it.
    await tb.send(None, good.body()[:18])


@cocotb.test()
async def contexts_and_stale(dut):
    """``contexts`` messages left open, one more refused (no_context), the open ones then
    completed; finally one message that never finishes is freed after ``timeout_cycles``."""
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    tb = RdmaTargetTB(dut, rng)
    await tb.reset()
    mtu, contexts = tb.p["mtu"], tb.p["contexts"]
    messages = [tb.write_message(msg, PEERS[0], 2 * mtu, where=0)
                for msg in range(contexts + 1)]
    for frames in messages[:contexts]:
        await tb.send(frames[0])
    for frame in messages[contexts]:
        await tb.send(frame)            # no context left: both packets dropped and counted
    for frames in messages[:contexts]:
        await tb.send(frames[1])
    await tb.check()
    assert tb.model.counters["no_context"] == 2 and tb.model.counters["acks"] == contexts

    await tb.send(tb.write_message(100, PEERS[1], 2 * mtu, where=0)[0])
    await ClockCycles(dut.clk, tb.p["timeout_cycles"] + 200)
    assert int(dut.count_stale.value) == 1
    tb.model.live.clear()               # the model keeps no clock: the context is gone
    await tb.check()


@pytest.mark.parametrize("params", [
    {"beat_octets": 8, "mtu": 256, "addr_width": 16, "contexts": 4, "timeout_cycles": 1000},
    {"beat_octets": 32, "mtu": 512, "addr_width": 14, "contexts": 8, "timeout_cycles": 500},
], ids=lambda p: f"w{p['beat_octets']}")
def test_nic_rdma_target(params, tmp_path):
    run_cocotb(EXPORT, "test_nic_rdma_target", params, test_dir=tmp_path)
