"""Golden model of multipath path selection (spec §9).

For each frame an endpoint picks one of its 1–4 ports from a CRC-16 hash of the destination and
the frame's entropy, among the ports through which the destination is reachable and whose link
is up. The gateware ``PathSelect`` block and the ``path_select`` Verilog export (spec §12) are
checked against :func:`select_port`.
"""

from amaranth.lib.crc.catalog import CRC16_CCITT_FALSE

from ...rtl.wire import OEFH

__all__ = ["MAX_PORTS", "crc16_ccitt_false", "select_port", "ls_entropy", "ReachabilityModel"]

#: Ports of one endpoint, one switch plane each (spec §9).
MAX_PORTS = 4

_CRC16 = CRC16_CCITT_FALSE(data_width=8)


def _field_width(name):
    return OEFH.offsets()[name][1]


def crc16_ccitt_false(data):
    """CRC-16/CCITT-FALSE of the octets ``data`` (poly 0x1021, init 0xFFFF, no reflection, no
    final xor; ``crc16_ccitt_false(b"123456789") == 0x29B1``)."""
    return _CRC16.compute(bytes(data))


def select_port(dst, entropy, reachable_mask, links_up_mask=(1 << MAX_PORTS) - 1):
    """The port a frame to ``dst`` with ``entropy`` leaves on, or ``None`` if no port reaches it.

    Bit ``p`` of ``reachable_mask`` is ``reachable[dst][p]``, bit ``p`` of ``links_up_mask`` says
    link ``p`` is up; bits above :data:`MAX_PORTS` are ignored.
    """
    for name, value in (("dst", dst), ("entropy", entropy)):
        if not 0 <= value < (1 << _field_width(name)):
            raise ValueError(f"{name} = {value:#x} does not fit the OEFH {name} field")
    # Ref: spec §9 — h = CRC-16/CCITT-FALSE(dst as 2 octets BE ‖ entropy as 2 octets BE).
    h = crc16_ccitt_false(dst.to_bytes(2, "big") + entropy.to_bytes(2, "big"))
    # Ref: spec §9 — ports reachable and up, ascending; the chosen port is ports[h mod len].
    usable = reachable_mask & links_up_mask
    ports = [port for port in range(MAX_PORTS) if usable >> port & 1]
    return ports[h % len(ports)] if ports else None


def ls_entropy(line):
    """Entropy of an L/S request for cache line ``line``: the same line always takes the same
    path, so operations on one line stay in order."""
    # Ref: spec §9 — line[15:0] ^ line[31:16] ^ line[43:32].
    return (line & 0xFFFF) ^ (line >> 16 & 0xFFFF) ^ (line >> 32 & 0xFFF)


class ReachabilityModel:
    """reachable[id][p] of a NIC with ``ports`` ports, as SENs set it (spec §10).

    Every entry starts reachable. A SEN received on port ``p`` is taken if it is the first
    one of that port or its 8-bit event sequence number is ahead of the last one taken by 1…127
    (modulo 256); otherwise it is stale and ignored. ``counters`` counts ``sen_up``,
    ``sen_down`` and ``sen_stale``.
    """
    def __init__(self, ports):
        self.ports = ports
        self.unreachable = set()          # (endpoint, port) pairs
        self.last_event = [None] * ports
        self.counters = {"sen_up": 0, "sen_down": 0, "sen_stale": 0}

    def sen(self, port, endpoint, reachable, event):
        last = self.last_event[port]
        if last is not None and not 1 <= (event - last) % 256 <= 127:
            self.counters["sen_stale"] += 1
            return
        self.last_event[port] = event
        self.counters["sen_up" if reachable else "sen_down"] += 1
        if reachable:
            self.unreachable.discard((endpoint, port))
        else:
            self.unreachable.add((endpoint, port))

    def reachable_mask(self, dst):
        return sum(1 << p for p in range(self.ports) if (dst, p) not in self.unreachable)

    def select(self, dst, entropy, links_up_mask):
        return select_port(dst, entropy, self.reachable_mask(dst), links_up_mask)
