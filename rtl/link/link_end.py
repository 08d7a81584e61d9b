"""One end of an EthLink link: MAC and LLR in both directions (spec §5, §7).

::

        i ──▶ LlrTx ──▶ MacTx ──▶ txd/txc          (to the line)
                 ▲ ACK/NACK/ECHO   ▲ LCWs: LlrRx (NACK, ECHO, ACK) > LlrTx (INIT)
                 │                 │       > PingUnit (PONG, PING) > lcw_tx_ext
        o ◀── LlrRx ◀── MacRx ◀── rxd/rxc          (from the line)
                                   └─▶ received LCWs to LlrTx, LlrRx, PingUnit, lcw_rx_ext

With ``tx_register`` a two-entry register queue sits between LlrTx and MacTx.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..buffer import FRAME_BUFFER_OCTETS
from ..compose import broadcast, forward
from ..counters import Counters, merge_counters
from ..params import Flag, Param, parameters
from ..queue import TwoEntryFifo
from ..stream import PacketStream
from ..wire import LLR_PAYLOAD, LcwType, XgmiiControl
from .control import LcwArbiter, PingUnit, PING_INTERVAL, RTT_BITS
from .layouts import (CutFrameStream, LcwEvents, LcwStream, MAC_BEAT_OCTETS, SEQ_BITS, xgmii_rx,
                      xgmii_tx)
from .llr_rx import LlrRx, RxState, ACK_EVERY, ACK_TIMER, RX_CUT_THROUGH
from .llr_tx import LlrTx, TxState, TIMER_BITS, AHEAD_WORDS, BUFFER_FRAMES, REPLAY_MAX
from .mac_rx import MacRx
from .mac_tx import MacTx, IFG, LCW_IN_FRAME

__all__ = ["LinkEnd", "IDLE_WORD", "TX_REGISTER", "link_counters", "link_controls",
           "link_management"]

#: A register queue between the replay buffer's read and the MAC: the block RAM's output no
#: longer runs into the MAC's CRC trees, nor the MAC's ready into the LLR's reader, for one
#: cycle more on the way to the line (docs/link.md).
TX_REGISTER = Param("1: a register queue between the LLR's replay buffer and the MAC "
                    "(+1 cycle)", Flag())

#: An XGMII word of eight /I/ (what a line carries when nothing is sent or it is down).
IDLE_WORD = (int.from_bytes(bytes([XgmiiControl.IDLE] * 8), "little"), 0xFF)


def link_counters():
    """The counters of a link end: the MAC's under ``mac_tx``/``mac_rx``, the LLR's and the
    round-trip probe's side by side."""
    return merge_counters(Counters(LlrTx.COUNTERS), Counters(LlrRx.COUNTERS),
                          Counters(PingUnit.COUNTERS), mac_tx=Counters(MacTx.COUNTERS),
                          mac_rx=Counters(MacRx.COUNTERS))


def link_controls():
    """The LLR's controls and states and the measured round trip: what a link end shows
    besides its counters (a CBFC end shows these as they are and counts some events its own
    way)."""
    return {
        "enable": In(1),
        "replay_timeout": In(TIMER_BITS),
        "tx_state": Out(TxState),
        "rx_state": Out(RxState),
        "failed": Out(1),
        "rtt": Out(RTT_BITS),
        "rtt_valid": Out(1),
    }


def link_management():
    """What software sees of a link end (and what the tops that hold one show):
    :func:`link_controls` and the counters."""
    return {**link_controls(), "count": Out(link_counters())}


@parameters(buffer_octets=FRAME_BUFFER_OCTETS, buffer_frames=BUFFER_FRAMES,
            rx_buffer_octets=FRAME_BUFFER_OCTETS, rx_cut_through=RX_CUT_THROUGH,
            replay_max=REPLAY_MAX, tx_ahead_words=AHEAD_WORDS, ack_every=ACK_EVERY,
            ack_timer=ACK_TIMER,
            ping_interval=PING_INTERVAL, ifg=IFG, lcw_in_frame=LCW_IN_FRAME,
            tx_register=TX_REGISTER)
class LinkEnd(wiring.Component):
    """The link layer of one port: frames in and out on packet streams, XGMII on the line side.

    Parameters are those of :class:`LlrTx` (``buffer_octets``, ``buffer_frames``,
    ``replay_max``, ``tx_ahead_words`` = its ``ahead_words``), :class:`LlrRx`
    (``rx_buffer_octets``, ``rx_cut_through``, ``ack_every``, ``ack_timer``),
    :class:`PingUnit` (``ping_interval``) and :class:`MacTx` (``ifg``, ``lcw_in_frame``);
    ``tx_register`` puts a :class:`~ethlink.rtl.queue.TwoEntryFifo` between the LLR and the
    MAC (emptied by the LLR's ``abort``): the replay buffer's block-RAM output then ends in a
    register instead of running into the MAC's CRC trees, the MAC's ``ready`` ends in the
    queue instead of running into the LLR's reader (docs/timing.md), and every frame reaches
    the line 1 cycle later.

    Members
    -------
    i : In(PacketStream(8)), o : Out(PacketStream(8))
        Frame bodies (OEFH + TH + payload) to send and received, in order, exactly once. With
        ``rx_cut_through`` ``o`` is a :func:`~.layouts.CutFrameStream` (no receive buffer,
        every frame's verdict on its last beat, see :class:`LlrRx`).
    i_void : In(1)
        With the last beat on ``i``: the frame is abandoned and ends void on the line
        (:attr:`LlrTx.i_void`, spec v1.1 §7); it is never delivered. 0 when unused.
    txd, txc : Out(64), Out(8); rxd, rxc : In(64), In(8)
        XGMII towards and from the line.
    lcw_tx_ext : In(LcwStream())
        LCWs of the layers above (credits, SEN), sent when the link's own LCWs leave room.
    lcw_rx_ext : Out(LcwEvents())
        Every good LCW received (valid for one cycle, never waits).
    llr_head : Out(20)
        :attr:`LlrTx.head`, for the credit layer above.
    enable, replay_timeout, tx_state, rx_state, failed, rtt, rtt_valid, count
        :func:`link_management`: LLR on (low: OFF); the replay timer in cycles (0 = automatic
        from the measured round trip); the LLR states; link failure (between FLUSH and
        re-init); the measured round trip; every counter of the MAC (``count.mac_tx``,
        ``count.mac_rx``), the LLR and the round-trip probe.

    **Fill.** With ``lcw_in_frame`` the MAC sends an LCW in place of a frame's beat that the
    LLR cannot give in time (a frame written into the replay buffer with a gap, which the
    reader, one word behind the writer, meets): an LCW waiting to go, else a repeat of the
    newest LLR acknowledgement this end has sent — LLR_ACK of the sequence number of its last
    LLR_ACK or LLR_NACK (both name the newest frame received in order), or the one before the
    first sequence number of its last LLR_INIT_ECHO. The partner has already had that word (the
    line keeps the order of words), so repeating it moves nothing there (docs/mac.md, "Fill").
    Before any such word was sent a missing beat is an underrun (the frame is aborted).

    Latency and throughput: those of the blocks in series, stated in docs/link.md and measured
    by ``ethlink bench link``.
    """
    def __init__(self, *, buffer_octets=16384, buffer_frames=64, rx_buffer_octets=8192,
                 rx_cut_through=0, replay_max=8, tx_ahead_words=0, ack_every=8, ack_timer=128,
                 ping_interval=1024, ifg=12, lcw_in_frame=1, tx_register=0):
        self.params = dict(buffer_octets=buffer_octets, buffer_frames=buffer_frames,
                           rx_buffer_octets=rx_buffer_octets, rx_cut_through=rx_cut_through,
                           replay_max=replay_max, tx_ahead_words=tx_ahead_words,
                           ack_every=ack_every, ack_timer=ack_timer,
                           ping_interval=ping_interval, ifg=ifg, lcw_in_frame=lcw_in_frame,
                           tx_register=tx_register)
        #: Frame bodies in and out: what a pair's harness drives.
        self.frame_members = {"i": In(PacketStream(MAC_BEAT_OCTETS)),
                              "i_void": In(1),
                              "o": Out(CutFrameStream() if rx_cut_through
                                       else PacketStream(MAC_BEAT_OCTETS))}
        #: What software sees of the end (:func:`link_management`).
        self.management_members = link_management()
        super().__init__({
            **self.frame_members,
            **xgmii_tx(), **xgmii_rx(),
            "lcw_tx_ext": In(LcwStream()),
            "lcw_rx_ext": Out(LcwEvents()),
            "llr_head": Out(SEQ_BITS),
            **self.management_members,
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.llr_tx = llr_tx = LlrTx(p["buffer_octets"], p["buffer_frames"],
                                             p["replay_max"], p["tx_ahead_words"])
        fill = bool(p["lcw_in_frame"])
        m.submodules.mac_tx = mac_tx = MacTx(ifg=p["ifg"], lcw_in_frame=p["lcw_in_frame"],
                                             fill=fill)
        m.submodules.mac_rx = mac_rx = MacRx()
        m.submodules.llr_rx = llr_rx = LlrRx(p["rx_buffer_octets"], p["ack_every"],
                                             p["ack_timer"], p["rx_cut_through"])
        m.submodules.ping = ping = PingUnit(p["ping_interval"])
        m.submodules.lcws = lcws = LcwArbiter(4)

        wiring.connect(m, wiring.flipped(self.i), llr_tx.i)
        if p["tx_register"]:
            # A frame the LLR cuts (`abort`) may have beats in the stage: they go with it.
            m.submodules.tx_stage = tx_stage = TwoEntryFifo(llr_tx.mac.payload.shape(),
                                                            clear=True)
            wiring.connect(m, llr_tx.mac, tx_stage.w_stream)
            wiring.connect(m, tx_stage.r_stream, mac_tx.i)
            m.d.comb += tx_stage.clear.eq(llr_tx.abort)
        else:
            wiring.connect(m, llr_tx.mac, mac_tx.i)
        wiring.connect(m, llr_rx.o, wiring.flipped(self.o))
        # LCWs out, in this priority.
        wiring.connect(m, llr_rx.lcw_tx, lcws.i[0])
        wiring.connect(m, llr_tx.lcw_tx, lcws.i[1])
        wiring.connect(m, ping.lcw_tx, lcws.i[2])
        wiring.connect(m, wiring.flipped(self.lcw_tx_ext), lcws.i[3])
        wiring.connect(m, lcws.o, mac_tx.lcw)
        if fill:
            self._fill(m, lcws.o, mac_tx.fill)
        m.d.comb += [
            llr_tx.i_void.eq(self.i_void),
            mac_tx.abort.eq(llr_tx.abort),
            self.txd.eq(mac_tx.txd), self.txc.eq(mac_tx.txc),
            mac_rx.rxd.eq(self.rxd), mac_rx.rxc.eq(self.rxc),
            llr_rx.mac.valid.eq(mac_rx.o.valid),
            llr_rx.mac.payload.eq(mac_rx.o.payload),
            mac_rx.o.ready.eq(llr_rx.mac.ready),
        ]
        # Received LCWs go to everyone who may want them; none of them waits.
        broadcast(m, mac_rx.lcw, llr_tx.lcw_rx, llr_rx.lcw_rx, ping.lcw_rx, self.lcw_rx_ext)
        m.d.comb += [
            llr_tx.enable.eq(self.enable),
            llr_tx.replay_timeout.eq(self.replay_timeout),
            llr_tx.rtt.eq(ping.rtt), llr_tx.rtt_valid.eq(ping.rtt_valid),
            self.tx_state.eq(llr_tx.state), self.rx_state.eq(llr_rx.state),
            self.failed.eq(llr_tx.failed),
            self.rtt.eq(ping.rtt), self.rtt_valid.eq(ping.rtt_valid),
            self.llr_head.eq(llr_tx.head),
        ]
        wiring.connect(m, mac_tx.count, wiring.flipped(self.count.mac_tx))
        wiring.connect(m, mac_rx.count, wiring.flipped(self.count.mac_rx))
        for unit in (llr_tx, llr_rx, ping):
            forward(m, self.count, unit.count)
        return m

    @staticmethod
    def _fill(m, sent, fill):
        """Drive the MAC's ``fill`` with LLR_ACK of the newest in-order frame this end has
        told the partner about, from the LCWs ``sent`` to the MAC (see the class docstring)."""
        newest = Signal(SEQ_BITS, name="fill_seq")
        known = Signal(name="fill_known")
        seq = LLR_PAYLOAD.layout(sent.payload.payload).seq
        with m.If(sent.valid & sent.ready):
            with m.Switch(sent.payload.type):
                with m.Case(LcwType.LLR_ACK, LcwType.LLR_NACK):
                    m.d.sync += [newest.eq(seq), known.eq(1)]
                with m.Case(LcwType.LLR_INIT_ECHO):
                    # Ref: spec §7 — the echo's seq is the first frame the partner will
                    # send: none of its frames is received yet, the newest is the one before.
                    m.d.sync += [newest.eq(seq - 1), known.eq(1)]
        payload = LLR_PAYLOAD.layout(fill.payload.payload)
        m.d.comb += [fill.valid.eq(known), fill.payload.type.eq(LcwType.LLR_ACK),
                     payload.seq.eq(newest)]
