"""One end of a lossless EthLink link: the link layer (MAC, LLR) with credit-based flow control
per VC on top (spec §5, §7, §8), and a pair of such ends joined by simulated lines.

::

    i_vc0..n ─▶ CbfcTx ─▶ LinkEnd.i ──▶ txd/txc
                  ▲ UPDATE   │ llr_head        CREDIT_UPDATE (CbfcRx) > CREDIT_SYNC (CbfcTx)
                  │          ▼                 > lcw_tx go out as the link end's lcw_tx_ext
    o_vc0..n ◀─ CbfcRx ◀─ LinkEnd.o ◀── rxd/rxc
                  ▲ SYNC, rx_held_frames
"""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.data import ArrayLayout
from amaranth.lib.wiring import In, Out

from ..link.control import LcwArbiter
from ..link.layouts import LcwLayout, MAC_BEAT_OCTETS
from ..link.link_end import LinkEnd, LinkPair
from ..stream import PacketStream, COUNTER_WIDTH
from .cbfc_rx import CbfcRx
from .cbfc_tx import CbfcTx
from .credit import CREDIT_BITS, CreditReceiver, CreditSender, check_vcs

__all__ = ["CbfcEnd", "CbfcPair", "CBFC_DEFAULTS"]

#: CBFC parameters of a :class:`CbfcEnd` and their defaults.
CBFC_DEFAULTS = dict(vcs=4, credit_size=64, tx_vc_octets=8192, rx_vc_octets=8192,
                     rx_vc_credits=0, update_threshold=0, update_period=1024,
                     sync_period=4096)

_LINK_PORTS = ("enable", "replay_timeout", "tx_state", "rx_state", "failed", "rtt",
               "rtt_valid")


class CbfcEnd(wiring.Component):
    """A link end that never drops a frame for lack of buffer: :class:`CbfcTx` and
    :class:`CbfcRx` over a :class:`~ethlink.rtl.link.link_end.LinkEnd`.

    Parameters: ``vcs`` (1…8), ``credit_size`` (32, 64, 128 octets), ``tx_vc_octets`` (the
    transmit queue of each VC), ``rx_vc_octets`` (the receive buffer of each VC),
    ``rx_vc_credits`` (credits advertised per VC, 0: the whole buffer), ``update_threshold``
    (0: an eighth of the credits advertised), ``update_period``, ``sync_period``, and every
    parameter of :class:`LinkEnd`; ``resteer`` adds :class:`CbfcTx`'s re-steering members
    (``pause``, ``purge``, ``purging``, ``divert``, ``count_frames_diverted``).

    Members
    -------
    i_vc{v} : In(PacketStream(8)); o_vc{v} : Out(PacketStream(8))
        Frame bodies of VC *v* (the OEFH ``vc`` must be *v*) to send, and received.
    txd, txc, rxd, rxc
        XGMII towards and from the line.
    lcw_tx : In(stream.Signature(LcwLayout())); lcw_rx : Out(stream.Signature(LcwLayout()))
        LCWs of the layers above (e.g. SEN), sent after the credit LCWs; and every LCW
        received, one per cycle, not back-pressured (``lcw_rx.ready`` is ignored).
    enable, replay_timeout, tx_state, rx_state, failed, rtt, rtt_valid, count_* (link)
        As in :class:`LinkEnd`.
    rx_credits : In(range(credits + 1))
        Credits advertised per VC at run time, 0: all (set in reset, :class:`CreditReceiver`).
    credits_sent, credit_limit, credits_settled : Out(ArrayLayout(20, vcs))
        The sender's counters per VC.
    credits_received, credits_freed, rx_limit, rx_occupancy : Out(ArrayLayout(20, vcs))
        The receiver's counters per VC.
    count_* (CBFC)
        Per VC (``ArrayLayout(32, vcs)``): frames sent, frames dropped at the queue, credit
        stall cycles, frames received, overruns, occupancy high-water mark; and updates and
        SYNCs sent/received, bogus ones, leaked credits recovered, frames of unknown VCs.

    Latency: CbfcTx (:attr:`CbfcTx.LATENCY`, 2 cycles from a frame's last beat in to its first
    beat out: store and forward) + the link + CbfcRx (:attr:`CbfcRx.LATENCY`, 2 cycles from a
    frame's first beat in to its first beat out: cut-through); docs/cbfc.md.
    """
    def __init__(self, *, vcs=4, credit_size=64, tx_vc_octets=8192, rx_vc_octets=8192,
                 rx_vc_credits=0, update_threshold=0, update_period=1024, sync_period=4096,
                 resteer=False, **link_params):
        self.vcs = check_vcs(vcs)
        self.link_params = link_params
        self._tx = dict(credit_size=credit_size, queue_octets=tx_vc_octets,
                        sync_period=sync_period,
                        llr_frames=link_params.get("buffer_frames", 64), resteer=resteer)
        self.resteer = resteer
        self._rx = dict(credit_size=credit_size, buffer_octets=rx_vc_octets,
                        credits=rx_vc_credits or None,
                        update_threshold=update_threshold,
                        update_period=update_period)
        link = LinkEnd.__init__.__kwdefaults__
        unknown = set(link_params) - set(link)
        if unknown:
            raise TypeError(f"unknown parameter(s) {', '.join(sorted(unknown))}")
        self.credits = rx_vc_credits or rx_vc_octets // credit_size
        vc_array = ArrayLayout(CREDIT_BITS, vcs)
        count_array = ArrayLayout(COUNTER_WIDTH, vcs)
        link_members = LinkEnd.member_shapes()
        super().__init__({
            **{f"i_vc{v}": In(PacketStream(MAC_BEAT_OCTETS)) for v in range(vcs)},
            **{f"o_vc{v}": Out(PacketStream(MAC_BEAT_OCTETS)) for v in range(vcs)},
            "txd": Out(64), "txc": Out(8), "rxd": In(64), "rxc": In(8),
            "lcw_tx": In(stream.Signature(LcwLayout())),
            "lcw_rx": Out(stream.Signature(LcwLayout())),
            **{name: link_members[name] for name in _LINK_PORTS},
            "rx_credits": In(range(self.credits + 1)),
            **{name: member for name, member in link_members.items()
               if name.startswith("count_")},
            **{name: Out(vc_array) for name in ("credits_sent", "credit_limit",
                                                "credits_settled", "credits_received",
                                                "credits_freed", "rx_limit", "rx_occupancy")},
            **{name: Out(count_array) for name in CbfcTx.VC_COUNTERS + CbfcRx.VC_COUNTERS},
            "count_bad_vc": Out(COUNTER_WIDTH),
            **{name: Out(COUNTER_WIDTH)
               for name in CreditSender.COUNTERS + CreditReceiver.COUNTERS},
            **(CbfcTx.RESTEER_MEMBERS(vcs) if resteer else {}),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.vcs
        m.submodules.link = link = LinkEnd(**self.link_params)
        m.submodules.tx = tx = CbfcTx(n, **self._tx)
        m.submodules.rx = rx = CbfcRx(n, **self._rx)
        m.submodules.lcws = lcws = LcwArbiter(3)

        for v in range(n):
            wiring.connect(m, wiring.flipped(getattr(self, f"i_vc{v}")), tx.i[v])
            wiring.connect(m, rx.o[v], wiring.flipped(getattr(self, f"o_vc{v}")))
        wiring.connect(m, tx.o, link.i)
        wiring.connect(m, link.o, rx.i)
        # Updates first: a receiver starved of credits waits for them, a SYNC can wait.
        wiring.connect(m, rx.lcw_tx, lcws.i0)
        wiring.connect(m, tx.lcw_tx, lcws.i1)
        wiring.connect(m, wiring.flipped(self.lcw_tx), lcws.i2)
        wiring.connect(m, lcws.o, link.lcw_tx_ext)
        for unit in (tx, rx, self):
            m.d.comb += [unit.lcw_rx.valid.eq(link.lcw_rx_ext.valid),
                         unit.lcw_rx.payload.eq(link.lcw_rx_ext.payload)]
        m.d.comb += [
            link.lcw_rx_ext.ready.eq(1),
            tx.llr_head.eq(link.llr_head), rx.llr_held.eq(link.rx_held_frames),
            rx.credits_advertised.eq(self.rx_credits),
            self.txd.eq(link.txd), self.txc.eq(link.txc),
            link.rxd.eq(self.rxd), link.rxc.eq(self.rxc),
        ]
        for name, member in self.signature.members.items():
            if name in _LINK_PORTS or (name.startswith("count_") and hasattr(link, name)):
                if member.flow == In:
                    m.d.comb += getattr(link, name).eq(getattr(self, name))
                else:
                    m.d.comb += getattr(self, name).eq(getattr(link, name))
        for ours, unit, theirs in (("credits_sent", tx, "sent"), ("credit_limit", tx, "limit"),
                                   ("credits_settled", tx, "settled"),
                                   ("credits_received", rx, "received"),
                                   ("credits_freed", rx, "freed"), ("rx_limit", rx, "limit"),
                                   ("rx_occupancy", rx, "occupancy")):
            m.d.comb += getattr(self, ours).eq(getattr(unit, theirs))
        for name in CbfcTx.VC_COUNTERS + CreditSender.COUNTERS:
            m.d.comb += getattr(self, name).eq(getattr(tx, name))
        if self.resteer:
            wiring.connect(m, tx.divert, wiring.flipped(self.divert))
            m.d.comb += [tx.pause.eq(self.pause), tx.purge.eq(self.purge),
                         self.purging.eq(tx.purging),
                         self.count_frames_diverted.eq(tx.count_frames_diverted)]
        for name in CbfcRx.VC_COUNTERS + CreditReceiver.COUNTERS + ("count_bad_vc",):
            m.d.comb += getattr(self, name).eq(getattr(rx, name))
        return m


class CbfcPair(LinkPair):
    """Two :class:`CbfcEnd` s joined by two simulated lines, as :class:`LinkPair` joins two
    link ends: streams ``i_vc{v}_a``/``o_vc{v}_b`` …, ports prefixed ``a_``/``b_``, lines
    ``ab_``/``ba_``."""
    end_class = CbfcEnd
