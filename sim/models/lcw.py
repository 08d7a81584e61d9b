"""Golden model of the link control word (spec §5).

An LCW is one XGMII word: lane 0 is the 0x5C control octet, lanes 1…7 are the seven octets
``type, p0…p4, crc8`` this module builds and checks (:data:`~ethlink.rtl.wire.LCW`). The 40-bit
payload of each type has its own format in :data:`~ethlink.rtl.wire.LCW_PAYLOADS`.
"""

from amaranth.lib.crc.catalog import CRC8_SMBUS

from ...rtl.wire import LCW, LCW_PAYLOADS, LcwType

__all__ = [
    "crc8", "start_check", "encode_lcw", "decode_lcw", "make_lcw", "parse_lcw",
    "llr_ack", "llr_nack", "credit_update", "sen",
]

# Ref: spec §5 — CRC-8, poly 0x07, init 0, no reflection, no final xor (check 0xF4): this is
# the catalogue's CRC-8/SMBUS.
_CRC8 = CRC8_SMBUS(data_width=8)

#: The octets the crc8 covers: every LCW octet before the crc8 field (type…p4).
_CRC_COVERED = LCW.octets - LCW.offsets()["crc8"][1] // 8


def crc8(data):
    """CRC-8 of the octets ``data`` (``crc8(b"123456789") == 0xF4``)."""
    return _CRC8.compute(bytes(data))


def start_check(q_octets):
    """The start word's check C of a sequenced frame: the same CRC-8 over Q1 Q2 Q3 (spec v1.1
    §5; ``start_check(bytes.fromhex("e12345")) == 0xE8``)."""
    return crc8(q_octets)


def encode_lcw(lcw_type, payload):
    """The seven LCW octets ``type, p0…p4, crc8`` for a 40-bit ``payload`` value."""
    covered = LCW.pack(type=lcw_type, payload=payload)[:_CRC_COVERED]
    return LCW.pack(type=lcw_type, payload=payload, crc8=crc8(covered))


def decode_lcw(octets):
    """``(type, payload, crc_ok)`` of the seven LCW octets ``octets``.

    ``type`` is an :class:`LcwType` when it is defined, else the plain integer.
    """
    fields = LCW.unpack(octets)
    # Ref: spec §5 — a receiver drops an LCW whose crc8 fails.
    crc_ok = crc8(bytes(octets[:_CRC_COVERED])) == fields["crc8"]
    try:
        lcw_type = LcwType(fields["type"])
    except ValueError:
        lcw_type = fields["type"]
    return lcw_type, fields["payload"], crc_ok


def make_lcw(lcw_type, **fields):
    """The seven LCW octets of ``lcw_type`` with its payload built from named ``fields``
    (for example ``make_lcw(LcwType.SEN, endpoint=10, event=5, port=3)``)."""
    lcw_type = LcwType(lcw_type)
    return encode_lcw(lcw_type, LCW_PAYLOADS[lcw_type].to_int(**fields))


def parse_lcw(octets):
    """``(type, fields, crc_ok)`` of the seven LCW octets; ``fields`` is ``None`` when the type
    is undefined."""
    lcw_type, payload, crc_ok = decode_lcw(octets)
    if lcw_type not in LCW_PAYLOADS:
        return lcw_type, None, crc_ok
    return lcw_type, LCW_PAYLOADS[lcw_type].from_int(payload), crc_ok


def llr_ack(seq):
    """LLR_ACK of ``seq``, the newest frame received in order (spec §7)."""
    return make_lcw(LcwType.LLR_ACK, seq=seq)


def llr_nack(seq):
    """LLR_NACK carrying ``seq``, the last good frame (spec §7)."""
    return make_lcw(LcwType.LLR_NACK, seq=seq)


def credit_update(vc, limit):
    """CREDIT_UPDATE announcing the credit ``limit`` of ``vc`` (spec §8)."""
    return make_lcw(LcwType.CREDIT_UPDATE, vc=vc, credits=limit)


def sen(endpoint, reachable, event, port):
    """SEN: ``endpoint`` became reachable (``True``) or unreachable through switch ``port``;
    ``event`` is the switch's event sequence number (spec §10)."""
    return make_lcw(LcwType.SEN, endpoint=endpoint, reachable=int(reachable), event=event,
                    port=port)
