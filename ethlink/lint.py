"""``ethlink lint``: ``verilator --lint-only -Wall`` on every export.

Every export is linted at its default parameters and at each value of the parameters listed in
:data:`LINT_SWEEP`, with only the project's waiver file (``sim/verilator_waivers.vlt``: narrow,
each waiver commented). A warning fails the lint.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

from .exports import EXPORTS, generate_verilog
from .sim.runner import LINT_WAIVERS
from .toolchain import verilator_env, verilator_root

__all__ = ["LINT_SWEEP", "LINT_SWEEP_SKIP", "lint_configurations", "lint_export", "register"]

#: Parameter values linted besides the defaults (they change the generated hardware).
LINT_SWEEP = {"beat_octets": (8, 16, 32, 64), "symbols_per_beat": (1, 4, 8),
              "width": (1, 72, 512), "max_delay": (1, 20), "injectors": (1, 16),
              "ifg": (4, 12), "lcw_in_frame": (0,), "vcs": (1, 8), "credit_size": (32, 128),
              "radix": (2, 4), "vc_classes": (1, 4), "iterations": (3,), "fifo": (1,),
              "egress_beats": (4,), "windows": (16,), "addr_width": (12, 50),
              "ports": (1, 2, 4), "tags": (2, 4096), "mtu": (256, 2048), "messages": (2, 4096),
              "contexts": (1, 16), "tx_register": (1,)}

#: Swept parameters left at their defaults for some exports: a pair is two ends of another
#: export plus the line; its ends' variants are linted on that export. A NIC's ports are
#: CBFC ends, linted with their variants on ``cbfc_end``; its RDMA engines' variants are
#: linted on ``nic_rdma_loopback``.
LINT_SWEEP_SKIP = {"link_pair": ("ifg", "lcw_in_frame", "tx_register"),
                   "cbfc_pair": ("ifg", "lcw_in_frame", "tx_register", "vcs", "credit_size"),
                   "nic": ("ifg", "lcw_in_frame", "tx_register", "credit_size", "mtu",
                           "messages", "contexts"),
                   "nic_pair": ("ifg", "lcw_in_frame", "tx_register", "credit_size", "windows",
                                "addr_width", "ports", "tags", "mtu", "messages", "contexts")}


def lint_configurations():
    """``(export, params)`` pairs that ``ethlink lint`` checks."""
    for name, export in EXPORTS.items():
        seen = set()
        variants = [{}]
        for key, values in LINT_SWEEP.items():
            if key in export.params and key not in LINT_SWEEP_SKIP.get(name, ()):
                variants += [{key: value} for value in values]
        for params in variants:
            try:
                resolved = tuple(sorted(export.resolve_params(params).items()))
            except ValueError:
                continue        # a swept value this export does not take
            if resolved not in seen:
                seen.add(resolved)
                yield name, dict(resolved)


def lint_export(name, params):
    """Lint one export; returns ``(ok, messages)``."""
    with tempfile.TemporaryDirectory(prefix="ethlink-lint-") as tmp:
        source = Path(tmp) / f"{name}.v"
        source.write_text(generate_verilog(name, params))
        result = subprocess.run(
            [str(verilator_root() / "bin" / "verilator"), "--lint-only", "-Wall",
             "--top-module", name, str(LINT_WAIVERS), str(source)],
            env=verilator_env(), capture_output=True, text=True)
    messages = (result.stdout + result.stderr).strip()
    return result.returncode == 0 and "%Warning" not in messages, messages


def _run(args):
    failures = 0
    for name, params in lint_configurations():
        if args.name and name not in args.name:
            continue
        ok, messages = lint_export(name, params)
        label = " ".join(f"{k}={v}" for k, v in params.items())
        print(f"{'ok  ' if ok else 'FAIL'} {name} {label}")
        if not ok:
            failures += 1
            print(messages, file=sys.stderr)
    return 1 if failures else 0


def register(subparsers):
    p = subparsers.add_parser("lint", help="verilator --lint-only -Wall on every export")
    p.add_argument("name", nargs="*", help="only these exports (default: all)")
    p.set_defaults(func=_run)
