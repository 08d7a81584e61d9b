"""``ethlink bench nic --no-synth`` with few requests per run: every run agrees with the golden
model, the measured latencies are the ones the blocks state, and the throughput table is
complete and plausible (the data phase runs at one beat per cycle, so a larger access moves
more octets per cycle), and the RDMA goodput of every message size is measured."""

import json

from ethlink import bench
from ethlink.rtl.nic.ls_requester import LsRequester
from ethlink.rtl.nic.ls_responder import LsTarget
from ethlink.rtl.nic.nic import Nic
from ethlink.rtl.nic.rdma_requester import RdmaRequester
from ethlink.rtl.nic.reachability import Reachability

KEYS = ("target_load_issue_cycles", "target_store_issue_cycles", "target_load_response_cycles",
        "target_throughput", "data_mismatches", "reachability_latency_cycles",
        "failover_cycles", "rdma_goodput_by_size", "ecp5", "tx_latency_cycles",
        "rx_latency_cycles",
        "ls_round_trip_cycles")


def test_bench_nic_without_synthesis(tmp_path, cli, monkeypatch):
    # 16 KiB of RDMA per message size and op (the bench moves 64 KiB): one message of the
    # largest size, 256 of the smallest.
    monkeypatch.setitem(bench.RDMA_GOODPUT_SCENARIO, "octets", 1 << 14)
    target = tmp_path / "bench.json"
    code, out, _ = cli("bench", "nic", "--no-synth", "--frames", "30", "--json", str(target))
    assert code == 0
    result = json.loads(target.read_text())
    assert all(key in result for key in KEYS), set(KEYS) - set(result)
    assert result["ecp5"] is None
    assert result["data_mismatches"] == 0
    width = result["beat_octets"]
    assert result["target_load_issue_cycles"] == LsTarget.LOAD_ISSUE_LATENCY
    assert result["target_store_issue_cycles"] == LsTarget.STORE_ISSUE_LATENCY
    assert result["target_load_response_cycles"] == LsTarget.LOAD_RESPONSE_LATENCY
    assert result["reachability_latency_cycles"] == Reachability.LATENCY
    assert result["unreachable_latency_cycles"] == LsRequester.FAIL_LATENCY
    assert result["rdma_unreachable_latency_cycles"] == RdmaRequester.FAIL_LATENCY
    assert result["tx_latency_cycles"] == Nic.TX_LATENCY
    assert result["rx_latency_cycles"] == Nic.RX_LATENCY
    engines = result["engines_only"]
    assert engines["tx_latency_cycles"] == LsRequester.TX_LATENCY
    assert engines["rx_latency_cycles"] == LsRequester.RX_LATENCY
    # The round trip holds at least both ends' latencies and a 64-octet frame each way.
    assert engines["ls_round_trip_cycles"] > (LsRequester.TX_LATENCY + LsRequester.RX_LATENCY
                                              + LsTarget.LOAD_ISSUE_LATENCY + 64 // width)
    # Through two NICs: both NICs' TX and RX and the lines on top of the engines alone.
    assert result["ls_round_trip_cycles"] > engines["ls_round_trip_cycles"] + 2 * (
        Nic.TX_LATENCY + Nic.RX_LATENCY)
    pair = result["nic_pair"]
    assert pair["requests"] == 2 * 30 and pair["timeouts"] == 0
    assert pair["latency_cycles"]["min"] >= result["ls_round_trip_cycles"] - 1
    assert 0 < pair["goodput_octets_per_cycle"] <= 2 * width
    for opcode in ("LOAD_REQ", "STORE_REQ"):
        by_size = {int(size): t["octets_per_cycle"]
                   for size, t in result["target_throughput"][opcode].items()}
        assert sorted(by_size) == [64, 128, 256]
        assert all(0 < value <= width for value in by_size.values()), by_size
        assert by_size[64] < by_size[128] < by_size[256], by_size
    # RDMA: every message completed OK with the models' data; a message moves at most a beat
    # per cycle (one packet at a time), and larger messages amortise the per-packet cost.
    for op, by_size in result["rdma_goodput_by_size"].items():
        by_size = {int(size): value for size, value in by_size.items()}
        assert sorted(by_size) == [64, 256, 1024, 4096, 16384], by_size
        assert all(0 < value <= width for value in by_size.values()), (op, by_size)
        assert by_size[64] < by_size[256] < by_size[1024], (op, by_size)
    # Link loss: the port went down (FLUSH) after the cut, no frame entered it after that, and
    # its queued frames were re-steered.
    failover = result["failover"]
    assert 0 < result["failover_cycles"] <= failover["link_down_cycles"]
    assert failover["frames_resteered"] > 0 and 0 < failover["frames_lost"] <= failover["timeouts"]
    assert failover["resteered_by_cycles"] >= failover["link_down_cycles"]
    assert "LOAD_REQ" in out and "RDMA goodput" in out and "link loss" in out
