"""Event counters: every block keeps its own as one ``count`` interface, built the same way.

A block declares its counters as a signature (:class:`Counters`) and exposes it as the member
``count``; each counter is a :data:`COUNTER_WIDTH`-bit saturating count (spec §11), or an
array of them (one per VC or port). :class:`CounterBank` makes the counters that drive a
``count`` interface, and a block that holds others passes their counters up with
:func:`~ethlink.rtl.compose.forward` (same names) or nests them (a sub-interface, e.g. the
MAC's under ``mac_tx``). At a Verilog export ``count.frames_sent`` becomes ``count_frames_sent``
and ``count.mac_tx.frames`` ``count_mac_tx_frames``.
"""

from amaranth.hdl import Signal, Mux
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

__all__ = ["COUNTER_WIDTH", "SaturatingCounter", "Counters", "merge_counters", "CounterBank",
           "counter_values"]

#: Width of every event counter; counters saturate instead of wrapping (spec §11).
COUNTER_WIDTH = 32


class SaturatingCounter:
    """A :data:`COUNTER_WIDTH`-bit event counter that sticks at its maximum instead of wrapping.

    ``counter.increment(m, condition)`` adds the (synchronous) increment to module ``m``;
    ``counter.add(m, amount, condition)`` adds ``amount``; ``counter.track_max(m, value)``
    keeps the largest value seen (a high-water mark).
    """
    def __init__(self, name, width=COUNTER_WIDTH):
        self.value = Signal(width, name=name)

    def increment(self, m, condition):
        with m.If(condition & (self.value != (1 << len(self.value)) - 1)):
            m.d.sync += self.value.eq(self.value + 1)

    def add(self, m, amount, condition):
        """Add ``amount`` (an unsigned value) when ``condition``, sticking at the maximum."""
        top = (1 << len(self.value)) - 1
        total = Signal(len(self.value) + 1, name=f"{self.value.name}_sum")
        m.d.comb += total.eq(self.value + amount)
        with m.If(condition):
            m.d.sync += self.value.eq(Mux(total > top, top, total))

    def track_max(self, m, value):
        """Hold the largest ``value`` seen (a high-water mark; never above what it measures)."""
        with m.If(value > self.value):
            m.d.sync += self.value.eq(value)


def Counters(names=(), *, arrays=None, groups=None, members=None):
    """The signature of a block's counters: ``names`` each one count, ``arrays`` (``{name:
    n}``) each ``n`` counts (``ArrayLayout(COUNTER_WIDTH, n)``), ``groups`` (``{name:
    signature}``) the counters of a block held inside, nested under ``name``; ``members`` more
    members as they are. Every member is an output of the block. Two calls with the same
    arguments give equal signatures."""
    result = {name: Out(COUNTER_WIDTH) for name in names}
    for name, n in (arrays or {}).items():
        result[name] = Out(data.ArrayLayout(COUNTER_WIDTH, n))
    for name, signature in (groups or {}).items():
        result[name] = Out(signature)
    for name, member in (members or {}).items():
        if name in result:
            raise NameError(f"counter {name!r} is declared twice")
        result[name] = member
    return wiring.Signature(result)


def merge_counters(*signatures, **groups):
    """The counters of several blocks side by side (a block that passes up the counters of
    the blocks it holds under their own names), plus ``groups`` nested under their names."""
    members = {}
    for signature in signatures:
        for name, member in signature.members.items():
            if name in members:
                raise NameError(f"counter {name!r} is in two of the merged signatures")
            members[name] = member
    return Counters(groups=groups, members=members)


class CounterBank:
    """The :class:`SaturatingCounter` s behind a block's ``count`` interface, in module ``m``.

    One counter per port member of ``count``'s signature (a list of them for an array member),
    each driving its member; members in ``skip`` (driven some other way, e.g. forwarded from a
    block inside) and nested groups are left alone. ``bank.name`` is the counter (or list)."""
    def __init__(self, m, count, *, skip=()):
        self._counters = {}
        for name, member in count.signature.members.items():
            if not member.is_port or name in skip:
                continue
            port = getattr(count, name)
            if isinstance(member.shape, data.ArrayLayout):
                bank = [SaturatingCounter(f"count_{name}{k}", len(port[k]))
                        for k in range(member.shape.length)]
                m.d.comb += [port[k].eq(c.value) for k, c in enumerate(bank)]
            else:
                bank = SaturatingCounter(f"count_{name}", len(port))
                m.d.comb += port.eq(bank.value)
            self._counters[name] = bank

    def __getattr__(self, name):
        try:
            return self._counters[name]
        except KeyError:
            raise AttributeError(f"no counter {name!r}") from None

    def __getitem__(self, name):
        return self._counters[name]


def counter_values(count):
    """``{name: value}`` of the counters of a ``count`` interface (its port members, in order):
    what a register map reads."""
    return {name: getattr(count, name) for name, member in count.signature.members.items()
            if member.is_port}
