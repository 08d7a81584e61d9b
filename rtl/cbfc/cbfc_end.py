"""One end of a lossless EthLink link: the link layer (MAC, LLR) with credit-based flow control
per VC on top (spec §5, §7, §8).

::

    i[0..n] ─▶ CbfcTx ─▶ LinkEnd.i ──▶ txd/txc
                  ▲ UPDATE   │ llr_head        CREDIT_UPDATE (CbfcRx) > CREDIT_SYNC (CbfcTx)
                  │          ▼                 > lcw_tx go out as the link end's lcw_tx_ext
    o[0..n] ◀─ CbfcRx ◀─ LinkEnd.o ◀── rxd/rxc
                  ▲ SYNC (applied as it comes)
"""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.data import ArrayLayout
from amaranth.lib.wiring import In, Out

from ..buffer import FRAME_QUEUE_OCTETS
from ..compose import broadcast, forward
from ..counters import Counters, merge_counters
from ..link.control import LcwArbiter
from ..link.layouts import LcwEvents, LcwStream, MAC_BEAT_OCTETS, xgmii_rx, xgmii_tx
from ..link.link_end import LinkEnd, link_controls, link_counters
from ..link.llr_tx import AHEAD_WORDS
from ..params import Flag, IntRange, Param, parameters
from ..stream import PacketStream, VerdictPacketStream
from .cbfc_rx import CbfcRx
from .cbfc_tx import CbfcTx, ResteerSignature
from .credit import CREDIT_BITS, CREDIT_SIZE, SYNC_PERIOD, UPDATE_PERIOD, VCS

__all__ = ["CbfcEnd"]

#: The LLR's totals the CBFC layer counts per VC instead (a CBFC end shows those).
_PER_VC = ("frames_sent", "frames_received")

#: Words a CBFC end lets its LLR hold ahead of the wire before the VC arbiter grants the next
#: frame (:class:`LlrTx` ``ahead_words``): enough for the grant, the write and the read to
#: reach the MAC before the line runs dry (docs/cbfc.md, "Nothing piles up ahead of the
#: wire").
TX_AHEAD_WORDS = 6
#: The credit state a CBFC end shows, per VC.
_CREDIT_STATE = ("credits_sent", "credit_limit", "credits_settled", "credits_received",
                 "credits_freed", "rx_limit", "rx_occupancy")


@parameters(forward=LinkEnd, exclude=("rx_buffer_octets", "rx_cut_through"),
            vcs=VCS, credit_size=CREDIT_SIZE,
            tx_vc_octets=Param("transmit queue per VC in octets", FRAME_QUEUE_OCTETS.check),
            rx_vc_octets=Param("receive buffer per VC in octets", FRAME_QUEUE_OCTETS.check),
            rx_vc_credits=Param("credits advertised per VC, 0: the whole buffer",
                                IntRange(0, 1 << 15)),
            update_threshold=Param("CREDIT_UPDATE once the limit moved this much, "
                                   "0: credits / 8", IntRange(0, 1 << 15)),
            update_period=UPDATE_PERIOD, sync_period=SYNC_PERIOD,
            rx_pass_vcs=Param("mask of the VCs whose receive buffer passes a frame on as it "
                              "arrives (CbfcRx pass_vcs)", IntRange(0, 255)),
            urgent_vcs=Param("mask of the VCs the transmit arbiter serves first (CbfcTx "
                             "urgent_vcs)", IntRange(0, 255)),
            urgent_burst=Param("urgent frames granted in a row before another VC waiting "
                               "gets one", IntRange(1, 255)),
            tx_ahead_words=AHEAD_WORDS,
            bypass=Param("a frame whose TH tells its length bypasses its VC's empty transmit "
                         "queue (as on a NIC's ports)", Flag()),
            resteer=Param("the re-steering interface of CbfcTx (as on a NIC's ports)", Flag()))
class CbfcEnd(wiring.Component):
    """A link end that never drops a frame for lack of buffer: :class:`CbfcTx` and
    :class:`CbfcRx` over a :class:`~ethlink.rtl.link.link_end.LinkEnd`.

    Parameters: ``vcs`` (1…8), ``credit_size`` (32, 64, 128 octets), ``tx_vc_octets`` (the
    transmit queue of each VC), ``rx_vc_octets`` (the receive buffer of each VC),
    ``rx_vc_credits`` (credits advertised per VC, 0: the whole buffer), ``update_threshold``
    (0: an eighth of the credits advertised), ``update_period``, ``sync_period``, and every
    parameter of :class:`LinkEnd`; ``resteer`` adds :class:`CbfcTx`'s re-steering interface
    (``resteer``, and ``count.frames_diverted``); ``bypass`` lets a frame whose TH tells its
    length skip an empty transmit queue (:class:`CbfcTx`; its gaps, if any, are filled by the
    MAC with LCWs, which needs ``lcw_in_frame``); ``rx_pass_vcs`` (a mask) makes the receive
    buffers of those VCs pass a frame on as it arrives, its verdict on its last beat
    (:class:`CbfcRx` ``pass_vcs``); ``urgent_vcs`` (a mask) and ``urgent_burst`` give those
    VCs the transmit arbiter first, with a bound for the others (:class:`CbfcTx`).

    Members
    -------
    i : In(PacketStream(8)).array(vcs); o : Out(PacketStream(8)).array(vcs)
        Frame bodies of VC *v* (the OEFH ``vc`` must be *v*) to send, and received;
        ``o`` is ``Out(VerdictPacketStream(8)).array(vcs)`` when ``rx_pass_vcs`` is not 0.
    txd, txc, rxd, rxc
        XGMII towards and from the line.
    lcw_tx : In(LcwStream()); lcw_rx : Out(LcwEvents())
        LCWs of the layers above (e.g. SEN), sent after the credit LCWs; and every LCW
        received, one per cycle, never waiting.
    enable, replay_timeout, tx_state, rx_state, failed, rtt, rtt_valid
        As in :class:`LinkEnd` (:func:`~ethlink.rtl.link.link_end.link_controls`).
    rx_credits : In(range(credits + 1))
        Credits advertised per VC at run time, 0: all (set in reset, :class:`CreditReceiver`).
    credits_sent, credit_limit, credits_settled : Out(ArrayLayout(20, vcs))
        The sender's counters per VC.
    credits_received, credits_freed, rx_limit, rx_occupancy : Out(ArrayLayout(20, vcs))
        The receiver's counters per VC.
    count : Out(Counters)
        The link end's (its LLR's frame totals replaced by CBFC's per-VC ``frames_sent`` and
        ``frames_received``), :class:`CbfcTx`'s and :class:`CbfcRx`'s.
    resteer : In(ResteerSignature())
        ``resteer=True`` only.

    Latency: CbfcTx (:attr:`CbfcTx.LATENCY`, 2 cycles from a frame's last beat in to its first
    beat out: store and forward; with ``bypass``, 1 cycle from its first beat offered for a
    frame that finds its queue empty, :attr:`CbfcTx.BYPASS_LATENCY`) + the link (its receiver cut
    through: no receive buffer in the LLR, 1 cycle) + CbfcRx (:attr:`CbfcRx.LATENCY`, 2
    cycles from a frame's last beat in to its first beat out: the VC buffer is the one
    store-and-forward copy, rolled back when the frame is bad; 1 cycle from each beat in on
    a VC of ``rx_pass_vcs`` whose consumer keeps up, :attr:`CbfcRx.PASS_LATENCY`);
    docs/cbfc.md.
    """
    def __init__(self, *, vcs=4, credit_size=64, tx_vc_octets=8192, rx_vc_octets=8192,
                 rx_vc_credits=0, update_threshold=0, update_period=1024, sync_period=4096,
                 resteer=False, bypass=False, rx_pass_vcs=0, urgent_vcs=0, urgent_burst=2,
                 tx_ahead_words=TX_AHEAD_WORDS, **link_params):
        self.vcs = vcs
        self.link_params = {**link_params, "tx_ahead_words": tx_ahead_words}
        self._tx = dict(credit_size=credit_size, queue_octets=tx_vc_octets,
                        sync_period=sync_period,
                        llr_frames=link_params.get("buffer_frames",
                                                   LinkEnd.PARAMETERS["buffer_frames"][0]),
                        resteer=resteer, bypass=bypass, urgent_vcs=urgent_vcs,
                        urgent_burst=urgent_burst)
        self._resteer = resteer
        self._rx = dict(credit_size=credit_size, buffer_octets=rx_vc_octets,
                        credits=rx_vc_credits or None,
                        update_threshold=update_threshold,
                        update_period=update_period, pass_vcs=rx_pass_vcs)
        self.credits = rx_vc_credits or rx_vc_octets // credit_size
        #: Frame bodies per VC in and out: what a pair's harness drives.
        self.frame_members = {"i": In(PacketStream(MAC_BEAT_OCTETS)).array(vcs),
                              "o": Out(VerdictPacketStream(MAC_BEAT_OCTETS) if rx_pass_vcs
                                       else PacketStream(MAC_BEAT_OCTETS)).array(vcs)}
        #: What software sees of the end: link controls and states, credits, counters.
        self.management_members = {
            **link_controls(),
            "rx_credits": In(range(self.credits + 1)),
            **{name: Out(ArrayLayout(CREDIT_BITS, vcs)) for name in _CREDIT_STATE},
            "count": Out(self.counters(vcs, resteer, passing=bool(rx_pass_vcs))),
        }
        super().__init__({
            **self.frame_members,
            **xgmii_tx(), **xgmii_rx(),
            "lcw_tx": In(LcwStream()),
            "lcw_rx": Out(LcwEvents()),
            **self.management_members,
            **({"resteer": In(ResteerSignature())} if resteer else {}),
        })

    @staticmethod
    def link_part():
        """The counters of the link end a CBFC end shows (all but the LLR's frame totals)."""
        return Counters(members={name: member for name, member in link_counters().members.items()
                                 if name not in _PER_VC})

    @classmethod
    def counters(cls, vcs, resteer=False, passing=False):
        return merge_counters(cls.link_part(), CbfcTx.counters(vcs, resteer),
                              CbfcRx.counters(vcs, passing))

    def elaborate(self, platform):
        m = Module()
        n = self.vcs
        # The LLR receiver cuts through: each VC's buffer here is a frame's only copy.
        m.submodules.link = link = LinkEnd(**self.link_params, rx_cut_through=1)
        m.submodules.tx = tx = CbfcTx(n, **self._tx)
        m.submodules.rx = rx = CbfcRx(n, **self._rx)
        m.submodules.lcws = lcws = LcwArbiter(3)

        for v in range(n):
            wiring.connect(m, wiring.flipped(self.i[v]), tx.i[v])
            wiring.connect(m, rx.o[v], wiring.flipped(self.o[v]))
        wiring.connect(m, tx.o, link.i)
        wiring.connect(m, link.o, rx.i)
        # Updates first: a receiver starved of credits waits for them, a SYNC can wait.
        wiring.connect(m, rx.lcw_tx, lcws.i[0])
        wiring.connect(m, tx.lcw_tx, lcws.i[1])
        wiring.connect(m, wiring.flipped(self.lcw_tx), lcws.i[2])
        wiring.connect(m, lcws.o, link.lcw_tx_ext)
        broadcast(m, link.lcw_rx_ext, tx.lcw_rx, rx.lcw_rx, self.lcw_rx)
        m.d.comb += [
            tx.llr_head.eq(link.llr_head),
            rx.credits_advertised.eq(self.rx_credits),
            self.txd.eq(link.txd), self.txc.eq(link.txc),
            link.rxd.eq(self.rxd), link.rxc.eq(self.rxc),
            self.credits_sent.eq(tx.sent), self.credit_limit.eq(tx.limit),
            self.credits_settled.eq(tx.settled),
            self.credits_received.eq(rx.received), self.credits_freed.eq(rx.freed),
            self.rx_limit.eq(rx.limit), self.rx_occupancy.eq(rx.occupancy),
        ]
        forward(m, self, link, link_controls())
        forward(m, self.count, link.count, self.link_part())
        forward(m, self.count, tx.count)
        forward(m, self.count, rx.count)
        if self._resteer:
            wiring.connect(m, wiring.flipped(self.resteer), tx.resteer)
        return m
