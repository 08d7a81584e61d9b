"""The export registry and ``ethlink verilog``: names, parameters and port naming (spec §12)."""

import re

import pytest

from ethlink import exports
from ethlink.exports import EXPORTS, generate_verilog


def test_list_names_every_export(cli):
    code, out, _ = cli("verilog", "--list")
    assert code == 0
    for name in EXPORTS:
        assert re.search(rf"^{name}\s", out, re.M), f"{name} missing from --list"


def test_writes_named_module_with_axis_ports(tmp_path, cli):
    target = tmp_path / "parser.v"
    code, _, _ = cli("verilog", "oefh_parser", "--param", "beat_octets=16", "-o", str(target))
    assert code == 0
    text = target.read_text()
    assert re.search(r"^module oefh_parser\(", text, re.M)
    for port in ("clk", "rst", "s_axis_tdata", "s_axis_tkeep", "s_axis_tlast", "s_axis_tvalid",
                 "s_axis_tready", "m_axis_tdata", "m_axis_hdr_tdata", "m_axis_hdr_tvalid"):
        assert re.search(rf"\b(input|output)\b.*\b{port};", text), f"no port {port}"
    assert re.search(r"input \[127:0\] s_axis_tdata;", text)


@pytest.mark.parametrize("argv,message", [
    (["verilog", "no_such_block"], "no export named"),
    (["verilog", "oefh_parser", "--param", "beat_octets=12"], "beat_octets must be one of"),
    (["verilog", "oefh_parser", "--param", "width=8"], "has no parameter"),
    (["verilog", "oefh_parser", "--param", "beat_octets"], "expected KEY=VALUE"),
])
def test_bad_requests_fail_clearly(cli, argv, message):
    code, _, err = cli(*argv)
    assert code != 0
    assert message in err


def test_generation_is_deterministic():
    # Two real elaborations (generate_verilog keeps its text per process, which relies on this).
    first = exports._convert.__wrapped__("oefh_deparser", ())
    assert first == exports._convert.__wrapped__("oefh_deparser", ())
    assert first == generate_verilog("oefh_deparser", {"beat_octets": "8"})
