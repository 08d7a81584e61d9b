"""One end of an EthLink link: MAC and LLR in both directions, and a pair of ends joined by
simulated lines (spec §5, §7).

::

        i ──▶ LlrTx ──▶ MacTx ──▶ txd/txc          (to the line)
                 ▲ ACK/NACK/ECHO   ▲ LCWs: LlrRx (NACK, ECHO, ACK) > LlrTx (INIT)
                 │                 │       > PingUnit (PONG, PING) > lcw_tx_ext
        o ◀── LlrRx ◀── MacRx ◀── rxd/rxc          (from the line)
                                   └─▶ received LCWs to LlrTx, LlrRx, PingUnit, lcw_rx_ext
"""

from amaranth.hdl import Module, Cat, Const, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..hierarchy import forward_member, pair_name
from ..phy.channel import LinkChannel
from ..phy.fec.loop import CHANNEL_CONTROLS
from ..phy.fec.sublayer import FecLink
from ..stream import PacketStream, COUNTER_WIDTH
from ..wire import XgmiiControl
from .control import LcwArbiter, PingUnit, RTT_BITS
from .layouts import LcwLayout, MAC_BEAT_OCTETS, SEQ_BITS
from .llr_rx import LlrRx, RxState, HELD_FRAME_BITS
from .llr_tx import LlrTx, TxState, TIMER_BITS
from .mac_rx import MacRx, RX_COUNTERS
from .mac_tx import MacTx, TX_COUNTERS

__all__ = ["LinkEnd", "LinkPair", "IDLE_WORD", "link_end_counters", "line_members", "add_line"]

#: An XGMII word of eight /I/ (what a line carries when nothing is sent or it is down).
IDLE_WORD = (int.from_bytes(bytes([XgmiiControl.IDLE] * 8), "little"), 0xFF)


_MAC_COUNTERS = {"tx": TX_COUNTERS, "rx": RX_COUNTERS}


def link_end_counters():
    """Names of a :class:`LinkEnd`'s counter ports, in a stable order."""
    return (tuple(f"count_mac_{side}_{name}" for side, names in _MAC_COUNTERS.items()
                  for name in names)
            + LlrTx.COUNTERS + LlrRx.COUNTERS + PingUnit.COUNTERS)


class LinkEnd(wiring.Component):
    """The link layer of one port: frames in and out on packet streams, XGMII on the line side.

    Parameters are those of :class:`LlrTx` (``buffer_octets``, ``buffer_frames``,
    ``replay_max``), :class:`LlrRx` (``rx_buffer_octets``, ``ack_every``, ``ack_timer``),
    :class:`PingUnit` (``ping_interval``) and :class:`MacTx` (``ifg``, ``lcw_in_frame``).

    Members
    -------
    i : In(PacketStream(8)), o : Out(PacketStream(8))
        Frame bodies (OEFH + TH + payload) to send and received, in order, exactly once.
    txd, txc : Out(64), Out(8); rxd, rxc : In(64), In(8)
        XGMII towards and from the line.
    lcw_tx_ext : In(stream.Signature(LcwLayout))
        LCWs of the layers above (credits, SEN), sent when the link's own LCWs leave room.
    lcw_rx_ext : Out(stream.Signature(LcwLayout))
        Every good LCW received (valid for one cycle; ``ready`` is ignored).
    enable : In(1)
        LLR on; low: OFF.
    replay_timeout : In(20)
        Replay timer in cycles, 0 = automatic from the measured round trip.
    tx_state, rx_state, failed, rtt, rtt_valid : Out
        LLR states, link failure (between FLUSH and re-init), measured round trip.
    llr_head, rx_held_frames : Out(20), Out(16)
        :attr:`LlrTx.head` and :attr:`LlrRx.held_frames`, for the credit layer above.
    count_* : Out(32)
        Every counter of the MAC (``count_mac_tx_*``, ``count_mac_rx_*``), the LLR and the
        round-trip probe.

    Latency and throughput: those of the blocks in series, stated in docs/link.md and measured
    by ``ethlink bench link``.
    """
    def __init__(self, *, buffer_octets=16384, buffer_frames=64, rx_buffer_octets=8192,
                 replay_max=8, ack_every=8, ack_timer=128, ping_interval=1024, ifg=12,
                 lcw_in_frame=1):
        self.params = dict(buffer_octets=buffer_octets, buffer_frames=buffer_frames,
                           rx_buffer_octets=rx_buffer_octets, replay_max=replay_max,
                           ack_every=ack_every, ack_timer=ack_timer,
                           ping_interval=ping_interval, ifg=ifg, lcw_in_frame=lcw_in_frame)
        super().__init__(self.member_shapes())

    @staticmethod
    def member_shapes():
        """The members of every link end (they do not depend on the parameters)."""
        return {
            "i": In(PacketStream(MAC_BEAT_OCTETS)),
            "o": Out(PacketStream(MAC_BEAT_OCTETS)),
            "txd": Out(64), "txc": Out(8),
            "rxd": In(64), "rxc": In(8),
            "lcw_tx_ext": In(stream.Signature(LcwLayout())),
            "lcw_rx_ext": Out(stream.Signature(LcwLayout())),
            "enable": In(1),
            "replay_timeout": In(TIMER_BITS),
            "tx_state": Out(TxState),
            "rx_state": Out(RxState),
            "failed": Out(1),
            "rtt": Out(RTT_BITS),
            "rtt_valid": Out(1),
            "llr_head": Out(SEQ_BITS),
            "rx_held_frames": Out(HELD_FRAME_BITS),
            **{name: Out(COUNTER_WIDTH) for name in link_end_counters()},
        }

    def elaborate(self, platform):
        m = Module()
        p = self.params
        m.submodules.llr_tx = llr_tx = LlrTx(p["buffer_octets"], p["buffer_frames"],
                                             p["replay_max"])
        m.submodules.mac_tx = mac_tx = MacTx(ifg=p["ifg"], lcw_in_frame=bool(p["lcw_in_frame"]))
        m.submodules.mac_rx = mac_rx = MacRx()
        m.submodules.llr_rx = llr_rx = LlrRx(p["rx_buffer_octets"], p["ack_every"],
                                             p["ack_timer"])
        m.submodules.ping = ping = PingUnit(p["ping_interval"])
        m.submodules.lcws = lcws = LcwArbiter(4)

        wiring.connect(m, wiring.flipped(self.i), llr_tx.i)
        wiring.connect(m, llr_tx.mac, mac_tx.i)
        wiring.connect(m, llr_rx.o, wiring.flipped(self.o))
        wiring.connect(m, llr_rx.lcw_tx, lcws.i0)
        wiring.connect(m, llr_tx.lcw_tx, lcws.i1)
        wiring.connect(m, ping.lcw_tx, lcws.i2)
        wiring.connect(m, wiring.flipped(self.lcw_tx_ext), lcws.i3)
        wiring.connect(m, lcws.o, mac_tx.lcw)
        m.d.comb += [
            mac_tx.abort.eq(llr_tx.abort),
            self.txd.eq(mac_tx.txd), self.txc.eq(mac_tx.txc),
            mac_rx.rxd.eq(self.rxd), mac_rx.rxc.eq(self.rxc),
            llr_rx.mac.valid.eq(mac_rx.o.valid),
            llr_rx.mac.payload.eq(mac_rx.o.payload),
            mac_rx.o.ready.eq(llr_rx.mac.ready),
        ]
        # Received LCWs go to everyone who may want them; none of them waits.
        for unit in (llr_tx, llr_rx, ping):
            m.d.comb += [unit.lcw_rx.valid.eq(mac_rx.lcw.valid),
                         unit.lcw_rx.payload.eq(mac_rx.lcw.payload)]
        m.d.comb += [
            self.lcw_rx_ext.valid.eq(mac_rx.lcw.valid),
            self.lcw_rx_ext.payload.eq(mac_rx.lcw.payload),
            mac_rx.lcw.ready.eq(1),
            llr_tx.enable.eq(self.enable),
            llr_tx.replay_timeout.eq(self.replay_timeout),
            llr_tx.rtt.eq(ping.rtt), llr_tx.rtt_valid.eq(ping.rtt_valid),
            self.tx_state.eq(llr_tx.state), self.rx_state.eq(llr_rx.state),
            self.failed.eq(llr_tx.failed),
            self.rtt.eq(ping.rtt), self.rtt_valid.eq(ping.rtt_valid),
            self.llr_head.eq(llr_tx.head), self.rx_held_frames.eq(llr_rx.held_frames),
        ]
        for side, mac in (("tx", mac_tx), ("rx", mac_rx)):
            for name in _MAC_COUNTERS[side]:
                m.d.comb += getattr(self, f"count_mac_{side}_{name}").eq(
                    getattr(mac, f"count_{name}"))
        for unit in (llr_tx, llr_rx, ping):
            for name in unit.COUNTERS:
                m.d.comb += getattr(self, name).eq(getattr(unit, name))
        return m


_PAIR_CHANNEL_COUNTERS = ("count_flipped_bits", "count_errored_beats", "count_lost")


#: Members of an end that a pair wires itself (the line side and the hooks for layers above).
_PAIR_INTERNAL = ("txd", "txc", "rxd", "rxc", "lcw_tx_ext", "lcw_rx_ext", "llr_head",
                  "rx_held_frames", "lcw_tx", "lcw_rx")


def line_members(fec, delay, max_delay=0):
    """Signature members of one simulated line (see :func:`add_line`), unprefixed: the
    channel's controls and counters, ``delay`` when it is set at run time (``max_delay``),
    the FEC counters with ``fec``."""
    members = {name: In(shape) for name, shape in CHANNEL_CONTROLS.items()}
    members.update({name: Out(COUNTER_WIDTH) for name in _PAIR_CHANNEL_COUNTERS})
    if max_delay:
        members["delay"] = In(range(max_delay + 1), init=delay)
    if fec:
        members["count_uncorrectable_codewords"] = Out(COUNTER_WIDTH)
        members["count_corrected_symbols"] = Out(COUNTER_WIDTH)
    return members


def add_line(m, owner, line, tx, rx, *, fec, delay, max_delay=0):
    """Join ``tx``'s ``txd``/``txc`` to ``rx``'s ``rxd``/``rxc`` by a simulated line, submodule
    ``line_{line}`` of ``m``: a :class:`LinkChannel` of ``delay`` cycles (``max_delay``: up to
    that many, set by ``{line}_delay``), or with ``fec`` an RS(272,258) :class:`FecLink`
    switched off by ``owner.fec_bypass``. Its controls and counters are ``owner``'s members
    ``{line}_*`` (:func:`line_members`). Nothing arriving (line down, start-up, a word lost)
    reaches ``rx`` as an idle word."""
    if fec:
        m.submodules[f"line_{line}"] = link = FecLink(delay=delay)
        m.d.comb += link.bypass.eq(owner.fec_bypass)
        sender, receiver = link.tx, link.rx
        controls = link
        counters = {name: getattr(link, name) for name in (
            *_PAIR_CHANNEL_COUNTERS, "count_uncorrectable_codewords",
            "count_corrected_symbols")}
        m.d.comb += [sender.payload.data.eq(tx.txd), sender.payload.ctrl.eq(tx.txc)]
        word = (receiver.payload.data, receiver.payload.ctrl)
    else:
        m.submodules[f"line_{line}"] = channel = LinkChannel(
            width=72, max_delay=max_delay or delay)
        m.d.comb += channel.delay.eq(getattr(owner, f"{line}_delay") if max_delay else delay)
        sender, receiver = channel.i, channel.o
        controls = channel
        counters = {name: getattr(channel, name) for name in _PAIR_CHANNEL_COUNTERS}
        m.d.comb += sender.payload.data.eq(Cat(tx.txd, tx.txc))
        word = (receiver.payload.data[:64], receiver.payload.data[64:])
    m.d.comb += [sender.valid.eq(1), receiver.ready.eq(1)]
    for name in CHANNEL_CONTROLS:
        m.d.comb += getattr(controls, name).eq(getattr(owner, f"{line}_{name}"))
    for name, value in counters.items():
        m.d.comb += getattr(owner, f"{line}_{name}").eq(value)
    m.d.comb += [rx.rxd.eq(Mux(receiver.valid, word[0], Const(IDLE_WORD[0], 64))),
                 rx.rxc.eq(Mux(receiver.valid, word[1], IDLE_WORD[1]))]


class LinkPair(wiring.Component):
    """Two :class:`LinkEnd` s, A and B, joined by two simulated lines (A→B and B→A), each a
    :class:`~ethlink.rtl.phy.channel.LinkChannel` of ``delay`` cycles carrying one XGMII word
    per beat, or with ``fec`` an RS(272,258) FEC link (:class:`~ethlink.rtl.phy.fec.sublayer.
    FecLink`, ``fec_bypass`` switches it off at run time).

    Members: each end's streams suffixed ``_a``/``_b`` (``i_a``/``o_b``: A sends, B receives);
    each end's other ports (``enable``, ``replay_timeout``, status, counters) prefixed
    ``a_``/``b_``; each line's channel controls and counters prefixed ``ab_``/``ba_`` (error
    rate, bursts, link up, seed). A line that is down, or a word lost in it, reaches the
    receiving MAC as an idle word. With ``max_delay`` above ``delay`` (channel lines only),
    the lines hold up to ``max_delay`` cycles and ``ab_delay``/``ba_delay`` set their delay at
    run time (the credit benches sweep the round trip on one build). Subclasses put another
    end on the lines (:attr:`end_class`,
    e.g. the CBFC end).
    """
    end_class = LinkEnd

    def __init__(self, *, fec=0, delay=8, max_delay=0, **end_params):
        self.fec = bool(fec)
        self.delay = delay
        # Lines of up to max_delay cycles whose delay is set at run time (ab_delay, ba_delay).
        self.max_delay = max_delay if max_delay > delay and not self.fec else 0
        self._ends = {name: self.end_class(**end_params) for name in "ab"}
        line = line_members(self.fec, delay, self.max_delay)
        members = {"fec_bypass": In(1)} if self.fec else {}
        for end, inner in self._ends.items():
            for name, member in inner.signature.members.items():
                if name not in _PAIR_INTERNAL:
                    members[pair_name(end, name, member)] = member
        members.update({f"{name}_{member_name}": member for name in ("ab", "ba")
                        for member_name, member in line.items()})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        ends = self._ends
        for name, end in ends.items():
            m.submodules[f"end_{name}"] = end
            for port, member in end.signature.members.items():
                if port in _PAIR_INTERNAL:
                    continue
                forward_member(m, getattr(self, pair_name(name, port, member)),
                               getattr(end, port), member)
            for lcw_tx, lcw_rx in (("lcw_tx_ext", "lcw_rx_ext"), ("lcw_tx", "lcw_rx")):
                if lcw_tx in end.signature.members:
                    m.d.comb += [getattr(end, lcw_tx).valid.eq(0),
                                 getattr(end, lcw_rx).ready.eq(1)]

        for line, (tx, rx) in {"ab": (ends["a"], ends["b"]), "ba": (ends["b"], ends["a"])}.items():
            add_line(m, self, line, tx, rx, fec=self.fec, delay=self.delay,
                     max_delay=self.max_delay)
        return m
