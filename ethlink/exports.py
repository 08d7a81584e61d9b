"""Verilog exports: every block a user can take out of the project as one Verilog module.

``ethlink verilog --list`` names them; ``ethlink verilog NAME [--param key=value ...] -o FILE.v``
writes one (spec §12): a self-contained module named NAME with clock ``clk``, synchronous
active-high reset ``rst``, and AXI4-Stream names on its stream ports.

To add an export, add an :class:`Export` to :data:`EXPORTS` below: a factory that builds the
component from keyword parameters (integers), the parameters with their defaults, and the map
from the block's stream members to AXI4-Stream prefixes.
"""

import functools
import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ethlink.rtl.phy.fec.decoder import MAX_SYMBOLS_PER_BEAT
from ethlink.rtl.phy.channel import check_injectors, check_max_delay, check_width
from ethlink.rtl.phy.fec.sublayer import check_line_symbols
from ethlink.rtl.phy.fec.symbols import check_symbols_per_beat
from ethlink.rtl.link.mac_rx import check_max_body_octets
from ethlink.rtl.link.mac_tx import check_ifg, check_lcw_in_frame
from ethlink.rtl.link.control import check_ping_interval
from ethlink.rtl.link.llr_rx import check_ack_every, check_ack_timer
from ethlink.rtl.link.llr_tx import check_buffer_frames, check_buffer_octets, check_replay_max
from ethlink.rtl.stream import check_beat_octets
from ethlink.rtl.cbfc.credit import check_credit_size, check_vcs, MAX_VCS
from ethlink.rtl.cbfc.frame_fifo import check_queue_octets
from ethlink.rtl.config import check_int_range
from ethlink.rtl.switch.allocator import MAX_ITERATIONS
from ethlink.rtl.switch.core import check_radix, check_egress_beats, MAX_RADIX
from ethlink.rtl.switch.voq import check_voq_beats, check_vc_classes
from ethlink.rtl.nic.axi import check_addr_width
from ethlink.rtl.nic.ls_responder import check_windows
from ethlink.rtl.nic.rdma_requester import check_messages, check_mtu
from ethlink.rtl.nic.rdma_target import check_contexts
from ethlink.rtl.nic.reachability import check_ports
from ethlink.rtl.nic.ls_requester import check_tags, check_timeout
from ethlink.rtl.nic.path_select import MAX_PORTS as MAX_PATH_PORTS

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


def _check_decoder_symbols(value):
    return check_symbols_per_beat(value, maximum=MAX_SYMBOLS_PER_BEAT)


def _check_flag(value):
    if value not in (0, 1):
        raise ValueError(f"expected 0 or 1, not {value!r}")
    return value


_LINK_END = {
    "buffer_octets": (16384, "LLR replay buffer in octets (power of two, >= 4144)",
                      check_buffer_octets),
    "buffer_frames": (64, "LLR replay buffer in frames (power of two, 2 to 4096)",
                      check_buffer_frames),
    "rx_buffer_octets": (8192, "receive buffer in octets (power of two, >= 4144)",
                         check_buffer_octets),
    "replay_max": (8, "consecutive replays without progress before FLUSH, 1 to 255",
                   check_replay_max),
    "ack_every": (8, "an LLR_ACK at least every this many frames, 1 to 255", check_ack_every),
    "ack_timer": (128, "... or this many cycles after the oldest unacknowledged frame",
                  check_ack_timer),
    "ping_interval": (1024, "cycles between PINGs (round-trip measurement)",
                      check_ping_interval),
    "ifg": (12, "inter-frame gap in octets, 4 to 64", check_ifg),
    "lcw_in_frame": (1, "1: LCWs may also go between two words of a frame", check_lcw_in_frame),
}


#: Parameters of the lines of a pair of ends.
_PAIR = {
    "fec": (0, "1: RS(272,258) FEC on both lines (fec_bypass turns it off)", _check_flag),
    "delay": (8, "line delay in cycles, 1 to 4096", check_max_delay),
    "max_delay": (0, "0: fixed delay; else up to this many cycles, set at run time on "
                     "ab_delay/ba_delay", lambda v: v if v == 0 else check_max_delay(v)),
}

_CBFC = {
    "vcs": (4, "virtual channels, 1 to 8 (a queue and a buffer each)", check_vcs),
    "credit_size": (64, "octets per credit: 32, 64 or 128", check_credit_size),
    "tx_vc_octets": (8192, "transmit queue per VC in octets (power of two, >= 4096)",
                     lambda v: check_queue_octets("tx_vc_octets", v)),
    "rx_vc_octets": (8192, "receive buffer per VC in octets (power of two, >= 4096)",
                     lambda v: check_queue_octets("rx_vc_octets", v)),
    "rx_vc_credits": (0, "credits advertised per VC, 0: the whole buffer",
                      lambda v: check_int_range("rx_vc_credits", v, 0, 1 << 15)),
    "update_threshold": (0, "CREDIT_UPDATE once the limit moved this much, 0: credits / 8",
                         lambda v: check_int_range("update_threshold", v, 0, 1 << 15)),
    "update_period": (1024, "... and every VC's CREDIT_UPDATE every this many cycles",
                      lambda v: check_int_range("update_period", v, 2, 1 << 20)),
    "sync_period": (4096, "CREDIT_SYNC of every VC every this many cycles",
                    lambda v: check_int_range("sync_period", v, 2, 1 << 20)),
}


def _vc_prefixes(suffix=""):
    return {**{f"i_vc{v}{suffix}": f"s_axis_vc{v}{suffix}" for v in range(MAX_VCS)},
            **{f"o_vc{v}{suffix}": f"m_axis_vc{v}{suffix}" for v in range(MAX_VCS)}}


#: Parameters of a NIC's L/S engines and ports.
_NIC = {
    "ports": (2, "NIC ports, 1 to 4", check_ports),
    "tags": (64, "outstanding L/S tags, a power of two, 2 to 4096", check_tags),
    "timeout_cycles": (4096, "cycles before an unanswered request times out, 64 to 32767",
                       check_timeout),
    "windows": (8, "memory windows, 8 to 16", check_windows),
    "addr_width": (32, "AXI byte-address bits, 12 to 50", check_addr_width),
}
#: Parameters of a NIC's RDMA engines.
_RDMA = {
    "messages": (16, "outstanding RDMA messages, a power of two, 2 to 4096", check_messages),
    "mtu": (1024, "RDMA packet payload in octets: 256, 512, 1024 or 2048", check_mtu),
    "contexts": (8, "WRITE messages the target receives at once, 1 to 16", check_contexts),
}
#: A NIC port is a CBFC link end carrying the two L/S VCs.
_NIC_PORT = {**{name: value for name, value in _CBFC.items() if name != "vcs"}, **_LINK_END}


def _nic_prefixes(suffix=""):
    return {**{f"{name}{suffix}": f"{prefix}{suffix}" for name, prefix in (
        ("req", "s_axis_req"), ("req_data", "s_axis_req_data"), ("cpl", "m_axis_cpl"),
        ("cpl_data", "m_axis_cpl_data"), ("rdma_cmd", "s_axis_rdma_cmd"),
        ("rdma_cpl", "m_axis_rdma_cpl"))},
        **{f"lcw_tx{p}{suffix}": f"s_axis_lcw{p}{suffix}" for p in range(MAX_PATH_PORTS)}}


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
    Export("rs272_decoder", "ethlink.rtl.phy.fec.decoder:Rs272Decoder",
           "RS(272,258) decoder: 272-symbol codeword in, corrected 258 symbols out, "
           "tuser = {corrected[3:0], uncorrectable} (spec §12)",
           params={"symbols_per_beat": (8, "10-bit symbols per stream beat (P), 1 to 16",
                                        _check_decoder_symbols)},
           prefixes={"i": "s_axis", "o": "m_axis"}),
    Export("link_channel", "ethlink.rtl.phy.channel:LinkChannel",
           "line model between two link ends: delay, seeded bit errors and bursts, link loss",
           params={"width": (80, "data bits per beat, 1 to 512 (80: 8 FEC symbols, "
                                 "72: an XGMII word)", check_width),
                   "max_delay": (64, "largest delay in cycles, 1 to 4096", check_max_delay),
                   "injectors": (4, "random bit-error injectors per beat, 1 to 16",
                                 check_injectors)},
           prefixes={"i": "s_axis", "o": "m_axis"}),
    Export("fec_xgmii_to_symbols", "ethlink.rtl.phy.fec.transcoder:XgmiiToSymbols",
           "FEC transcoder: 40 XGMII words (tuser = ctrl) -> 258 message symbols (spec §6)",
           params=_SYMBOLS,
           prefixes={"i": "s_axis", "o": "m_axis"}),
    Export("fec_symbols_to_xgmii", "ethlink.rtl.phy.fec.transcoder:SymbolsToXgmii",
           "FEC transcoder: 258 decoded symbols (tuser = decoder status) -> 40 XGMII words "
           "(tuser = ctrl) (spec §6)",
           params=_SYMBOLS,
           prefixes={"i": "s_axis", "o": "m_axis"}),
    Export("fec_channel_loop", "ethlink.rtl.phy.fec.loop:FecChannelLoop",
           "RS(272,258) encoder -> link channel (seeded bit errors) -> decoder",
           params={"symbols_per_beat": (8, "10-bit symbols per stream beat (P), 1 to 16",
                                        _check_decoder_symbols),
                   "delay": (4, "line delay in cycles, 1 to 4096", check_max_delay)},
           prefixes={"i": "s_axis", "o": "m_axis"}),
    Export("fec_sublayer", "ethlink.rtl.phy.fec.sublayer:FecSublayer",
           "FEC sublayer of one link end: XGMII words <-> RS(272,258) line beats, bypass, "
           "counters (spec §6)",
           params={"symbols_per_beat": (8, "10-bit symbols per line beat (P), 8 to 16",
                                        check_line_symbols)},
           prefixes={"tx": "s_axis_tx", "line_tx": "m_axis_line", "line_rx": "s_axis_line",
                     "rx": "m_axis_rx"}),
    Export("fec_link", "ethlink.rtl.phy.fec.sublayer:FecLink",
           "one FEC link direction: FEC TX -> link channel -> FEC RX, XGMII words at both ends",
           params={"symbols_per_beat": (8, "10-bit symbols per line beat (P), 8 to 16",
                                        check_line_symbols),
                   "delay": (4, "line delay in cycles, 1 to 4096", check_max_delay)},
           prefixes={"tx": "s_axis", "rx": "m_axis"}),
    Export("mac_tx", "ethlink.rtl.link.mac_tx:MacTx",
           "EthLink MAC transmitter: frame bodies + LCWs -> XGMII words (txd/txc) with FCS, "
           "start word with the LLR seq, inter-frame gap, abort (spec §5)",
           params={"ifg": (12, "inter-frame gap in octets, 4 to 64", check_ifg),
                   "lcw_in_frame": (1, "1: LCWs may also go between two words of a frame",
                                    check_lcw_in_frame)},
           prefixes={"i": "s_axis", "lcw": "s_axis_lcw"}),
    Export("mac_rx", "ethlink.rtl.link.mac_rx:MacRx",
           "EthLink MAC receiver: XGMII words (rxd/rxc) -> frame bodies (FCS checked and "
           "stripped, tuser = {error, sequenced, seq}) + LCWs, bad-input counters (spec §5)",
           params={"max_body_octets": (2070, "largest body accepted, 8 to 65535",
                                       check_max_body_octets)},
           prefixes={"o": "m_axis", "lcw": "m_axis_lcw"}),
    Export("link_end", "ethlink.rtl.link.link_end:LinkEnd",
           "one link end: MAC + LLR (replay buffer, ACK/NACK, replay, FLUSH/INIT) + PING/PONG; "
           "frame bodies <-> XGMII (spec §5, §7)",
           params=_LINK_END,
           prefixes={"i": "s_axis", "o": "m_axis", "lcw_tx_ext": "s_axis_lcw",
                     "lcw_rx_ext": "m_axis_lcw"}),
    Export("link_pair", "ethlink.rtl.link.link_end:LinkPair",
           "two link ends A and B joined by two simulated lines (link channels, or FEC links "
           "with fec=1): the link layer under test",
           params={**_PAIR,
                   **_LINK_END},
           prefixes={"i_a": "s_axis_a", "o_a": "m_axis_a", "i_b": "s_axis_b",
                     "o_b": "m_axis_b"}),
    Export("cbfc_end", "ethlink.rtl.cbfc.cbfc_end:CbfcEnd",
           "one lossless link end: per-VC queues and receive buffers with credit-based flow "
           "control over MAC + LLR; frame bodies per VC <-> XGMII (spec §5, §7, §8)",
           params={**_CBFC, **_LINK_END},
           prefixes={**_vc_prefixes(), "lcw_tx": "s_axis_lcw", "lcw_rx": "m_axis_lcw"}),
    Export("cbfc_pair", "ethlink.rtl.cbfc.cbfc_end:CbfcPair",
           "two CBFC link ends A and B joined by two simulated lines: flow control under test",
           params={**_PAIR,
                   **_CBFC, **_LINK_END},
           prefixes={**_vc_prefixes("_a"), **_vc_prefixes("_b")}),
    Export("switch_core", "ethlink.rtl.switch.core:SwitchCore",
           "switch forwarding core: route/partition/source checks, VOQs, iSLIP crossbar, "
           "cut-through, CSR bus",
           params={
               "radix": (8, "ports, 2 to 16", check_radix),
               "vc_classes": (2, "queues per (ingress, egress): 1, 2, 4 or 8",
                              check_vc_classes),
               "voq_beats": (256, "8-octet beats per virtual output queue (power of two, "
                                  "16 to 4096)", check_voq_beats),
               "iterations": (1, "iSLIP iterations per cycle, 1 to 4",
                              lambda v: check_int_range("iterations", v, 1, MAX_ITERATIONS)),
               "fifo": (0, "1: one FIFO per ingress instead of VOQs (baseline)", _check_flag),
               "egress_beats": (32, "beats of FIFO between the crossbar and each output, "
                                    "4 to 1024", check_egress_beats),
           },
           prefixes={**{f"i{p}": f"s_axis_p{p}" for p in range(MAX_RADIX)},
                     **{f"o{p}": f"m_axis_p{p}" for p in range(MAX_RADIX)}}),
    Export("path_select", "ethlink.rtl.nic.path_select:PathSelect",
           "multipath path selection: (dst, entropy, reachable) -> port or none, CRC-16 hash, "
           "one per cycle, fixed latency (spec §9, §12)"),
    Export("nic_ls_target", "ethlink.rtl.nic.ls_responder:LsTarget",
           "NIC Load/Store target: parser, memory windows, AXI4 manager port, responses",
           params={**_BEAT,
                   "windows": (8, "memory windows, 8 to 16", check_windows),
                   "addr_width": (32, "AXI byte-address bits, 12 to 50", check_addr_width)},
           prefixes={"i": "s_axis", "o": "m_axis"}),
    Export("nic_reachability", "ethlink.rtl.nic.reachability:Reachability",
           "NIC reachability table per (endpoint, port) updated by SEN, link-state mask, path "
           "selection (spec §9, §10)",
           params={"ports": (4, "NIC ports, 1 to 4", check_ports)},
           prefixes={f"lcw{p}": f"s_axis_lcw{p}" for p in range(MAX_PATH_PORTS)}),
    Export("nic_ls_loopback", "ethlink.rtl.nic.ls_loopback:LsLoopback",
           "NIC L/S requester and target back to back over a lossy frame path, AXI4 memory",
           params={**_BEAT,
                   "tags": (256, "outstanding L/S tags, a power of two, 2 to 4096", check_tags),
                   "timeout_cycles": (4096, "cycles before an unanswered request times out, "
                                            "64 to 32767", check_timeout),
                   "windows": (8, "memory windows, 8 to 16", check_windows),
                   "addr_width": (32, "AXI byte-address bits, 12 to 50", check_addr_width)},
           prefixes={"req": "s_axis_req", "req_data": "s_axis_req_data", "cpl": "m_axis_cpl",
                     "cpl_data": "m_axis_cpl_data"}),
    Export("nic_rdma_requester", "ethlink.rtl.nic.rdma_requester:RdmaRequester",
           "NIC RDMA requester: DMA commands to WRITE packets (segmented at the MTU) or "
           "READ_REQ, ACK/READ_RSP to completions, AXI4 manager port to local memory",
           params={**_BEAT, "messages": _RDMA["messages"], "mtu": _RDMA["mtu"],
                   "timeout_cycles": _NIC["timeout_cycles"], "addr_width": _NIC["addr_width"]},
           prefixes={"cmd": "s_axis_cmd", "cpl": "m_axis_cpl", "i": "s_axis", "o": "m_axis",
                     "fail": "s_axis_fail"}),
    Export("nic_rdma_target", "ethlink.rtl.nic.rdma_target:RdmaTarget",
           "NIC RDMA target: WRITE placement with per-message ACK, READ_REQ served in MTU "
           "packets, memory windows, AXI4 manager port",
           params={**_BEAT, "windows": _NIC["windows"], "addr_width": _NIC["addr_width"],
                   "mtu": _RDMA["mtu"], "contexts": _RDMA["contexts"],
                   "timeout_cycles": _NIC["timeout_cycles"]},
           prefixes={"i": "s_axis", "o": "m_axis"}),
    Export("nic_rdma_loopback", "ethlink.rtl.nic.ls_loopback:RdmaLoopback",
           "NIC RDMA requester and target back to back over a lossy frame path, AXI4 memories",
           params={**_BEAT, **_RDMA,
                   "timeout_cycles": _NIC["timeout_cycles"], "windows": _NIC["windows"],
                   "addr_width": _NIC["addr_width"]},
           prefixes={"cmd": "s_axis_cmd", "cpl": "m_axis_cpl"}),
    Export("nic", "ethlink.rtl.nic.nic:Nic",
           "NIC: L/S requester and target (AXI4 manager, windows) over 1-4 lossless ports "
           "(MAC + LLR + CBFC each) with SEN-driven multipath steering",
           params={**_NIC, **_RDMA, **_NIC_PORT},
           prefixes=_nic_prefixes()),
    Export("nic_pair", "ethlink.rtl.nic.nic:NicPair",
           "two NICs A and B joined port to port by simulated lines: the NIC under test",
           params={"fec": (0, "mask of the ports whose lines have RS(272,258) FEC",
                           lambda v: check_int_range("fec", v, 0, (1 << MAX_PATH_PORTS) - 1)),
                   "delay": _PAIR["delay"], **_NIC, **_RDMA, **_NIC_PORT},
           prefixes={**_nic_prefixes("_a"), **_nic_prefixes("_b")}),
    Export("forwarding_loopback", "ethlink.rtl.domain:ForwardingLoopback",
           "the demo domain: deparser -> parser, with the tap between them",
           params=_BEAT,
           prefixes={"header_in": "s_axis_hdr", "i": "s_axis", "header_out": "m_axis_hdr",
                     "o": "m_axis"}),
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
