"""``ethlink bench link --no-synth``: the figures it reports hold to the documented contract
(latencies, replay reaction within its goal), no frame is lost, duplicated or reordered at any
bit error rate, and a clean line runs at the MAC's framing limit."""

import json

from ethlink.bench import LINK_BERS, LINK_BODY_OCTETS, replay_buffer_octets
from ethlink.sim.models.mac import frame_words, gap_words

#: Goal of the issue: NACK received → first replayed word on XGMII.
REPLAY_REACTION_GOAL = 8


def framing_limit(body_octets, ifg=12):
    """Fraction of the line a stream of back-to-back frames of ``body_octets`` can fill."""
    words, t_lane = frame_words(bytes(body_octets))
    return body_octets / (8 * (len(words) + gap_words(t_lane, ifg)))


def test_bench_link_without_synthesis(tmp_path, cli):
    target = tmp_path / "bench.json"
    code, out, _ = cli("bench", "link", "--no-synth", "--frames", "80", "--json", str(target))
    assert code == 0
    result = json.loads(target.read_text())
    assert result["mac_tx_latency_cycles"] == 1
    assert result["link_tx_latency_cycles"] == result["mac_tx_latency_cycles"] + 1
    assert result["replay_reaction_cycles"] <= REPLAY_REACTION_GOAL
    assert result["replay_reaction_cut_cycles"] <= REPLAY_REACTION_GOAL
    # docs/link.md: with `tx_register` every frame, a replayed one too, reaches the line a
    # cycle later (link end TX 3, replay reaction 6 whether or not a frame is cut).
    assert result["tx_register"] == {"link_tx_latency_cycles": 3, "replay_reaction_cycles": 6,
                                     "replay_reaction_cut_cycles": 6}
    runs = 2 * len(LINK_BERS)                 # without and with the FEC
    assert result["frames_sent"] == runs * 2 * 80     # the goodput runs
    assert result["reordered"] == result["corrupted"] == result["flushes"] == 0
    # Ref: spec v1.1 §7 — lossless at any raw BER, 1e-3 without FEC included (start-word check).
    for key in ("ber_runs", "ber_runs_fec"):
        for ber, run in result[key].items():
            assert run["lost"] == run["duplicated"] == 0, (key, ber, run)
    # Ref: spec v1.1 §7 — a void frame is dropped silently: never delivered, no NACK; only
    # those the MAC had started go on the wire, and every one of them is dropped as void.
    void = result["void_frames"]
    assert void["voided"] > 20 and void["on_wire"] > 0, void
    assert void["dropped_as_void"] == void["on_wire"] <= void["voided"], void
    assert void["void_delivered"] == void["nacks"] == void["replays"] == 0, void
    assert void["lost"] == void["duplicated"] == void["reordered"] == void["corrupted"] == 0
    limit = framing_limit(LINK_BODY_OCTETS)
    for key in ("goodput_by_ber", "goodput_by_ber_fec"):
        goodput = {float(ber): value for ber, value in result[key].items()}
        assert set(goodput) == set(LINK_BERS)
        # A clean line fills the line up to the framing limit (LCWs ride in the gaps).
        assert 0.97 * limit <= goodput[0.0] <= limit, (key, goodput[0.0], limit)
    # Without FEC every bit error costs a replay: 1e-3 takes most of the line.
    assert result["goodput_by_ber"]["0.001"] < 0.5 * limit
    # With it the LLR has next to nothing left to repair up to 1e-4.
    assert result["goodput_by_ber_fec"]["0.0001"] >= 0.97 * limit
    assert result["replay_buffer_octets"]["100G"]["1000ns"] == replay_buffer_octets(100, 1000)
    assert result["ecp5"] is None
    assert "replay reaction" in out
