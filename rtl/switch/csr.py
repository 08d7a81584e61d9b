"""The switch's register map, defined once: the gateware decodes it, the golden model and the
tests program through it, and ``docs/switch.md`` describes it.

The bus (the ``csr_*`` ports of :class:`~.core.SwitchCore`) is a plain synchronous one: a
word address, a 32-bit write strobe with data, and a read strobe whose data comes back on
``csr_rdata`` with ``csr_rvalid`` in the next cycle. Writes take effect at the end of the
cycle they are strobed in.
"""

__all__ = ["ADDR_BITS", "ID", "ID_VALUE", "PARAMS", "PORT_CONFIG", "ROUTE",
           "PARTITION", "COUNTERS", "PORT_COUNTERS", "COUNTER_STRIDE", "ROUTE_VALID_BIT",
           "SRC_CHECK_BIT", "NO_ENDPOINT", "ENDPOINT_IDS", "PARTITION_BITS"]

#: Word address width of the bus.
ADDR_BITS = 16

#: Read-only identification word ("ESW1").
ID = 0x0000
ID_VALUE = 0x45535731
#: Read-only build parameters: radix [7:0], vc_classes [11:8], log2(voq_beats) [15:12],
#: fifo baseline [16], allocator iterations [19:17].
PARAMS = 0x0001
#: ``PORT_CONFIG + p``: attached endpoint id [11:0], source check enable [16] (read/write).
PORT_CONFIG = 0x0100
SRC_CHECK_BIT = 16
#: ``ROUTE + id``: egress port [3:0], valid [8] (write only). A port at or above the radix is
#: stored as "no route".
ROUTE = 0x1000
ROUTE_VALID_BIT = 8
#: ``PARTITION + id``: the endpoint's partition [3:0] (write only).
PARTITION = 0x2000
PARTITION_BITS = 4
#: ``COUNTERS + COUNTER_STRIDE * p + k``: counter ``PORT_COUNTERS[k]`` of port p (read only,
#: 32-bit, saturating).
COUNTERS = 0x4000
COUNTER_STRIDE = 16
PORT_COUNTERS = ("frames_in", "octets_in", "frames_out", "octets_out",
                 "drop_malformed", "drop_spoofed", "drop_unroutable", "drop_partition")

#: Endpoint ids index the route and partition tables (spec §3: 12-bit ids).
ENDPOINT_IDS = 4096
#: Spec §3: the id that means "no endpoint"; a port's attached id after reset.
NO_ENDPOINT = 0xFFF

