"""``ethlink bench nic --no-synth`` with few requests per run: every run agrees with the golden
model, the measured latencies are the ones the blocks state, and the throughput table is
complete and plausible (the data phase runs at one beat per cycle, so a larger access moves
more octets per cycle), the RDMA goodput of every message size is measured, the round-trip
floor is the spec's sum, and loads under RDMA complete while the DMA engines run flat out."""

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
        "ls_round_trip_cycles", "ls_round_trip_floor_cycles", "ls_p50_under_rdma_cycles",
        "ls_p99_under_rdma_cycles")

#: RDMA payload octets per cycle each way that count as the DMA engines running flat out. The
#: two ports' lines could carry 2 × 256/38 = 13.5 each way (a 256-octet WRITE packet is 303
#: octets, 38 words, on a line: start word, 278 of frame, FCS, /T/, gap), but a NIC's RDMA
#: frames all leave through one transmit path of one 8-octet beat a cycle (docs/nic.md §8),
#: which a 278-octet packet holds 35 cycles: at most 256/35 = 7.3 each way. The engine alone
#: waits for memory between packets (5.9 for 1 KiB messages, docs/rdma.md). 5.5 is 75 % of
#: the path's 7.3.
RDMA_FLAT_OUT = 5.5


def test_bench_nic_without_synthesis(tmp_path, cli, monkeypatch):
    # 16 KiB of RDMA per message size and op (the bench moves 64 KiB): one message of the
    # largest size, 256 of the smallest.
    monkeypatch.setitem(bench.RDMA_GOODPUT_SCENARIO, "octets", 1 << 14)
    # 8 loads per GPU under RDMA (the bench issues 32).
    monkeypatch.setitem(bench.LS_UNDER_RDMA_SCENARIO, "loads", 8)
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
    # The floor: both frames' words on the line (spec §4, §5), both 8-cycle lines and the AXI
    # RAM's 2 cycles, in series; the measured round trip is above it.
    assert result["ls_round_trip_floor"] == {"request_words": 4, "line_a_to_b": 8, "memory": 2,
                                             "response_words": 12, "line_b_to_a": 8}
    assert result["ls_round_trip_floor_cycles"] == 34 < result["ls_round_trip_cycles"]
    # Loads under RDMA: every one OK with the model's data, both memories as the models say,
    # every RDMA WRITE OK; the engines ran flat out both ways, on every port.
    under = result["ls_under_rdma"]
    assert under["loads"] == 2 * 8 and under["statuses"] == {"OK": 2 * 8}
    assert under["data_mismatches"] == 0 and under["timeouts"] == 0
    rdma = under["rdma"]
    assert rdma["commands"] > 0 and rdma["statuses"] == {"OK": rdma["commands"]}
    assert rdma["timeouts"] == 0
    assert all(all(per_port) for per_port in rdma["write_frames_per_port"].values()), rdma
    assert all(rate >= RDMA_FLAT_OUT for rate in rdma["window_octets_per_cycle"].values()), rdma
    assert (result["ls_round_trip_cycles"] <= under["latency_cycles"]["min"]
            <= result["ls_p50_under_rdma_cycles"] <= result["ls_p99_under_rdma_cycles"])
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
    assert "round-trip floor" in out and "loads under RDMA" in out
