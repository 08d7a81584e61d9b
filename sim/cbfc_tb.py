"""Traffic and scoreboards per VC for a pair of CBFC link ends (export ``cbfc_pair``), shared
by the CBFC tests and ``ethlink bench cbfc``.

A frame body starts with a real OEFH octet 0 (version 1 and the frame's VC, spec §4.1, which
is what the credit layer reads), then the frame's index in four octets, so each VC's
:class:`~ethlink.sim.link_tb.Scoreboard` tells lost, duplicated, reordered and altered frames
apart without help from the design.
"""

import cocotb
from cocotb.triggers import RisingEdge

from ethlink.rtl.wire import OEFH, OEFH_VERSION
from ethlink.sim.link_tb import Direction, counter

__all__ = ["CBFC_PAIR_PARAMS", "vc_body", "VcFlow", "flows", "run_flows", "vc_counter", "assert_flows_lossless",
           "BODY_MIN_OCTETS"]

#: The ``cbfc_pair`` build shared by the CBFC tests and ``ethlink bench cbfc`` (one Verilator
#: build): four VCs, 64-octet credits, 8 KiB receive buffers (128 credits, fewer advertised at
#: run time with ``rx_credits``), lines of up to 512 cycles set at run time.
CBFC_PAIR_PARAMS = {"vcs": 4, "credit_size": 64, "rx_vc_octets": 8192, "tx_vc_octets": 4096,
                    "update_period": 256, "sync_period": 512, "delay": 8, "max_delay": 512}

#: OEFH octet 0 and the four-octet index.
BODY_MIN_OCTETS = 5


def vc_body(rng, vc, index, max_octets, fixed=False):
    """A body of VC ``vc`` carrying ``index``: ``max_octets`` long if ``fixed``, else
    :data:`BODY_MIN_OCTETS` … ``max_octets``."""
    octet0 = OEFH.to_int(ver=OEFH_VERSION, vc=vc) >> 40
    length = max_octets if fixed else rng.randint(BODY_MIN_OCTETS, max_octets)
    return (bytes([octet0]) + index.to_bytes(4, "big")
            + rng.randbytes(length - BODY_MIN_OCTETS))


def VcFlow(dut, sender, receiver, vc, rng, idle=0.0, backpressure=0.0):
    """The frames of one VC in one direction: a :class:`~ethlink.sim.link_tb.Direction` on
    the sender's ``i_vc{v}`` and the receiver's ``o_vc{v}`` (its consumer paused with
    probability ``backpressure``), with bodies of :func:`vc_body`."""
    def body(rng, index, max_octets, fixed=False):
        return vc_body(rng, vc, index, max_octets, fixed)
    return Direction(dut, sender, receiver, rng, idle, backpressure, vc=vc, body=body,
                     tag_at=1)


def flows(dut, vcs, rng, idle=0.0, backpressure=(0.0,), both=True):
    """A :class:`VcFlow` per VC from A to B (and from B to A if ``both``); VC *v*'s consumer
    gets ``backpressure[v % len(backpressure)]``."""
    pairs = [("a", "b"), ("b", "a")] if both else [("a", "b")]
    return [VcFlow(dut, s, r, vc, rng, idle, backpressure[vc % len(backpressure)])
            for s, r in pairs for vc in range(vcs)]


async def run_flows(dut, flow_list, rng, frames, max_octets, timeout_cycles, first_index=0,
                    fixed=False, expect=None):
    """Send ``frames`` frames on every flow and wait until each delivered ``expect`` (default:
    all of them) or ``timeout_cycles`` passed; returns the cycles taken or ``None``."""
    for flow in flow_list:
        cocotb.start_soon(flow.send(rng, frames, max_octets, first_index, fixed))
    goal = first_index + frames if expect is None else expect
    for cycle in range(timeout_cycles):
        await RisingEdge(dut.clk)
        if all(len(flow.score.received) >= goal for flow in flow_list):
            return cycle + 1
    return None


def vc_counter(dut, name, vc, width=32):
    """Element ``vc`` of an array port (``ArrayLayout``) such as ``a_count_overruns``."""
    return (int(getattr(dut, name).value) >> (width * vc)) & ((1 << width) - 1)


def assert_flows_lossless(flow_list):
    for flow in flow_list:
        v = flow.score.verdict()
        lost_bodies = [flow.score.sent[i].hex() for i in v["lost_indices"][:2]]
        assert v["lost"] == v["duplicated"] == v["reordered"] == v["corrupted"] == 0, \
            f"VC {flow.vc} {flow.sender}->{flow.receiver}: {v}; lost bodies {lost_bodies}"


def counters_report(dut, vcs):
    """Credit state of both ends, for a failure message."""
    parts = []
    for end in "ab":
        for vc in range(vcs):
            parts.append(f"{end}{vc}: sent={vc_counter(dut, f'{end}_credits_sent', vc, 20)} "
                         f"limit={vc_counter(dut, f'{end}_credit_limit', vc, 20)} "
                         f"rx_recv={vc_counter(dut, f'{end}_credits_received', vc, 20)} "
                         f"rx_freed={vc_counter(dut, f'{end}_credits_freed', vc, 20)} "
                         f"overruns={vc_counter(dut, f'{end}_count_overruns', vc)}")
        parts.append(f"{end}: updates_sent={counter(dut, f'{end}_count_updates_sent')} "
                     f"updates_rx={counter(dut, f'{end}_count_updates_received')} "
                     f"bogus={counter(dut, f'{end}_count_bogus_updates')} "
                     f"flushes={counter(dut, f'{end}_count_flushes')}")
    return "; ".join(parts)
