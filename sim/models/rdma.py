"""Golden models of the NIC's RDMA engines (spec §4.2, §9, §11).

The requester side is :func:`command_status` (the commands refused before sending) and
:func:`command_frames` (the WRITE packets of a message, or its READ_REQ). The target side is
:class:`RdmaTargetModel`: it executes WRITE packets, in any order, and READ_REQs against a
flat byte memory behind the memory windows, returns the ACK and READ_RSP frames and keeps the
same counters as the gateware. :func:`run_command` joins them: one command end to end, to its
completion status. Written from the spec and docs/nic.md, not from the gateware.
"""

from collections import Counter
from dataclasses import dataclass

from ...rtl.nic.engine import CompletionStatus
from ...rtl.wire import Opcode, Status, VirtualChannel
from .frame import Frame
from .nic import LINE_OCTETS

__all__ = ["RdmaCommand", "RdmaTargetModel", "segments", "rdma_entropy", "command_frames",
           "command_status", "run_command", "MAX_MESSAGE_OCTETS"]

#: A message is shorter than 16 MiB: ``length`` and ``offset`` are 24-bit TH fields (§4.2).
MAX_MESSAGE_OCTETS = (1 << 24) - 1


@dataclass(frozen=True)
class RdmaCommand:
    """An RDMA command of the local GPU: WRITE ``length`` octets from local address ``local``
    to address ``remote`` of endpoint ``dst`` (``read`` false), or READ them from there to
    here (``read`` true); ``id`` is the message id (``msg``)."""
    read: bool
    dst: int
    id: int
    remote: int
    local: int
    length: int


def segments(length, mtu):
    """The ``(offset, octets)`` of each packet of a ``length``-octet message: packet k carries
    octets ``k * mtu`` up to ``min((k + 1) * mtu, length)``."""
    # Ref: spec §3 — RDMA packets carry at most the configured MTU.
    return [(offset, min(mtu, length - offset)) for offset in range(0, length, mtu)]


def rdma_entropy(msg, index):
    """The entropy of packet ``index`` of message ``msg`` (WRITE and READ_RSP)."""
    # Ref: spec §9 — RDMA WRITE and READ_RSP packets use msg ^ packet_index (sprayed).
    return (msg ^ index) & 0xFFFF


def _read(memory, addr, n):
    return bytes(memory[addr:addr + n]).ljust(n, b"\0")


def _write(memory, addr, data):
    end = min(addr + len(data), len(memory))
    if addr < end:
        memory[addr:end] = data[:end - addr]


def command_status(cmd, beat_octets=8, addr_width=32):
    """``CompletionStatus.ADDRESS_ERROR`` if the requester refuses ``cmd`` without sending it,
    else ``None``."""
    # Project choice (docs/nic.md): both addresses beat-aligned, 1…16 MiB - 1 octets, and the
    # local range inside the local memory.
    if (not 0 < cmd.length <= MAX_MESSAGE_OCTETS or cmd.remote % beat_octets
            or cmd.local % beat_octets or cmd.local + cmd.length > 1 << addr_width):
        return CompletionStatus.ADDRESS_ERROR
    return None


def command_frames(cmd, local_id, memory, mtu=1024):
    """The request frames endpoint ``local_id`` sends for ``cmd``, WRITE payloads read from
    ``memory`` (the local memory, a bytes-like object)."""
    if cmd.read:
        # Ref: spec §4.2 — READ_REQ: length = total octets wanted, no payload; project choice
        # (docs/nic.md): one packet, entropy = msg.
        return [Frame(opcode=Opcode.READ_REQ, vc=VirtualChannel.RDMA_REQ, dst=cmd.dst,
                      src=local_id, entropy=cmd.id, first=True, last=True, msg=cmd.id,
                      addr=cmd.remote, length=cmd.length, offset=0, status=Status.OK)]
    parts = segments(cmd.length, mtu)
    # Ref: spec §4.2 — each WRITE packet names its address and its offset in the message.
    return [Frame(opcode=Opcode.WRITE, vc=VirtualChannel.RDMA_REQ, dst=cmd.dst, src=local_id,
                  entropy=rdma_entropy(cmd.id, k), first=k == 0, last=k == len(parts) - 1,
                  msg=cmd.id, addr=cmd.remote + offset, length=n, offset=offset,
                  status=Status.OK, payload=_read(memory, cmd.local + offset, n))
            for k, (offset, n) in enumerate(parts)]


@dataclass
class _Context:
    """A WRITE message being received: octets placed, total (known from ``last``), status."""
    placed: int = 0
    total: int | None = None
    status: Status = Status.OK


class RdmaTargetModel:
    """Executes RDMA requests against ``memory`` (a bytearray of ``2 ** addr_width`` octets or
    fewer; octets past its end read as zero and are never written) behind ``windows`` (a list
    of :class:`~ethlink.sim.models.nic.Window`), with ``contexts`` WRITE messages at a time."""
    def __init__(self, memory, windows, addr_width=32, mtu=1024, beat_octets=8, contexts=8):
        self.memory = memory
        self.windows = list(windows)
        self.addr_width = addr_width
        self.mtu = mtu
        self.beat_octets = beat_octets
        self.contexts = contexts
        self.live = {}
        self.counters = Counter()

    def status(self, addr, n, write):
        """The status of an access to octets ``addr`` … ``addr + n - 1``."""
        # Project choice (docs/nic.md): the address is beat-aligned.
        if addr % self.beat_octets or addr + n > 1 << self.addr_width:
            return Status.ADDRESS_ERROR
        # Ref: spec §11 — refused unless one window holds the access with the permission.
        line = addr // LINE_OCTETS
        lines = -(-(addr + n) // LINE_OCTETS) - line
        if not any(w.grants(line, lines, write) for w in self.windows):
            return Status.ACCESS_DENIED
        return Status.OK

    def _count(self, status):
        self.counters["denied" if status == Status.ACCESS_DENIED else "address_errors"] += 1

    def handle(self, frame):
        """The response frames to request ``frame`` (a :class:`Frame`): a list, maybe empty."""
        if frame.opcode == Opcode.WRITE:
            return self._write(frame)
        if frame.opcode == Opcode.READ_REQ:
            return self._read(frame)
        self.counters["unexpected"] += 1
        return []

    def _write(self, frame):
        n = frame.length
        # Ref: spec §11 — malformed frames are dropped and counted; project choice
        # (docs/nic.md): 1…mtu octets, ending inside the longest message.
        if not 0 < n <= self.mtu or frame.offset + n > MAX_MESSAGE_OCTETS:
            self.counters["malformed"] += 1
            return []
        key = (frame.src, frame.msg)
        # Project choice (docs/nic.md): a fixed number of messages received at once.
        if key not in self.live and len(self.live) >= self.contexts:
            self.counters["no_context"] += 1
            return []
        status = self.status(frame.addr, n, write=True)
        if status == Status.OK:
            # Project choice (docs/nic.md): the payload is written as it arrives, so a packet
            # whose payload turns out not to be ``length`` octets long has written what it
            # carried inside its granted range (at most ``length`` octets) ...
            _write(self.memory, frame.addr, frame.payload[:n])
        if len(frame.payload) != n:
            # ... but is malformed: it counts for nothing in its message.
            self.counters["malformed"] += 1
            return []
        context = self.live.setdefault(key, _Context())
        if status == Status.OK:
            self.counters["write_packets"] += 1
        else:
            # Ref: spec §4.2 — a refused request writes nothing.
            self._count(status)
            context.status = context.status or status  # the first non-OK one stays
        context.placed += n
        if frame.last:
            # Ref: spec §4.2 — the message length is offset + length of the packet flagged last.
            context.total = frame.offset + n
        if context.total is None or context.placed < context.total:
            return []
        # Ref: spec §4.2 — one ACK (msg, status) once the placed octets add up to the length;
        # project choice (docs/nic.md): more octets than that is an ADDRESS_ERROR, the ACK
        # carries the length, entropy = msg.
        del self.live[key]
        self.counters["acks"] += 1
        status = Status.ADDRESS_ERROR if context.placed > context.total else context.status
        return [Frame(opcode=Opcode.ACK, vc=VirtualChannel.RDMA_RSP, dst=frame.src,
                      src=frame.dst, entropy=frame.msg, first=True, last=True, msg=frame.msg,
                      status=status, addr=0, length=context.total, offset=0)]

    def _read(self, frame):
        if frame.payload or frame.length == 0:
            self.counters["malformed"] += 1
            return []
        status = self.status(frame.addr, frame.length, write=False)
        # Ref: spec §3 — responses travel on VC 3; §9 — READ_RSP packets use msg ^ index.
        response = dict(opcode=Opcode.READ_RSP, vc=VirtualChannel.RDMA_RSP, dst=frame.src,
                        src=frame.dst, msg=frame.msg, status=status)
        if status != Status.OK:
            # Project choice (docs/nic.md): a refused READ_REQ gets one empty READ_RSP.
            self._count(status)
            return [Frame(**response, entropy=frame.msg, first=True, last=True,
                          addr=frame.addr, length=0, offset=0)]
        self.counters["reads"] += 1
        parts = segments(frame.length, self.mtu)
        return [Frame(**response, entropy=rdma_entropy(frame.msg, k), first=k == 0,
                      last=k == len(parts) - 1, addr=frame.addr + offset, length=n,
                      offset=offset, payload=_read(self.memory, frame.addr + offset, n))
                for k, (offset, n) in enumerate(parts)]


def run_command(cmd, local_id, local_memory, target, mtu=1024, beat_octets=8, addr_width=32,
                frames=None):
    """Apply ``cmd`` of endpoint ``local_id`` (memory ``local_memory``, a bytearray) to
    ``target`` (an :class:`RdmaTargetModel`) end to end; the completion status, an int. The
    request and response frames are appended to the list ``frames`` if one is given."""
    refusal = command_status(cmd, beat_octets, addr_width)
    if refusal is not None:
        return refusal.value
    requests = command_frames(cmd, local_id, local_memory, mtu)
    responses = [rsp for request in requests for rsp in target.handle(request)]
    if frames is not None:
        frames += requests + responses
    if not cmd.read:
        return responses[0].status if responses else CompletionStatus.TIMEOUT.value
    # Ref: spec §4.2 — READ_RSP offsets tell where each goes; the requester counts octets.
    status = next((rsp.status for rsp in responses if rsp.status != Status.OK), None)
    for rsp in responses:
        if rsp.status == Status.OK:
            _write(local_memory, cmd.local + rsp.offset, rsp.payload)
    if status is not None:
        return int(status)
    received = sum(rsp.length for rsp in responses)
    return CompletionStatus.OK.value if received == cmd.length else CompletionStatus.TIMEOUT.value
