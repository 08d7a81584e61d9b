"""Round-robin arbitration: the combinational pick shared by the switch's allocator and VOQs,
and a packet arbiter that merges frame streams whole.
"""

from amaranth.hdl import Module, Signal, Const, Cat, Mux, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .stream import PacketStream, VerdictPacketStream

__all__ = ["round_robin", "lowest_set", "one_hot_index", "one_hot_select", "column",
           "wrap_next", "PacketArbiter"]


def round_robin(m, requests, pointer, name):
    """One-hot grant of the first set bit of ``requests`` at or after index ``pointer``,
    wrapping round (combinational). ``requests`` is an N-bit value, ``pointer`` an index."""
    n = len(requests)
    at_or_after = Signal(n, name=f"{name}_mask")
    masked = Signal(n, name=f"{name}_masked")
    grant = Signal(n, name=f"{name}_grant")
    m.d.comb += [
        at_or_after.eq(Const((1 << n) - 1, n) << pointer),
        masked.eq(requests & at_or_after),
    ]
    with m.If(masked.any()):
        m.d.comb += grant.eq(lowest_set(masked))
    with m.Else():
        m.d.comb += grant.eq(lowest_set(requests))
    return grant


def lowest_set(value):
    """``value`` with only its lowest set bit kept (combinational): bit *k* is set when bit
    *k* is and no bit below it is, a prefix OR in LUTs (``x & -x`` is the same function through
    a carry chain, slower at the widths of a switch's arbiters)."""
    below = Const(0, 1)
    bits = []
    for k in range(len(value)):
        bits.append(value[k] & ~below)
        below = below | value[k]
    return Cat(*bits)


def one_hot_index(one_hot):
    """Index of the set bit of a one-hot value (0 when none is set; combinational)."""
    width = max(1, (len(one_hot) - 1).bit_length())
    index = Const(0, width)
    for i, bit in enumerate(one_hot):
        index = index | Cat(*(bit & ((i >> k) & 1) for k in range(width)))
    return index


def one_hot_select(one_hot, values):
    """``values[k]`` for the set bit *k* of ``one_hot`` (0 when none is set; combinational): an
    AND-OR, for a selector known to have at most one bit set (a ``Switch`` over its one-hot
    cases would compare every bit of it with each case first)."""
    values = [Value.cast(value) for value in values]
    width = max(len(value) for value in values)
    result = Const(0, width)
    for bit, value in zip(one_hot, values):
        result = result | (value & bit.replicate(width))
    return result


def column(matrix, n, j):
    """Column ``j`` of an ``n`` × ``n`` bit matrix laid out row by row (bit ``n * i + j`` is
    row ``i``, column ``j``): bit ``i`` of the result is row ``i``'s."""
    return Cat(*(matrix[n * i + j] for i in range(n)))


def wrap_next(index, n):
    """``(index + 1) mod n`` for an index below ``n`` (combinational)."""
    return Mux(index == n - 1, 0, index + 1)


class PacketArbiter(wiring.Component):
    """Merge ``n`` packet streams into one, a whole frame at a time, round robin.

    A frame is granted when its first beat is offered and holds the output until its last beat
    has been taken (so an offered beat is never withdrawn); the next grant goes to the first
    input with a frame waiting after the one just served. The grant is combinational: no
    latency, one beat per cycle, and a frame waiting alone on an idle output passes in the
    cycle it is offered.

    With ``verdict`` the frames carry one (:class:`~ethlink.rtl.stream.VerdictPacketLayout`,
    passed on with the rest of the beat).

    Members
    -------
    i : In(PacketStream(octets)).array(n)
    o : Out(PacketStream(octets))
    """
    def __init__(self, n, octets, verdict=False):
        if n < 1:
            raise ValueError(f"a packet arbiter needs at least one input, not {n}")
        self.n = n
        beats = VerdictPacketStream(octets) if verdict else PacketStream(octets)
        super().__init__({
            "i": In(beats).array(n),
            "o": Out(beats),
        })

    def elaborate(self, platform):
        m = Module()
        inputs = self.i
        if self.n == 1:
            wiring.connect(m, wiring.flipped(inputs[0]), wiring.flipped(self.o))
            return m
        pointer = Signal(range(self.n))
        busy = Signal()
        held = Signal(self.n)
        grant = Signal(self.n)
        request = Cat(port.valid for port in inputs)
        m.d.comb += grant.eq(held)
        with m.If(~busy):
            m.d.comb += grant.eq(round_robin(m, request, pointer, "pick"))
        for k, port in enumerate(inputs):
            with m.If(grant[k]):
                m.d.comb += [self.o.valid.eq(port.valid), self.o.payload.eq(port.payload),
                             port.ready.eq(self.o.ready)]
        # A beat once offered stays offered until taken (a stream's rule): the grant is held
        # from the first offer of a frame, not only from its first transfer.
        with m.If(self.o.valid):
            m.d.sync += [busy.eq(1), held.eq(grant)]
            with m.If(self.o.ready & self.o.payload.last):
                m.d.sync += [busy.eq(0), pointer.eq(wrap_next(one_hot_index(grant), self.n))]
        return m
