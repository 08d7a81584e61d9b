"""Golden model of the forwarding layer's parser (spec §4, §11): what becomes of one frame body.

Ref: spec §11 — bad ver, bad opcode/size and frames too short for their TH are dropped and
counted. The reasons are checked in the order the gateware documents (a frame too short to hold
its opcode is ``short``; otherwise version, opcode and size come before the length).
"""

from dataclasses import dataclass

from ethlink.rtl.wire import (OEFH, LS_TH, HEADER_OCTETS, LsSize, Opcode, OEFH_VERSION,
                              th_octets)

__all__ = ["DROP_REASONS", "Parsed", "parse"]

DROP_REASONS = ("short", "bad_version", "bad_opcode", "bad_size")


@dataclass(frozen=True)
class Parsed:
    drop: str | None = None       # one of DROP_REASONS, or None for a good frame
    header: int | None = None     # HeaderLayout value (176-bit big-endian OEFH + TH)
    payload: bytes | None = None


def parse(body):
    """Parse a frame body (OEFH + TH + payload, no FCS) as the parser gateware does."""
    body = bytes(body)
    if len(body) < OEFH.octets + 1:
        return Parsed(drop="short")
    oefh = OEFH.unpack(body)
    # Octet 6 holds the opcode (either TH) and the L/S size: read it through the L/S layout.
    first_th = LS_TH.unpack(body[OEFH.octets:OEFH.octets + 1].ljust(LS_TH.octets, b"\0"))
    opcode = first_th["opcode"]
    if oefh["ver"] != OEFH_VERSION:
        return Parsed(drop="bad_version")
    th_length = th_octets(opcode)
    if th_length is None:
        return Parsed(drop="bad_opcode")
    header_octets = OEFH.octets + th_length
    if not Opcode(opcode).is_rdma and first_th["size"] == LsSize.RESERVED:
        return Parsed(drop="bad_size")
    if len(body) < header_octets:
        return Parsed(drop="short")
    header = int.from_bytes(body[:header_octets].ljust(HEADER_OCTETS, b"\0"), "big")
    return Parsed(header=header, payload=body[header_octets:])

