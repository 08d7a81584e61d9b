"""Credit counters of CBFC, per VC: the sender's ``sent``/``limit`` and the receiver's
``received``/``freed`` (spec §8).

These two components hold all the credit arithmetic and nothing else, so that the formal proof
(``ethlink formal``, docs/cbfc.md) covers exactly the logic that keeps a buffer from
overflowing. The queues and buffers around them are in :mod:`.cbfc_tx` and :mod:`.cbfc_rx`.

Ref: spec §8 — all counters are 20-bit, modulo 2^20; the sender may start a frame on a VC only
if ``(limit − sent) mod 2^20 ≥ cost``, then ``sent += cost``; the receiver's limit is
``freed + capacity``, sent in CREDIT_UPDATE when it changed by ``update_threshold`` and at least
every ``update_period`` cycles; the sender's limit is 0 until the first CREDIT_UPDATE; every
``sync_period`` cycles the sender sends CREDIT_SYNC and the receiver treats credits of frames
it never received as freed.
"""

from amaranth.hdl import Module, Signal, Mux, Cat
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..counters import CounterBank, Counters
from ..params import IntRange, OneOf, Param, check_int_range
from ..wire import CREDIT_BITS, CREDIT_PAYLOAD, LcwType, MAX_BODY_OCTETS
from ..link.layouts import LcwEvents, LcwStream

__all__ = ["CreditSender", "CreditReceiver", "CREDIT_BITS", "COST_BITS", "CREDIT_SIZES",
           "FCS_OCTETS", "MAX_VCS", "VCS", "CREDIT_SIZE", "UPDATE_PERIOD", "SYNC_PERIOD",
           "frame_cost", "max_frame_cost", "credits_ahead", "credit_lcws", "lowest_set"]

_MOD = 1 << CREDIT_BITS
_HALF = 1 << (CREDIT_BITS - 1)
#: One credit is this many octets of receive buffer (spec §8).
CREDIT_SIZES = (32, 64, 128)
#: The FCS counts towards a frame's cost (spec §8: frame_octets = OEFH + TH + payload + FCS).
FCS_OCTETS = 4
#: VCs a link can carry: the OEFH has 3 bits of VC (spec §3, §4.1).
MAX_VCS = 8


def frame_cost(body_octets, credit_size):
    """Credits of a frame whose body (OEFH + TH + payload) has ``body_octets`` octets."""
    return -(-(body_octets + FCS_OCTETS) // credit_size)


def max_frame_cost(credit_size):
    return frame_cost(MAX_BODY_OCTETS, credit_size)


#: Width of a frame's cost: the longest frame at the smallest credit (65 credits).
COST_BITS = max_frame_cost(min(CREDIT_SIZES)).bit_length()


VCS = Param("virtual channels (a queue and a buffer each)", IntRange(1, MAX_VCS))
CREDIT_SIZE = Param("octets per credit", OneOf(*CREDIT_SIZES))
UPDATE_PERIOD = Param("cycles between the CREDIT_UPDATEs of every VC", IntRange(2, 1 << 20))
SYNC_PERIOD = Param("cycles between the CREDIT_SYNCs of every VC", IntRange(2, 1 << 20))


def credits_ahead(a, b):
    """``a`` is at or after ``b`` modulo 2^20 (their distance is below 2^19 by construction);
    Amaranth values."""
    return (a - b)[:CREDIT_BITS] < _HALF


def _distance(m, a, b, name):
    d = Signal(CREDIT_BITS, name=name)
    m.d.comb += d.eq(a - b)
    return d


def lowest_set(m, bits, n, name):
    """Index of the lowest set bit of ``bits`` (``n`` wide; 0 when none is set)."""
    index = Signal(range(max(n, 2)), name=name)
    for k in reversed(range(n)):
        with m.If(bits[k]):
            m.d.comb += index.eq(k)
    return index


def credit_lcws(m, port, lcw_type, values, period, extra=None):
    """Offer CREDIT_UPDATE/SYNC words on stream ``port``: one for every VC each ``period``
    cycles, and one whenever the VC's bit of ``extra`` (a combinational mask) is set; VC *v*
    carries ``values[v]`` as it is when the word is taken; lowest VC first. Returns the VC
    offered and whether it was taken in this cycle."""
    n = len(values)
    timer = Signal(range(period), name=f"{lcw_type.name.lower()}_timer")
    periodic = Signal(n, name=f"{lcw_type.name.lower()}_periodic")
    wrap = timer == period - 1
    m.d.sync += timer.eq(Mux(wrap, 0, timer + 1))
    due = periodic if extra is None else periodic | extra
    vc = lowest_set(m, due, n, f"{lcw_type.name.lower()}_vc")
    value = Signal(CREDIT_BITS, name=f"{lcw_type.name.lower()}_value")
    for v in range(n):
        with m.If(vc == v):
            m.d.comb += value.eq(values[v])
    payload = CREDIT_PAYLOAD.layout(port.payload.payload)
    m.d.comb += [port.valid.eq(due != 0), port.payload.type.eq(lcw_type),
                 payload.vc.eq(vc), payload.credits.eq(value)]
    taken = port.valid & port.ready
    done = Cat(taken & (vc == v) for v in range(n))
    m.d.sync += periodic.eq(Mux(wrap, (1 << n) - 1, periodic & ~done))
    return vc, taken


def _per_vc(n, name, init):
    """A 20-bit credit counter per VC, named ``name0`` …, starting at ``init``."""
    return [Signal(CREDIT_BITS, init=init, name=f"{name}{v}") for v in range(n)]


def _vc_array(width, vcs):
    return data.ArrayLayout(width, vcs)


class CreditSender(wiring.Component):
    """The sender's credit state for ``vcs`` VCs: may a frame start, and CREDIT_SYNC.

    * ``ok[v]`` is high when ``room[v] = (limit[v] − sent[v]) mod 2^20 ≥ cost[v]``. ``room``
      is a register of its own, kept equal to that difference (proven with the rest), so
      ``ok`` is one compare of ``cost`` with a register, with no subtraction before it (the
      transmit grant waits for ``ok``). ``take`` with ``take_vc`` starts a frame:
      ``sent += cost`` if ``ok``; a ``take`` without ``ok`` is refused (``granted`` stays
      low), so no requester can push ``sent`` past ``limit``.
    * A CREDIT_UPDATE on ``lcw_rx`` for a VC below ``vcs`` sets ``limit`` when the new limit is
      neither behind ``sent`` nor behind the current ``limit`` (a receiver's limit only grows
      and never falls behind what it allowed); anything else is a bogus update, ignored and
      counted. ``limit`` starts equal to ``sent`` (no credits) until the first update.
    * ``settled[v]`` counts the credits of frames the link has finished with (acknowledged by
      the LLR or dropped by its FLUSH), reported on ``release``. Every ``sync_period`` cycles
      a CREDIT_SYNC carrying ``settled`` goes out for each VC on ``lcw_tx``. ``settled``,
      unlike ``sent``, counts no frame that may still be delivered after the SYNC, so the
      receiver can free what the SYNC claims it never got (docs/cbfc.md, "leak recovery").

    * ``costs`` (constant costs, ascending) adds ``cost_grade`` and ``ungraded_cost``: a VC's
      grade, when not 0, says which of them its ``cost`` is (one bit set, at the value's
      index), and its ``ok`` is then ``room`` compared with that constant; when it is 0,
      ``ok`` compares ``room`` with ``ungraded_cost``, which then equals ``cost``. The
      compares with constants are formed from the register alone, and ``ok`` does not wait
      on ``cost`` at all: the CBFC bypass grades the frames whose first beat tells their
      length, while ``cost`` (charged at ``take``) is still being decoded from that beat
      (cbfc.md "Bypass").

    ``counter_init`` is the value every counter starts at (0 on hardware; the proof starts
    near 2^20 to cross the wrap). Latency: ``ok`` is combinational; ``take`` and an update
    act at the next clock edge.
    """
    def __init__(self, vcs, *, sync_period=4096, counter_init=0, costs=()):
        self.vcs = VCS.validate("vcs", vcs)
        self.sync_period = SYNC_PERIOD.validate("sync_period", sync_period)
        self.counter_init = counter_init % _MOD
        self.costs = tuple(costs)
        if list(self.costs) != sorted(set(self.costs)) or any(
                not 0 < c < 1 << COST_BITS for c in self.costs):
            raise ValueError(f"costs must be distinct, ascending and within 1…"
                             f"{(1 << COST_BITS) - 1}, not {costs!r}")
        super().__init__({
            "cost": In(_vc_array(COST_BITS, self.vcs)),
            **({"cost_grade": In(_vc_array(len(self.costs), self.vcs)),
                "ungraded_cost": In(_vc_array(COST_BITS, self.vcs))} if self.costs else {}),
            "waiting": In(self.vcs),
            "ok": Out(self.vcs),
            "take": In(1), "take_vc": In(range(max(self.vcs, 2))),
            "granted": Out(1),
            "release": In(1), "release_vc": In(range(max(self.vcs, 2))),
            "release_cost": In(COST_BITS),
            "lcw_rx": In(LcwEvents()),
            "lcw_tx": Out(LcwStream()),
            "sent": Out(_vc_array(CREDIT_BITS, self.vcs)),
            "limit": Out(_vc_array(CREDIT_BITS, self.vcs)),
            "room": Out(_vc_array(CREDIT_BITS, self.vcs)),
            "settled": Out(_vc_array(CREDIT_BITS, self.vcs)),
            "count": Out(self.counters(self.vcs)),
        })

    COUNTERS = ("updates_received", "bogus_updates", "syncs_sent")

    @classmethod
    def counters(cls, vcs):
        """The counters: :attr:`COUNTERS`, and ``stall_cycles`` per VC."""
        return Counters(cls.COUNTERS, arrays={"stall_cycles": vcs})

    def elaborate(self, platform):
        m = Module()
        n, init = self.vcs, self.counter_init
        counters = CounterBank(m, self.count)

        sent, limit, settled = (_per_vc(n, name, init) for name in ("sent", "limit", "settled"))
        room = _per_vc(n, "room", 0)        # limit − sent: limit starts equal to sent
        for v in range(n):
            if self.costs:
                fits = Cat(room[v] >= value for value in self.costs)
                grade = self.cost_grade[v]
                ok = Mux(grade.any(), (grade & fits).any(), room[v] >= self.ungraded_cost[v])
            else:
                ok = room[v] >= self.cost[v]
            m.d.comb += [
                self.ok[v].eq(ok),
                self.sent[v].eq(sent[v]), self.limit[v].eq(limit[v]), self.room[v].eq(room[v]),
                self.settled[v].eq(settled[v]),
            ]
            counters.stall_cycles[v].increment(m, self.waiting[v] & ~self.ok[v])

        # --- frames started and frames settled ----------------------------------------------
        for v in range(n):
            with m.If(self.take_vc == v):
                m.d.comb += self.granted.eq(self.take & self.ok[v])
        for v in range(n):
            with m.If(self.granted & (self.take_vc == v)):
                m.d.sync += sent[v].eq(sent[v] + self.cost[v])
            with m.If(self.release & (self.release_vc == v)):
                m.d.sync += settled[v].eq(settled[v] + self.release_cost)

        # --- CREDIT_UPDATE ------------------------------------------------------------------
        lcw = self.lcw_rx
        update = CREDIT_PAYLOAD.layout(lcw.payload.payload)
        upd_vc, upd_limit = update.vc, update.credits
        is_update = lcw.valid & (lcw.payload.type == LcwType.CREDIT_UPDATE)
        plausible = Signal()
        for v in range(n):
            with m.If(upd_vc == v):
                m.d.comb += plausible.eq(credits_ahead(upd_limit, sent[v])
                                         & credits_ahead(upd_limit, limit[v]))
                with m.If(is_update & plausible):
                    m.d.sync += limit[v].eq(upd_limit)
        # room follows limit − sent. Both differences a grant may choose between are formed
        # from registers, the update and ``cost`` alone, beside the compare, so that the grant
        # only selects one.
        for v in range(n):
            applied = is_update & plausible & (upd_vc == v)
            base = Mux(applied, _distance(m, upd_limit, sent[v], f"room_updated{v}"), room[v])
            spent = _distance(m, base, self.cost[v], f"room_spent{v}")
            m.d.sync += room[v].eq(Mux(self.granted & (self.take_vc == v), spent, base))
        counters.updates_received.increment(m, is_update)
        counters.bogus_updates.increment(m, is_update & ~plausible)

        # --- CREDIT_SYNC every sync_period cycles, one LCW per VC ------------------------------
        _, sent_one = credit_lcws(m, self.lcw_tx, LcwType.CREDIT_SYNC, settled,
                                  self.sync_period)
        counters.syncs_sent.increment(m, sent_one)
        return m


class CreditReceiver(wiring.Component):
    """The receiver's credit state for ``vcs`` VCs of ``capacity`` credits each: CREDIT_UPDATE
    and leak recovery.

    * ``arrive`` (``arrive_vc``, ``arrive_cost``): a frame was stored: ``received += cost``.
      ``drain``: a frame left the buffer: ``freed += cost``. ``occupancy = received − freed``
      is what the buffer holds, in credits; with a sender that keeps to its limit it never
      exceeds ``capacity`` (proven, docs/cbfc.md).
    * ``limit = freed + capacity`` goes out in a CREDIT_UPDATE on ``lcw_tx`` when it moved by at
      least ``update_threshold`` (0: an eighth of the credits advertised, at least 1) since
      the last one sent for that VC, and for every VC every
      ``update_period`` cycles (so a lost update is repaired). The value an update carries
      is ``offered``: ``limit`` a cycle ago (a register, so that the update logic starts from
      registers; a limit only grows, so the buffer has room for it).
    * ``sync`` (``sync_vc``, ``sync_value``): a CREDIT_SYNC, offered only once every frame that
      came before it has arrived (:class:`~.cbfc_rx.CbfcRx` orders it). If it claims ``d`` > 0
      credits more than ``received``, those frames were lost: ``received`` and ``freed`` both
      grow by ``d`` (``count_leaked_credits``), so ``occupancy`` is unchanged and the limit
      rises. A SYNC behind ``received`` is ignored (frames after it already arrived), one
      beyond ``limit`` is bogus (ignored, counted). ``sync_ready`` is low in a cycle where a
      frame of the same VC arrives; the SYNC then waits a cycle.

    * ``credits`` (1 … ``capacity``; 0: ``capacity``) advertises fewer credits than the
      buffer holds (to size the credit loop at run time). Set it while the link is idle or
      in reset: a lower value takes effect for the sender only after what it was already
      given drains (it rejects a limit going backwards), a buffer never overflows either way.

    Latency: every input acts at the next clock edge; an update is requested 2 cycles after
    the limit moved (``offered``, then the threshold compare, each a register).
    """
    def __init__(self, vcs, capacity, *, update_threshold=8, update_period=1024,
                 counter_init=0):
        self.vcs = VCS.validate("vcs", vcs)
        self.capacity = check_int_range("capacity", capacity, 1, _HALF // 2)
        self.update_threshold = check_int_range("update_threshold", update_threshold, 0,
                                                capacity)
        self.update_period = UPDATE_PERIOD.validate("update_period", update_period)
        self.counter_init = counter_init % _MOD
        super().__init__({
            "arrive": In(1), "arrive_vc": In(range(max(self.vcs, 2))),
            "arrive_cost": In(COST_BITS),
            "drain": In(1), "drain_vc": In(range(max(self.vcs, 2))), "drain_cost": In(COST_BITS),
            "sync": In(1), "sync_vc": In(range(max(self.vcs, 2))),
            "sync_value": In(CREDIT_BITS),
            "sync_ready": Out(1),
            "credits": In(range(self.capacity + 1)),
            "lcw_tx": Out(LcwStream()),
            "received": Out(_vc_array(CREDIT_BITS, self.vcs)),
            "freed": Out(_vc_array(CREDIT_BITS, self.vcs)),
            "limit": Out(_vc_array(CREDIT_BITS, self.vcs)),
            "offered": Out(_vc_array(CREDIT_BITS, self.vcs)),
            "occupancy": Out(_vc_array(CREDIT_BITS, self.vcs)),
            "count": Out(Counters(self.COUNTERS)),
        })

    COUNTERS = ("updates_sent", "syncs_received", "leaked_credits", "bogus_syncs")

    def elaborate(self, platform):
        m = Module()
        n, init = self.vcs, self.counter_init
        counters = CounterBank(m, self.count)

        received, freed, advertised = (_per_vc(n, name, init)
                                       for name in ("received", "freed", "advertised"))
        limit = [Signal(CREDIT_BITS, name=f"limit{v}") for v in range(n)]

        m.d.comb += self.sync_ready.eq(~(self.arrive & (self.arrive_vc == self.sync_vc)))
        syncing = self.sync & self.sync_ready
        leak = Signal(CREDIT_BITS)
        beyond = Signal(CREDIT_BITS)
        recover = Signal()
        bogus = Signal()
        # Credits advertised: ``credits`` when set (1 … capacity), else the whole capacity.
        capacity = Signal(range(self.capacity + 1))
        m.d.comb += capacity.eq(Mux((self.credits == 0) | (self.credits > self.capacity),
                                    self.capacity, self.credits))
        for v in range(n):
            m.d.comb += [
                limit[v].eq(freed[v] + capacity),
                self.received[v].eq(received[v]), self.freed[v].eq(freed[v]),
                self.limit[v].eq(limit[v]), self.occupancy[v].eq(received[v] - freed[v]),
            ]
            with m.If(self.sync_vc == v):
                m.d.comb += [leak.eq(self.sync_value - received[v]),
                             beyond.eq(self.sync_value - limit[v])]
        # Beyond the limit we gave: the sender cannot have sent that; ignore it.
        m.d.comb += [
            bogus.eq(syncing & (beyond != 0) & (beyond < _HALF)),
            recover.eq(syncing & ~bogus & (leak != 0) & (leak < _HALF)),
        ]
        counters.syncs_received.increment(m, syncing)
        counters.bogus_syncs.increment(m, bogus)
        counters.leaked_credits.add(m, leak, recover)

        for v in range(n):
            arrived = Mux(self.arrive & (self.arrive_vc == v), self.arrive_cost, 0)
            drained = Mux(self.drain & (self.drain_vc == v), self.drain_cost, 0)
            recovered = recover & (self.sync_vc == v)
            # A SYNC is taken only in a cycle without an arrival on its VC, so ``received``
            # plus the leak is the SYNC's value: no adder behind the leak check.
            m.d.sync += [received[v].eq(Mux(recovered, self.sync_value, received[v] + arrived)),
                         freed[v].eq(freed[v] + drained + Mux(recovered, leak, 0))]

        # --- CREDIT_UPDATE: threshold per VC, and every VC each update_period cycles --------
        # Automatic threshold: an eighth of what is advertised now, so that a run-time cap on
        # the credits does not leave the sender waiting for the periodic update.
        threshold = Signal(range(self.capacity + 1))
        if self.update_threshold:
            m.d.comb += threshold.eq(self.update_threshold)
        else:
            m.d.comb += threshold.eq(Mux(capacity[3:] == 0, 1, capacity[3:]))
        # The update logic starts from registers, not from the sum ``freed + capacity``: the
        # limit an update carries (``offered``) is ``limit`` a cycle ago, and whether it moved
        # by the threshold is registered too. A limit only grows, so a value a cycle old is one
        # the buffer still has room for.
        offered = [Signal(CREDIT_BITS, init=init, name=f"offered{v}") for v in range(n)]
        moved = Signal(n)
        vc, sent_one = credit_lcws(m, self.lcw_tx, LcwType.CREDIT_UPDATE, offered,
                                   self.update_period, moved)
        counters.updates_sent.increment(m, sent_one)
        for v in range(n):
            sending = sent_one & (vc == v)
            m.d.comb += self.offered[v].eq(offered[v])
            m.d.sync += [
                offered[v].eq(limit[v]),
                moved[v].eq(~sending & ((offered[v] - advertised[v])[:CREDIT_BITS]
                                        >= threshold)),
            ]
            with m.If(sending):
                m.d.sync += advertised[v].eq(offered[v])
        return m
