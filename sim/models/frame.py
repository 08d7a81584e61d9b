"""Golden model of an EthLink frame (spec §4).

A frame at the MAC service level is ``OEFH (6) | TH (8 L/S or 16 RDMA) | payload | FCS (4)``.
Every field position comes from :mod:`ethlink.rtl.wire`; this module adds the rules around
them: which TH an opcode takes, which VC and how much payload each opcode carries, the FCS, the
JSON form used by ``ethlink frame``, random legal frames and deliberately malformed ones.
"""

import zlib
from dataclasses import dataclass, field

from ...rtl.wire import (
    OEFH, LS_TH, RDMA_TH, HEADER_OCTETS, MAX_BODY_OCTETS, OEFH_VERSION,
    Opcode, VirtualChannel, LsSize, Status, th_octets, ls_payload_octets,
)
from .path import ls_entropy

__all__ = [
    "FrameError", "Frame", "FCS_OCTETS", "ENDPOINTS",
    "fcs", "th_format", "vc_for", "peek_opcode", "payload_octets", "header_value",
    "random_frame",
    "with_bad_version", "with_bad_opcode", "with_bad_size", "truncated",
]

FCS_OCTETS = 4
#: Endpoint ids a v1 domain uses: 0…1023 (spec §3).
ENDPOINTS = 1024


class FrameError(ValueError):
    """A frame (octets or JSON object) that cannot be decoded."""


def fcs(body):
    """The four FCS octets of ``body`` in wire order."""
    # Ref: spec §4 — IEEE 802.3 CRC-32 over OEFH+TH+payload, least significant octet first.
    return zlib.crc32(bytes(body)).to_bytes(FCS_OCTETS, "little")


def th_format(opcode):
    """The TH :class:`~ethlink.rtl.wire.WireFormat` of a defined ``opcode`` (spec §4.2)."""
    return RDMA_TH if Opcode(opcode).is_rdma else LS_TH


# Ref: spec §3 — requests and responses never share a VC.
_VC = {
    Opcode.LOAD_REQ: VirtualChannel.LS_REQ,
    Opcode.STORE_REQ: VirtualChannel.LS_REQ,
    Opcode.LOAD_RSP: VirtualChannel.LS_RSP,
    Opcode.STORE_RSP: VirtualChannel.LS_RSP,
    Opcode.WRITE: VirtualChannel.RDMA_REQ,
    Opcode.READ_REQ: VirtualChannel.RDMA_REQ,
    Opcode.READ_RSP: VirtualChannel.RDMA_RSP,
    Opcode.ACK: VirtualChannel.RDMA_RSP,
}


def vc_for(opcode):
    """The virtual channel frames of ``opcode`` travel on."""
    return _VC[Opcode(opcode)]


def peek_opcode(th):
    """The opcode in the first octet of the TH octets ``th`` (which must not be empty)."""
    # Ref: spec §4.2 — the high nibble of the first TH octet is the opcode, in both THs.
    lsb, width = LS_TH.offsets()["opcode"]
    return (th[0] << (LS_TH.bits - 8) >> lsb) & ((1 << width) - 1)


def payload_octets(opcode, th_fields):
    """Payload octets a TH of a defined ``opcode`` with fields ``th_fields`` (a dict of its
    field values) announces (spec §4.2)."""
    if not Opcode(opcode).is_rdma:
        return ls_payload_octets(opcode, th_fields["size"], th_fields["status"])
    # Ref: spec §4.2 — WRITE/READ_RSP: length = payload octets; READ_REQ and ACK carry none.
    if opcode in (Opcode.WRITE, Opcode.READ_RSP):
        return th_fields["length"]
    return 0


def _public_fields(wire_format):
    return tuple(name for name, _ in wire_format.fields
                 if name != "opcode" and not name.startswith("rsvd"))


_OEFH_KEYS = _public_fields(OEFH)
_TH_KEYS = {LS_TH: _public_fields(LS_TH), RDMA_TH: _public_fields(RDMA_TH)}


def _field_width(wire_format, name):
    return wire_format.offsets()[name][1]


@dataclass(kw_only=True)
class Frame:
    """One EthLink frame.

    The OEFH fields and the TH fields of both THs are attributes; only the TH of ``opcode`` is
    sent. ``vc`` defaults to the VC of the opcode (spec §3). ``first``/``last`` are booleans,
    every other field an integer that must fit its wire field (else :class:`FrameError`).
    ``fcs_ok`` is set by :meth:`from_bytes` (``None`` otherwise) and ignored by ``==``.
    """
    opcode: Opcode
    vc: int | None = None
    dst: int = 0
    src: int = 0
    entropy: int = 0
    ver: int = OEFH_VERSION
    ecn: int = 0
    # L/S TH
    size: int = LsSize.B64
    status: int = Status.OK
    tag: int = 0
    line: int = 0
    # RDMA TH (and status)
    first: bool = False
    last: bool = False
    msg: int = 0
    addr: int = 0
    length: int = 0
    offset: int = 0
    payload: bytes = b""
    fcs_ok: bool | None = field(default=None, compare=False)

    def __post_init__(self):
        try:
            self.opcode = Opcode(self.opcode)
        except ValueError:
            raise FrameError(f"undefined opcode {self.opcode!r}") from None
        if self.vc is None:
            self.vc = vc_for(self.opcode)
        self.first, self.last = bool(self.first), bool(self.last)
        self.payload = bytes(self.payload)
        try:
            self.header_bytes()
        except ValueError as error:
            raise FrameError(str(error)) from None

    @property
    def th_format(self):
        return th_format(self.opcode)

    def oefh_fields(self):
        return {name: getattr(self, name) for name in _OEFH_KEYS}

    def th_fields(self):
        """The fields of this frame's TH, opcode excluded."""
        return {name: getattr(self, name) for name in _TH_KEYS[self.th_format]}

    def header_bytes(self):
        """OEFH followed by the TH."""
        return (OEFH.pack(**self.oefh_fields())
                + self.th_format.pack(opcode=self.opcode, **self.th_fields()))

    def body(self):
        """OEFH + TH + payload: what the FCS covers."""
        return self.header_bytes() + self.payload

    def to_bytes(self, with_fcs=True):
        body = self.body()
        return body + fcs(body) if with_fcs else body

    @classmethod
    def from_bytes(cls, data, has_fcs=True):
        """Decode ``data`` (body, followed by the FCS if ``has_fcs``).

        Raises :class:`FrameError` if the body is too short for the OEFH or for the TH its
        opcode needs, or the opcode is undefined. Everything else (version, reserved size,
        payload length, FCS) is reported as decoded; see :meth:`defects`.
        """
        data = bytes(data)
        fcs_octets = FCS_OCTETS if has_fcs else 0
        if len(data) < OEFH.octets + fcs_octets:
            raise FrameError(f"frame of {len(data)} octets is too short for the OEFH (needs "
                             f"{OEFH.octets} octets + {fcs_octets} FCS octets)")
        body = data[:len(data) - fcs_octets]
        if len(body) == OEFH.octets:
            raise FrameError(f"frame of {len(data)} octets ends before the transaction header")
        opcode = peek_opcode(body[OEFH.octets:])
        if th_octets(opcode) is None:
            raise FrameError(f"undefined opcode {opcode:#x}")
        header_octets = OEFH.octets + th_octets(opcode)
        if len(body) < header_octets:
            raise FrameError(f"frame of {len(data)} octets is too short for the "
                             f"{Opcode(opcode).name} transaction header (needs "
                             f"{header_octets} octets + {fcs_octets} FCS octets)")
        oefh = OEFH.unpack(body)
        th = th_format(opcode).unpack(body[OEFH.octets:])
        return cls(opcode=opcode,
                   **{name: oefh[name] for name in _OEFH_KEYS},
                   **{name: th[name] for name in _TH_KEYS[th_format(opcode)]},
                   payload=body[header_octets:],
                   fcs_ok=(fcs(body) == data[len(body):]) if has_fcs else None)

    def expected_payload_octets(self):
        """Payload octets the TH announces (spec §4.2)."""
        return payload_octets(self.opcode, self.th_fields())

    def defects(self):
        """Why a receiver must drop this frame (spec §4, §11): an empty list for a good one."""
        found = []
        if self.fcs_ok is False:
            found.append("FCS mismatch")
        if self.ver != OEFH_VERSION:
            found.append(f"version {self.ver}, expected {OEFH_VERSION}")
        if not self.opcode.is_rdma and self.size == LsSize.RESERVED:
            found.append("reserved L/S size")
        elif len(self.payload) != self.expected_payload_octets():
            found.append(f"payload of {len(self.payload)} octets, the TH announces "
                         f"{self.expected_payload_octets()}")
        if len(self.body()) > MAX_BODY_OCTETS:
            found.append(f"body of {len(self.body())} octets, at most {MAX_BODY_OCTETS}")
        return found

    def to_json_dict(self):
        """The JSON object of ``ethlink frame``: OEFH fields, ``opcode`` by name, the TH fields,
        ``payload`` in hex and, for a decoded frame, ``fcs_ok``."""
        result = {name: int(value) for name, value in self.oefh_fields().items()}
        result["opcode"] = self.opcode.name
        result.update({name: value if isinstance(value, bool) else int(value)
                       for name, value in self.th_fields().items()})
        result["payload"] = self.payload.hex()
        if self.fcs_ok is not None:
            result["fcs_ok"] = self.fcs_ok
        return result

    @classmethod
    def from_json_dict(cls, obj):
        """The frame described by a :meth:`to_json_dict` object (``fcs_ok`` optional).

        Raises :class:`FrameError` for a missing, unknown or ill-typed key.
        """
        if not isinstance(obj, dict):
            raise FrameError(f"a frame is a JSON object, got {type(obj).__name__}")
        try:
            opcode = Opcode[obj["opcode"]]
        except (KeyError, TypeError):
            raise FrameError(f"opcode must be one of {', '.join(op.name for op in Opcode)}, "
                             f"got {obj.get('opcode')!r}") from None
        number_keys = _OEFH_KEYS + _TH_KEYS[th_format(opcode)]
        required = {"opcode", "payload", *number_keys}
        if missing := required - set(obj):
            raise FrameError(f"missing key(s) {sorted(missing)}")
        if unknown := set(obj) - required - {"fcs_ok"}:
            raise FrameError(f"unknown key(s) {sorted(unknown)} for {opcode.name}")
        for name in number_keys:
            if not isinstance(obj[name], int):
                raise FrameError(f"{name} must be an integer, got {obj[name]!r}")
        try:
            payload = bytes.fromhex("".join(obj["payload"].split()))
        except (AttributeError, ValueError):
            raise FrameError(f"payload must be a hex string, got {obj['payload']!r}") from None
        return cls(opcode=opcode, payload=payload, fcs_ok=obj.get("fcs_ok"),
                   **{name: obj[name] for name in number_keys})


def header_value(frame):
    """The 176-bit big-endian value of the first 22 header octets (OEFH + TH, an L/S TH
    followed by zero octets): the value of :class:`~ethlink.rtl.wire.HeaderLayout`, as the
    header streams of the gateware carry it."""
    return int.from_bytes(frame.header_bytes().ljust(HEADER_OCTETS, b"\0"), "big")


def _random_field(rng, wire_format, name):
    return rng.randrange(1 << _field_width(wire_format, name))


def random_frame(rng, opcode=None, max_payload=256):
    """A random legal frame of ``opcode`` (of a random opcode if ``None``), drawn from ``rng``
    (a :class:`random.Random`). RDMA WRITE and READ_RSP carry 0…``max_payload`` octets."""
    opcode = rng.choice(list(Opcode)) if opcode is None else Opcode(opcode)
    is_response = vc_for(opcode) in (VirtualChannel.LS_RSP, VirtualChannel.RDMA_RSP)
    common = {
        "opcode": opcode,
        "dst": rng.randrange(ENDPOINTS),
        "src": rng.randrange(ENDPOINTS),
        "ecn": _random_field(rng, OEFH, "ecn"),
        # Ref: spec §4.2 — requests send status 0.
        "status": rng.choice(list(Status)) if is_response else Status.OK,
    }
    return (_random_rdma(rng, common, max_payload) if opcode.is_rdma
            else _random_ls(rng, common))


def _random_ls(rng, common):
    size = rng.choice([size for size in LsSize if size != LsSize.RESERVED])
    # Ref: spec §4.2 — the byte address is size-aligned, so line is a multiple of size / 64.
    lines_per_access = LsSize(size).octets // LsSize.B64.octets
    line = _random_field(rng, LS_TH, "line") // lines_per_access * lines_per_access
    payload_octets = ls_payload_octets(common["opcode"], size, common["status"])
    # Ref: spec §9 — L/S requests hash the line; responses reuse the request's entropy.
    return Frame(**common, entropy=ls_entropy(line), size=size, line=line,
                 tag=_random_field(rng, LS_TH, "tag"), payload=rng.randbytes(payload_octets))


def _random_rdma(rng, common, max_payload):
    opcode = common["opcode"]
    fields = {name: _random_field(rng, RDMA_TH, name)
              for name in ("first", "last", "msg", "addr", "offset")}
    payload = b""
    if opcode in (Opcode.WRITE, Opcode.READ_RSP):
        # Ref: spec §4.2 — length = payload octets in this packet.
        payload = rng.randbytes(rng.randint(0, max_payload))
        fields["length"] = len(payload)
    elif opcode == Opcode.READ_REQ:
        # Ref: spec §4.2 — length = total octets wanted (≤ 16 MiB, as far as the field goes).
        fields["length"] = rng.randrange(1, 1 << _field_width(RDMA_TH, "length"))
    else:
        # An ACK names only (msg, status); its address fields stay 0.
        fields.update(addr=0, offset=0, length=0)
    return Frame(**common, **fields, entropy=_random_field(rng, OEFH, "entropy"),
                 payload=payload)


def _rewrite(frame, wire_format, position, **fields):
    """``frame`` (body + FCS) with ``fields`` of the header at octet ``position`` replaced and
    the FCS recomputed, so that only the header is wrong."""
    body = bytearray(frame[:-FCS_OCTETS])
    values = wire_format.unpack(body[position:]) | fields
    body[position:position + wire_format.octets] = wire_format.pack(**values)
    return bytes(body) + fcs(body)


def with_bad_version(frame, ver=0):
    """``frame`` (body + FCS) with OEFH ``ver`` set to a value other than 1 and a good FCS."""
    if ver == OEFH_VERSION:
        raise ValueError(f"version {ver} is the good one")
    return _rewrite(frame, OEFH, 0, ver=ver)


def with_bad_opcode(frame, opcode=0):
    """``frame`` (body + FCS) with an undefined TH opcode and a good FCS."""
    if th_octets(opcode) is not None:
        raise ValueError(f"opcode {opcode} is defined")
    # The opcode is the top field of both THs, so the L/S view rewrites it in either.
    return _rewrite(frame, LS_TH, OEFH.octets, opcode=opcode)


def with_bad_size(frame):
    """``frame`` (an L/S frame, body + FCS) with the reserved size code and a good FCS."""
    if Opcode(peek_opcode(frame[OEFH.octets:])).is_rdma:
        raise ValueError("only an L/S TH has a size field")
    return _rewrite(frame, LS_TH, OEFH.octets, size=LsSize.RESERVED)


def truncated(frame, n):
    """The first ``n`` body octets of ``frame`` (body + FCS), followed by their good FCS."""
    body = frame[:-FCS_OCTETS][:n]
    return bytes(body) + fcs(body)
