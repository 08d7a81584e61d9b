"""Scapy layers for EthLink frames (spec §4), for dissecting frames and pcaps.

A frame dissects as :class:`OEFH` / :class:`LsTH` or :class:`RdmaTH` (chosen by the opcode in
the first TH octet, spec §4.2) / ``Raw`` payload, with the FCS as trailing ``Padding``. The
field widths are those of :mod:`ethlink.rtl.wire`. Pcaps use link type ``DLT_USER0`` (147), which
importing this module registers, so ``rdpcap`` dissects their packets as :class:`OEFH`.
"""

from scapy.config import conf
from scapy.fields import BitEnumField, BitField
from scapy.packet import Packet
from scapy.utils import RawPcapWriter

from ..rtl import wire
from ..rtl.wire import Opcode
from .models.frame import payload_octets, peek_opcode

__all__ = ["DLT_USER0", "OEFH", "LsTH", "RdmaTH", "dissect", "write_pcap"]

#: The pcap link type of EthLink frames (OEFH first, FCS last): the first private-use type.
DLT_USER0 = 147

_OPCODE_NAMES = {opcode.value: opcode.name for opcode in Opcode}


def _bit_fields(wire_format, **defaults):
    """Scapy fields for ``wire_format``, most significant first; ``opcode`` shows its name."""
    return [BitEnumField(name, defaults.get(name, 0), width, _OPCODE_NAMES)
            if name == "opcode" else BitField(name, defaults.get(name, 0), width)
            for name, width in wire_format.fields]


class _TransactionHeader(Packet):
    """A TH: its payload is as long as the TH announces; what follows (the FCS) is padding."""
    wire_format = None

    def extract_padding(self, s):
        fields = {name: self.getfieldval(name) for name, _ in self.wire_format.fields}
        length = payload_octets(self.opcode, fields)
        return s[:length], s[length:]


class LsTH(_TransactionHeader):
    name = "EthLink L/S TH"
    wire_format = wire.LS_TH
    fields_desc = _bit_fields(wire.LS_TH, opcode=Opcode.LOAD_REQ)


class RdmaTH(_TransactionHeader):
    name = "EthLink RDMA TH"
    wire_format = wire.RDMA_TH
    fields_desc = _bit_fields(wire.RDMA_TH, opcode=Opcode.WRITE)


class OEFH(Packet):
    name = "EthLink OEFH"
    fields_desc = _bit_fields(wire.OEFH, ver=wire.OEFH_VERSION)

    def guess_payload_class(self, payload):
        """The TH layer of the opcode in the first payload octet; ``Raw`` if it is undefined."""
        if not payload or wire.th_octets(peek_opcode(payload)) is None:
            return conf.raw_layer
        return RdmaTH if Opcode(peek_opcode(payload)).is_rdma else LsTH


conf.l2types.register(DLT_USER0, OEFH)


def dissect(frame_bytes):
    """The scapy packet of one frame (body + FCS); ``Raw`` if it is shorter than an OEFH."""
    frame_bytes = bytes(frame_bytes)
    if len(frame_bytes) < wire.OEFH.octets:
        return conf.raw_layer(frame_bytes)
    return OEFH(frame_bytes)


def write_pcap(path, frames):
    """Write ``frames`` (each body + FCS, as octets) to the pcap file ``path`` with link type
    :data:`DLT_USER0`; read it back with ``scapy.utils.rdpcap``."""
    with RawPcapWriter(str(path), linktype=DLT_USER0) as writer:
        writer.write_header(None)
        for frame in frames:
            writer.write(bytes(frame))
