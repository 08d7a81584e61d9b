"""Tests of the RDMA golden models (sim/models/rdma.py) against hand-computed expectations:
segmentation, entropy, the target's WRITE/ACK and READ_REQ/READ_RSP, its counters, and whole
commands end to end.

Pure pytest: no simulator.
"""

import random

import pytest

from ethlink.rtl.nic.csr import PERM_READ, PERM_WRITE
from ethlink.rtl.nic.ls_requester import CompletionStatus
from ethlink.rtl.wire import Opcode, Status, VirtualChannel
from ethlink.sim.models import Frame
from ethlink.sim.models.nic import Window
from ethlink.sim.models.rdma import (
    RdmaCommand, RdmaTargetModel, command_frames, command_status, rdma_entropy, run_command,
    segments,
)

MTU = 256
ADDR_WIDTH = 16
LOCAL, REMOTE = 0x045, 0x123
# Read/write: octets 1024…3071; read-only: octets 4096…5119.
WINDOWS = [Window(base=16, size=32, perm=PERM_READ | PERM_WRITE),
           Window(base=64, size=16, perm=PERM_READ)]


def wire(frames):
    """``frames``, after checking that each survives its octets."""
    for frame in frames:
        assert Frame.from_bytes(frame.to_bytes()) == frame
    return frames


def target(contexts=8, memory=None):
    memory = bytearray(1 << ADDR_WIDTH) if memory is None else memory
    return RdmaTargetModel(memory, WINDOWS, addr_width=ADDR_WIDTH, mtu=MTU, contexts=contexts)


def write_frames(msg, remote, data, src=LOCAL):
    cmd = RdmaCommand(read=False, dst=REMOTE, id=msg, remote=remote, local=0, length=len(data))
    return wire(command_frames(cmd, src, data, MTU))


def handle_all(model, frames):
    return wire([response for frame in frames for response in model.handle(frame)])


def test_segments():
    assert segments(1, MTU) == [(0, 1)]
    assert segments(MTU, MTU) == [(0, MTU)]
    assert segments(MTU + 1, MTU) == [(0, MTU), (MTU, 1)]
    assert segments(3 * MTU, MTU) == [(0, MTU), (MTU, MTU), (2 * MTU, MTU)]
    assert segments(0, MTU) == []


def test_entropy():
    assert rdma_entropy(0x5A5, 0) == 0x5A5
    assert rdma_entropy(0x5A5, 3) == 0x5A6
    assert rdma_entropy(0xFFF, 0x1_0001) == 0xFFE


def test_write_frames():
    data = bytes(range(256)) * 2 + bytes(88)
    frames = write_frames(7, 1024, data)
    assert [(f.offset, f.length, f.addr, f.entropy, f.first, f.last) for f in frames] == [
        (0, 256, 1024, 7, True, False), (256, 256, 1280, 6, False, False),
        (512, 88, 1536, 5, False, True)]
    assert all(f.opcode == Opcode.WRITE and f.vc == VirtualChannel.RDMA_REQ and f.msg == 7
               and f.dst == REMOTE and f.src == LOCAL and f.status == Status.OK
               for f in frames)
    assert b"".join(f.payload for f in frames) == data


def test_read_req_frame():
    cmd = RdmaCommand(read=True, dst=REMOTE, id=9, remote=4096, local=0, length=640)
    assert wire(command_frames(cmd, LOCAL, b"", MTU)) == [Frame(
        opcode=Opcode.READ_REQ, vc=VirtualChannel.RDMA_REQ, dst=REMOTE, src=LOCAL, entropy=9,
        first=True, last=True, msg=9, addr=4096, length=640, offset=0)]


def test_write_out_of_order_one_ack():
    model = target()
    data = random.Random(1).randbytes(640)
    frames = write_frames(7, 1024, data)
    assert handle_all(model, [frames[2]]) == []
    assert handle_all(model, [frames[0]]) == []
    assert handle_all(model, [frames[1]]) == [Frame(
        opcode=Opcode.ACK, vc=VirtualChannel.RDMA_RSP, dst=LOCAL, src=REMOTE, entropy=7,
        first=True, last=True, msg=7, status=Status.OK, addr=0, length=640, offset=0)]
    assert model.memory[1024:1664] == data
    assert not any(model.memory[:1024]) and not any(model.memory[1664:])
    assert model.counters == {"write_packets": 3, "acks": 1}
    assert model.live == {}


def test_write_partly_outside_windows():
    model = target()
    data = bytes(range(1, 256)) * 2 + b"\xff\xff"
    acks = handle_all(model, write_frames(3, 3072 - 256, data))
    assert [(ack.opcode, ack.msg, ack.status, ack.length) for ack in acks] == [
        (Opcode.ACK, 3, Status.ACCESS_DENIED, 512)]
    assert model.memory[2816:3072] == data[:256]
    assert not any(model.memory[3072:])
    assert model.counters == {"write_packets": 1, "denied": 1, "acks": 1}


def test_write_read_only_and_misaligned():
    model = target()
    assert handle_all(model, write_frames(1, 4096, b"\x55" * 64))[0].status == \
        Status.ACCESS_DENIED
    assert handle_all(model, write_frames(2, 1028, b"\x55" * 64))[0].status == \
        Status.ADDRESS_ERROR
    assert not any(model.memory)
    assert model.counters == {"denied": 1, "address_errors": 1, "acks": 2}


def test_write_more_than_total_is_address_error():
    model = target()
    first, last = write_frames(4, 1024, bytes(512))
    # The first packet twice: 768 octets placed for a 512-octet message.
    assert handle_all(model, [first, first]) == []
    [ack] = handle_all(model, [last])
    assert (ack.status, ack.length) == (Status.ADDRESS_ERROR, 512)
    assert model.counters == {"write_packets": 3, "acks": 1}


def test_read_denied():
    model = target()
    frames = command_frames(RdmaCommand(read=True, dst=REMOTE, id=5, remote=4096 + 960,
                                        local=0, length=128), LOCAL, b"", MTU)
    assert handle_all(model, frames) == [Frame(
        opcode=Opcode.READ_RSP, vc=VirtualChannel.RDMA_RSP, dst=LOCAL, src=REMOTE, entropy=5,
        first=True, last=True, msg=5, status=Status.ACCESS_DENIED, addr=5056, length=0,
        offset=0)]
    assert model.counters == {"denied": 1}


def test_read_two_and_a_half_mtu():
    memory = bytearray(1 << ADDR_WIDTH)
    memory[4096:4736] = random.Random(2).randbytes(640)
    model = target(memory=memory)
    frames = command_frames(RdmaCommand(read=True, dst=REMOTE, id=0x10, remote=4096, local=0,
                                        length=640), LOCAL, b"", MTU)
    responses = handle_all(model, frames)
    assert [(r.offset, r.length, r.addr, r.entropy, r.first, r.last) for r in responses] == [
        (0, 256, 4096, 0x10, True, False), (256, 256, 4352, 0x11, False, False),
        (512, 128, 4608, 0x12, False, True)]
    assert all(r.opcode == Opcode.READ_RSP and r.vc == VirtualChannel.RDMA_RSP
               and r.dst == LOCAL and r.src == REMOTE and r.msg == 0x10
               and r.status == Status.OK for r in responses)
    assert [r.payload for r in responses] == [memory[4096:4352], memory[4352:4608],
                                              memory[4608:4736]]
    assert model.counters == {"reads": 1}


def test_contexts_exhausted():
    model = target(contexts=2)
    heads = [write_frames(msg, 1024, bytes(512))[0] for msg in (1, 2)]
    assert handle_all(model, heads) == []
    # Same msg from another source: another message, and no context left for it.
    assert handle_all(model, write_frames(1, 2048, bytes(512), src=LOCAL + 1)[:1]) == []
    assert model.counters["no_context"] == 1
    # Completing a message frees its context.
    assert len(handle_all(model, write_frames(1, 1024, bytes(512))[1:])) == 1
    assert len(handle_all(model, write_frames(3, 1024, bytes(64)))) == 1
    assert model.counters["no_context"] == 1


@pytest.mark.parametrize("length,payload", [(16, bytes(8)), (0, b""), (MTU + 8, bytes(MTU + 8))])
def test_malformed_write(length, payload):
    model = target()
    frame = Frame(opcode=Opcode.WRITE, dst=REMOTE, src=LOCAL, first=True, last=True, msg=1,
                  addr=1024, length=length, payload=payload)
    assert handle_all(model, [frame]) == []
    assert model.counters == {"malformed": 1}
    assert not any(model.memory) and model.live == {}


def test_malformed_read_and_unexpected():
    model = target()
    base = dict(dst=REMOTE, src=LOCAL, first=True, last=True, msg=1, addr=1024)
    assert model.handle(Frame(opcode=Opcode.READ_REQ, length=0, **base)) == []
    assert model.handle(Frame(opcode=Opcode.READ_REQ, length=8, payload=bytes(8), **base)) == []
    assert model.handle(Frame(opcode=Opcode.ACK, **base)) == []
    assert model.counters == {"malformed": 2, "unexpected": 1}


def test_run_command_write_then_read():
    model = target()
    local = bytearray(1 << ADDR_WIDTH)
    local[:600] = random.Random(3).randbytes(600)
    write = RdmaCommand(read=False, dst=REMOTE, id=1, remote=1024, local=0, length=600)
    read = RdmaCommand(read=True, dst=REMOTE, id=2, remote=1024, local=2048, length=600)
    assert run_command(write, LOCAL, local, model, MTU, 8, ADDR_WIDTH) == CompletionStatus.OK.value
    assert model.memory[1024:1624] == local[:600]
    assert run_command(read, LOCAL, local, model, MTU, 8, ADDR_WIDTH) == CompletionStatus.OK.value
    assert local[2048:2648] == local[:600]
    denied = RdmaCommand(read=True, dst=REMOTE, id=3, remote=8192, local=4096, length=64)
    assert run_command(denied, LOCAL, local, model, MTU, 8, ADDR_WIDTH) == \
        CompletionStatus.ACCESS_DENIED.value
    assert not any(local[4096:4160])


@pytest.mark.parametrize("read", [False, True])
@pytest.mark.parametrize("remote,local,length", [
    (1024, 0, 0), (1024, 0, 1 << 24), (1028, 0, 64), (1024, 4, 64),
    (1024, (1 << ADDR_WIDTH) - 56, 64)])
def test_command_refused(read, remote, local, length):
    cmd = RdmaCommand(read=read, dst=REMOTE, id=1, remote=remote, local=local, length=length)
    assert command_status(cmd, 8, ADDR_WIDTH) == CompletionStatus.ADDRESS_ERROR
    model = target()
    assert run_command(cmd, LOCAL, bytearray(1 << ADDR_WIDTH), model, MTU, 8, ADDR_WIDTH) == \
        CompletionStatus.ADDRESS_ERROR.value
    assert model.counters == {}


def test_command_accepted():
    cmd = RdmaCommand(read=False, dst=REMOTE, id=1, remote=8, local=(1 << ADDR_WIDTH) - 64,
                      length=64)
    assert command_status(cmd, 8, ADDR_WIDTH) is None
    assert command_status(RdmaCommand(**{**cmd.__dict__, "length": (1 << 24) - 1}), 8, 32) \
        is None
