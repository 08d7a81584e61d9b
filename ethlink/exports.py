"""Verilog exports: every block a user can take out of the project as one Verilog module.

``ethlink verilog --list`` names them; ``ethlink verilog NAME [--param key=value ...] -o FILE.v``
writes one (spec §12): a self-contained module named NAME with clock ``clk``, synchronous
active-high reset ``rst``, its ports named from the block's signature and its streams as
AXI4-Stream (:mod:`ethlink.rtl.export`).

An export is synthesisable (a block that belongs on a chip) or a simulation harness (two link
ends over simulated lines, engines back to back: :mod:`ethlink.rtl.harness`). Its parameters,
their defaults and their ranges are the block's own (the ``PARAMETERS`` its constructor
declares, :mod:`ethlink.rtl.params`); nothing here restates them.

To add an export, add an :class:`Export` to :data:`EXPORTS` below: the block's class, a
summary, and the AXI4-Stream prefixes of the streams that do not take the default one.
"""

import functools
import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .params import parse_params

__all__ = ["Export", "EXPORTS", "SYNTHESISABLE", "HARNESS", "build_export", "generate_verilog",
           "register"]

#: Kinds of export.
SYNTHESISABLE = "synthesisable"
HARNESS = "simulation harness"


@dataclass(frozen=True)
class Export:
    name: str
    block: str                       # "module:Class", imported only when needed
    summary: str
    prefixes: dict = field(default_factory=dict)   # stream (joined name) -> AXI4-Stream prefix
    kind: str = SYNTHESISABLE

    @property
    def cls(self):
        module_name, attr = self.block.split(":")
        return getattr(importlib.import_module(module_name), attr)

    @property
    def params(self):
        """``{name: (default, Param)}`` of the block's constructor."""
        return getattr(self.cls, "PARAMETERS", {})

    def resolve_params(self, given):
        """Every parameter's value (the defaults filled in), converted and checked."""
        params = self.params
        unknown = set(given) - set(params)
        if unknown:
            known = ", ".join(sorted(params)) or "none"
            raise ValueError(f"export {self.name!r} has no parameter(s) "
                             f"{', '.join(sorted(unknown))} (parameters: {known})")
        values = {}
        for key, (default, param) in params.items():
            raw = given.get(key, default)
            try:
                values[key] = int(raw, 0) if isinstance(raw, str) else int(raw)
            except ValueError:
                raise ValueError(f"parameter {key}={raw!r} of {self.name!r} is not an integer") \
                    from None
            param.validate(key, values[key])
        return values

    def build(self, given=None):
        """The export's top-level component for parameters ``given`` (strings or ints)."""
        from ethlink.rtl.export import VerilogTop
        return VerilogTop(self.cls(**self.resolve_params(given or {})), self.prefixes)


def _pair_prefixes(stream_prefixes, ends="ab"):
    """Prefixes of a pair's streams: stream ``s`` of end ``e`` (``e_s``) is ``PREFIX_e``, so
    that the AXI4-Stream part stays first (``s_axis_req_a``)."""
    return {f"{end}_{name}": f"{prefix}_{end}" for end in ends
            for name, prefix in stream_prefixes.items()}


#: Streams of a CBFC end: one per VC each way, and the LCWs of the layers above.
def _vc_prefixes(vcs=8):
    return {**{f"i{v}": f"s_axis_vc{v}" for v in range(vcs)},
            **{f"o{v}": f"m_axis_vc{v}" for v in range(vcs)}}


#: Streams of a NIC: the GPU's L/S and RDMA ports, and the LCWs a test sends on each port.
_NIC_STREAMS = {"req": "s_axis_req", "req_data": "s_axis_req_data", "cpl": "m_axis_cpl",
                "cpl_data": "m_axis_cpl_data", "rdma_cmd": "s_axis_rdma_cmd",
                "rdma_cpl": "m_axis_rdma_cpl",
                **{f"p{p}_lcw_tx": f"s_axis_lcw{p}" for p in range(4)}}

EXPORTS = {export.name: export for export in (
    Export("oefh_parser", "ethlink.rtl.forwarding.parser:OefhParser",
           "frame stream -> OEFH/TH header stream + payload stream; drops and counts "
           "malformed frames",
           prefixes={"header": "m_axis_hdr"}),
    Export("oefh_deparser", "ethlink.rtl.forwarding.deparser:OefhDeparser",
           "OEFH/TH header stream + payload stream -> frame stream",
           prefixes={"header": "s_axis_hdr"}),
    Export("rs272_encoder", "ethlink.rtl.phy.fec.encoder:Rs272Encoder",
           "RS(272,258) encoder: 258 message symbols in, 272-symbol codeword out (spec §12)"),
    Export("rs272_decoder", "ethlink.rtl.phy.fec.decoder:Rs272Decoder",
           "RS(272,258) decoder: 272-symbol codeword in, corrected 258 symbols out, "
           "tuser = {corrected[3:0], uncorrectable} (spec §12)"),
    Export("link_channel", "ethlink.rtl.phy.channel:LinkChannel",
           "line model between two link ends: delay, seeded bit errors and bursts, link loss"),
    Export("fec_xgmii_to_symbols", "ethlink.rtl.phy.fec.transcoder:XgmiiToSymbols",
           "FEC transcoder: 40 XGMII words (tuser = ctrl) -> 258 message symbols (spec §6)"),
    Export("fec_symbols_to_xgmii", "ethlink.rtl.phy.fec.transcoder:SymbolsToXgmii",
           "FEC transcoder: 258 decoded symbols (tuser = decoder status) -> 40 XGMII words "
           "(tuser = ctrl) (spec §6)"),
    Export("fec_channel_loop", "ethlink.rtl.phy.fec.loop:FecChannelLoop",
           "RS(272,258) encoder -> link channel (seeded bit errors) -> decoder"),
    Export("fec_sublayer", "ethlink.rtl.phy.fec.sublayer:FecSublayer",
           "FEC sublayer of one link end: XGMII words <-> RS(272,258) line beats, bypass, "
           "counters (spec §6)",
           prefixes={"line_tx": "m_axis_line", "line_rx": "s_axis_line"}),
    Export("fec_link", "ethlink.rtl.phy.fec.sublayer:FecLink",
           "one FEC link direction: FEC TX -> link channel -> FEC RX, XGMII words at both ends",
           prefixes={"tx": "s_axis", "rx": "m_axis"}),
    Export("mac_tx", "ethlink.rtl.link.mac_tx:MacTx",
           "EthLink MAC transmitter: frame bodies + LCWs -> XGMII words (txd/txc) with FCS, "
           "start word with the LLR seq, inter-frame gap, abort (spec §5)"),
    Export("mac_rx", "ethlink.rtl.link.mac_rx:MacRx",
           "EthLink MAC receiver: XGMII words (rxd/rxc) -> frame bodies (FCS checked and "
           "stripped, tuser = {void, error, sequenced, seq}) + LCWs, bad-input counters (spec §5)"),
    Export("link_end", "ethlink.rtl.link.link_end:LinkEnd",
           "one link end: MAC + LLR (replay buffer, ACK/NACK, replay, FLUSH/INIT) + PING/PONG; "
           "frame bodies <-> XGMII (spec §5, §7)",
           prefixes={"lcw_tx_ext": "s_axis_lcw", "lcw_rx_ext": "m_axis_lcw"}),
    Export("cbfc_end", "ethlink.rtl.cbfc.cbfc_end:CbfcEnd",
           "one lossless link end: per-VC queues and receive buffers with credit-based flow "
           "control over MAC + LLR; frame bodies per VC <-> XGMII (spec §5, §7, §8)",
           prefixes={**_vc_prefixes(), "lcw_tx": "s_axis_lcw", "lcw_rx": "m_axis_lcw"}),
    Export("switch_core", "ethlink.rtl.switch.core:SwitchCore",
           "switch forwarding core: route/partition/source checks, VOQs, iSLIP crossbar, "
           "cut-through, CSR bus",
           prefixes={**{f"i{p}": f"s_axis_p{p}" for p in range(16)},
                     **{f"o{p}": f"m_axis_p{p}" for p in range(16)}}),
    Export("path_select", "ethlink.rtl.nic.path_select:PathSelect",
           "multipath path selection: (dst, entropy, reachable) -> port or none, CRC-16 hash, "
           "one per cycle, fixed latency (spec §9, §12)"),
    Export("nic_ls_target", "ethlink.rtl.nic.ls_responder:LsTarget",
           "NIC Load/Store target: parser, memory windows, AXI4 manager port, responses"),
    Export("nic_reachability", "ethlink.rtl.nic.reachability:Reachability",
           "NIC reachability table per (endpoint, port) updated by SEN, link-state mask, path "
           "selection (spec §9, §10)",
           prefixes={f"lcw{p}": f"s_axis_lcw{p}" for p in range(4)}),
    Export("nic_rdma_requester", "ethlink.rtl.nic.rdma_requester:RdmaRequester",
           "NIC RDMA requester: DMA commands to WRITE packets (segmented at the MTU) or "
           "READ_REQ, ACK/READ_RSP to completions, AXI4 manager port to local memory"),
    Export("nic_rdma_target", "ethlink.rtl.nic.rdma_target:RdmaTarget",
           "NIC RDMA target: WRITE placement with per-message ACK, READ_REQ served in MTU "
           "packets, memory windows, AXI4 manager port"),
    Export("nic", "ethlink.rtl.nic.nic:Nic",
           "NIC: L/S and RDMA requesters and targets (AXI4 managers, windows) over 1-4 "
           "lossless ports (MAC + LLR + CBFC each) with SEN-driven multipath steering",
           prefixes=_NIC_STREAMS),
    # --- simulation harnesses ------------------------------------------------------------
    Export("link_pair", "ethlink.rtl.harness.pairs:LinkPair",
           "two link ends A and B joined by two simulated lines (link channels, or FEC links "
           "with fec=1): the link layer under test",
           prefixes=_pair_prefixes({"i": "s_axis", "o": "m_axis"}), kind=HARNESS),
    Export("cbfc_pair", "ethlink.rtl.harness.pairs:CbfcPair",
           "two CBFC link ends A and B joined by two simulated lines: flow control under test",
           prefixes=_pair_prefixes(_vc_prefixes()), kind=HARNESS),
    Export("nic_pair", "ethlink.rtl.harness.pairs:NicPair",
           "two NICs A and B joined port to port by simulated lines: the NIC under test",
           prefixes=_pair_prefixes(_NIC_STREAMS), kind=HARNESS),
    Export("nic_ls_loopback", "ethlink.rtl.harness.loopback:LsLoopback",
           "NIC L/S requester and target back to back over a lossy frame path, AXI4 memory",
           kind=HARNESS),
    Export("nic_rdma_loopback", "ethlink.rtl.harness.loopback:RdmaLoopback",
           "NIC RDMA requester and target back to back over a lossy frame path, AXI4 memories",
           kind=HARNESS),
    Export("forwarding_loopback", "ethlink.rtl.harness.loopback:ForwardingLoopback",
           "deparser -> parser, with the tap between them (the forwarding part of the demo)",
           prefixes={"header_in": "s_axis_hdr", "header_out": "m_axis_hdr"}, kind=HARNESS),
)}


def _export(name):
    if name not in EXPORTS:
        raise KeyError(f"no export named {name!r}; `ethlink verilog --list` lists them")
    return EXPORTS[name]


def build_export(name, params=None):
    return _export(name).build(params)


def generate_verilog(name, params=None):
    """Verilog text of export ``name`` with parameters ``params`` (a dict of str or int).

    Elaboration is deterministic and takes over a minute for the largest exports (a NIC pair),
    so the text is kept per resolved parameter set for the life of the process: a bench or a
    test worker that builds or lints the same design several times elaborates it once.
    """
    resolved = _export(name).resolve_params(params or {})
    return _convert(name, tuple(sorted(resolved.items())))


@functools.lru_cache(maxsize=16)
def _convert(name, params):
    from amaranth.back import verilog
    return verilog.convert(build_export(name, dict(params)), name=name, emit_src=False)


def _run(args):
    if args.list:
        for kind in (SYNTHESISABLE, HARNESS):
            print(f"# {kind}")
            for export in EXPORTS.values():
                if export.kind == kind:
                    params = " ".join(f"{k}={d}" for k, (d, _) in export.params.items())
                    print(f"{export.name:24} {export.summary}")
                    if params:
                        print(f"{'':24} parameters: {params}")
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
    p.add_argument("--list", action="store_true",
                   help="list the exports (synthesisable, then simulation harnesses) and their "
                        "parameters with defaults")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="elaboration parameter (repeatable)")
    p.add_argument("-o", "--output", metavar="FILE.v", help="output file (default: stdout)")
    p.set_defaults(func=_run)
