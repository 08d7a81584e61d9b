"""Golden models of the EthLink wire contract (spec §4, §5, §9), used by the tests and tools."""

from .frame import (
    FrameError, Frame, FCS_OCTETS, ENDPOINTS, fcs, th_format, vc_for, peek_opcode,
    payload_octets, header_value, random_frame,
    with_bad_version, with_bad_opcode, with_bad_size, truncated,
)
from .lcw import (
    crc8, encode_lcw, decode_lcw, make_lcw, parse_lcw, llr_ack, llr_nack, credit_update, sen,
)
from .path import MAX_PORTS, crc16_ccitt_false, select_port, ls_entropy

__all__ = [
    "FrameError", "Frame", "FCS_OCTETS", "ENDPOINTS", "fcs", "th_format", "vc_for",
    "peek_opcode", "payload_octets", "header_value", "random_frame",
    "with_bad_version", "with_bad_opcode", "with_bad_size", "truncated",
    "crc8", "encode_lcw", "decode_lcw", "make_lcw", "parse_lcw",
    "llr_ack", "llr_nack", "credit_update", "sen",
    "MAX_PORTS", "crc16_ccitt_false", "select_port", "ls_entropy",
]
