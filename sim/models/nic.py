"""Golden model of the NIC's Load/Store target (spec §4.2, §11).

:class:`LsTargetModel` keeps the memory windows and a flat byte memory, executes one request
frame at a time and returns the response frame (or ``None`` when the request must be dropped
unanswered), keeping the same counters as the gateware :class:`~ethlink.rtl.nic.ls_responder.
LsResponder`. It is written from the spec, not from the gateware.
"""

from collections import Counter
from dataclasses import dataclass

from ...rtl.nic import csr
from ...rtl.wire import LsSize, Opcode, Status, VirtualChannel
from .frame import Frame

__all__ = ["Window", "LsTargetModel", "LINE_OCTETS"]

LINE_OCTETS = 64


@dataclass(frozen=True)
class Window:
    """A memory window: ``size`` lines from line ``base``, with read/write permission."""
    base: int
    size: int
    perm: int

    def grants(self, line, lines, write):
        need = csr.PERM_WRITE if write else csr.PERM_READ
        return bool(self.perm & need) and self.base <= line and line + lines <= self.base + self.size

    def csr_writes(self, index):
        return csr.window_writes(index, self.base, self.size, self.perm)


class LsTargetModel:
    """Executes L/S requests against ``memory`` (a bytearray of ``2 ** addr_width`` octets or
    fewer; octets past its end read as zero and are never written)."""
    def __init__(self, memory, windows, addr_width=32):
        self.memory = memory
        self.windows = list(windows)
        self.addr_width = addr_width
        self.counters = Counter()

    def status(self, frame):
        lines = LsSize(frame.size).octets // LINE_OCTETS
        # Ref: spec §4.2 — the byte address must be aligned to the size.
        if frame.line % lines or (frame.line + lines) * LINE_OCTETS > 1 << self.addr_width:
            return Status.ADDRESS_ERROR
        # Ref: spec §11 — refused unless one window holds the access with the permission.
        write = frame.opcode == Opcode.STORE_REQ
        if not any(w.grants(frame.line, lines, write) for w in self.windows):
            return Status.ACCESS_DENIED
        return Status.OK

    def handle(self, frame):
        """The response to request ``frame`` (a :class:`Frame`), or ``None`` if dropped."""
        if frame.opcode not in (Opcode.LOAD_REQ, Opcode.STORE_REQ):
            self.counters["unexpected"] += 1
            return None
        octets = LsSize(frame.size).octets
        if len(frame.payload) != (octets if frame.opcode == Opcode.STORE_REQ else 0):
            self.counters["malformed"] += 1
            return None
        status = self.status(frame)
        data = b""
        if status == Status.ACCESS_DENIED:
            self.counters["denied"] += 1
        elif status == Status.ADDRESS_ERROR:
            self.counters["address_errors"] += 1
        elif frame.opcode == Opcode.LOAD_REQ:
            self.counters["loads"] += 1
            start = frame.line * LINE_OCTETS
            data = bytes(self.memory[start:start + octets]).ljust(octets, b"\0")
        else:
            self.counters["stores"] += 1
            start = frame.line * LINE_OCTETS
            self.memory[start:start + octets] = frame.payload
        # Ref: spec §4.2 — responses swap dst/src, use VC 1, copy tag and line; §9 — and the
        # request's entropy.
        return Frame(opcode=Opcode.LOAD_RSP if frame.opcode == Opcode.LOAD_REQ
                     else Opcode.STORE_RSP,
                     vc=VirtualChannel.LS_RSP, dst=frame.src, src=frame.dst,
                     entropy=frame.entropy, size=frame.size, status=status, tag=frame.tag,
                     line=frame.line, payload=data)
