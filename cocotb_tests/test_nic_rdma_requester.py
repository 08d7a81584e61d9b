"""The NIC's RDMA requester alone (``nic_rdma_requester``), the test acting as the network and
the remote NIC (the golden RDMA target model): random WRITE and READ commands; READ_RSP
packets delivered in random order (as spraying over ports may deliver them); and bogus
responses (spec §11): an ACK for no outstanding message, an ACK from the wrong endpoint, an
ACK for a READ, a READ_RSP reaching past its message, a READ_RSP replayed after its message
completed (other data), a READ_RSP whose payload is shorter than its length, a READ_RSP with
an undefined status. None of them
may complete a message or write memory outside its message; each is counted, and a message
whose data never fully arrives completes with TIMEOUT. Random idles on the commands,
back-pressure on the completions and the frames, pauses on every AXI channel.
"""

import inspect
import random
from dataclasses import replace

import cocotb
import pytest
from cocotb.triggers import ClockCycles

from ethlink.rtl.nic.ls_requester import CompletionStatus
from ethlink.rtl.nic.rdma_requester import RdmaRequester
from ethlink.rtl.wire import Opcode, Status
from ethlink.sim.models import Frame
from ethlink.sim.models.nic import LINE_OCTETS, Window
from ethlink.sim.models.rdma import RdmaCommand, RdmaTargetModel, command_status
from ethlink.sim.nic_tb import Completion, axi_ram, command_octets
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import TB, axis_sink, axis_source, payload_frame, read_counters
from ethlink.rtl.nic import csr

EXPORT = "nic_rdma_requester"
LOCAL = 0x021
REMOTE = 0x155


def params():
    """The build's parameters, defaults included."""
    return {**{name: p.default
               for name, p in inspect.signature(RdmaRequester).parameters.items()},
            **export_params()}


class RdmaRequesterTB(TB):
    """``nic_rdma_requester`` (endpoint ``LOCAL``) with the test as the network: commands in
    on ``cmds``, completions out on ``cpls``, request frames out on ``frames_out``, response
    frames in on ``frames_in``, each stream paused ``pause`` of the time; the local memory
    (``ram``, and ``local``: the octets it must hold, every AXI channel paused ``axi_pause``
    of the time) and the remote NIC's, behind the golden RDMA target model (``target``: one
    read/write window over its first three quarters)."""
    def __init__(self, dut, rng, pause=0.0, axi_pause=0.0):
        super().__init__(dut)
        p = params()
        size = 1 << p["addr_width"]
        dut.local_id.value = LOCAL
        dut.s_axis_fail_tvalid.value = 0    # nothing is unroutable here (test_nic_unreachable)
        self.ram, self.local = axi_ram(dut, "m_axi", rng, axi_pause)
        lines = size // LINE_OCTETS
        self.target = RdmaTargetModel(
            bytearray(rng.randbytes(size)),
            [Window(0, lines * 3 // 4, csr.PERM_READ | csr.PERM_WRITE)], p["addr_width"],
            p["mtu"], p["beat_octets"])
        self.cmds = axis_source(dut, "s_axis_cmd", rng, pause)
        self.cpls = axis_sink(dut, "m_axis_cpl", rng, pause)
        self.frames_out = axis_sink(dut, "m_axis", rng, pause)
        self.frames_in = axis_source(dut, "s_axis", rng, pause)

    async def completion(self):
        return Completion.from_octets((await self.cpls.recv()).tdata)


@cocotb.test()
async def bogus_responses(dut):
    p = params()
    rng = random.Random(cocotb.RANDOM_SEED)
    beat, mtu, messages = p["beat_octets"], p["mtu"], p["messages"]
    size = 1 << p["addr_width"]
    tb = RdmaRequesterTB(dut, rng, pause=0.3, axi_pause=0.2)
    await tb.reset()
    ram, local, target = tb.ram, tb.local, tb.target
    cmds, frames_out, frames_in = tb.cmds, tb.frames_out, tb.frames_in
    slot = size // 2 // messages          # message id's local buffer: the lower half
    want = {"unexpected": 0, "mismatched": 0}
    plan = {}                               # id -> (command, status the test expects)
    done = []
    shorted = []                            # messages whose READ_RSP was cut short

    async def network():
        """The remote NIC: answer each request frame, spoiling some answers."""
        while True:
            frame = Frame.from_bytes(bytes((await frames_out.recv()).tdata), has_fcs=False)
            cmd, _ = plan[frame.msg]
            answers = target.handle(frame)
            if frame.opcode == Opcode.WRITE and not frame.last:
                continue
            rng.shuffle(answers)
            spoil = rng.choice(["none", "none", "stranger", "wrong_op", "beyond", "short"])
            if not shorted:
                spoil = "short"         # the first READ with data always loses a packet
            if spoil == "stranger" and not cmd.read:
                # No message of this msg is outstanding with that endpoint.
                await send(replace(answers[0], src=REMOTE + 1), "unexpected")
            elif spoil == "stranger":
                # A status the wire does not define.
                await send(replace(answers[0], status=3, payload=b"", length=0),
                           "mismatched")
            elif spoil == "wrong_op" and cmd.read:
                await send(Frame(opcode=Opcode.ACK, dst=LOCAL, src=REMOTE, msg=frame.msg,
                                 first=True, last=True), "mismatched")
            elif spoil == "beyond" and cmd.read:
                await send(replace(answers[0], offset=cmd.length, length=beat,
                                   status=Status.OK, payload=rng.randbytes(beat)),
                           "mismatched")
            elif spoil == "short" and cmd.read and answers[0].status == Status.OK \
                    and answers[0].length > 1:
                # Its payload falls short: the message never completes.
                shorted.append(frame.msg)
                bad = answers.pop(0)
                cut = replace(bad, payload=bad.payload[:rng.randrange(bad.length)])
                await send(cut, "mismatched")
                place(cmd, cut)
                plan[frame.msg] = (cmd, CompletionStatus.TIMEOUT)
            for answer in answers:
                if answer.opcode == Opcode.READ_RSP and answer.status == Status.OK:
                    place(cmd, answer)
                await send(answer)
            if rng.random() < 0.2:
                await send(Frame(opcode=Opcode.ACK, dst=LOCAL, src=REMOTE,
                                 msg=messages + rng.randrange(100), first=True, last=True),
                           "unexpected")

    def place(cmd, answer):
        start = cmd.local + answer.offset
        local[start:start + len(answer.payload)] = answer.payload

    async def send(frame, counter=None):
        if counter:
            want[counter] += 1
        await frames_in.send(payload_frame(frame.body()))

    cocotb.start_soon(network())
    free = list(range(messages))
    count = 60
    for n in range(count):
        if not free:
            await tb.wait_until(lambda: free, None)
        ident = free.pop(rng.randrange(len(free)))
        read = rng.random() < 0.5
        length = rng.choice([rng.randint(1, 64), rng.randint(1, min(slot, 3 * mtu))])
        cmd = RdmaCommand(read=read, dst=REMOTE, id=ident,
                          remote=rng.randrange(0, size - length, beat),
                          local=ident * slot + rng.randrange(0, slot - length + 1, beat),
                          length=length)
        status = command_status(cmd, beat, p["addr_width"])
        if status is None:
            status = target.status(cmd.remote, cmd.length, write=not read)
            status = CompletionStatus(status)
        plan[ident] = (cmd, status)
        await cmds.send(command_octets(cmd))
        # Wait for the completion: message ids are reused, and a stale READ_RSP of the last
        # message of this id is replayed (other data) once it has completed.
        got_id, got = await tb.completion()
        assert got_id == ident, f"completion of {got_id}, {ident} outstanding"
        assert got == plan[ident][1], f"{cmd}: {got.name}, expected {plan[ident][1].name}"
        done.append(got)
        free.append(ident)
        if read and got == CompletionStatus.OK and rng.random() < 0.3:
            await send(Frame(opcode=Opcode.READ_RSP, dst=LOCAL, src=REMOTE, msg=ident,
                             first=True, last=True, addr=cmd.remote, length=cmd.length,
                             offset=0, payload=rng.randbytes(cmd.length)), "unexpected")
            # Taken and dropped before the id can be outstanding again.
            if not frames_in.idle():
                await tb.wait_until(frames_in.idle, None)
            await ClockCycles(dut.clk, 20)
    await ClockCycles(dut.clk, 1000)
    assert ram.read(0, size) == bytes(local), "local memory differs"
    assert read_counters(dut, want) == want
    assert want["mismatched"] > 0 and want["unexpected"] > 0
    assert int(dut.outstanding.value) == 0
    statuses = set(done)
    assert CompletionStatus.OK in statuses and CompletionStatus.TIMEOUT in statuses


@pytest.mark.parametrize("params", [
    {"beat_octets": 8, "messages": 4, "mtu": 256, "timeout_cycles": 600, "addr_width": 14},
], ids=lambda p: f"w{p['beat_octets']}")
def test_nic_rdma_requester(params, tmp_path):
    run_cocotb(EXPORT, "test_nic_rdma_requester", params, test_dir=tmp_path)
