"""Small register queues used at block outputs."""

from amaranth.hdl import Module, Signal, Array, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import Out

__all__ = ["DualPushQueue"]


class DualPushQueue(wiring.Component):
    """A register FIFO that takes up to two entries per cycle and gives one.

    Realigning blocks (a parser strips a header, so the tail of a frame can make two output
    beats from its last input beat) need to write two beats in one cycle now and then while the
    consumer drains one per cycle. Producers check :attr:`room2` (a registered condition, so no
    combinational path from the consumer's ``ready``) before they may push two.

    Members
    -------
    push0, push1 : In(1)
        Write ``data0`` (and ``data1`` after it). ``push1`` without ``push0`` is not allowed.
    data0, data1 : In(shape)
    room2 : Out(1)
        At least two free entries (registered level, independent of this cycle's pop).
    o : Out(stream.Signature(shape))
        Head of the queue; ``valid`` and ``payload`` come from registers through a mux.

    Latency: an entry pushed in cycle *t* is valid at ``o`` in cycle *t + 1*.
    """
    def __init__(self, shape, depth=4):
        if depth < 2:
            raise ValueError("depth must be at least 2")
        self._shape = shape
        self._depth = depth
        super().__init__({
            "push0": wiring.In(1), "push1": wiring.In(1),
            "data0": wiring.In(shape), "data1": wiring.In(shape),
            "room2": Out(1),
            "level": Out(range(depth + 1)),
            "o": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self._depth
        entries = Array(Signal(self._shape, name=f"entry{i}") for i in range(depth))
        rp = Signal(range(depth))
        wp = Signal(range(depth))

        def inc(ptr, by=1):
            return Mux(ptr + by >= depth, ptr + by - depth, ptr + by)

        pop = self.o.valid & self.o.ready
        n_push = Mux(self.push1, 2, Mux(self.push0, 1, 0))
        m.d.comb += [
            self.o.valid.eq(self.level != 0),
            self.o.payload.eq(entries[rp]),
            self.room2.eq(self.level <= depth - 2),
        ]
        with m.If(self.push0):
            m.d.sync += entries[wp].eq(self.data0)
        with m.If(self.push1):
            m.d.sync += entries[inc(wp)].eq(self.data1)
        m.d.sync += [
            wp.eq(Mux(self.push1, inc(wp, 2), Mux(self.push0, inc(wp), wp))),
            self.level.eq(self.level + n_push - pop),
        ]
        with m.If(pop):
            m.d.sync += rp.eq(inc(rp))
        return m
