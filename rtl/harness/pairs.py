"""Two link ends joined by simulated lines: the link layer, CBFC and the NIC under test.

Each pair holds two ends, A and B, and one line each way (``ab``: A→B, ``ba``: B→A). A line
is a :class:`~ethlink.rtl.phy.channel.LinkChannel` carrying one XGMII word per beat, or with
FEC an RS(272,258) :class:`~ethlink.rtl.phy.fec.sublayer.FecLink` (``fec_bypass`` switches it
off at run time). A line that is down, or a word lost in it, reaches the receiving MAC as an
idle word.

A pair's members are ``a`` and ``b`` (what a test drives of each end: its frame streams and
its management members), and the lines' controls and counters (:func:`LineSignature`). At a
Verilog export ``a.enable`` is ``a_enable`` and end A's input stream ``a.i`` is
``s_axis_a``. A link end's ``i_void`` flag (spec v1.1 §7) travels with its input stream as
``user.void`` (:class:`~ethlink.rtl.link.layouts.VoidableFrameLayout`): ``s_axis_a_tuser``.
"""

from amaranth.hdl import Module, Cat, Const, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..cbfc.cbfc_end import CbfcEnd
from ..compose import forward
from ..counters import Counters, counter_values
from ..link.layouts import VoidableFrameLayout
from ..link.link_end import IDLE_WORD, LinkEnd
from ..nic.nic import Nic, NicPortSignature
from ..params import Flag, IntRange, Param, parameters
from ..phy.channel import DELAY, LinkChannel, channel_controls
from ..phy.fec.sublayer import FecLink

__all__ = ["LineSignature", "add_line", "LinkPair", "CbfcPair", "NicPair"]

#: Counters of a line a pair shows; an FEC line adds the decoder's.
_LINE_COUNTERS = ("flipped_bits", "errored_beats", "lost")
_FEC_COUNTERS = ("uncorrectable_codewords", "corrected_symbols")


def LineSignature(fec, delay, max_delay=0, tap=False):
    """One simulated line as a pair shows it: the channel's controls, ``delay`` when it is set
    at run time (``max_delay``), its counters (with ``fec`` the FEC's too), and with ``tap``
    the XGMII words the sender puts on it (``tap.txd``/``txc``) and the receiver takes off it
    (``tap.rxd``/``rxc``), for latency measurement."""
    members = dict(channel_controls())
    if max_delay:
        members["delay"] = In(range(max_delay + 1), init=delay)
    members["count"] = Out(Counters(_LINE_COUNTERS + (_FEC_COUNTERS if fec else ())))
    if tap:
        members["tap"] = Out(wiring.Signature({"txd": Out(64), "txc": Out(8), "rxd": Out(64),
                                               "rxc": Out(8)}))
    return wiring.Signature(members)


def add_line(m, name, line, tx, rx, *, fec, delay, max_delay=0, fec_bypass=None):
    """Join ``tx``'s ``txd``/``txc`` to ``rx``'s ``rxd``/``rxc`` by a simulated line, submodule
    ``line_{name}`` of ``m``: a :class:`LinkChannel` of ``delay`` cycles (``max_delay``: up to
    that many, set by ``line.delay``), or with ``fec`` an RS(272,258) :class:`FecLink`
    switched off by ``fec_bypass``. ``line`` is the pair's interface of the line
    (:func:`LineSignature`). Nothing arriving (line down, start-up, a word lost) reaches
    ``rx`` as an idle word."""
    if fec:
        m.submodules[f"line_{name}"] = link = FecLink(delay=delay)
        m.d.comb += link.bypass.eq(fec_bypass)
        sender, receiver = link.tx, link.rx
        m.d.comb += [sender.payload.data.eq(tx.txd), sender.payload.ctrl.eq(tx.txc)]
        word = (receiver.payload.data, receiver.payload.ctrl)
        controls = link
    else:
        m.submodules[f"line_{name}"] = channel = LinkChannel(
            width=72, max_delay=max_delay or delay)
        m.d.comb += channel.delay.eq(line.delay if max_delay else delay)
        sender, receiver = channel.i, channel.o
        m.d.comb += sender.payload.data.eq(Cat(tx.txd, tx.txc))
        word = (receiver.payload.data[:64], receiver.payload.data[64:])
        controls = channel
    m.d.comb += [sender.valid.eq(1), receiver.ready.eq(1)]
    forward(m, line, controls, channel_controls())
    inner = counter_values(controls.count)
    for name, value in counter_values(line.count).items():
        # A plain line shows the FEC counters of a pair's other lines as 0.
        if name in inner:
            m.d.comb += value.eq(inner[name])
    m.d.comb += [rx.rxd.eq(Mux(receiver.valid, word[0], Const(IDLE_WORD[0], 64))),
                 rx.rxc.eq(Mux(receiver.valid, word[1], IDLE_WORD[1]))]
    if "tap" in line.signature.members:
        m.d.comb += [line.tap.txd.eq(tx.txd), line.tap.txc.eq(tx.txc),
                     line.tap.rxd.eq(rx.rxd), line.tap.rxc.eq(rx.rxc)]


_FEC = Param("1: RS(272,258) FEC on both lines (fec_bypass turns it off)", Flag())
_MAX_DELAY = Param("0: fixed delay; else up to this many cycles, set at run time on "
                   "ab.delay/ba.delay", IntRange(0, DELAY.check.high))


@parameters(forward=LinkEnd, fec=_FEC, delay=DELAY, max_delay=_MAX_DELAY)
class LinkPair(wiring.Component):
    """Two :class:`LinkEnd` s, A and B, joined by two simulated lines of ``delay`` cycles
    (see the module docstring).

    Members
    -------
    a, b : Out(...)
        Each end's frame streams ``i``/``o`` and its management members (``enable``,
        ``replay_timeout``, states, counters); the layers-above hooks (LCWs, the LLR's head)
        are tied off.
    ab, ba : Out(LineSignature(...))
        Each line's controls and counters (error rate, bursts, link up, seed). With
        ``max_delay`` above ``delay`` (channel lines only) the lines hold up to ``max_delay``
        cycles and ``ab.delay``/``ba.delay`` set their delay at run time (the credit benches
        sweep the round trip on one build).
    fec_bypass : In(1)
        With ``fec`` only.

    Subclasses put another end on the lines (:attr:`end_class`, e.g. the CBFC end).
    """
    end_class = LinkEnd

    def __init__(self, *, fec=0, delay=8, max_delay=0, **end_params):
        self.fec = bool(fec)
        self.delay = delay
        # Lines of up to max_delay cycles whose delay is set at run time (ab.delay, ba.delay).
        self.max_delay = max_delay if max_delay > delay and not self.fec else 0
        self._ends = {name: self.end_class(**end_params) for name in "ab"}
        self._shown = self._end_members(self._ends["a"])
        line = LineSignature(self.fec, delay, self.max_delay)
        super().__init__({
            **({"fec_bypass": In(1)} if self.fec else {}),
            "a": Out(self._shown), "b": Out(self._shown),
            "ab": Out(line), "ba": Out(line),
        })

    @staticmethod
    def _end_members(end):
        """What the pair shows of an end: an ``i_void`` flag becomes ``user.void`` of ``i``."""
        members = {**end.frame_members, **end.management_members}
        if "i_void" in members:
            del members["i_void"]
            members["i"] = In(stream.Signature(VoidableFrameLayout()))
        return wiring.Signature(members)

    def _tie_off(self, m, end):
        """The hooks of the layers above an end, unused in a pair."""
        m.d.comb += end.lcw_tx_ext.valid.eq(0)

    def elaborate(self, platform):
        m = Module()
        a, b = self._ends["a"], self._ends["b"]
        for name, end, ours in (("a", a, self.a), ("b", b, self.b)):
            m.submodules[f"end_{name}"] = end
            shown = dict(self._shown.members)
            if "i_void" in end.signature.members:
                del shown["i"]
                beat = ours.i.payload
                m.d.comb += [end.i.valid.eq(ours.i.valid), ours.i.ready.eq(end.i.ready),
                             end.i_void.eq(beat.user.void)]
                m.d.comb += [getattr(end.i.payload, f).eq(getattr(beat, f))
                             for f in ("data", "keep", "first", "last")]
            forward(m, ours, end, shown)
            self._tie_off(m, end)
        for name, line, tx, rx in (("ab", self.ab, a, b), ("ba", self.ba, b, a)):
            add_line(m, name, line, tx, rx, fec=self.fec, delay=self.delay,
                     max_delay=self.max_delay,
                     fec_bypass=self.fec_bypass if self.fec else None)
        return m


@parameters(forward=CbfcEnd, exclude=("resteer",), fec=_FEC, delay=DELAY, max_delay=_MAX_DELAY)
class CbfcPair(LinkPair):
    """Two :class:`CbfcEnd` s joined by two simulated lines, as :class:`LinkPair` joins two
    link ends: ``a.i[v]``/``b.o[v]`` …, each end's management members, lines ``ab``/``ba``."""
    end_class = CbfcEnd

    def _tie_off(self, m, end):
        m.d.comb += end.lcw_tx.valid.eq(0)


@parameters(forward=Nic,
            fec=Param("mask of the ports whose lines have RS(272,258) FEC",
                      IntRange(0, (1 << 4) - 1)),
            delay=DELAY)
class NicPair(wiring.Component):
    """Two :class:`Nic` s, A and B, port ``p`` of A joined to port ``p`` of B by two simulated
    lines (``ab[p]``: A→B, ``ba[p]``: B→A) as :func:`add_line` builds them: ``delay`` cycles
    each, RS(272,258) FEC on the ports whose bit is set in ``fec`` (``fec_bypass`` switches it
    off at run time).

    Members
    -------
    a, b : Out(...)
        Each NIC's members but its ports' lines (``Nic.client_members``, and per port ``p``
        its ``lcw_tx`` and management members).
    ab, ba : Out(LineSignature(..., tap=True)).array(ports)
        Each line's controls and counters (error rate, bursts, link up, seed), and its taps
        (the XGMII words the sender puts on the line and the receiver takes off it), for
        latency measurement.
    fec_bypass : In(1)
        When ``fec`` is not 0.

    Every other parameter is a :class:`Nic` parameter, the same for both.
    """
    def __init__(self, *, fec=0, delay=8, **nic_params):
        self.ports = nic_params.get("ports", Nic.PARAMETERS["ports"][0])
        if not 0 <= fec < 1 << self.ports:
            raise ValueError(f"fec is a mask of the {self.ports} ports, not {fec}")
        self._nics = {name: Nic(**nic_params) for name in "ab"}
        nic = self._nics["a"]
        self.fec = fec
        self.delay = delay
        self._port = NicPortSignature(nic._ends[0], line=False)
        self._shown = wiring.Signature({**nic.client_members,
                                        "p": Out(self._port).array(self.ports)})
        # Every line shows the FEC counters (0 on a line without FEC): one signature for all.
        line = LineSignature(fec=True, delay=delay, tap=True)
        super().__init__({
            **({"fec_bypass": In(1)} if fec else {}),
            "a": Out(self._shown), "b": Out(self._shown),
            "ab": Out(line).array(self.ports), "ba": Out(line).array(self.ports),
        })

    def elaborate(self, platform):
        m = Module()
        a, b = self._nics["a"], self._nics["b"]
        for name, nic, ours in (("a", a, self.a), ("b", b, self.b)):
            m.submodules[f"nic_{name}"] = nic
            forward(m, ours, nic, nic.client_members)
            for p in range(self.ports):
                forward(m, ours.p[p], nic.p[p], self._port)
        for p in range(self.ports):
            for direction, lines, tx, rx in (("ab", self.ab, a, b), ("ba", self.ba, b, a)):
                add_line(m, f"{direction}{p}", lines[p], tx.p[p], rx.p[p], fec=self.fec >> p & 1,
                         delay=self.delay, fec_bypass=self.fec_bypass if self.fec else None)
        return m
