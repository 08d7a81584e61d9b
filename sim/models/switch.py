"""Golden model of the switch forwarding core (spec §10, §11; ``docs/switch.md``).

It knows the register map (:mod:`ethlink.rtl.switch.csr`), the tables and port configuration
that the registers program, and decides for every frame what the switch must do with it:
forward it to one egress port, or drop it and count why. It does not model timing; the tests
stamp writes and frames with the cycle the gateware sees them in and apply them in that order
(:meth:`SwitchModel.write` for cycle *w* is seen by a table lookup of cycle *w + 1* on).

Written from the spec and the register map, not from the gateware: it decodes headers with
:mod:`ethlink.rtl.wire`'s formats and applies the checks in the documented order.
"""

from dataclasses import dataclass

from ...rtl.switch import csr
from ...rtl.wire import OEFH, Opcode, LsSize, OEFH_VERSION

__all__ = ["SwitchModel", "Decision", "DROP_REASONS"]

#: Drop reasons, in the order the checks apply (the first that applies counts).
DROP_REASONS = ("malformed", "spoofed", "unroutable", "partition")

# The register words' fields, bit by bit as docs/switch.md states them (the model keeps its
# own definitions: the gateware's layouts in rtl/switch/csr.py are what it is checked against).
_ATTACHED_MASK = 0xFFF          # PORT_CONFIG bits 11:0: the attached endpoint
_SRC_CHECK_BIT = 16             # PORT_CONFIG bit 16: the source check
_ROUTE_PORT_MASK = 0xF          # ROUTE bits 3:0: the egress port
_ROUTE_VALID_BIT = 8            # ROUTE bit 8: the route is valid
_PARTITION_MASK = 0xF           # PARTITION bits 3:0

#: The switch decides on the first 8-octet beat; a frame that ends there is malformed.
DECISION_OCTETS = 8


@dataclass(frozen=True)
class Decision:
    egress: int | None            # None: dropped
    reason: str | None = None     # one of DROP_REASONS when dropped
    vc: int = 0


class SwitchModel:
    def __init__(self, radix):
        self.radix = radix
        self.routes = [None] * csr.ENDPOINT_IDS        # dst -> egress port, or None
        self.partitions = [0] * csr.ENDPOINT_IDS
        self.attached = [csr.NO_ENDPOINT] * radix
        self.src_check = [False] * radix
        self.counters = [dict.fromkeys(csr.PORT_COUNTERS, 0) for _ in range(radix)]

    # --- register bus -----------------------------------------------------------------------
    def write(self, addr, data):
        if csr.PORT_CONFIG <= addr < csr.PORT_CONFIG + self.radix:
            port = addr - csr.PORT_CONFIG
            self.attached[port] = data & _ATTACHED_MASK
            self.src_check[port] = bool(data >> _SRC_CHECK_BIT & 1)
        elif csr.ROUTE <= addr < csr.ROUTE + csr.ENDPOINT_IDS:
            port = data & _ROUTE_PORT_MASK
            valid = data >> _ROUTE_VALID_BIT & 1 and port < self.radix
            self.routes[addr - csr.ROUTE] = port if valid else None
        elif csr.PARTITION <= addr < csr.PARTITION + csr.ENDPOINT_IDS:
            self.partitions[addr - csr.PARTITION] = data & _PARTITION_MASK

    def read(self, addr):
        """What a read of ``addr`` returns (None for write-only or unmapped words, which read
        as 0 in the gateware)."""
        if addr == csr.ID:
            return csr.ID_VALUE
        if csr.PORT_CONFIG <= addr < csr.PORT_CONFIG + self.radix:
            port = addr - csr.PORT_CONFIG
            return self.attached[port] | self.src_check[port] << _SRC_CHECK_BIT
        offset = addr - csr.COUNTERS
        port, index = divmod(offset, csr.COUNTER_STRIDE)
        if 0 <= offset and port < self.radix and index < len(csr.PORT_COUNTERS):
            return min(self.counters[port][csr.PORT_COUNTERS[index]], (1 << 32) - 1)
        return 0

    # --- forwarding -------------------------------------------------------------------------
    def decide(self, port, body):
        """The fate of frame ``body`` (OEFH + TH + payload) arriving on ``port``."""
        body = bytes(body)
        if len(body) <= DECISION_OCTETS:
            return Decision(None, "malformed")
        oefh = OEFH.unpack(body)
        opcode = body[OEFH.octets] >> 4
        size = body[OEFH.octets] >> 2 & 3
        if (oefh["ver"] != OEFH_VERSION or opcode not in set(Opcode)
                or (not Opcode(opcode).is_rdma and size == LsSize.RESERVED)):
            return Decision(None, "malformed", oefh["vc"])
        if self.src_check[port] and oefh["src"] != self.attached[port]:
            return Decision(None, "spoofed", oefh["vc"])
        egress = self.routes[oefh["dst"]]
        if egress is None:
            return Decision(None, "unroutable", oefh["vc"])
        if self.partitions[oefh["src"]] != self.partitions[oefh["dst"]]:
            return Decision(None, "partition", oefh["vc"])
        return Decision(egress, None, oefh["vc"])

    def receive(self, port, body):
        """Count ``body`` in on ``port`` and return its :class:`Decision`."""
        decision = self.decide(port, body)
        counters = self.counters[port]
        counters["frames_in"] += 1
        counters["octets_in"] += len(body)
        if decision.egress is None:
            counters[f"drop_{decision.reason}"] += 1
        return decision

    def sent(self, port, body):
        """Count ``body`` out on ``port``."""
        self.counters[port]["frames_out"] += 1
        self.counters[port]["octets_out"] += len(body)
