"""``ethlink demo``: the default EthLink domain, simulated cycle-accurately, with its report.

Three parts, all on Verilator:

* the forwarding path, :class:`ethlink.rtl.harness.loopback.ForwardingLoopback`, with a seeded mix of
  L/S and RDMA frames checked against the golden model (:mod:`ethlink.sim.demo_bench`);
* a link pair, :class:`ethlink.rtl.harness.pairs.LinkPair` (MAC + LLR both ways over lines
  with injected bit errors), with saturated traffic both ways; every frame is checked for
  loss, duplication, reordering and damage, and the replays and goodput are reported
  (:mod:`ethlink.sim.link_bench`);
* two NICs back to back, :class:`ethlink.rtl.harness.pairs.NicPair` (L/S and RDMA requesters and
  targets, two lossless ports, multipath steering, AXI RAM as each GPU's memory) with both
  GPUs issuing random loads and stores and both DMA engines random RDMA WRITEs and READs to
  each other over lines with bit errors; completions, load data and memories are checked
  against the golden models, and the latency percentiles and goodput are reported
  (:mod:`ethlink.sim.nic_bench`).

This module prints the tables and writes the same figures as JSON.

Cycles are the measurement; nanoseconds are cycles × the stated clock period
(``--clock-mhz``, default 156.25 MHz: a 64-bit datapath at 10 Gb/s).
"""

import json
import statistics
import sys
from pathlib import Path

from ethlink.toolchain import build_cache_dir

__all__ = ["DEFAULT_SCENARIO", "DEFAULT_LINK_SCENARIO", "run_demo", "run_link_demo", "percentiles",
           "register"]

DEFAULT_SCENARIO = {
    "frames": 2000,
    "seed": 1,
    "ls_fraction": 0.6,
    "rdma_max_payload": 1024,
}


def percentiles(values):
    """min, p50, p99, max and mean of ``values`` (a non-empty sequence)."""
    ordered = sorted(values)

    def pick(q):
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    return {"min": ordered[0], "p50": pick(0.5), "p99": pick(0.99), "max": ordered[-1],
            "mean": round(statistics.fmean(ordered), 2)}


#: The link part of the demo: a link pair (MAC + LLR both ways, 8-cycle lines) carrying
#: saturated traffic both ways through raw bit errors, no FEC.
DEFAULT_LINK_SCENARIO = {
    "seed": 1,
    "bers": [1e-5, 1e-4],
    "frames": 400,
    "body_octets": 128,
    "timeout_cycles": 400_000,
    "line_bits": 72,
    "line_duty": 1.0,
}


def run_link_demo(clock_mhz=156.25, scenario=None):
    """Run the link pair with injected errors; returns its part of the report."""
    from ethlink.sim.runner import run_bench

    scenario = {**DEFAULT_LINK_SCENARIO, **(scenario or {})}
    raw = run_bench("link_pair", "ethlink.sim.link_bench", {"delay": 8, "replay_max": 64},
                    testcase="goodput", scenario=scenario, prefix="demo-link-")
    line_rate_gbps = 64 * clock_mhz / 1000
    return {
        "domain": "link_pair (LinkEnd A <-> 8-cycle lines with bit errors <-> LinkEnd B)",
        "scenario": scenario,
        "rtt_cycles": raw["rtt_cycles"],
        "rtt_ns": round(raw["rtt_cycles"] * 1000 / clock_mhz, 1),
        **{key: raw[key] for key in ("frames_sent", "frames_delivered", "lost", "duplicated",
                                     "reordered", "corrupted", "flushes")},
        "runs": [{"ber": point["ber_set"], "ber_measured": point["ber_measured"],
                  "replays": point["replays"], "goodput": point["goodput"],
                  "goodput_gbps": round(point["goodput"] * line_rate_gbps, 2)}
                 for point in raw["points"].values()],
    }


#: The NIC part of the demo: two NICs back to back (two ports, one with FEC), both GPUs issuing
#: random loads and stores to each other with no idle and up to ``window`` outstanding while
#: both DMA engines run ``rdma_commands`` random RDMA WRITEs and READs each, up to
#: ``rdma_window`` outstanding, every line with raw bit errors. The ports serve L/S first, so
#: under this saturating L/S load an RDMA command's latency grows with the commands queued
#: ahead of it (about 400 cycles each at the far target); ``rdma_window`` keeps it inside the
#: pair's ``timeout_cycles`` (4000) with room to spare: with every message id outstanding (16)
#: commands wait up to about 6000 cycles and time out (docs/rdma.md §4, "Timeouts").
DEFAULT_NIC_SCENARIO = {"requests": 250, "window": 16, "rdma_commands": 100, "rdma_window": 4,
                        "ber": 1e-4, "seed": 1}


def run_nic_demo(clock_mhz=156.25, scenario=None):
    """Run the NIC pair with injected errors; returns its part of the report."""
    from ethlink.bench import measured_fmax, run_nic_pair

    scenario = {**DEFAULT_NIC_SCENARIO, **(scenario or {})}
    raw = run_nic_pair(scenario)
    ns = 1000.0 / clock_mhz
    # The same cycles at the clock the NIC reaches on the FPGA (docs/timing.md's table).
    fmax = measured_fmax("nic")
    return {
        "domain": "nic_pair (NIC A <-> 2 ports of MAC + LLR + CBFC, port 1 with RS(272,258) "
                  "FEC, 8-cycle lines with bit errors <-> NIC B; AXI RAM behind each)",
        "scenario": scenario,
        "load_alone_cycles": raw["load"], "store_alone_cycles": raw["store"],
        "load_round_trip_ns": round(raw["load"]["round_trip"] * ns, 1),
        "nic_fmax": {"mhz": fmax[0], "device": fmax[1],
                     "load_round_trip_ns": round(raw["load"]["round_trip"] * 1000 / fmax[0], 1)}
                    if fmax else None,
        **{key: raw[key] for key in ("requests", "window", "cycles", "latency_cycles",
                                     "payload_octets",
                                     "goodput_octets_per_cycle", "data_mismatches", "errors",
                                     "timeouts", "replays", "frames_per_port", "rdma")},
        "goodput_gbps": round(raw["goodput_octets_per_cycle"] * 8 * clock_mhz / 1000, 2),
    }


def run_demo(beat_octets=8, clock_mhz=156.25, scenario=None, link_scenario=None, link=True,
             nic_scenario=None, nic=True):
    """Run the demo domain and (with ``link``) the link pair and (with ``nic``) the NIC pair;
    returns the report as a dict."""
    from ethlink.sim.runner import run_bench

    scenario = {**DEFAULT_SCENARIO, **(scenario or {})}
    raw = run_bench("forwarding_loopback", "ethlink.sim.demo_bench", {"beat_octets": beat_octets},
                    scenario=scenario, prefix="demo-")

    ns = 1000.0 / clock_mhz
    zero = raw["zero_load_latency_cycles"]
    loaded = {name: percentiles(values)
              for name, values in raw["loaded_latency_cycles"].items()}
    line_rate_gbps = beat_octets * 8 * clock_mhz / 1000
    utilisation = raw["tap_beats"] / raw["tap_busy_cycles"]
    return {
        "domain": "forwarding_loopback (OefhDeparser -> OefhParser)",
        "beat_octets": beat_octets,
        "clock_mhz": clock_mhz,
        "scenario": scenario,
        "frames": raw["frames"],
        "frames_ls": raw["frames_ls"],
        "frames_rdma": raw["frames_rdma"],
        "cycles": raw["cycles"],
        "mismatches": raw["mismatches"],
        "dropped": raw["dropped"],
        "blocks": {
            "oefh_deparser": {"latency_cycles": zero["deparser"],
                              "latency_ns": round(zero["deparser"] * ns, 2),
                              "what": "header accepted -> first frame beat"},
            "oefh_parser": {"latency_cycles": zero["parser_header"],
                            "latency_ns": round(zero["parser_header"] * ns, 2),
                            "what": "TH-completing beat -> header fields valid"},
        },
        "end_to_end_zero_load_cycles": zero["end_to_end"],
        "end_to_end_zero_load_ns": round(zero["end_to_end"] * ns, 2),
        "loaded_latency_cycles": loaded,
        "frame_stream_utilisation": round(utilisation, 4),
        "line_rate_gbps": line_rate_gbps,
        "goodput_gbps": round(raw["payload_octets"] * 8 / (raw["tap_busy_cycles"] * ns), 3),
        "link": run_link_demo(clock_mhz, link_scenario) if link else None,
        "nic": run_nic_demo(clock_mhz, nic_scenario) if nic else None,
    }


def format_report(report):
    ns = 1000.0 / report["clock_mhz"]
    lines = [
        f"EthLink demo: {report['domain']}",
        f"  {report['beat_octets']} octets/beat at {report['clock_mhz']} MHz "
        f"({report['line_rate_gbps']:.1f} Gb/s line rate); scenario seed "
        f"{report['scenario']['seed']}",
        f"  frames {report['frames']} (L/S {report['frames_ls']}, RDMA {report['frames_rdma']}), "
        f"cycles {report['cycles']}, mismatches {report['mismatches']}, "
        f"dropped {report['dropped']}",
        "",
        f"  {'block':16} {'latency':>8} {'ns':>8}  measured from",
    ]
    for name, block in report["blocks"].items():
        lines.append(f"  {name:16} {block['latency_cycles']:>8} {block['latency_ns']:>8.2f}"
                     f"  {block['what']}")
    lines.append(f"  {'end to end':16} {report['end_to_end_zero_load_cycles']:>8} "
                 f"{report['end_to_end_zero_load_ns']:>8.2f}  header in -> header out "
                 f"(zero load)")
    lines += ["", "  under back-to-back load (cycles):",
              f"  {'path':16} {'min':>6} {'p50':>6} {'p99':>6} {'max':>6}"]
    for name, p in report["loaded_latency_cycles"].items():
        lines.append(f"  {name:16} {p['min']:>6} {p['p50']:>6} {p['p99']:>6} {p['max']:>6}")
    lines += ["",
              f"  frame stream busy {report['frame_stream_utilisation'] * 100:.2f} % of cycles "
              f"while frames were queued; payload goodput {report['goodput_gbps']} Gb/s "
              f"({ns:.2f} ns/cycle)"]
    link = report["link"]
    if link is not None:
        lines += _link_lines(link)
    if report["nic"] is not None:
        lines += _nic_lines(report["nic"], ns)
    return "\n".join(lines)


def _nic_lines(nic, ns):
    lat = nic["latency_cycles"]
    load, store = nic["load_alone_cycles"], nic["store_alone_cycles"]
    return ["", f"EthLink demo: {nic['domain']}",
            f"  64 B load alone: request -> line {load['tx']}, line -> AXI read {load['rx']}, "
            f"round trip {load['round_trip']} cycles ({nic['load_round_trip_ns']} ns); "
            f"64 B store round trip {store['round_trip']} cycles"] + _fmax_lines(nic) + [
            f"  {nic['requests']} random loads/stores both ways, no idle, "
            f"{nic['window']} outstanding per GPU, raw BER "
            f"{nic['scenario']['ber']:g}: {nic['replays']} replays, {nic['timeouts']} "
            f"timeouts, {nic['data_mismatches']} differences from the golden model",
            f"  {'latency (cycles)':18} {'min':>6} {'p50':>6} {'p99':>6} {'max':>6} "
            f"{'mean':>8}",
            f"  {'request -> cpl':18} {lat['min']:>6} {lat['p50']:>6} {lat['p99']:>6} "
            f"{lat['max']:>6} {lat['mean']:>8}",
            f"  L/S payload goodput {nic['goodput_octets_per_cycle']} octets/cycle "
            f"({nic['goodput_gbps']} Gb/s at {ns:.2f} ns/cycle); frames per port and VC "
            f"{nic['frames_per_port']}"] + _rdma_lines(nic["rdma"], nic["scenario"], ns)


def _fmax_lines(nic):
    fmax = nic["nic_fmax"]
    if fmax is None:
        return []
    return [f"  at the NIC's measured Fmax on the {fmax['device']} ({fmax['mhz']} MHz, median "
            f"of seeds, docs/timing.md) the load's round trip is {fmax['load_round_trip_ns']} ns"]


def _rdma_lines(rdma, scenario, ns):
    if not rdma["commands"]:
        return []
    lat = rdma["latency_cycles"]
    statuses = ", ".join(f"{name} {count}" for name, count in rdma["statuses"].items())
    window = scenario.get("rdma_window") or "every message id"
    return [f"  at the same time {rdma['commands']} random RDMA WRITE/READ commands (1 octet "
            f"to 1 KiB, some outside the windows or misaligned; {window} outstanding per "
            f"engine): {statuses}; {rdma['timeouts']} timeouts",
            f"  {'command -> cpl':18} {lat['min']:>6} {lat['p50']:>6} {lat['p99']:>6} "
            f"{lat['max']:>6} {lat['mean']:>8}",
            f"  RDMA payload goodput {rdma['goodput_octets_per_cycle']} octets/cycle "
            f"({round(rdma['goodput_octets_per_cycle'] * 8 / ns, 2)} Gb/s)"]


def _link_lines(link):
    lines = ["", f"EthLink demo: {link['domain']}",
             f"  {link['scenario']['frames']} frames of {link['scenario']['body_octets']} "
             f"octets each way per bit error rate, both directions saturated; round trip "
             f"{link['rtt_cycles']} cycles ({link['rtt_ns']} ns)",
             f"  {'raw BER':>10} {'measured':>10} {'replays':>8} {'goodput':>8} {'Gb/s':>7}"]
    for run in link["runs"]:
        lines.append(f"  {run['ber']:>10.0e} {run['ber_measured']:>10.2e} {run['replays']:>8} "
                     f"{run['goodput']:>8.3f} {run['goodput_gbps']:>7.2f}")
    lines.append(f"  frames sent {link['frames_sent']}, delivered {link['frames_delivered']}, "
                 f"lost {link['lost']}, duplicated {link['duplicated']}, reordered "
                 f"{link['reordered']}, flushes {link['flushes']}")
    return lines


def _run(args):
    report = run_demo(beat_octets=args.beat_octets, clock_mhz=args.clock_mhz,
                      scenario={"frames": args.frames, "seed": args.seed})
    print(format_report(report))
    path = Path(args.json) if args.json else build_cache_dir() / "demo.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n  written: {path}")
    link = report["link"]
    ok = report["mismatches"] == 0 and report["dropped"] == 0
    if not ok:
        print("demo FAILED: frames differ from the golden model", file=sys.stderr)
    if link["lost"] or link["duplicated"] or link["reordered"] or link["corrupted"]:
        ok = False
        print("demo FAILED: the link lost, duplicated, reordered or altered frames",
              file=sys.stderr)
    nic = report["nic"]
    if nic["data_mismatches"] or nic["timeouts"] or nic["rdma"]["timeouts"]:
        ok = False
        print(f"demo FAILED: the NICs differ from the golden model or lost requests: "
              f"{nic['errors']}", file=sys.stderr)
    return 0 if ok else 1


def register(subparsers):
    p = subparsers.add_parser("demo", help="simulate the default EthLink domain and report",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--beat-octets", type=int, default=8, choices=(8, 16, 32, 64))
    p.add_argument("--clock-mhz", type=float, default=156.25)
    p.add_argument("--frames", type=int, default=DEFAULT_SCENARIO["frames"])
    p.add_argument("--seed", type=int, default=DEFAULT_SCENARIO["seed"])
    p.add_argument("--json", help="where to write the report (default: demo.json in the "
                   "build folder, ETHLINK_BUILD_DIR or ./build)")
    p.set_defaults(func=_run)
