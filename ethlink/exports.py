"""Verilog exports: every block a user can take out of the project as one Verilog module.

``ethlink verilog --list`` names them; ``ethlink verilog NAME [--param key=value ...] -o FILE.v``
writes one (spec §12): a self-contained module named NAME with clock ``clk``, synchronous
active-high reset ``rst``, and AXI4-Stream names on its stream ports.

To add an export, add an :class:`Export` to :data:`EXPORTS` below: a factory that builds the
component from keyword parameters (integers), the parameters with their defaults, and the map
from the block's stream members to AXI4-Stream prefixes.
"""

import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ethlink.rtl.phy.fec.symbols import check_symbols_per_beat
from ethlink.rtl.stream import check_beat_octets

from .params import parse_params

__all__ = ["Export", "EXPORTS", "build_export", "generate_verilog", "register"]


@dataclass(frozen=True)
class Export:
    name: str
    factory: str                     # "module:callable", imported only when needed
    summary: str
    params: dict = field(default_factory=dict)     # name -> (default, help, check)
    prefixes: dict = field(default_factory=dict)   # stream member -> AXI4-Stream prefix

    def resolve_params(self, given):
        unknown = set(given) - set(self.params)
        if unknown:
            known = ", ".join(sorted(self.params)) or "none"
            raise ValueError(f"export {self.name!r} has no parameter(s) "
                             f"{', '.join(sorted(unknown))} (parameters: {known})")
        values = {}
        for key, (default, _, check) in self.params.items():
            raw = given.get(key, default)
            try:
                values[key] = int(raw, 0) if isinstance(raw, str) else int(raw)
            except ValueError:
                raise ValueError(f"parameter {key}={raw!r} of {self.name!r} is not an integer") \
                    from None
            # Checked before the component exists: a component that raises in its constructor
            # would be reported by Amaranth as never elaborated.
            check(values[key])
        return values

    def build(self, given=None):
        """The export's top-level component for parameters ``given`` (strings or ints)."""
        from ethlink.rtl.axis import AxisExport
        module_name, attr = self.factory.split(":")
        factory = getattr(importlib.import_module(module_name), attr)
        inner = factory(**self.resolve_params(given or {}))
        return AxisExport(inner, self.prefixes)


_BEAT = {"beat_octets": (8, "octets per stream beat: 8, 16, 32 or 64", check_beat_octets)}
_SYMBOLS = {"symbols_per_beat": (8, "10-bit symbols per stream beat (P), 1 to 32",
                                 check_symbols_per_beat)}

EXPORTS = {export.name: export for export in (
    Export("oefh_parser", "ethlink.rtl.forwarding.parser:OefhParser",
           "frame stream -> OEFH/TH header stream + payload stream; drops and counts "
           "malformed frames",
           params=_BEAT,
           prefixes={"i": "s_axis", "header": "m_axis_hdr", "o": "m_axis"}),
    Export("oefh_deparser", "ethlink.rtl.forwarding.deparser:OefhDeparser",
           "OEFH/TH header stream + payload stream -> frame stream",
           params=_BEAT,
           prefixes={"header": "s_axis_hdr", "i": "s_axis", "o": "m_axis"}),
    Export("rs272_encoder", "ethlink.rtl.phy.fec.encoder:Rs272Encoder",
           "RS(272,258) encoder: 258 message symbols in, 272-symbol codeword out (spec §12)",
           params=_SYMBOLS,
           prefixes={"i": "s_axis", "o": "m_axis"}),
    Export("forwarding_loopback", "ethlink.rtl.domain:ForwardingLoopback",
           "the demo domain: deparser -> parser, with the tap between them",
           params=_BEAT,
           prefixes={"header_in": "s_axis_hdr", "i": "s_axis", "header_out": "m_axis_hdr",
                     "o": "m_axis"}),
)}


def build_export(name, params=None):
    if name not in EXPORTS:
        raise KeyError(f"no export named {name!r}; `ethlink verilog --list` lists them")
    return EXPORTS[name].build(params)


def generate_verilog(name, params=None):
    """Verilog text of export ``name`` with parameters ``params`` (a dict of str or int)."""
    from amaranth.back import verilog
    return verilog.convert(build_export(name, params), name=name, emit_src=False)


def _run(args):
    if args.list:
        for export in EXPORTS.values():
            params = " ".join(f"{k}={d}" for k, (d, _, _) in export.params.items())
            print(f"{export.name:24} {params:18} {export.summary}")
        return 0
    if not args.name:
        print("ethlink verilog: give an export NAME or --list", file=sys.stderr)
        return 2
    try:
        text = generate_verilog(args.name, parse_params(args.param))
    except (KeyError, ValueError) as error:
        print(f"ethlink verilog: {error.args[0]}", file=sys.stderr)
        return 2
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    return 0


def register(subparsers):
    p = subparsers.add_parser("verilog", help="write the Verilog of an export",
                              description=__doc__.split("\n\n")[1])
    p.add_argument("name", nargs="?", metavar="NAME")
    p.add_argument("--list", action="store_true", help="list the exports and their parameters")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="elaboration parameter (repeatable)")
    p.add_argument("-o", "--output", metavar="FILE.v", help="output file (default: stdout)")
    p.set_defaults(func=_run)
