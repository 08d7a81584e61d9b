"""What the NIC's transaction engines share: their common parameters, the completion a
requester gives the GPU, the queue of headers of frames that could not be sent, and the
geometry of cache lines and RDMA messages (spec §3, §4.2, §9)."""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..counters import CounterBank, Counters
from ..params import IntRange, OneOf, Param, PowerOfTwo
from ..wire import HeaderLayout, LS_TH, RDMA_TH, LsSize, Status

__all__ = ["TAG_BITS", "MSG_BITS", "STAMP_BITS", "LINE_OCTETS", "LINE_BITS", "MAX_LS_OCTETS",
           "TAGS", "MESSAGES", "MTU", "TIMEOUT_CYCLES", "CONTEXTS", "CompletionStatus",
           "CompletionLayout", "FAIL_DEPTH_MAX", "FailQueue"]

TAG_BITS = dict(LS_TH.fields)["tag"]
MSG_BITS = dict(RDMA_TH.fields)["msg"]
#: Bits of the cycle stamps timeouts are measured with.
STAMP_BITS = 16
#: Windows and L/S addresses count 64-octet cache lines (the L/S TH's ``line`` unit).
LINE_OCTETS = 64
LINE_BITS = dict(LS_TH.fields)["line"]
#: The largest L/S access (spec §4.2: size 2 = 256 octets).
MAX_LS_OCTETS = LsSize.B256.octets

TAGS = Param("outstanding L/S tags", PowerOfTwo(2, 1 << TAG_BITS))
MESSAGES = Param("outstanding RDMA messages", PowerOfTwo(2, 1 << MSG_BITS))
#: Ref: spec §3 — the MTU is 256…2048 octets.
MTU = Param("RDMA packet payload in octets", OneOf(256, 512, 1024, 2048))
TIMEOUT_CYCLES = Param("cycles before an unanswered request times out",
                       IntRange(64, (1 << (STAMP_BITS - 1)) - 1))
CONTEXTS = Param("WRITE messages the RDMA target receives at once", IntRange(1, 16))


class CompletionStatus(enum.Enum, shape=3):
    """Status of a completion: the wire's three (spec §4.2, same codes) and the requester's
    own."""
    OK = Status.OK.value
    ACCESS_DENIED = Status.ACCESS_DENIED.value
    ADDRESS_ERROR = Status.ADDRESS_ERROR.value
    #: No response within ``timeout_cycles`` (the request or its response was lost).
    TIMEOUT = 4
    #: The tag was already outstanding or beyond ``tags``: the request was not sent.
    BAD_TAG = 5
    #: No port reaches the destination (spec §9): the request frame was dropped at the NIC.
    UNREACHABLE = 6


class CompletionLayout(data.StructLayout):
    """One completion: the request's ``tag`` and a :class:`CompletionStatus` (2 octets)."""
    def __init__(self):
        super().__init__({"tag": TAG_BITS, "status": CompletionStatus, "pad": 1})


#: Entries of a requester's queue of unroutable-frame headers, at most.
FAIL_DEPTH_MAX = 64


class FailQueue(wiring.Component):
    """Queue the headers of frames dropped as unroutable as entries of ``layout``, made by
    ``entry_of(header)`` (``{field: value}``: what identifies the request or message).

    ``i`` is always ready: its sender is the NIC's steering, whose transmit path must never
    wait for the GPU to take completions (else a GPU holding its completions back would also
    hold back the responses this NIC owes to others). A header that finds the ``depth``
    entries full is dropped and counted (``fail_overflows``); its operation then times out
    instead.

    Members
    -------
    i : In(stream.Signature(HeaderLayout())); o : Out(stream.Signature(layout))
    count : Out(Counters)
        ``fail_overflows``.

    Latency: an entry is valid on ``o`` 2 cycles after its ``i`` transfer. Throughput: one
    header per cycle in and out.
    """
    COUNTERS = ("fail_overflows",)

    def __init__(self, layout, depth, entry_of):
        self.layout = layout
        self.depth = depth
        self._entry_of = entry_of
        super().__init__({
            "i": In(stream.Signature(HeaderLayout())),
            "o": Out(stream.Signature(layout)),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)
        entry = Signal(self.layout)
        m.d.comb += [entry[name].eq(value)
                     for name, value in self._entry_of(self.i.payload).items()]
        m.submodules.fail_q = queue = SyncFIFOBuffered(width=self.layout.size,
                                                       depth=self.depth)
        write = queue.w_stream
        m.d.comb += [write.payload.eq(entry), write.valid.eq(self.i.valid), self.i.ready.eq(1)]
        counters.fail_overflows.increment(m, self.i.valid & ~write.ready)
        wiring.connect(m, queue.r_stream, wiring.flipped(self.o))
        return m
