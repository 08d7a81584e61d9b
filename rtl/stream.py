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

__all__ = ["PacketLayout", "PacketStream", "SUPPORTED_BEAT_OCTETS", "BEAT_OCTETS",
           "keep_count", "count_to_keep"]

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


def keep_count(keep, octets):
    """Number of valid octets of a beat whose ``keep`` is a run of ones from lane 0
    (combinational; the sum of the bits, so it is also right for a full beat)."""
    return sum(keep[i] for i in range(octets))


def count_to_keep(count, octets):
    """``keep`` for a beat holding ``count`` octets from lane 0 (combinational)."""
    return Cat(*(count > i for i in range(octets)))
