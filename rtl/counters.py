"""Event counters: every block keeps its own as one ``count`` interface, built the same way.

A block declares its counters as a signature (:class:`Counters`) and exposes it as the member
``count``; each counter is a :data:`COUNTER_WIDTH`-bit saturating count (spec §11), or an
array of them (one per VC or port). :class:`CounterBank` makes the counters that drive a
``count`` interface, and a block that holds others passes their counters up with
:func:`~ethlink.rtl.compose.forward` (same names) or nests them (a sub-interface, e.g. the
MAC's under ``mac_tx``). At a Verilog export ``count.frames_sent`` becomes ``count_frames_sent``
and ``count.mac_tx.frames`` ``count_mac_tx_frames``.
"""

from amaranth.hdl import Elaboratable, Module, Mux, Signal, Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

__all__ = ["COUNTER_WIDTH", "SaturatingCounter", "Counters", "merge_counters", "CounterBank",
           "counter_values"]

#: Width of every event counter; counters saturate instead of wrapping (spec §11).
COUNTER_WIDTH = 32


class SaturatingCounter:
    """A :data:`COUNTER_WIDTH`-bit event counter that sticks at its maximum instead of wrapping.

    ``counter.increment(m, condition)`` counts ``condition`` in module ``m``;
    ``counter.add(m, amount, condition)`` adds ``amount``; ``counter.track_max(m, value)``
    keeps the largest value seen (a high-water mark). A counter is counted from one module;
    in it, the call made last in the code wins a cycle where several hold.

    Latency: an event (or an amount, or a value) is registered before it is counted, so a
    counter shows the events of cycle *t* from cycle *t* + 2 on, a cycle after the block's
    other registers. Nothing in a datapath waits on a counter, and the register keeps the
    event's logic and the counter's carry chain in separate cycles (on the ECP5 a counter was
    the end of the critical path of ``cbfc_end``, ``nic_reachability`` and ``nic``).
    """
    def __init__(self, name, width=COUNTER_WIDTH):
        self.value = Signal(width, name=name)
        self._core = None

    def _core_of(self, m, kind, shape=1):
        """The counter's :class:`_CounterCore`, made in ``m`` at the first call."""
        if self._core is None:
            self._core = _CounterCore(self.value, kind, shape)
            m.submodules[f"{self.value.name}_core"] = self._core
        elif self._core.kind != kind:
            raise ValueError(f"counter {self.value.name!r} is counted two ways")
        return self._core

    def increment(self, m, condition):
        core = self._core_of(m, "count")
        with m.If(condition):
            m.d.sync += core.toggle.eq(~core.toggle)

    def add(self, m, amount, condition):
        """Add ``amount`` (an unsigned value) when ``condition``, sticking at the maximum."""
        core = self._core_of(m, "add", Value.cast(amount).shape())
        with m.If(condition):
            m.d.sync += [core.toggle.eq(~core.toggle), core.amount.eq(amount)]

    def track_max(self, m, value):
        """Hold the largest ``value`` seen (a high-water mark; never above what it measures)."""
        core = self._core_of(m, "max", Value.cast(value).shape())
        m.d.sync += core.amount.eq(value)


class _CounterCore(Elaboratable):
    """The counting register ``value`` of one :class:`SaturatingCounter`, a cycle behind the
    events: the block that counts flips ``toggle`` (and sets ``amount``) in the cycle after an
    event, under its own conditions, and this module, outside them, counts a cycle where
    ``toggle`` changed (``kind`` ``"count"``: by 1, ``"add"``: by ``amount``, saturating;
    ``"max"``: keeps the largest ``amount``, which the block registers every cycle)."""
    def __init__(self, value, kind, shape):
        self.value, self.kind = value, kind
        self.toggle = Signal(name=f"{value.name}_toggle")
        self.amount = Signal(shape, name=f"{value.name}_amount")

    def elaborate(self, platform):
        m = Module()
        value = self.value
        if self.kind == "max":
            with m.If(self.amount > value):
                m.d.sync += value.eq(self.amount)
            return m
        seen = Signal(name=f"{value.name}_seen")
        m.d.sync += seen.eq(self.toggle)
        top = (1 << len(value)) - 1
        # The sum's carry out says it passed the top, so no compare of ``value`` with the top
        # stands beside the adder (on the ECP5 that compare was a quarter of a counter's
        # LUTs): a count stops there (the carry out holds the register's enable low), a sum
        # is clamped to it.
        total = Signal(len(value) + 1, name=f"{value.name}_sum")
        m.d.comb += total.eq(value + (1 if self.kind == "count" else self.amount))
        with m.If(seen != self.toggle):
            if self.kind == "count":
                with m.If(~total[-1]):
                    m.d.sync += value.eq(total[:-1])
            else:
                m.d.sync += value.eq(Mux(total[-1], top, total[:-1]))
        return m


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
