"""Link control words around the LLR: the transmit arbiter and the round-trip probe (spec §5).

Ref: spec §5 — PING carries a token the partner answers with PONG (link round-trip
measurement); §7 — the round trip sizes the replay timer.
"""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..counters import CounterBank, Counters
from ..params import IntRange, Param, parameters
from ..wire import LcwType, TOKEN_PAYLOAD
from .layouts import LcwStream, LcwEvents

__all__ = ["LcwArbiter", "PingUnit", "RTT_BITS", "PING_INTERVAL"]

RTT_BITS = 16
PING_INTERVAL = Param("cycles between PINGs (round-trip measurement)", IntRange(16, 1 << 20))


class LcwArbiter(wiring.Component):
    """Fixed-priority merge of ``n`` LCW request streams into one (``i[0]`` first).

    Requests are held by their sources until taken, so a waiting request of a lower priority
    is never lost, only delayed. Combinational: no latency, one LCW per cycle.

    Members
    -------
    i : In(LcwStream()).array(n)
    o : Out(LcwStream())
    """
    def __init__(self, n):
        self.n = n
        super().__init__({
            "i": In(LcwStream()).array(n),
            "o": Out(LcwStream()),
        })

    def elaborate(self, platform):
        m = Module()
        for k, port in enumerate(self.i):
            with (m.If if k == 0 else m.Elif)(port.valid):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(port.payload),
                             port.ready.eq(self.o.ready)]
        return m


@parameters(interval=PING_INTERVAL)
class PingUnit(wiring.Component):
    """Measure the link's round trip with PING/PONG, and answer the partner's PINGs.

    Every ``interval`` cycles a PING leaves with the current cycle count as its token; the
    partner returns it in a PONG, and ``rtt`` becomes the cycles between the two (saturating
    at 2^16 − 1; ``rtt_valid`` rises with the first answer). A PING from the partner is
    answered with a PONG of the same token (before our own PING, which can wait).

    The round trip includes both MACs, the lines and the wait of each LCW for a free word, so
    it is what a replay timer has to cover.

    Members
    -------
    lcw_rx : In(LcwEvents())
        LCWs from the partner; PING and PONG are used.
    lcw_tx : Out(LcwStream())
        PONG and PING to send.
    rtt : Out(16), rtt_valid : Out(1)
    count : Out(Counters)
        ``rtt_samples``: PONGs received that matched the outstanding PING; ``pongs_sent``:
        PINGs answered.
    """
    COUNTERS = ("rtt_samples", "pongs_sent")

    def __init__(self, interval=1024):
        self.interval = interval
        super().__init__({
            "lcw_rx": In(LcwEvents()),
            "lcw_tx": Out(LcwStream()),
            "rtt": Out(RTT_BITS),
            "rtt_valid": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        token_bits = TOKEN_PAYLOAD.bits
        now = Signal(token_bits)
        m.d.sync += now.eq(now + 1)
        countdown = Signal(range(self.interval))
        ping_pending = Signal()
        pong_pending = Signal()
        pong_token = Signal(token_bits)
        token = Signal(token_bits)                # of the outstanding PING
        counters = CounterBank(m, self.count)
        samples, pongs = counters.rtt_samples, counters.pongs_sent

        with m.If(countdown == 0):
            m.d.sync += [countdown.eq(self.interval - 1), ping_pending.eq(1)]
        with m.Else():
            m.d.sync += countdown.eq(countdown - 1)

        rx = self.lcw_rx
        rx_token = TOKEN_PAYLOAD.layout(rx.payload.payload).token
        with m.If(rx.valid & (rx.payload.type == LcwType.PING)):
            m.d.sync += [pong_pending.eq(1), pong_token.eq(rx_token)]
        answered = rx.valid & (rx.payload.type == LcwType.PONG) & (rx_token == token)
        elapsed = Signal(token_bits)
        m.d.comb += elapsed.eq(now - token)
        samples.increment(m, answered)
        with m.If(answered):
            m.d.sync += [self.rtt.eq(Mux(elapsed >> RTT_BITS != 0, (1 << RTT_BITS) - 1,
                                         elapsed)),
                         self.rtt_valid.eq(1)]

        tx = self.lcw_tx
        m.d.comb += [
            tx.valid.eq(pong_pending | ping_pending),
            tx.payload.type.eq(Mux(pong_pending, LcwType.PONG, LcwType.PING)),
            TOKEN_PAYLOAD.layout(tx.payload.payload).token.eq(Mux(pong_pending, pong_token, now)),
        ]
        with m.If(tx.valid & tx.ready):
            with m.If(pong_pending):
                m.d.sync += pong_pending.eq(0)
            with m.Else():
                m.d.sync += [ping_pending.eq(0), token.eq(now)]
        pongs.increment(m, tx.valid & tx.ready & pong_pending)
        return m
