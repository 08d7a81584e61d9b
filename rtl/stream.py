"""The packet stream every EthLink block speaks.

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

from amaranth.hdl import Cat, unsigned
from amaranth.lib import data, stream

from .params import OneOf, Param

__all__ = ["PacketLayout", "PacketStream", "VerdictPacketLayout", "VerdictPacketStream",
           "packet_fields", "connect_packets", "SUPPORTED_BEAT_OCTETS", "BEAT_OCTETS", "keep_count",
           "count_to_keep"]

#: Beat widths the packet datapath is built and verified for.
SUPPORTED_BEAT_OCTETS = (8, 16, 32, 64)

#: The beat width of a block with a packet datapath of any supported width.
BEAT_OCTETS = Param("octets per stream beat", OneOf(*SUPPORTED_BEAT_OCTETS))


class PacketLayout(data.StructLayout):
    """One beat of a packet stream of ``octets`` octets: ``data``, ``keep``, ``first``, ``last``."""
    def __init__(self, octets):
        self.octets = BEAT_OCTETS.validate("beat_octets", octets)
        super().__init__({
            "data": unsigned(8 * octets),
            "keep": unsigned(octets),
            "first": unsigned(1),
            "last": unsigned(1),
        })


def PacketStream(octets):
    """:class:`amaranth.lib.stream.Signature` of a packet stream of ``octets`` octets per beat."""
    return stream.Signature(PacketLayout(octets))


class VerdictPacketLayout(data.StructLayout):
    """A beat of a packet passed on before it is judged (spec v1.1 §7, cut-through): the
    :class:`PacketLayout` members and ``user.error`` (``tuser[0]`` at an export), read on the
    last beat: the packet is bad and its consumer must undo whatever it began for it (it
    leaves no trace but counters). A packet may end bad early, on a beat with ``keep = 0``."""
    def __init__(self, octets):
        self.octets = BEAT_OCTETS.validate("beat_octets", octets)
        super().__init__({**PacketLayout(octets).members,
                          "user": data.StructLayout({"error": unsigned(1)})})


def VerdictPacketStream(octets, *, always_ready=False):
    """:class:`amaranth.lib.stream.Signature` of :class:`VerdictPacketLayout` beats."""
    return stream.Signature(VerdictPacketLayout(octets), always_ready=always_ready)


def packet_fields(sink, source):
    """Assignments of the :class:`PacketLayout` members (``data``, ``keep``, ``first``,
    ``last``) of beat ``source`` to beat ``sink``, whatever else either carries."""
    return [getattr(sink, name).eq(getattr(source, name))
            for name in ("data", "keep", "first", "last")]


def connect_packets(m, source, sink):
    """Connect packet stream ``source`` to ``sink`` where only one of them may carry a
    verdict (:class:`VerdictPacketLayout`): ``valid`` and ``payload`` go from ``source`` to
    ``sink``, ``ready`` back, as seen from the module ``m`` builds (``source`` the output of
    a sub-component or an input of its own, ``sink`` the other way round). Only ``data``,
    ``keep``, ``first`` and ``last`` pass: a sink's ``user.error`` stays 0, a source's is not
    read (connect only a source that never ends a packet bad, such as a store-and-forward
    buffer)."""
    m.d.comb += [sink.valid.eq(source.valid), source.ready.eq(sink.ready),
                 *packet_fields(sink.payload, source.payload)]


def keep_count(keep, octets):
    """Number of valid octets of a beat whose ``keep`` is a run of ones from lane 0
    (combinational; the sum of the bits, so it is also right for a full beat)."""
    return sum(keep[i] for i in range(octets))


def count_to_keep(count, octets):
    """``keep`` for a beat holding ``count`` octets from lane 0 (combinational)."""
    return Cat(*(count > i for i in range(octets)))
