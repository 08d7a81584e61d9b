"""``ethlink demo`` end to end: the domain simulates, the report's figures are the documented
latencies, the frame stream runs at line rate, and the link pair repairs the errors injected
into it without losing a frame."""

import json

from ethlink.rtl.nic.nic import Nic
from ethlink.sim import demo
from ethlink.sim.demo import run_demo


def test_demo_report_figures():
    # The NIC part runs the demo's own scenario (its load is what can push RDMA commands past
    # the requester's timeout); the forwarding and link parts a shorter one.
    report = run_demo(scenario={"frames": 300, "seed": 7},
                      link_scenario={"frames": 150, "bers": [1e-4]})
    assert report["mismatches"] == 0 and report["dropped"] == 0
    link = report["link"]
    assert link["frames_sent"] == link["frames_delivered"] == 2 * 150
    assert link["lost"] == link["duplicated"] == link["reordered"] == link["corrupted"] == 0
    assert link["runs"][0]["replays"] > 0          # errors were injected and repaired
    assert 0.2 < link["runs"][0]["goodput"] < 0.85
    assert report["frames"] == 300
    assert report["blocks"]["oefh_deparser"]["latency_cycles"] == 1
    assert report["blocks"]["oefh_parser"]["latency_cycles"] == 1
    # Back-to-back frames keep the frame stream busy every cycle.
    assert report["frame_stream_utilisation"] == 1.0
    nic = report["nic"]
    assert nic["requests"] == 2 * demo.DEFAULT_NIC_SCENARIO["requests"]
    assert nic["data_mismatches"] == nic["timeouts"] == 0, nic["errors"]
    assert nic["replays"] > 0                       # errors were injected and repaired
    assert nic["load_alone_cycles"]["tx"] == Nic.TX_LATENCY
    assert nic["load_alone_cycles"]["rx"] == Nic.RX_LATENCY
    assert nic["latency_cycles"]["p50"] >= nic["load_alone_cycles"]["round_trip"] - 1
    rdma = nic["rdma"]
    assert rdma["commands"] == 2 * demo.DEFAULT_NIC_SCENARIO["rdma_commands"]
    assert rdma["timeouts"] == 0
    assert sum(rdma["statuses"].values()) == rdma["commands"] and rdma["statuses"]["OK"] > 0
    assert rdma["goodput_octets_per_cycle"] > 0


def test_demo_command_writes_json(tmp_path, cli, monkeypatch):
    # The command's own path (arguments, report, JSON) at a few frames per part; the figures
    # the report carries are checked by test_demo_report_figures.
    monkeypatch.setitem(demo.DEFAULT_LINK_SCENARIO, "frames", 40)
    monkeypatch.setitem(demo.DEFAULT_LINK_SCENARIO, "bers", [1e-4])
    monkeypatch.setitem(demo.DEFAULT_NIC_SCENARIO, "requests", 40)
    monkeypatch.setitem(demo.DEFAULT_NIC_SCENARIO, "rdma_commands", 8)
    target = tmp_path / "demo.json"
    code, out, _ = cli("demo", "--frames", "50", "--json", str(target))
    assert code == 0
    assert "oefh_parser" in out and "end to end" in out and "replays" in out
    assert "nic_pair" in out and "request -> cpl" in out and "RDMA" in out
    assert "at the NIC's measured Fmax" in out
    report = json.loads(target.read_text())
    assert report["frames"] == 50 and report["mismatches"] == 0


def test_bench_forwarding_without_synthesis(tmp_path, cli):
    target = tmp_path / "bench.json"
    code, out, _ = cli("bench", "forwarding", "--no-synth", "--json", str(target))
    assert code == 0
    rows = json.loads(target.read_text())["rows"]
    assert {(row["block"], row["beat_octets"]) for row in rows} == {
        (block, width) for block in ("oefh_deparser", "oefh_parser") for width in (8, 16, 32, 64)}
    for row in rows:
        assert row["latency_cycles"] == 1 and row["beats_per_cycle"] == 1.0, row
    assert "oefh_parser" in out
