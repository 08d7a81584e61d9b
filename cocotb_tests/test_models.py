"""Tests of the golden models against the vectors of the wire contract (spec §4, §5, §9), and of
the tools built on them: ``ethlink frame`` and the scapy layers.

Pure pytest: no simulator.
"""

import argparse
import io
import json
import random

import pytest
from amaranth.lib.crc.catalog import CRC32_ETHERNET
from scapy.packet import Padding, Raw
from scapy.utils import rdpcap

from ethlink import frame_cli
from ethlink.rtl.wire import (
    HeaderLayout, LcwType, LsSize, Opcode, OEFH, Status, VirtualChannel,
)
from ethlink.sim.models import (
    Frame, FrameError, crc8, crc16_ccitt_false, credit_update, decode_lcw, encode_lcw, fcs,
    header_value, llr_ack, llr_nack, ls_entropy, make_lcw, parse_lcw, random_frame,
    select_port, sen, truncated, with_bad_opcode, with_bad_size, with_bad_version,
)
from ethlink.sim.models.lcw import start_check
from ethlink.sim.models.mac import preamble
from ethlink.sim.scapy_layers import (
    DLT_USER0, LsTH, OEFH as OefhLayer, RdmaTH, dissect, write_pcap,
)

# Ref: spec §4.1 and §4.2 vectors.
OEFH_VECTOR = bytes.fromhex("50 12 30 45 be ef")
LOAD_REQ_VECTOR = bytes.fromhex("50123045beef 1000700000001000 69f936d9")
LOAD_REQ = Frame(opcode=Opcode.LOAD_REQ, vc=2, dst=0x123, src=0x045, entropy=0xBEEF,
                 size=LsSize.B64, tag=7, line=0x1000)

RANDOM_FRAMES_PER_OPCODE = 60


def random_frames(opcode, seed):
    rng = random.Random(f"{seed}-{opcode.name}")
    return [random_frame(rng, opcode) for _ in range(RANDOM_FRAMES_PER_OPCODE)]


# --- frame vectors (spec §4) -----------------------------------------------------------------

def test_oefh_vector():
    assert OEFH.pack(ver=1, vc=2, ecn=0, dst=0x123, src=0x045, entropy=0xBEEF) == OEFH_VECTOR
    assert LOAD_REQ.header_bytes()[:OEFH.octets] == OEFH_VECTOR


def test_load_req_vector_encodes():
    assert LOAD_REQ.to_bytes() == LOAD_REQ_VECTOR
    assert LOAD_REQ.to_bytes(with_fcs=False) == LOAD_REQ_VECTOR[:-4]


def test_load_req_vector_decodes():
    frame = Frame.from_bytes(LOAD_REQ_VECTOR)
    assert frame == LOAD_REQ
    assert frame.fcs_ok is True
    assert frame.defects() == []
    assert Frame.from_bytes(LOAD_REQ_VECTOR[:-4], has_fcs=False) == LOAD_REQ


@pytest.mark.parametrize("seed", range(4))
def test_fcs_is_amaranth_crc32_ethernet(seed):
    rng = random.Random(seed)
    crc32 = CRC32_ETHERNET(8)
    for length in (0, 1, 17, 64, 2070):
        body = rng.randbytes(length)
        expected = crc32.compute(body).to_bytes(4, "little")
        assert fcs(body) == expected, f"actual {fcs(body).hex()}, expected {expected.hex()}"


def test_header_value_matches_header_layout():
    value = header_value(LOAD_REQ)
    assert value == int.from_bytes(LOAD_REQ_VECTOR[:14] + bytes(8), "big")
    view = HeaderLayout().from_bits(value)
    assert (view.oefh.vc, view.oefh.dst, view.oefh.src, view.oefh.entropy) == \
        (2, 0x123, 0x045, 0xBEEF)
    assert (view.th.ls.opcode, view.th.ls.tag, view.th.ls.line) == (Opcode.LOAD_REQ, 7, 0x1000)


def test_header_value_of_rdma_frames():
    for frame in random_frames(Opcode.WRITE, "header"):
        view = HeaderLayout().from_bits(header_value(frame))
        assert view.oefh.dst == frame.dst
        assert (view.th.rdma.opcode, view.th.rdma.msg, view.th.rdma.addr,
                view.th.rdma.length, view.th.rdma.offset) == \
            (Opcode.WRITE, frame.msg, frame.addr, frame.length, frame.offset)


# --- random frames ---------------------------------------------------------------------------

@pytest.mark.parametrize("opcode", list(Opcode), ids=lambda opcode: opcode.name)
def test_random_frames_round_trip(opcode):
    for frame in random_frames(opcode, "round-trip"):
        decoded = Frame.from_bytes(frame.to_bytes())
        assert decoded == frame
        assert decoded.fcs_ok is True
        assert decoded.defects() == [], frame


# Ref: spec §3 — VC of each opcode.
EXPECTED_VC = {
    Opcode.LOAD_REQ: VirtualChannel.LS_REQ, Opcode.STORE_REQ: VirtualChannel.LS_REQ,
    Opcode.LOAD_RSP: VirtualChannel.LS_RSP, Opcode.STORE_RSP: VirtualChannel.LS_RSP,
    Opcode.WRITE: VirtualChannel.RDMA_REQ, Opcode.READ_REQ: VirtualChannel.RDMA_REQ,
    Opcode.READ_RSP: VirtualChannel.RDMA_RSP, Opcode.ACK: VirtualChannel.RDMA_RSP,
}


@pytest.mark.parametrize("opcode", list(Opcode), ids=lambda opcode: opcode.name)
def test_random_frames_are_legal(opcode):
    for frame in random_frames(opcode, "legal"):
        assert frame.vc == EXPECTED_VC[opcode]
        assert frame.ver == 1
        assert 0 <= frame.dst < 1024 and 0 <= frame.src < 1024
        if opcode.is_rdma:
            if opcode in (Opcode.WRITE, Opcode.READ_RSP):
                assert frame.length == len(frame.payload) <= 256
            else:
                assert frame.payload == b""
            if opcode == Opcode.READ_REQ:
                assert 0 < frame.length <= 16 << 20
        else:
            assert frame.size != LsSize.RESERVED
            assert frame.line % (LsSize(frame.size).octets // 64) == 0
            assert frame.entropy == ls_entropy(frame.line)
            carries = opcode == Opcode.STORE_REQ or (opcode == Opcode.LOAD_RSP
                                                      and frame.status == Status.OK)
            assert len(frame.payload) == (LsSize(frame.size).octets if carries else 0)
        if opcode in (Opcode.LOAD_REQ, Opcode.STORE_REQ, Opcode.WRITE, Opcode.READ_REQ):
            assert frame.status == Status.OK


def test_random_frames_cover_every_opcode_and_status():
    rng = random.Random(7)
    frames = [random_frame(rng) for _ in range(400)]
    assert {frame.opcode for frame in frames} == set(Opcode)
    assert {frame.status for frame in frames if frame.opcode == Opcode.LOAD_RSP} == set(Status)


def test_random_frame_respects_max_payload():
    rng = random.Random(3)
    sizes = {len(random_frame(rng, Opcode.WRITE, max_payload=4).payload) for _ in range(100)}
    assert sizes == set(range(5))


def test_random_frames_are_reproducible():
    assert random_frames(Opcode.WRITE, 1) == random_frames(Opcode.WRITE, 1)


# --- JSON ------------------------------------------------------------------------------------

def test_json_keys_of_ls_frame():
    assert list(Frame.from_bytes(LOAD_REQ_VECTOR).to_json_dict()) == [
        "ver", "vc", "ecn", "dst", "src", "entropy", "opcode",
        "size", "status", "tag", "line", "payload", "fcs_ok"]
    assert "fcs_ok" not in LOAD_REQ.to_json_dict()


def test_json_keys_and_types_of_rdma_frame():
    frame = random_frames(Opcode.WRITE, "json")[0]
    obj = frame.to_json_dict()
    assert list(obj) == ["ver", "vc", "ecn", "dst", "src", "entropy", "opcode",
                         "status", "first", "last", "msg", "addr", "length", "offset",
                         "payload"]
    assert obj["opcode"] == "WRITE"
    assert isinstance(obj["first"], bool) and isinstance(obj["last"], bool)
    assert type(obj["addr"]) is int and obj["payload"] == frame.payload.hex()


@pytest.mark.parametrize("opcode", list(Opcode), ids=lambda opcode: opcode.name)
def test_json_round_trip(opcode):
    for frame in random_frames(opcode, "json"):
        obj = json.loads(json.dumps(frame.to_json_dict()))
        assert Frame.from_json_dict(obj) == frame
        decoded = Frame.from_bytes(frame.to_bytes()).to_json_dict()
        assert Frame.from_json_dict(decoded).to_json_dict() == decoded


@pytest.mark.parametrize("change, message", [
    ({"opcode": "NOP"}, "opcode must be one of"),
    ({"msg": 1}, "unknown key"),
    ({"dst": "0x123"}, "dst must be an integer"),
    ({"payload": "abc"}, "payload must be a hex string"),
    ({"vc": 8}, "does not fit"),
])
def test_json_errors(change, message):
    obj = LOAD_REQ.to_json_dict() | change
    with pytest.raises(FrameError, match=message):
        Frame.from_json_dict(obj)


def test_json_missing_key():
    obj = LOAD_REQ.to_json_dict()
    del obj["line"]
    with pytest.raises(FrameError, match="missing key"):
        Frame.from_json_dict(obj)


# --- malformed frames ------------------------------------------------------------------------

@pytest.mark.parametrize("length, message", [
    (0, "too short for the OEFH"),
    (9, "too short for the OEFH"),
    (10, "ends before the transaction header"),
    (17, "too short for the LOAD_REQ transaction header"),
])
def test_short_frames_raise(length, message):
    with pytest.raises(FrameError, match=message):
        Frame.from_bytes(LOAD_REQ_VECTOR[:length])


def test_truncated_frames_raise():
    write = random_frames(Opcode.WRITE, "truncated")[0].to_bytes()
    for n in range(OEFH.octets + 16):
        with pytest.raises(FrameError):
            Frame.from_bytes(truncated(write, n))


def test_truncated_payload_is_a_defect():
    store = random_frames(Opcode.STORE_REQ, "truncated")[0]
    frame = Frame.from_bytes(truncated(store.to_bytes(), len(store.body()) - 1))
    assert frame.fcs_ok is True
    assert frame.defects() == [f"payload of {len(store.payload) - 1} octets, the TH announces "
                               f"{len(store.payload)}"]


def test_bad_version():
    frame = Frame.from_bytes(with_bad_version(LOAD_REQ_VECTOR))
    assert frame.ver == 0 and frame.fcs_ok is True
    assert frame.defects() == ["version 0, expected 1"]


@pytest.mark.parametrize("opcode", [Opcode.LOAD_REQ, Opcode.WRITE],
                         ids=lambda opcode: opcode.name)
def test_bad_opcode(opcode):
    frame = random_frames(opcode, "bad-opcode")[0].to_bytes()
    for bad in (0, 5, 6, 7, 12, 15):
        with pytest.raises(FrameError, match=f"undefined opcode {bad:#x}"):
            Frame.from_bytes(with_bad_opcode(frame, bad))


def test_bad_size():
    frame = Frame.from_bytes(with_bad_size(LOAD_REQ_VECTOR))
    assert frame.size == LsSize.RESERVED and frame.fcs_ok is True
    assert frame.defects() == ["reserved L/S size"]
    with pytest.raises(ValueError):
        with_bad_size(random_frames(Opcode.WRITE, "bad-size")[0].to_bytes())


def test_bad_fcs():
    corrupted = bytearray(LOAD_REQ_VECTOR)
    corrupted[9] ^= 0x01
    frame = Frame.from_bytes(bytes(corrupted))
    assert frame.fcs_ok is False
    assert frame.defects() == ["FCS mismatch"]


# --- LCW (spec §5) ---------------------------------------------------------------------------

def test_crc8_check_value():
    assert crc8(b"123456789") == 0xF4


@pytest.mark.parametrize("octets, expected", [
    (llr_ack(0x12345), "01 12 34 50 00 00 0a"),
    (credit_update(3, 0xABCDE), "10 1d 5e 6f 00 00 e2"),
    (sen(0x00A, False, 5, 3), "20 00 a0 28 18 00 29"),
], ids=["LLR_ACK", "CREDIT_UPDATE", "SEN"])
def test_lcw_vectors(octets, expected):
    assert octets == bytes.fromhex(expected), f"actual {octets.hex(' ')}, expected {expected}"


def test_lcw_decode():
    assert decode_lcw(bytes.fromhex("01 12 34 50 00 00 0a")) == \
        (LcwType.LLR_ACK, 0x1234500000, True)
    assert parse_lcw(sen(0x00A, False, 5, 3)) == \
        (LcwType.SEN, {"endpoint": 0x00A, "reachable": 0, "event": 5, "port": 3, "rsvd": 0},
         True)
    assert parse_lcw(llr_nack(0xFFFFF))[:2] == \
        (LcwType.LLR_NACK, {"seq": 0xFFFFF, "nonce": 0, "rsvd": 0})


def test_lcw_round_trip_and_crc_failure():
    rng = random.Random(5)
    for _ in range(200):
        lcw_type, payload = rng.choice(list(LcwType)), rng.randrange(1 << 40)
        octets = encode_lcw(lcw_type, payload)
        assert decode_lcw(octets) == (lcw_type, payload, True)
        corrupted = bytearray(octets)
        corrupted[rng.randrange(7)] ^= 1 << rng.randrange(8)
        assert decode_lcw(bytes(corrupted))[2] is False


def test_lcw_undefined_type():
    assert parse_lcw(encode_lcw(0x7F, 1)) == (0x7F, None, True)


def test_lcw_fields_must_fit():
    with pytest.raises(ValueError):
        make_lcw(LcwType.LLR_ACK, seq=1 << 20)


# --- path selection (spec §9) ----------------------------------------------------------------

def test_crc16_check_value():
    assert crc16_ccitt_false(b"123456789") == 0x29B1


@pytest.mark.parametrize("dst, entropy, reachable, expected", [
    (0x123, 0xBEEF, 0b1111, 1),
    (0x123, 0xBEEF, 0b1011, 1),
    (0x007, 0x0000, 0b0011, 0),
    (0x3FF, 0xFFFF, 0b0111, 2),
    (0x005, 0x0001, 0b0000, None),
])
def test_path_select_vectors(dst, entropy, reachable, expected):
    assert select_port(dst, entropy, reachable) == expected


def test_path_select_skips_links_that_are_down():
    assert select_port(0x123, 0xBEEF, 0b1111, links_up_mask=0b1101) in (0, 2, 3)
    assert select_port(0x123, 0xBEEF, 0b0011, links_up_mask=0b1100) is None
    for port in range(4):
        assert select_port(0x3FF, 0xFFFF, 0b1111, links_up_mask=1 << port) == port


def test_ls_entropy():
    assert ls_entropy(0x1000) == 0x1000
    assert ls_entropy(0xABC_1234_5678) == 0x5678 ^ 0x1234 ^ 0xABC


# --- ethlink frame ---------------------------------------------------------------------------

def run_frame_command(argv):
    parser = argparse.ArgumentParser(prog="ethlink")
    frame_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["frame", *argv])
    return args.func(args)


def test_cli_decode(capsys):
    assert run_frame_command(["decode", "50123045beef 1000700000001000 69f936d9"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert json.loads(out) == Frame.from_bytes(LOAD_REQ_VECTOR).to_json_dict()
    assert json.loads(out)["fcs_ok"] is True


def test_cli_decode_split_arguments(capsys):
    assert run_frame_command(["decode", "50123045", "beef10007000", "00001000 69F936D9"]) == 0
    assert json.loads(capsys.readouterr().out)["tag"] == 7


@pytest.mark.parametrize("text, message", [
    ("50123045", "too short"),
    ("50123045beef", "too short"),
    ("50123045beef00 00000000", "undefined opcode 0x0"),
    ("5x", "hex"),
])
def test_cli_decode_errors(capsys, text, message):
    assert run_frame_command(["decode", text]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


def test_cli_encode(capsys, monkeypatch):
    obj = LOAD_REQ.to_json_dict()
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(obj)))
    assert run_frame_command(["encode"]) == 0
    assert capsys.readouterr().out == LOAD_REQ_VECTOR.hex() + "\n"


def test_cli_decode_then_encode(capsys, monkeypatch):
    for frame in (random_frame(random.Random(seed)) for seed in range(20)):
        assert run_frame_command(["decode", frame.to_bytes().hex()]) == 0
        monkeypatch.setattr("sys.stdin", io.StringIO(capsys.readouterr().out))
        assert run_frame_command(["encode"]) == 0
        assert capsys.readouterr().out.strip() == frame.to_bytes().hex()


def xgmii_expected(start_lanes, frame):
    """The words of ``frame`` (body + FCS) after the start word ``start_lanes`` (8 octets, lane
    0 first), built from spec §5: the octets, /T/ (0xFD), /I/ (0x07) to the end of the word."""
    octets = start_lanes + frame + b"\xfd"
    ctrl = [1] + [0] * (len(octets) - 2) + [1]
    octets += b"\x07" * (-len(octets) % 8)
    ctrl += [1] * (len(octets) - len(ctrl))
    return [{"data": octets[i:i + 8].hex(),
             "ctrl": f"{sum(c << j for j, c in enumerate(ctrl[i:i + 8])):02x}"}
            for i in range(0, len(octets), 8)]


@pytest.mark.parametrize("argv, start", [
    # Ref: spec v1.1 §5 — the whole start word of seq 0x12345 is fb 55 55 e8 e1 23 45 d5.
    (["--seq", "0x12345"], "fb 55 55 e8 e1 23 45 d5"),
    (["--seq", "1"], "fb 55 55 c9 e0 00 01 d5"),
    ([], "fb 55 55 55 55 55 55 d5"),
])
def test_cli_encode_xgmii(capsys, monkeypatch, argv, start):
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(LOAD_REQ.to_json_dict())))
    assert run_frame_command(["encode", "--xgmii", *argv]) == 0
    words = json.loads(capsys.readouterr().out)
    assert words == xgmii_expected(bytes.fromhex(start), LOAD_REQ_VECTOR)
    assert words[0]["ctrl"] == "01" and words[-1]["ctrl"] == "fc"


@pytest.mark.parametrize("argv, message", [
    (["--seq", "3"], "--seq needs --xgmii"),
])
def test_cli_encode_xgmii_errors(capsys, monkeypatch, argv, message):
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(LOAD_REQ.to_json_dict())))
    assert run_frame_command(["encode", *argv]) == 1
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("q, c", [
    # Ref: spec v1.1 §5 vectors (Q1 Q2 Q3 -> C).
    ("e0 00 00", 0xCE), ("e0 00 01", 0xC9), ("e1 23 45", 0xE8), ("ef ff ff", 0xAD),
])
def test_start_check_vectors(q, c):
    assert start_check(bytes.fromhex(q)) == c
    seq = int.from_bytes(bytes.fromhex(q), "big") & 0xFFFFF
    assert preamble(seq) == bytes([0x55, 0x55, c]) + bytes.fromhex(q) + b"\xd5"


@pytest.mark.parametrize("text, message", [
    ("{", "not JSON"),
    ("[]", "JSON object"),
    ('{"opcode": "LOAD_REQ"}', "missing key"),
])
def test_cli_encode_errors(capsys, monkeypatch, text, message):
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert run_frame_command(["encode"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


# --- scapy layers ----------------------------------------------------------------------------

def test_scapy_dissects_load_req():
    packet = dissect(LOAD_REQ_VECTOR)
    assert (packet[OefhLayer].ver, packet[OefhLayer].vc, packet[OefhLayer].dst,
            packet[OefhLayer].src, packet[OefhLayer].entropy) == (1, 2, 0x123, 0x045, 0xBEEF)
    assert (packet[LsTH].opcode, packet[LsTH].size, packet[LsTH].tag, packet[LsTH].line) == \
        (Opcode.LOAD_REQ, 0, 7, 0x1000)
    assert Raw not in packet
    assert packet[Padding].load == LOAD_REQ_VECTOR[-4:]
    assert bytes(packet) == LOAD_REQ_VECTOR


def test_scapy_dissects_write():
    frame = random_frames(Opcode.WRITE, "scapy")[1]
    assert frame.payload
    packet = dissect(frame.to_bytes())
    assert RdmaTH in packet and LsTH not in packet
    th = packet[RdmaTH]
    assert (th.opcode, th.status, th.first, th.last, th.msg, th.addr, th.length, th.offset) == \
        (Opcode.WRITE, frame.status, frame.first, frame.last, frame.msg, frame.addr,
         frame.length, frame.offset)
    assert packet[Raw].load == frame.payload
    assert packet[Padding].load == fcs(frame.body())


def test_scapy_leaves_undefined_opcode_raw():
    packet = dissect(with_bad_opcode(LOAD_REQ_VECTOR))
    assert LsTH not in packet and RdmaTH not in packet and Raw in packet


def test_pcap_round_trip(tmp_path):
    frames = [LOAD_REQ.to_bytes(), *(random_frame(random.Random(seed)).to_bytes()
                                     for seed in range(10))]
    path = tmp_path / "frames.pcap"
    write_pcap(path, frames)
    packets = rdpcap(str(path))
    assert [bytes(packet) for packet in packets] == frames
    assert all(isinstance(packet, OefhLayer) for packet in packets)
    assert packets[0][LsTH].tag == 7
    # The pcap global header ends with the link type (little-endian as scapy writes it).
    assert int.from_bytes(path.read_bytes()[20:24], "little") == DLT_USER0 == 147
