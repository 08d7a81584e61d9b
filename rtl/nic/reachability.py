"""The NIC's reachability table and path steering: which of its 1–4 ports reach each endpoint,
kept up to date by Switch Event Notifications, feeding the path selector.

Ref: spec §9 (ports reachable and up, hash choice), §10 (a NIC receiving SEN(id, state) on
port p sets reachable[id][p] = state), §11 (bogus input never hangs a block or wraps a
counter).
"""

from amaranth.hdl import Module, Signal, Cat, Mux
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..counters import CounterBank, Counters
from ..link.layouts import LcwStream
from ..params import IntRange, Param, parameters
from ..wire import ENDPOINT_BITS, LcwType, SEN_PAYLOAD
from .path_select import PathAnswer, PathRequest, PathSelect, MAX_PORTS, ENTROPY_WIDTH

__all__ = ["Reachability", "PORTS", "ENDPOINT_IDS", "EVENT_WINDOW"]

#: Entries of the table: every endpoint id (spec §3).
ENDPOINT_IDS = 1 << ENDPOINT_BITS
#: A SEN is newer than the last one a port took if its 8-bit event sequence number is ahead by
#: 1…EVENT_WINDOW (modulo 256); otherwise it is stale (a duplicate or reordered event).
EVENT_WINDOW = 127


PORTS = Param("NIC ports (one switch plane each)", IntRange(1, MAX_PORTS))


@parameters(ports=PORTS, lookups=Param("independent lookup ports", IntRange(1, 2)))
class Reachability(wiring.Component):
    """reachable[id][p] for every endpoint id and port, and the port each frame leaves on.

    **Table.** One block RAM of 4096 × 1 bit per port (with ``lookups=2`` it has two read ports;
    an FPGA with one read port per block RAM holds two copies, both written). After reset the
    block walks all 4096 entries and sets them (``busy`` is high for those 4096 cycles; SENs
    wait, lookups are answered as if no port were reachable): until a switch says otherwise,
    every endpoint is reachable through every port whose link is up.

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

    Failover. A SEN on ``lcw{p}`` in cycle *t* is judged (its event number) in *t* and written
    to the table in *t* + 1, where it is seen by a lookup issued in *t* + 1 (the read port is
    transparent to the write): a frame looked up from then on avoids the dead path, so the
    last frame steered to it was looked up in cycle *t*. ``took_down`` and ``changed`` strobe
    in *t* + 1, from registers. (The cycle between the judgement and the write keeps the
    compare's carry chain out of the NIC's steering.) A link going down is seen by
    lookups issued from the cycle before it falls (``links_up`` is sampled one cycle after
    ``i_valid``).

    Members
    -------
    lcw : In(LcwStream()).array(ports)
        Link control words received on each port.
    links_up : In(ports)
        Link state of each port.
    i : In(PathRequest(reachable=False)); o : Out(PathAnswer())
        Lookups, no back-pressure (as :class:`PathSelect`).
    i1 : In(PathRequest(reachable=False)); o1 : Out(PathAnswer())
        A second lookup port, alike and independent (``lookups=2``: a read port more on
        each table, a second :class:`PathSelect`).
    busy : Out(1)
        The table is being initialised after reset.
    took_down : Out(ports)
        Port *p* took a SEN saying an endpoint is unreachable through it (strobe, in the cycle
        the table is written: the NIC re-steers what is queued for *p*).
    changed : Out(1)
        A SEN was taken on any port (strobe, in the cycle the table is written): an answer to
        a lookup issued before may be out of date.
    count : Out(Counters)
        SENs taken (unreachable / reachable) and ignored as stale, all ports (saturating).
    """
    #: Cycles from ``i_valid`` to ``o_valid``.
    LATENCY = 1 + PathSelect.LATENCY
    COUNTERS = ("sen_down", "sen_up", "sen_stale")

    def __init__(self, ports=4, lookups=1):
        self.ports = ports
        self.lookups = lookups
        super().__init__({
            "lcw": In(LcwStream()).array(ports),
            "links_up": In(ports),
            "i": In(PathRequest(reachable=False)), "o": Out(PathAnswer()),
            **({"i1": In(PathRequest(reachable=False)), "o1": Out(PathAnswer())}
               if lookups == 2 else {}),
            "busy": Out(1), "took_down": Out(ports), "changed": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)

        # Initialisation sweep after reset: every entry of every port becomes 1.
        sweep = Signal(range(ENDPOINT_IDS))
        busy = Signal(init=1)
        m.d.comb += self.busy.eq(busy)
        with m.If(busy):
            m.d.sync += sweep.eq(sweep + 1)
            with m.If(sweep == ENDPOINT_IDS - 1):
                m.d.sync += busy.eq(0)

        asks = [(self.i, self.o)] + ([(self.i1, self.o1)] if self.lookups == 2 else [])
        rows = [[] for _ in asks]
        taken_up, taken_down, stale = [], [], []
        for p in range(self.ports):
            m.submodules[f"table{p}"] = table = Memory(shape=1, depth=ENDPOINT_IDS, init=[])
            wr = table.write_port()
            lcw = self.lcw[p]
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
            # The decision is registered and the table written in the next cycle: the event
            # number's compare (a carry chain) then ends in a flip-flop, and ``took_down`` and
            # ``changed``, which the NIC's steering and its ports' ``pause`` take, start from
            # one (NIC timing, docs/timing.md). The next SEN's freshness is judged against
            # ``last_event`` already updated, so back-to-back SENs lose nothing.
            taken = Signal(name=f"sen_taken{p}")
            endpoint = Signal(ENDPOINT_BITS, name=f"sen_endpoint{p}")
            state = Signal(name=f"sen_state{p}")
            m.d.sync += [taken.eq(take), endpoint.eq(sen.endpoint), state.eq(sen.reachable)]
            m.d.comb += [
                lcw.ready.eq(~busy),
                wr.en.eq(busy | taken),
                wr.addr.eq(Mux(busy, sweep, endpoint)),
                wr.data.eq(busy | state),
            ]
            for k, (ask, _) in enumerate(asks):
                rd = table.read_port(transparent_for=(wr,))
                m.d.comb += rd.addr.eq(ask.dst)
                rows[k].append(rd.data)
            taken_up.append(taken & state)
            taken_down.append(taken & ~state)
        m.d.comb += [self.took_down.eq(Cat(*taken_down)),
                     self.changed.eq(Cat(*taken_up, *taken_down).any())]
        # Several ports may take a SEN in one cycle.
        counters["sen_up"].add(m, sum(taken_up), 1)
        counters["sen_down"].add(m, sum(taken_down), 1)
        counters["sen_stale"].add(m, sum(stale), 1)

        # Stage 2: the row, masked with the link state, to the path selector.
        busy_r = Signal(init=1)
        m.d.sync += busy_r.eq(busy)
        for k, (ask, answer) in enumerate(asks):
            m.submodules[f"select{k}"] = select = PathSelect()
            valid_r = Signal(name=f"valid_r{k}")
            entropy_r = Signal(ENTROPY_WIDTH, name=f"entropy_r{k}")
            dst_r = Signal(ENDPOINT_BITS, name=f"dst_r{k}")
            m.d.sync += [valid_r.eq(ask.valid), entropy_r.eq(ask.entropy), dst_r.eq(ask.dst)]
            # Ref: spec §9 — ports reachable and whose link is up.
            usable = Cat(*rows[k]) & self.links_up & ~busy_r.replicate(self.ports)
            m.d.comb += [
                select.i.valid.eq(valid_r), select.i.dst.eq(dst_r),
                select.i.entropy.eq(entropy_r), select.i.reachable.eq(usable),
            ]
            wiring.connect(m, select.o, wiring.flipped(answer))
        return m
