"""Two NICs' RDMA halves back to back (``nic_rdma_loopback``: RdmaRequester → lossy path →
RdmaTarget → RdmaRequester), cocotbext-axi AXI RAMs as the local and the remote memory,
against the golden RDMA models (:mod:`ethlink.sim.models.rdma`).

Random WRITE and READ messages from 1 octet to several MTUs, at addresses that cross 4 KiB
pages, inside, across and outside the target's windows, some to an endpoint whose frames are
lost (TIMEOUT), some refused by the requester (misaligned: ADDRESS_ERROR; an id beyond the
table: BAD_TAG); random idles on the command stream, back-pressure on the completions, pauses
on every AXI channel of both memories. Every command completes exactly once with the model's
status and both memories are compared octet for octet. Then the cycle latencies.
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from ethlink.rtl.nic import csr
from ethlink.rtl.nic.ls_requester import CompletionStatus
from ethlink.rtl.nic.rdma_requester import RdmaRequester
from ethlink.rtl.nic.rdma_target import RdmaTarget
from ethlink.sim.models.nic import LINE_OCTETS, Window
from ethlink.sim.models.rdma import RdmaCommand, RdmaTargetModel, command_status, run_command
from ethlink.sim.nic_tb import Completion, CsrBus, axi_ram, command_octets
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import TB, TransferLog, ValidLog, axis_sink, axis_source, read_counters

EXPORT = "nic_rdma_loopback"
LOCAL_ID = 0x021
REMOTE = 0x155
LOST = 0x3FF          # request frames to this endpoint are dropped on the way


class RdmaLoopbackTB(TB):
    """``nic_rdma_loopback``: the requester is ``LOCAL_ID`` and its frames to ``LOST`` are
    lost; commands in on ``cmds`` (idle ``idle`` of the time), completions out on ``cpls``
    (refusing ``backpressure`` of them), the local and the remote memory (every AXI channel
    paused ``axi_pause`` of the time) and the golden RDMA target model of the remote one."""
    def __init__(self, dut, rng, axi_pause=0.0, idle=0.0, backpressure=0.0):
        super().__init__(dut)
        params = export_params()
        self.params = params
        dut.local_id.value = LOCAL_ID
        dut.drop_dst.value = LOST
        self.csr = CsrBus(dut)
        self.local, self.local_model = axi_ram(dut, "m_axi_dma", rng, axi_pause)
        self.remote, remote_model = axi_ram(dut, "m_axi", rng, axi_pause)
        self.target = RdmaTargetModel(remote_model, [], params["addr_width"],
                                      params["mtu"], params["beat_octets"], params["contexts"])
        self.cmds = axis_source(dut, "s_axis_cmd", rng, idle)
        self.cpls = axis_sink(dut, "m_axis_cpl", rng, backpressure)

    async def reset(self):
        """Reset, then a read/write window over the first half of the remote memory and a
        read-only one over the next quarter."""
        await super().reset()
        lines = (1 << self.params["addr_width"]) // LINE_OCTETS
        await self.csr.program_windows(self.target, [
            Window(0, lines // 2, csr.PERM_READ | csr.PERM_WRITE),
            Window(lines // 2, lines // 4, csr.PERM_READ)])

    async def completion(self):
        return Completion.from_octets((await self.cpls.recv()).tdata)

    def expect(self, cmd):
        """The completion status of ``cmd``, applied to the models."""
        if cmd.id >= self.params["messages"]:
            return CompletionStatus.BAD_TAG
        if cmd.dst == LOST:
            refused = command_status(cmd, self.params["beat_octets"], self.params["addr_width"])
            return refused or CompletionStatus.TIMEOUT
        return CompletionStatus(run_command(
            cmd, LOCAL_ID, self.local_model, self.target, self.params["mtu"],
            self.params["beat_octets"], self.params["addr_width"]))

    def assert_memories(self):
        size = len(self.local_model)
        assert self.local.read(0, size) == bytes(self.local_model), "local memory differs"
        assert self.remote.read(0, size) == bytes(self.target.memory), "remote memory differs"


def random_command(rng, ident, size, mtu, beat):
    """A random command: a WRITE reads the lower half of local memory, a READ writes the
    upper half (so that a WRITE never reads what a READ still writes)."""
    read = rng.random() < 0.5
    length = rng.choice([rng.randint(1, 64), rng.randint(1, 3 * mtu), mtu, 2 * mtu + beat])
    half = size // 2
    local = rng.randrange(0, half - length, beat) + (half if read else 0)
    remote = rng.randrange(0, size - length, beat)
    if rng.random() < 0.05:
        remote += rng.randrange(1, beat)            # misaligned: refused before sending
    dst = LOST if rng.random() < 0.05 else REMOTE
    return RdmaCommand(read=read, dst=dst, id=ident, remote=remote, local=local, length=length)


@cocotb.test()
async def random_messages(dut):
    rng = random.Random(cocotb.RANDOM_SEED)
    tb = RdmaLoopbackTB(dut, rng, axi_pause=0.2, idle=0.3, backpressure=0.3)
    await tb.reset()
    params = tb.params
    size, mtu, beat = 1 << params["addr_width"], params["mtu"], params["beat_octets"]
    messages = params["messages"]
    free = list(range(messages))
    waiting = {}            # id -> (command, expected status) until its completion
    wrong = []
    completed = []
    count = 120

    async def collect():
        while True:
            ident, status = await tb.completion()
            if ident not in waiting:
                wrong.append(f"completion of message {ident}, which is not outstanding")
                continue
            cmd, want = waiting.pop(ident)
            completed.append(want)
            if status != want:
                wrong.append(f"{cmd}: {status.name}, expected {want.name}")
            if ident < messages:
                free.append(ident)

    cocotb.start_soon(collect())
    for n in range(count):
        if not free:
            await tb.wait_until(lambda: free, None)
        ident = free.pop(rng.randrange(len(free)))
        if n % 40 == 39:
            free.append(ident)
            ident = messages + n        # beyond the table: BAD_TAG, never sent
        cmd = random_command(rng, ident, size, mtu, beat)
        waiting[ident] = (cmd, tb.expect(cmd))
        await tb.cmds.send(command_octets(cmd))

    await tb.wait_until(lambda: not waiting and tb.cmds.idle(),
                        params["timeout_cycles"] * 4 + 100 * count,
                        lambda: f"{len(waiting)} commands never completed: "
                                f"{list(waiting.values())}")
    await ClockCycles(dut.clk, 50)
    dut._log.info(", ".join(f"{name} {value}" for name, value
                            in read_counters(dut, RdmaRequester.COUNTERS).items()))
    assert not wrong, "\n".join(wrong)
    assert tb.cpls.empty() and len(completed) == count
    tb.assert_memories()
    assert int(dut.outstanding.value) == 0
    statuses = completed
    assert int(dut.count_timeouts.value) == statuses.count(CompletionStatus.TIMEOUT) > 0
    assert int(dut.count_bad_ids.value) == statuses.count(CompletionStatus.BAD_TAG) > 0
    assert int(dut.count_unexpected.value) == int(dut.count_mismatched.value) == 0
    assert int(dut.count_axi_errors.value) == 0
    assert {CompletionStatus.OK, CompletionStatus.ACCESS_DENIED,
            CompletionStatus.ADDRESS_ERROR} <= set(statuses)
    counters = tb.target.counters
    for name, value in read_counters(dut, RdmaTarget.COUNTERS, "target_").items():
        assert value == counters[name], name
    dut._log.info(f"{count} commands: " + ", ".join(
        f"{s.name} {statuses.count(s)}" for s in CompletionStatus if statuses.count(s)))


@cocotb.test()
async def latency(dut):
    """READ: command taken → READ_REQ's first beat; READ_REQ's last beat → AR valid."""
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    tb = RdmaLoopbackTB(dut, rng)
    await tb.reset()
    cmd_log = TransferLog(dut, "s_axis_cmd", tb.counter)
    tx = TransferLog(dut, "tap_req", tb.counter)
    ar = ValidLog(dut.m_axi_arvalid, dut.clk, tb.counter)
    aw = ValidLog(dut.m_axi_awvalid, dut.clk, tb.counter)
    beat = tb.params["beat_octets"]
    read = RdmaCommand(read=True, dst=REMOTE, id=0, remote=4 * beat, local=8 * beat,
                       length=2 * beat)
    write = RdmaCommand(read=False, dst=REMOTE, id=1, remote=64 * beat, local=8 * beat,
                        length=beat)
    for cmd in (read, write):
        assert tb.expect(cmd) == CompletionStatus.OK
        await tb.cmds.send(command_octets(cmd))
        ident, status = await tb.completion()
        assert (ident, status) == (cmd.id, CompletionStatus.OK)
    tb.assert_memories()
    read_req = tx.frame_starts[0] - cmd_log.transfers[0][0]
    issue = ar.rises[0] - tx.transfers[2][0] if beat == 8 else None
    assert read_req == RdmaRequester.READ_REQ_LATENCY, f"READ_REQ after {read_req} cycles"
    if issue is not None:
        # The READ_REQ frame (22 header octets) is 3 beats of 8; AR follows its last.
        assert issue == RdmaTarget.READ_ISSUE_LATENCY, f"AR {issue} cycles after the frame"
        write_th = [c for c, _ in tx.transfers if c >= tx.frame_starts[1]][2]
        assert aw.rises[0] - write_th == RdmaTarget.WRITE_ISSUE_LATENCY
    dut._log.info(f"READ_REQ {read_req} cycles after the command; AR {issue} cycles after it")


@pytest.mark.parametrize("params", [
    {"beat_octets": 8, "messages": 16, "mtu": 256, "timeout_cycles": 2000, "addr_width": 16,
     "contexts": 8},
    {"beat_octets": 64, "messages": 4, "mtu": 512, "timeout_cycles": 1000, "addr_width": 16,
     "contexts": 2},
], ids=lambda p: f"w{p['beat_octets']}-mtu{p['mtu']}")
def test_nic_rdma_loopback(params, tmp_path):
    run_cocotb(EXPORT, "test_nic_rdma_loopback", params, test_dir=tmp_path)
