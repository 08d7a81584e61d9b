"""Link control words around the LLR: the transmit arbiter and the round-trip probe (spec §5).

Ref: spec §5 — PING carries a token the partner answers with PONG (link round-trip
measurement); §7 — the round trip sizes the replay timer.
"""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import check_int_range
from ..stream import SaturatingCounter, COUNTER_WIDTH
from ..wire import LcwType
from .layouts import LcwLayout, LCW_PAYLOAD_BITS

__all__ = ["LcwArbiter", "PingUnit", "RTT_BITS", "check_ping_interval"]

RTT_BITS = 16


def check_ping_interval(value):
    return check_int_range("ping_interval", value, 16, 1 << 20)


class LcwArbiter(wiring.Component):
    """Fixed-priority merge of ``n`` LCW request streams into one (``i0`` first).

    Requests are held by their sources until taken, so a waiting request of a lower priority
    is never lost, only delayed. Combinational: no latency, one LCW per cycle.
    """
    def __init__(self, n):
        self.n = n
        super().__init__({
            **{f"i{k}": In(stream.Signature(LcwLayout())) for k in range(n)},
            "o": Out(stream.Signature(LcwLayout())),
        })

    def elaborate(self, platform):
        m = Module()
        inputs = [getattr(self, f"i{k}") for k in range(self.n)]
        for k, port in enumerate(inputs):
            with (m.If if k == 0 else m.Elif)(port.valid):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(port.payload),
                             port.ready.eq(self.o.ready)]
        return m


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
    lcw_rx : In(stream.Signature(LcwLayout))
        LCWs from the partner (always ready); PING and PONG are used.
    lcw_tx : Out(stream.Signature(LcwLayout))
        PONG and PING to send.
    rtt : Out(16), rtt_valid : Out(1)
    count_rtt_samples, count_pongs_sent : Out(32)
        PONGs received that matched the outstanding PING; PINGs answered.
    """
    COUNTERS = ("count_rtt_samples", "count_pongs_sent")

    def __init__(self, interval=1024):
        self.interval = check_ping_interval(interval)
        super().__init__({
            "lcw_rx": In(stream.Signature(LcwLayout())),
            "lcw_tx": Out(stream.Signature(LcwLayout())),
            "rtt": Out(RTT_BITS),
            "rtt_valid": Out(1),
            "count_rtt_samples": Out(COUNTER_WIDTH),
            "count_pongs_sent": Out(COUNTER_WIDTH),
        })

    def elaborate(self, platform):
        m = Module()
        now = Signal(LCW_PAYLOAD_BITS)
        m.d.sync += now.eq(now + 1)
        countdown = Signal(range(self.interval))
        ping_pending = Signal()
        pong_pending = Signal()
        pong_token = Signal(LCW_PAYLOAD_BITS)
        token = Signal(LCW_PAYLOAD_BITS)          # of the outstanding PING
        samples = SaturatingCounter("count_rtt_samples")
        pongs = SaturatingCounter("count_pongs_sent")
        m.d.comb += [self.count_rtt_samples.eq(samples.value),
                     self.count_pongs_sent.eq(pongs.value)]

        with m.If(countdown == 0):
            m.d.sync += [countdown.eq(self.interval - 1), ping_pending.eq(1)]
        with m.Else():
            m.d.sync += countdown.eq(countdown - 1)

        rx = self.lcw_rx
        m.d.comb += rx.ready.eq(1)
        with m.If(rx.valid & (rx.payload.type == LcwType.PING)):
            m.d.sync += [pong_pending.eq(1), pong_token.eq(rx.payload.payload)]
        answered = rx.valid & (rx.payload.type == LcwType.PONG) & (rx.payload.payload == token)
        elapsed = Signal(LCW_PAYLOAD_BITS)
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
            tx.payload.payload.eq(Mux(pong_pending, pong_token, now)),
        ]
        with m.If(tx.valid & tx.ready):
            with m.If(pong_pending):
                m.d.sync += pong_pending.eq(0)
            with m.Else():
                m.d.sync += [ping_pending.eq(0), token.eq(now)]
        pongs.increment(m, tx.valid & tx.ready & pong_pending)
        return m
