"""EthLink wire formats, defined once.

Every header of the wire contract (spec §4, §5) is described here exactly once, as a
:class:`WireFormat`: an ordered list of fields, most significant first, exactly as the spec's
tables list them. From that one description come

* the Amaranth :class:`~amaranth.lib.data.StructLayout` used by the gateware
  (:attr:`WireFormat.layout`),
* the Python packer/unpacker used by the golden models and the tests
  (:meth:`WireFormat.pack`, :meth:`WireFormat.unpack`),

so a change of a field is one edit in this file.

Byte order. The wire sends octet 0 first and every multi-octet field is big-endian (spec §3):
the header is the big-endian integer ``H`` of its octets. Streams carry octet 0 in the lowest
lane (``data[7:0]``), as AXI4-Stream and XGMII do. Amaranth packs struct fields LSB first, so a
layout here describes ``H`` (the value), and :func:`lanes_to_value` is the single place where
lane order is turned into value order (and back: the conversion is its own inverse).
"""


from dataclasses import dataclass

from amaranth.hdl import Cat, Value, unsigned
from amaranth.lib import data, enum

__all__ = [
    "WireFormat", "lanes_to_value", "value_to_lanes",
    "OEFH", "LS_TH", "RDMA_TH", "LCW", "PREAMBLE", "HEADER_OCTETS", "HeaderLayout",
    "LLR_PAYLOAD", "CREDIT_PAYLOAD", "SEN_PAYLOAD", "TOKEN_PAYLOAD", "LCW_PAYLOADS",
    "Opcode", "VirtualChannel", "LsSize", "Status", "LcwType", "FrameClass", "XgmiiControl",
    "XgmiiWordLayout", "FecWordType", "th_octets", "ls_payload_octets",
    "OEFH_VERSION", "MAX_BODY_OCTETS", "ENDPOINT_BITS", "NO_ENDPOINT", "SEQ_BITS", "CREDIT_BITS", "PREAMBLE_OCTET", "SFD",
]


@dataclass(frozen=True)
class WireFormat:
    """A big-endian header: ``fields`` are ``(name, width)`` pairs, most significant first.

    The widths must add up to ``8 * octets``. Field names starting with ``rsvd`` are reserved:
    :meth:`pack` writes them as 0 unless told otherwise and :meth:`unpack` still reports them.
    """
    name: str
    octets: int
    fields: tuple

    def __post_init__(self):
        total = sum(width for _, width in self.fields)
        if total != 8 * self.octets:
            raise ValueError(f"{self.name}: fields add up to {total} bits, expected "
                             f"{8 * self.octets}")

    @property
    def bits(self):
        return 8 * self.octets

    @property
    def layout(self):
        """The :class:`StructLayout` of the header value ``H`` (LSB-first, as Amaranth packs)."""
        return data.StructLayout({name: unsigned(width)
                                  for name, width in reversed(self.fields)})

    def offsets(self):
        """``{name: (lsb, width)}`` of each field within ``H``."""
        result, lsb = {}, self.bits
        for name, width in self.fields:
            lsb -= width
            result[name] = (lsb, width)
        return result

    def to_int(self, **values):
        unknown = set(values) - {name for name, _ in self.fields}
        if unknown:
            raise KeyError(f"{self.name}: unknown field(s) {sorted(unknown)}")
        value = 0
        for name, (lsb, width) in self.offsets().items():
            field = int(values.get(name, 0))
            if not 0 <= field < (1 << width):
                raise ValueError(f"{self.name}.{name} = {field:#x} does not fit in {width} bits")
            value |= field << lsb
        return value

    def from_int(self, value):
        return {name: (value >> lsb) & ((1 << width) - 1)
                for name, (lsb, width) in self.offsets().items()}

    def pack(self, **values):
        """Octets of the header as sent on the wire (octet 0 first)."""
        return self.to_int(**values).to_bytes(self.octets, "big")

    def unpack(self, octets):
        """Fields of the header in ``octets[:self.octets]``; raises if there are too few."""
        if len(octets) < self.octets:
            raise ValueError(f"{self.name} needs {self.octets} octets, got {len(octets)}")
        return self.from_int(int.from_bytes(bytes(octets[:self.octets]), "big"))


def lanes_to_value(lanes, octets):
    """Reorder ``octets`` lanes (octet 0 in bits 7:0) into the big-endian value (octet 0 at the
    top), or back: the reversal is its own inverse. Works on Amaranth values and on ints."""
    if isinstance(lanes, int):
        return int.from_bytes(lanes.to_bytes(octets, "little"), "big")
    lanes = Value.cast(lanes)
    return Cat(*(lanes[8 * i:8 * i + 8] for i in reversed(range(octets))))


value_to_lanes = lanes_to_value


# --- identifiers (spec §3, §4) -------------------------------------------------------------

OEFH_VERSION = 1
#: Endpoint ids (OEFH ``dst``/``src``, SEN ``endpoint``) are 12 bits: up to 4096 (spec §3).
ENDPOINT_BITS = 12
#: The id that means "no endpoint" (spec §3).
NO_ENDPOINT = (1 << ENDPOINT_BITS) - 1
#: LLR sequence numbers are 20 bits, modulo 2^20 (spec §7).
SEQ_BITS = 20
#: CBFC credit counters are 20 bits, modulo 2^20 (spec §8).
CREDIT_BITS = 20
#: OEFH + RDMA TH + the largest payload (spec §3).
MAX_BODY_OCTETS = 2048 + 22


class VirtualChannel(enum.IntEnum, shape=3):
    LS_REQ = 0
    LS_RSP = 1
    RDMA_REQ = 2
    RDMA_RSP = 3


class Opcode(enum.IntEnum, shape=4):
    """TH opcode (spec §4.2); its value alone tells the TH length."""
    LOAD_REQ = 1
    STORE_REQ = 2
    LOAD_RSP = 3
    STORE_RSP = 4
    WRITE = 8
    READ_REQ = 9
    READ_RSP = 10
    ACK = 11

    @property
    def is_rdma(self):
        return self.value >= 8


class LsSize(enum.IntEnum, shape=2):
    B64 = 0
    B128 = 1
    B256 = 2
    RESERVED = 3

    @property
    def octets(self):
        return 64 << self.value


class Status(enum.IntEnum, shape=2):
    OK = 0
    ACCESS_DENIED = 1
    ADDRESS_ERROR = 2


# --- headers (spec §4.1, §4.2) -------------------------------------------------------------

OEFH = WireFormat("OEFH", 6, (
    ("ver", 2), ("vc", 3), ("ecn", 2), ("rsvd", 1),
    ("dst", ENDPOINT_BITS), ("src", ENDPOINT_BITS), ("entropy", 16),
))

LS_TH = WireFormat("LS_TH", 8, (
    ("opcode", 4), ("size", 2), ("status", 2), ("tag", 12), ("line", 44),
))

RDMA_TH = WireFormat("RDMA_TH", 16, (
    ("opcode", 4), ("status", 2), ("first", 1), ("last", 1), ("msg", 12), ("rsvd", 12),
    ("addr", 48), ("length", 24), ("offset", 24),
))

#: The longest header: OEFH followed by the RDMA TH.
HEADER_OCTETS = OEFH.octets + RDMA_TH.octets


def th_octets(opcode):
    """TH length in octets for ``opcode`` (spec §4.2), or ``None`` for an undefined opcode."""
    try:
        return RDMA_TH.octets if Opcode(opcode).is_rdma else LS_TH.octets
    except ValueError:
        return None


def ls_payload_octets(opcode, size, status=Status.OK):
    """Payload octets an L/S frame carries: STORE_REQ and OK LOAD_RSP carry ``size`` octets."""
    if opcode == Opcode.STORE_REQ or (opcode == Opcode.LOAD_RSP and status == Status.OK):
        return LsSize(size).octets
    return 0


class _ThUnion(data.UnionLayout):
    def __init__(self):
        super().__init__({
            # The L/S TH is the top 8 octets of the 16-octet TH field; the low 8 are zero.
            "ls": data.StructLayout({"pad": unsigned(64), **LS_TH.layout.members}),
            "rdma": RDMA_TH.layout,
        })


class HeaderLayout(data.StructLayout):
    """OEFH + TH as carried beside a payload stream (parser output, deparser input).

    The value is the big-endian integer of the first 22 header octets: the OEFH in bits
    175:128, the TH in bits 127:0. An L/S TH occupies bits 127:64 (``th.ls``) and bits 63:0 are
    zero; an RDMA TH fills all of ``th.rdma``. Both views put the opcode in bits 127:124.

    ::

        175      128 127    124                                                     0
        +----------+---------+------------------------------------------------------+
        |  OEFH    | opcode  |  rest of L/S TH (bits 123:64) + zeros | RDMA TH      |
        +----------+---------+------------------------------------------------------+
    """
    def __init__(self):
        super().__init__({"th": _ThUnion(), "oefh": OEFH.layout})


# --- MAC and PHY-lite (spec §5) ------------------------------------------------------------

class XgmiiControl(enum.IntEnum, shape=8):
    IDLE = 0x07
    START = 0xFB
    TERMINATE = 0xFD
    ERROR = 0xFE
    LCW = 0x5C


class FrameClass(enum.IntEnum, shape=4):
    SEQUENCED = 0xE
    UNSEQUENCED = 0x5


PREAMBLE_OCTET = 0x55
SFD = 0xD5

#: The seven octets after /S/ in a start word: ``P P C Q1 Q2 Q3 SFD`` (spec v1.1 §5). ``c`` is
#: the start-word check: CRC-8 (the LCW's: poly 0x07, init 0) of Q1 Q2 Q3 for class 0xE, 0x55
#: (unchecked) for class 0x5.
PREAMBLE = WireFormat("PREAMBLE", 7, (
    ("p0", 8), ("p1", 8), ("c", 8), ("cls", 4), ("seq", SEQ_BITS), ("sfd", 8),
))


class LcwType(enum.IntEnum, shape=8):
    LLR_ACK = 0x01
    LLR_NACK = 0x02
    LLR_INIT = 0x03
    LLR_INIT_ECHO = 0x04
    CREDIT_UPDATE = 0x10
    CREDIT_SYNC = 0x11
    SEN = 0x20
    PING = 0x30
    PONG = 0x31


#: The seven data octets of a link control word, after the 0x5C control octet in lane 0.
LCW = WireFormat("LCW", 7, (("type", 8), ("payload", 40), ("crc8", 8)))

# The 40-bit LCW payload ``P`` of each type (spec §5 table); unused bits are 0.
LLR_PAYLOAD = WireFormat("LLR_PAYLOAD", 5, (("seq", SEQ_BITS), ("nonce", 16), ("rsvd", 4)))
CREDIT_PAYLOAD = WireFormat("CREDIT_PAYLOAD", 5, (("vc", 5), ("credits", CREDIT_BITS), ("rsvd", 15)))
SEN_PAYLOAD = WireFormat("SEN_PAYLOAD", 5, (
    ("endpoint", ENDPOINT_BITS), ("reachable", 1), ("event", 8), ("port", 8), ("rsvd", 11),
))
TOKEN_PAYLOAD = WireFormat("TOKEN_PAYLOAD", 5, (("token", 40),))

#: Payload format of each LCW type. LLR_ACK/NACK carry only ``seq``; LLR_INIT(_ECHO) add the
#: ``nonce``; CREDIT_UPDATE carries the limit and CREDIT_SYNC the credits sent in ``credits``.
LCW_PAYLOADS = {
    LcwType.LLR_ACK: LLR_PAYLOAD,
    LcwType.LLR_NACK: LLR_PAYLOAD,
    LcwType.LLR_INIT: LLR_PAYLOAD,
    LcwType.LLR_INIT_ECHO: LLR_PAYLOAD,
    LcwType.CREDIT_UPDATE: CREDIT_PAYLOAD,
    LcwType.CREDIT_SYNC: CREDIT_PAYLOAD,
    LcwType.SEN: SEN_PAYLOAD,
    LcwType.PING: TOKEN_PAYLOAD,
    LcwType.PONG: TOKEN_PAYLOAD,
}


class XgmiiWordLayout(data.StructLayout):
    """One 64-bit XGMII word: lane i is ``data[8i+7:8i]`` with control flag ``ctrl[i]``;
    lane 0 goes first on the wire (spec §5)."""
    def __init__(self):
        super().__init__({"data": unsigned(64), "ctrl": unsigned(8)})


class FecWordType(enum.IntEnum, shape=4):
    """The 4-bit type of a non-data XGMII word inside a 257-bit FEC block (spec §6; the codes
    are this project's choice, see docs/fec-transcoding.md). ``TERM_k`` is ``k``, so the number
    of data octets before ``/T/`` is the code itself. Codes 0xB…0xE are unused."""
    TERM_0 = 0x0
    TERM_1 = 0x1
    TERM_2 = 0x2
    TERM_3 = 0x3
    TERM_4 = 0x4
    TERM_5 = 0x5
    TERM_6 = 0x6
    TERM_7 = 0x7
    IDLE = 0x8
    START = 0x9
    LCW = 0xA
    ERROR = 0xF
