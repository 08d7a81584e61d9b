"""``ethlink bench cbfc --no-synth`` on a reduced sweep: no frame lost or buffer overflowed at
any point, ample credits fill the line up to the framing limit, throughput grows with the
credits and saturates at a knee near the bandwidth-delay product of the credit loop."""

import json

from ethlink import bench
from ethlink.sim.models.mac import frame_words, gap_words

DELAYS = (8, 64)
CREDITS = (8, 16, 24, 32, 40, 48, 64, 128)
FRAMES = 200

KEYS = ("overflows", "lost", "throughput_by_credits", "throughput_fraction_of_best",
        "stall_cycles", "update_overhead_octets_per_s", "update_overhead_fraction",
        "knee_credits", "bdp_credits", "rtt_cycles", "body_octets", "ecp5",
        "cbfc_tx_latency_cycles", "cbfc_rx_latency_cycles", "cbfc_update_to_frame_cycles",
        "cbfc_bypass_latency_cycles", "vc_isolation")
#: Words an end lets its LLR hold ahead of the wire (docs/cbfc.md, "Nothing piles up ahead of
#: the wire"; CbfcEnd's default ``tx_ahead_words``).
AHEAD_WORDS = 6


def framing_limit(body_octets, ifg=12):
    """Fraction of the line a stream of back-to-back frames of ``body_octets`` can fill."""
    words, t_lane = frame_words(bytes(body_octets))
    return body_octets / (8 * (len(words) + gap_words(t_lane, ifg)))


def test_bench_cbfc_without_synthesis(tmp_path, cli, monkeypatch):
    monkeypatch.setattr(bench, "CBFC_DELAYS", DELAYS)
    monkeypatch.setattr(bench, "CBFC_CREDITS", CREDITS)
    target = tmp_path / "bench.json"
    code, out, _ = cli("bench", "cbfc", "--no-synth", "--frames", str(FRAMES),
                       "--json", str(target))
    assert code == 0
    result = json.loads(target.read_text())
    assert all(key in result for key in KEYS), set(KEYS) - set(result)
    assert result["ecp5"] is None
    assert result["cbfc_tx_latency_cycles"] == result["cbfc_rx_latency_cycles"] == 2
    assert result["cbfc_bypass_latency_cycles"] == 1
    assert "knee" in out

    # Every point ran, carried traffic, and lost nothing.
    points = result["points"]
    assert {(p["delay"], p["credits"]) for p in points} == {(d, c) for d in DELAYS
                                                           for c in CREDITS}
    assert result["overflows"] == result["lost"] == result["dropped"] == 0
    assert result["duplicated"] == result["reordered"] == result["corrupted"] == 0
    for p in points:
        assert p["frames_in_window"] >= 3 and p["frames_delivered"] >= 10, p
        assert p["lost"] == p["overruns"] == 0, p
        # The receive buffer never held more than it advertised.
        assert p["occupancy_high"] <= p["credits"], p

    throughput = {int(d): {int(c): v for c, v in row.items()}
                  for d, row in result["throughput_by_credits"].items()}
    assert set(throughput) == set(DELAYS)
    limit = framing_limit(result["body_octets"])
    best = result["best_throughput"]
    assert best == max(v for row in throughput.values() for v in row.values())
    # Ample credits fill the line (LCWs in frames take a little of it).
    assert 0.95 * limit <= best <= limit, (best, limit)
    for d, row in throughput.items():
        values = [row[c] for c in CREDITS]
        # Every delay saturates within the sweep, and one frame's credits do not.
        assert max(values) >= 0.98 * best, (d, row)
        assert values[0] < 0.5 * best, (d, row)
        for (c0, v0), (c1, v1) in zip(zip(CREDITS, values), zip(CREDITS[1:], values[1:])):
            assert v1 >= v0 - 0.02 * best, (d, c0, v0, c1, v1)
        knee = result["knee_credits"][str(d)]
        bdp = result["bdp_credits"][str(d)]
        assert knee in CREDITS and row[knee] >= 0.95 * max(values)
        assert bdp / 2 <= knee <= 2 * bdp, (d, knee, bdp)
        rtt = result["rtt_cycles"][str(d)]
        assert 2 * d < rtt < 2 * d + 64, (d, rtt)
        # A single frame in flight stalls on credits most of the time.
        assert result["stall_cycles"][str(d)][str(CREDITS[0])] > result["window_cycles"] / 2
        for c in CREDITS:
            # At most one CREDIT_UPDATE per frame (the threshold is at least a frame's cost
            # below the knee), plus every VC's periodic UPDATE and SYNC.
            fraction = result["update_overhead_fraction"][str(d)][str(c)]
            ceiling = (1 / result["frame_words"] + result["vcs"] / result["update_period"]
                       + result["vcs"] / result["sync_period"] + 0.005)
            floor = (result["vcs"] / result["update_period"]
                     + result["vcs"] / result["sync_period"])
            assert 0.9 * floor < fraction < ceiling, (d, c, fraction, floor, ceiling)
            octets_per_s = result["update_overhead_octets_per_s"][str(d)][str(c)]
            assert abs(octets_per_s - fraction * 1.25e9) <= 0.01 * octets_per_s
    # The longer line needs more credits.
    assert result["knee_credits"][str(DELAYS[-1])] > result["knee_credits"][str(DELAYS[0])]

    # VC isolation: a VC 1 frame behind VC 0 saturating the line waits only for the VC 0
    # frame on the wire and the words the LLR holds ahead of it: at most its idle latency +
    # one VC 0 frame's words + AHEAD_WORDS + 4 (the registered grant, an LCW the MAC may put
    # first). (Before the LLR limited what it holds ahead of the wire: 745–770 cycles against
    # 51.) Nothing is lost on either VC and no buffer overflows.
    iso = result["vc_isolation"]
    assert iso["line_saturated"], "VC 0 ran dry: the line was not full"
    words, t_lane = frame_words(bytes(iso["bulk_octets"]))
    bulk_words = len(words) + gap_words(t_lane, 12)      # a VC 0 frame on the wire, with gap
    assert iso["probes"] == 20, iso
    bound = iso["idle_cycles"] + bulk_words + AHEAD_WORDS + 4
    assert iso["idle_cycles"] <= iso["loaded_median_cycles"] <= iso["loaded_max_cycles"] \
        <= bound, iso
    assert iso["lost"] == iso["duplicated"] == iso["reordered"] == iso["corrupted"] == 0, iso
    assert iso["overruns"] == 0, iso
    assert "VC isolation" in out
