"""The packet stream every EthLink block speaks, and the counters every block keeps.

Stream rules (those of :mod:`amaranth.lib.stream`, kept by every block of the project):

1. A transfer happens in a cycle where ``valid`` and ``ready`` are both high.
2. Once ``valid`` is high it stays high, and ``payload`` holds, until the transfer.
3. ``valid`` never waits for ``ready`` (no combinational path from ``ready`` to ``valid``).
4. ``ready`` may depend on ``valid`` (and on the payload).

Beat layout (:class:`PacketLayout`): ``data`` carries ``octets`` octets, octet 0 of the beat in
``data[7:0]`` (the lane that goes first on the wire). ``first`` marks the first beat of a
packet, ``last`` its last. ``keep`` has one bit per octet; every beat but the last is full
(``keep`` all ones), and the last beat's ``keep`` is a run of ones from lane 0 (it may be all
zeros only for an empty packet, see below). Blocks rely on this and do not re-check it.

An empty packet — a frame with no payload on a payload stream — is one beat with
``first = last = 1`` and ``keep = 0``, so that every header on a header stream is matched by
exactly one packet on the payload stream beside it.
"""

from amaranth.hdl import Signal, Cat, Mux, unsigned
from amaranth.lib import data, stream

__all__ = ["PacketLayout", "PacketStream", "SUPPORTED_BEAT_OCTETS", "check_beat_octets",
           "keep_count", "count_to_keep", "SaturatingCounter", "drive_counters",
           "COUNTER_WIDTH"]

#: Beat widths the packet datapath is built and verified for.
SUPPORTED_BEAT_OCTETS = (8, 16, 32, 64)

#: Width of every event counter; counters saturate instead of wrapping (spec §11).
COUNTER_WIDTH = 32


def check_beat_octets(octets):
    if octets not in SUPPORTED_BEAT_OCTETS:
        raise ValueError(f"beat_octets must be one of {SUPPORTED_BEAT_OCTETS}, not {octets!r}")
    return octets


class PacketLayout(data.StructLayout):
    """One beat of a packet stream of ``octets`` octets: ``data``, ``keep``, ``first``, ``last``."""
    def __init__(self, octets):
        self.octets = check_beat_octets(octets)
        super().__init__({
            "data": unsigned(8 * octets),
            "keep": unsigned(octets),
            "first": unsigned(1),
            "last": unsigned(1),
        })


def PacketStream(octets):
    """:class:`amaranth.lib.stream.Signature` of a packet stream of ``octets`` octets per beat."""
    return stream.Signature(PacketLayout(octets))


def keep_count(keep, octets):
    """Number of valid octets of a beat whose ``keep`` is a run of ones from lane 0
    (combinational; the sum of the bits, so it is also right for a full beat)."""
    return sum(keep[i] for i in range(octets))


def count_to_keep(count, octets):
    """``keep`` for a beat holding ``count`` octets from lane 0 (combinational)."""
    return Cat(*(count > i for i in range(octets)))


class SaturatingCounter:
    """A :data:`COUNTER_WIDTH`-bit event counter that sticks at its maximum instead of wrapping.

    ``counter.increment(m, condition)`` adds the (synchronous) increment to module ``m``.
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


def drive_counters(m, component, names):
    """A :class:`SaturatingCounter` per name of ``names``, each driving ``component``'s
    ``count_{name}`` output in module ``m``; returns them by name."""
    counters = {name: SaturatingCounter(f"count_{name}") for name in names}
    for name, counter in counters.items():
        m.d.comb += getattr(component, f"count_{name}").eq(counter.value)
    return counters
