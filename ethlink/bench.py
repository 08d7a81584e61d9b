"""``ethlink bench NAME``: measurements that print a table and write JSON.

Benches measure; tests assert. Each bench here runs the blocks cycle-accurately on Verilator
(latency in cycles, throughput in beats per cycle) and, unless ``--no-synth`` is given,
synthesises them for the ECP5 (Fmax, LUT/FF/EBR) with :mod:`ethlink.synth`.

* ``forwarding``: OefhDeparser and OefhParser at 8, 16, 32 and 64 octets per beat.
"""

import json
import sys
from pathlib import Path

from .toolchain import build_cache_dir

__all__ = ["bench_forwarding", "register"]

BEAT_WIDTHS = (8, 16, 32, 64)


def bench_forwarding(widths=BEAT_WIDTHS, synth=True, device="LFE5UM5G-85F", frames=500):
    from .exports import generate_verilog
    from .sim.demo import run_demo
    from .synth import synthesize

    rows = []
    for width in widths:
        report = run_demo(beat_octets=width, scenario={"frames": frames})
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


BENCHES = {"forwarding": bench_forwarding}


def _run(args):
    result = BENCHES[args.name](synth=not args.no_synth, device=args.device)
    print(_table(result))
    path = Path(args.json) if args.json else build_cache_dir() / f"bench_{args.name}.json"
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
    p.set_defaults(func=_run)
