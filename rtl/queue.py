"""Small register queues used at block outputs."""

from amaranth.hdl import Const, Module, Signal, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import Out

from .params import check_power_of_two

__all__ = ["DualPushQueue", "TwoEntryFifo", "SkidBuffer"]


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
    level : Out(range(depth + 1))
        Entries held.
    o : Out(stream.Signature(shape))
        Head of the queue; ``payload`` is read from LUT RAM (combinational), ``valid`` is a
        compare of ``level``.

    Latency: an entry pushed in cycle *t* is valid at ``o`` in cycle *t + 1*.
    """
    def __init__(self, shape, depth=4):
        check_power_of_two("depth", depth, 2, 1 << 16)
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
        # Two banks of LUT RAM, even and odd positions: the two entries of a double push always
        # land in different banks, so each bank needs only one write port.
        banks = []
        for n in range(2):
            mem = Memory(shape=self._shape, depth=depth // 2, init=[])
            m.submodules[f"bank{n}"] = mem
            banks.append((mem.write_port(), mem.read_port(domain="comb")))

        wp = Signal(range(depth))
        rp = Signal(range(depth))
        wp1 = Signal(range(depth))
        m.d.comb += wp1.eq(wp + 1)   # wraps: depth is a power of two
        pop = self.o.valid & self.o.ready
        for n, (write, read) in enumerate(banks):
            first_here = wp[0] == n   # data0 goes to this bank
            m.d.comb += [
                write.addr.eq(Mux(first_here, wp[1:], wp1[1:])),
                write.data.eq(Mux(first_here, self.data0, self.data1)),
                write.en.eq(Mux(first_here, self.push0, self.push1)),
                read.addr.eq(rp[1:]),
            ]
        m.d.comb += [
            self.o.valid.eq(self.level != 0),
            self.o.payload.eq(Mux(rp[0], banks[1][1].data, banks[0][1].data)),
            self.room2.eq(self.level <= depth - 2),
        ]
        m.d.sync += [
            wp.eq(wp + self.push0 + self.push1),
            rp.eq(rp + pop),
            self.level.eq(self.level + self.push0 + self.push1 - pop),
        ]
        return m


class TwoEntryFifo(wiring.Component):
    """A first-in first-out queue of two entries in registers, whose head is a register.

    It behaves as ``amaranth.lib.fifo.SyncFIFO(depth=2)`` does (an entry written in cycle *t*
    is offered on ``r_stream`` in *t + 1*; ``level`` counts the entries; ``w_stream.ready``
    is ``level != 2``), but ``r_stream.payload`` comes straight from a flip-flop, not through a
    LUT-RAM read and its address, so a consumer's logic after the queue starts from a
    register. Between two blocks it is a stage that cuts both ways: the data the consumer sees
    comes from its registers, and so does the ``ready`` the producer sees (``level != 2``).

    With ``clear=True`` it has a ``clear`` input: the queue is emptied at the end of the cycle,
    and an entry written in that cycle is dropped with the others (an entry ``r_stream`` gives
    in that cycle still leaves). ``w_stream.ready`` does not look at ``clear``, so it still
    comes from the queue's registers only: an entry offered in a ``clear`` cycle may be taken,
    and is then dropped.

    Members
    -------
    w_stream : In(stream.Signature(shape))
    r_stream : Out(stream.Signature(shape))
    level : Out(range(3))
    clear : In(1)
        Only with ``clear=True``.
    """
    def __init__(self, shape, *, clear=False):
        self._clear = clear
        super().__init__({
            "w_stream": wiring.In(stream.Signature(shape)),
            "r_stream": Out(stream.Signature(shape)),
            "level": Out(range(3)),
            **({"clear": wiring.In(1)} if clear else {}),
        })

    def elaborate(self, platform):
        m = Module()
        head = Signal.like(self.r_stream.payload)
        tail = Signal.like(self.w_stream.payload)
        level = self.level
        write = self.w_stream.valid & self.w_stream.ready
        read = self.r_stream.valid & self.r_stream.ready
        clear = self.clear if self._clear else Const(0, 1)
        m.d.comb += [
            self.w_stream.ready.eq(level != 2),
            self.r_stream.valid.eq(level != 0),
            self.r_stream.payload.eq(head),
        ]
        # The entry written goes to the head when the head is free by the next cycle (empty,
        # or one entry leaving now), else behind it; a read from a full queue moves the tail up.
        # The tail matters only in a full queue, so every write may land there too: its
        # enable does not wait for the consumer's ``ready``.
        with m.If(write & ((level == 0) | (level == 1) & read)):
            m.d.sync += head.eq(self.w_stream.payload)
        with m.Elif(read & (level == 2)):
            m.d.sync += head.eq(tail)
        with m.If(write):
            m.d.sync += tail.eq(self.w_stream.payload)
        m.d.sync += level.eq(Mux(clear, 0, level + write - read))
        return m


class SkidBuffer(wiring.Component):
    """A stream stage that passes a transfer straight through but whose ``i.ready`` is a
    flip-flop, so the consumer's ``ready`` stops here instead of running on into the producer.

    An entry offered on ``i`` while the stage is empty is on ``o`` in the same cycle (no
    latency); if ``o`` does not take it, it is kept in the stage's register and ``i.ready``
    goes low until it has left. Throughput: ``o`` carries one entry per cycle while it is
    ready (the kept entry, then the next one offered); ``i`` waits the one cycle in which the
    kept entry leaves.

    Members
    -------
    i : In(stream.Signature(shape))
    o : Out(stream.Signature(shape))
    """
    def __init__(self, shape):
        super().__init__({
            "i": wiring.In(stream.Signature(shape)),
            "o": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        kept = Signal.like(self.i.payload)
        full = Signal()
        m.d.comb += [
            self.i.ready.eq(~full),
            self.o.valid.eq(full | self.i.valid),
            self.o.payload.eq(Mux(full, kept, self.i.payload)),
        ]
        with m.If(self.i.valid & ~full & ~self.o.ready):
            m.d.sync += [kept.eq(self.i.payload), full.eq(1)]
        with m.If(full & self.o.ready):
            m.d.sync += full.eq(0)
        return m
