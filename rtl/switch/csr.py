"""The switch's register map, defined once: the gateware decodes it, the golden model and the
tests program through it, and ``docs/switch.md`` describes it.

The bus is :func:`~ethlink.rtl.regbus.RegisterBus` (the ``csr`` member of
:class:`~.core.SwitchCore`); writes take effect at the end of the cycle they are strobed in,
read data follows one cycle after ``re``. Every register word with fields is a
:class:`~amaranth.lib.data.Struct` below (bit 0 first); build a word with
``word_value(RouteWord, port=3, valid=1)`` and read one with ``PortConfigWord.from_bits(v)``.
"""

from amaranth.lib import data

from ..wire import ENDPOINT_BITS, NO_ENDPOINT

__all__ = ["ADDR_BITS", "ID", "ID_VALUE", "PARAMS", "PORT_CONFIG", "ROUTE", "PARTITION",
           "COUNTERS", "PORT_COUNTERS", "COUNTER_STRIDE", "NO_ENDPOINT", "ENDPOINT_IDS",
           "PARTITION_BITS", "PORT_BITS", "TABLE_BITS", "ParamsWord", "PortConfigWord",
           "RouteWord", "PartitionWord"]

#: Word address width of the bus.
ADDR_BITS = 16
#: Endpoint ids index the route and partition tables (spec §3).
ENDPOINT_IDS = 1 << ENDPOINT_BITS
#: Address bits below a table's base: the endpoint id.
TABLE_BITS = ENDPOINT_BITS
#: Width of an egress port number in a route (radix up to 16).
PORT_BITS = 4
#: Width of a partition number (spec §11).
PARTITION_BITS = 4

#: Read-only identification word ("ESW1").
ID = 0x0000
ID_VALUE = 0x45535731


class ParamsWord(data.Struct):
    """``PARAMS`` (read only): the build parameters."""
    radix: 8
    vc_classes: 4
    log2_voq_beats: 4
    fifo: 1
    iterations: 3


PARAMS = 0x0001


class PortConfigWord(data.Struct):
    """``PORT_CONFIG + p`` (read/write): the endpoint attached to port ``p`` (its frames'
    ``src`` when the source check is on; :data:`NO_ENDPOINT` after reset) and the check."""
    attached: ENDPOINT_BITS
    rsvd: 16 - ENDPOINT_BITS
    src_check: 1


PORT_CONFIG = 0x0100


class RouteWord(data.Struct):
    """``ROUTE + id`` (write only): the egress port of endpoint ``id``; a port at or above
    the radix, or ``valid`` 0, is stored as "no route"."""
    port: PORT_BITS
    rsvd: 8 - PORT_BITS
    valid: 1


ROUTE = 0x1000


class PartitionWord(data.Struct):
    """``PARTITION + id`` (write only): the partition of endpoint ``id``."""
    partition: PARTITION_BITS


PARTITION = 0x2000

#: ``COUNTERS + COUNTER_STRIDE * p + k``: counter ``PORT_COUNTERS[k]`` of port p (read only,
#: 32-bit, saturating).
COUNTERS = 0x4000
COUNTER_STRIDE = 16
PORT_COUNTERS = ("frames_in", "octets_in", "frames_out", "octets_out",
                 "drop_malformed", "drop_spoofed", "drop_unroutable", "drop_partition")
