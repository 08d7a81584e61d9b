"""The NIC's reachability table and path steering: which of its 1–4 ports reach each endpoint,
kept up to date by Switch Event Notifications, feeding the path selector.

Ref: spec §9 (ports reachable and up, hash choice), §10 (a NIC receiving SEN(id, state) on
port p sets reachable[id][p] = state), §11 (bogus input never hangs a block or wraps a
counter).
"""

from amaranth.hdl import Module, Signal, Cat, Mux
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..config import check_int_range
from ..link.layouts import LcwLayout
from ..stream import drive_counters, COUNTER_WIDTH
from ..wire import LcwType, SEN_PAYLOAD
from .path_select import PathSelect, MAX_PORTS, DST_WIDTH, ENTROPY_WIDTH

__all__ = ["Reachability", "check_ports", "ENDPOINT_IDS", "EVENT_WINDOW"]

#: Entries of the table: every 12-bit endpoint id (spec §3).
ENDPOINT_IDS = 1 << DST_WIDTH
#: A SEN is newer than the last one a port took if its 8-bit event sequence number is ahead by
#: 1…EVENT_WINDOW (modulo 256); otherwise it is stale (a duplicate or reordered event).
EVENT_WINDOW = 127


def check_ports(value):
    return check_int_range("ports", value, 1, MAX_PORTS)


class Reachability(wiring.Component):
    """reachable[id][p] for every endpoint id and port, and the port each frame leaves on.

    **Table.** One block RAM of 4096 × 1 bit per port. After reset the block walks all 4096
    entries and sets them (``busy`` is high for those 4096 cycles; SENs wait, lookups are
    answered as if no port were reachable): until a switch says otherwise, every endpoint is
    reachable through every port whose link is up.

    **Updates.** Port ``p``'s received link control words arrive on ``lcw{p}`` (one per cycle
    per port, all ports in the same cycle; never back-pressured once ``busy`` is low). A SEN
    LCW (spec §10) with endpoint ``id`` and ``reachable = s`` sets reachable[id][p] = s — the
    port it *arrived on*, not the switch port in its payload (that one names the switch's
    failed port). Its 8-bit event sequence number must be ahead of the last one that port
    took by 1…:data:`EVENT_WINDOW` modulo 256 (the first SEN after reset is always taken);
    otherwise the SEN is stale and ignored (``count_sen_stale``). Other LCW types are consumed
    and ignored.

    **Lookups.** ``i_valid``/``i_dst``/``i_entropy`` ask for the port of a frame; ``o_valid``,
    ``o_port``, ``o_none`` answer :attr:`LATENCY` cycles later: the table row of ``i_dst`` is
    read (1 cycle), masked with ``links_up`` as it is in the cycle after ``i_valid``, and
    given to :class:`PathSelect` (1 cycle). ``o_none`` means no port reaches ``i_dst``: the
    request completes with an error (spec §9), it never waits.

    Failover. A SEN taken in cycle *t* is seen by a lookup issued in cycle *t* (the read port
    is transparent to the write): a frame looked up from then on avoids the dead path, so the
    last frame steered to it was looked up in cycle *t* − 1. A link going down is seen by
    lookups issued from the cycle before it falls (``links_up`` is sampled one cycle after
    ``i_valid``).

    Members
    -------
    lcw0 … lcw{ports-1} : In(stream.Signature(LcwLayout()))
        Link control words received on each port.
    links_up : In(ports)
        Link state of each port.
    i_valid, i_dst, i_entropy : In; o_valid, o_port, o_none : Out
        Lookups, no back-pressure (as :class:`PathSelect`).
    busy : Out(1)
        The table is being initialised after reset.
    took_down : Out(ports)
        Port *p* took a SEN saying an endpoint is unreachable through it (strobe, in the cycle
        the table is written: the NIC re-steers what is queued for *p*).
    count_sen_down, count_sen_up, count_sen_stale : Out(32)
        SENs taken (unreachable / reachable) and ignored as stale, all ports (saturating).
    """
    #: Cycles from ``i_valid`` to ``o_valid``.
    LATENCY = 1 + PathSelect.LATENCY
    COUNTERS = ("sen_down", "sen_up", "sen_stale")

    def __init__(self, ports=4):
        self.ports = check_ports(ports)
        super().__init__({
            **{f"lcw{p}": In(stream.Signature(LcwLayout())) for p in range(ports)},
            "links_up": In(ports),
            "i_valid": In(1), "i_dst": In(DST_WIDTH), "i_entropy": In(ENTROPY_WIDTH),
            "o_valid": Out(1), "o_port": Out(range(MAX_PORTS)), "o_none": Out(1),
            "busy": Out(1), "took_down": Out(ports),
            **{f"count_{name}": Out(COUNTER_WIDTH) for name in self.COUNTERS},
        })

    def elaborate(self, platform):
        m = Module()
        counters = drive_counters(m, self, self.COUNTERS)

        # Initialisation sweep after reset: every entry of every port becomes 1.
        sweep = Signal(range(ENDPOINT_IDS))
        busy = Signal(init=1)
        m.d.comb += self.busy.eq(busy)
        with m.If(busy):
            m.d.sync += sweep.eq(sweep + 1)
            with m.If(sweep == ENDPOINT_IDS - 1):
                m.d.sync += busy.eq(0)

        row, taken_up, taken_down, stale = [], [], [], []
        for p in range(self.ports):
            m.submodules[f"table{p}"] = table = Memory(shape=1, depth=ENDPOINT_IDS, init=[])
            wr = table.write_port()
            rd = table.read_port(transparent_for=(wr,))
            lcw = getattr(self, f"lcw{p}")
            sen = SEN_PAYLOAD.layout(lcw.payload.payload)
            is_sen = lcw.valid & ~busy & (lcw.payload.type == LcwType.SEN)
            last_event = Signal(8, name=f"last_event{p}")
            seen = Signal(name=f"seen_event{p}")
            ahead = Signal(8, name=f"event_ahead{p}")
            m.d.comb += ahead.eq(sen.event - last_event)
            # Ref: spec §10 — event sequence numbers increase per switch.
            fresh = ~seen | ((ahead != 0) & (ahead <= EVENT_WINDOW))
            take = is_sen & fresh
            with m.If(take):
                m.d.sync += [last_event.eq(sen.event), seen.eq(1)]
            stale.append(is_sen & ~fresh)
            m.d.comb += [
                lcw.ready.eq(~busy),
                wr.en.eq(busy | take),
                wr.addr.eq(Mux(busy, sweep, sen.endpoint)),
                wr.data.eq(busy | sen.reachable),
                rd.addr.eq(self.i_dst),
                rd.en.eq(1),
            ]
            row.append(rd.data)
            taken_up.append(take & sen.reachable)
            taken_down.append(take & ~sen.reachable)
        m.d.comb += self.took_down.eq(Cat(*taken_down))
        # Several ports may take a SEN in one cycle.
        counters["sen_up"].add(m, sum(taken_up), 1)
        counters["sen_down"].add(m, sum(taken_down), 1)
        counters["sen_stale"].add(m, sum(stale), 1)

        # Stage 2: the row, masked with the link state, to the path selector.
        m.submodules.select = select = PathSelect()
        valid_r = Signal()
        busy_r = Signal(init=1)
        entropy_r = Signal(ENTROPY_WIDTH)
        dst_r = Signal(DST_WIDTH)
        m.d.sync += [valid_r.eq(self.i_valid), busy_r.eq(busy), entropy_r.eq(self.i_entropy),
                     dst_r.eq(self.i_dst)]
        # Ref: spec §9 — ports reachable and whose link is up.
        usable = Cat(*row) & self.links_up & ~busy_r.replicate(self.ports)
        m.d.comb += [
            select.i_valid.eq(valid_r), select.i_dst.eq(dst_r), select.i_entropy.eq(entropy_r),
            select.i_reachable.eq(usable),
            self.o_valid.eq(select.o_valid), self.o_port.eq(select.o_port),
            self.o_none.eq(select.o_none),
        ]
        return m
