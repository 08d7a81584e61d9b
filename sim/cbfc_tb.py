"""Harness, traffic and scoreboards per VC for a pair of CBFC link ends (export ``cbfc_pair``),
shared by the CBFC tests and ``ethlink bench cbfc``.

A frame body starts with a real OEFH octet 0 (version 1 and the frame's VC, spec §4.1, which
is what the credit layer reads), then the frame's index in four octets, so each VC's
:class:`~ethlink.sim.link_tb.Scoreboard` tells lost, duplicated, reordered and altered frames
apart without help from the design.
"""

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.utils import get_sim_time

from ethlink.rtl.wire import OEFH, OEFH_VERSION
from ethlink.sim.link_tb import Direction, LinkPairTB
from ethlink.sim.tb import CLOCK_NS

__all__ = ["CBFC_PAIR_PARAMS", "BODY_MIN_OCTETS", "vc_body", "VcFlow", "CbfcPairTB",
           "assert_flows_lossless", "measure_vc_isolation"]

#: The ``cbfc_pair`` build shared by the CBFC tests and ``ethlink bench cbfc`` (one Verilator
#: build): four VCs, 64-octet credits, 8 KiB receive buffers (128 credits, fewer advertised at
#: run time with ``rx_credits``), lines of up to 512 cycles set at run time.
CBFC_PAIR_PARAMS = {"vcs": 4, "credit_size": 64, "rx_vc_octets": 8192, "tx_vc_octets": 4096,
                    "update_period": 256, "sync_period": 512, "delay": 8, "max_delay": 512}

#: OEFH octet 0 and the four-octet index.
BODY_MIN_OCTETS = 5

#: Width of the credit counters and limits (``credits_sent``...) per VC.
CREDIT_BITS = 20


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


class CbfcPairTB(LinkPairTB):
    """``cbfc_pair``: a :class:`~ethlink.sim.link_tb.LinkPairTB` whose ends carry ``vcs``
    VCs, with per-VC flows and the credit state of both ends."""
    def __init__(self, dut, vcs, **options):
        super().__init__(dut, **options)
        self.vcs = vcs

    def flows(self, rng, idle=0.0, backpressure=(0.0,), both=True):
        """A :class:`VcFlow` per VC from A to B (and from B to A if ``both``); VC *v*'s
        consumer gets ``backpressure[v % len(backpressure)]``."""
        pairs = [("a", "b"), ("b", "a")] if both else [("a", "b")]
        return [VcFlow(self.dut, s, r, vc, rng, idle, backpressure[vc % len(backpressure)])
                for s, r in pairs for vc in range(self.vcs)]

    def credits(self, end, name, vc):
        """Credit counter or limit ``name`` of VC ``vc`` at ``end`` (``self.a``...)."""
        return end.element(name, vc, CREDIT_BITS)

    def counters_report(self):
        """Credit state of both ends, for a failure message."""
        parts = []
        for name, end in zip("ab", self.ends()):
            for vc in range(self.vcs):
                parts.append(f"{name}{vc}: sent={self.credits(end, 'credits_sent', vc)} "
                             f"limit={self.credits(end, 'credit_limit', vc)} "
                             f"rx_recv={self.credits(end, 'credits_received', vc)} "
                             f"rx_freed={self.credits(end, 'credits_freed', vc)} "
                             f"overruns={end.element('count_overruns', vc)}")
            parts.append(f"{name}: updates_sent={end.value('count_updates_sent')} "
                         f"updates_rx={end.value('count_updates_received')} "
                         f"bogus={end.value('count_bogus_updates')} "
                         f"flushes={end.value('count_flushes')}")
        return "; ".join(parts)


def assert_flows_lossless(flow_list):
    for flow in flow_list:
        v = flow.score.verdict()
        lost_bodies = [flow.score.sent[i].hex() for i in v["lost_indices"][:2]]
        assert v["lost"] == v["duplicated"] == v["reordered"] == v["corrupted"] == 0, \
            f"VC {flow.vc} {flow.sender}->{flow.receiver}: {v}; lost bodies {lost_bodies}"


async def measure_vc_isolation(tb, rng, body_octets=256, bulk_frames=600, probes=20):
    """The latency of a 64-octet VC 1 frame from A to B, alone on the link and while VC 0
    fills the line with ``body_octets`` frames (``bulk_frames`` of them, queued as fast as A
    takes them): ``{"idle": [cycles] * 4, "loaded": [cycles] * probes, "bulk": flow}``, each
    from the probe's first beat offered to its delivery at B. Returns once the probes are
    done; VC 0 may still be sending (``bulk``'s scoreboard has the rest)."""
    dut = tb.dut
    flows = tb.flows(rng, both=False)
    bulk, probe = flows[0], flows[1]

    async def latency(index):
        sent = get_sim_time("ns")
        count = len(probe.arrivals)
        await probe.send(rng, 1, 64, first_index=index, fixed=True)
        while len(probe.arrivals) == count:
            await RisingEdge(dut.clk)
        return round((probe.arrivals[-1] - sent) / CLOCK_NS)

    await latency(0)                     # the link comes up
    idle = []
    for index in range(1, 5):
        await ClockCycles(dut.clk, rng.randint(50, 150))
        idle.append(await latency(index))
    cocotb.start_soon(bulk.send(rng, bulk_frames, body_octets, fixed=True))
    await ClockCycles(dut.clk, 1000)
    loaded = []
    for index in range(5, 5 + probes):
        await ClockCycles(dut.clk, rng.randint(30, 120))
        loaded.append(await latency(index))
    return {"idle": idle, "loaded": loaded, "bulk": bulk, "flows": flows}
