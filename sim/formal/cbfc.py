"""Formal proof of the CBFC credit counters (spec §8) with SymbiYosys.

The harness joins a :class:`~ethlink.rtl.cbfc.credit.CreditSender` and a
:class:`~ethlink.rtl.cbfc.credit.CreditReceiver` through an abstract link whose every choice is
a free input of the solver, constrained only by what a link can do:

* the requester asks for any VC with any cost from 1 to ``max_cost`` in any cycle;
* the link resolves the credits the sender spent, in order, in chunks of 1 to ``max_cost``:
  each chunk is either delivered (the receiver stores it) or lost (LLR FLUSH);
* the sender is told that resolved credits are settled, at any later time;
* the buffer drains any amount it holds, at any time;
* CREDIT_UPDATE and CREDIT_SYNC words travel in order through a one-word line each: they may
  wait, be lost (a failed crc8) or be overtaken by a newer one, which replaces them.

Two bounds make the link finite, as every real one is; without them a word or an
acknowledgement could lag by 2^19 credits or more and alias in the 20-bit arithmetic:

* **bounded line latency**: a word is delivered, replaced or lost within ``line_age``
  cycles of entering its line (the line drops a word that has waited that long);
* **bounded acknowledgement lag**: the link resolves no more credits of a VC while
  ``max_unsettled`` of its resolved credits are not yet settled (the LLR replay buffer is
  finite).

Within these bounds this over-approximates the link (any partition of the sent credits into
delivered and lost chunks, any delays, any interleaving of the VCs), so a property proven here
holds for the real one. The properties, for every VC:

1. **No overflow**: ``received − freed`` (what the buffer holds) ≤ ``capacity``.
2. **The sender keeps to its limit**: ``sent`` never passes ``limit``, ``settled`` never
   passes ``sent``.
3. **Differences stay small**: every pair of counters that the spec compares is less than
   2^19 apart (the receiver's limit is at or after the sender's, the sender's ``sent`` at or
   after the receiver's ``received``, and ``freed + capacity − sent`` ≤ ``capacity``).
4. **Leak recovery is exact**: the receiver never recovers more credits than were lost, and
   once a CREDIT_SYNC carrying ``s`` is applied, ``received ≥ s``; with ``s`` = ``sent``
   (nothing in flight) the two views agree exactly (by 3: ``received ≤ sent``).

They are proven in every reachable state, for all time, by 1-induction (``mode prove``,
``depth`` 1 by default): they hold in the initial state, and after any step from any state,
reachable or not, where they hold. For that they are strengthened by inductive invariants,
asserted as well (each a property of the system in its own right), for every VC:

* ``freed ≤ received ≤ resolved ≤ sent ≤ limit(tx) ≤ freed + capacity``, as distances of at
  most ``capacity`` (a comparison modulo 2^20 means something only between close values);
* ``resolved = delivered + lost`` and ``resolved − settled ≤ max_unsettled``;
* a CREDIT_UPDATE in its line is behind the receiver's current limit, and a CREDIT_SYNC behind
  the sender's current ``settled``, by at most the line's *slack*: a limit grows by at most
  one drain and one leak (≤ ``capacity``) a cycle, ``settled`` by one release, so the slack
  is that growth times the cycles the word has waited, at most ``line_age`` cycles, and for
  an update one cycle more (it carries ``offered``, the limit of the cycle before, which is
  behind the limit by at most one cycle's growth).

The induction step is checked in parts (:attr:`CbfcProof.PARTS`, one task each): a part's
properties hold after a step from any state where *all* properties held. Together the parts
are exactly the induction step for all of them: as a single solver query that step takes
minutes, split it takes seconds a part. The whole run takes about a minute.

Proven for :data:`PROOF_DEFAULTS` (2 VCs, 8 credits each, costs 1 to 3, words delivered within
4096 cycles, at most 2^18 credits unsettled). Every counter starts at ``counter_init`` (just
below 2^20), so the covers cross the modular wrap; the induction step starts from arbitrary
counter values anyway. Cover statements (task ``cover``, to ``cover_depth``) show the
interesting states are reachable: a full buffer, a stalled VC that sends again, a leak
recovered and used, the counters wrapped. ``mode bmc`` checks all properties in one bounded
task instead.
"""

import shutil
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import (Assert, Assume, Cat, ClockDomain, Cover, Elaboratable, Module,
                          Signal)

from . import run_sby
from ...rtl.cbfc.credit import (CreditReceiver, CreditSender, CREDIT_BITS, COST_BITS,
                               credits_ahead)
from ...rtl.wire import CREDIT_PAYLOAD

__all__ = ["CbfcProof", "run_proof", "PROOF_DEFAULTS"]

_MOD = 1 << CREDIT_BITS
_HALF = 1 << (CREDIT_BITS - 1)

#: The configuration proven by default: small enough for the covers to reach a full buffer, a
#: stall, an update, a SYNC and the wrap within a few cycles. ``line_age`` (cycles) and
#: ``max_unsettled`` (credits) are well beyond a real link's LCW latency and replay buffer.
PROOF_DEFAULTS = dict(vcs=2, capacity=8, max_cost=3, update_threshold=2, update_period=5,
                      sync_period=6, counter_init=_MOD - 5, line_age=4096,
                      max_unsettled=1 << 18, depth=1, cover_depth=16)


def _behind(a, b):
    """How far ``b`` is behind ``a``, modulo 2^20."""
    return (a - b)[:CREDIT_BITS]


class CbfcProof(Elaboratable):
    """The proof harness (see the module docstring). ``ports`` lists the free inputs.

    Without ``part`` every property is asserted. With ``part`` (one of :attr:`PARTS`) only
    that part's are, and all of them are assumed to have held in the previous cycle.
    """
    #: The properties, in groups that the induction step checks one at a time.
    PARTS = ("overflow", "limit", "rx_limit", "in_flight", "received", "room", "settled",
             "leak", "sync", "lines")

    def __init__(self, *, vcs, capacity, max_cost, update_threshold, update_period,
                 sync_period, counter_init, line_age, max_unsettled, part=None):
        if part is not None and part not in self.PARTS:
            raise ValueError(f"part must be one of {self.PARTS} or None, not {part!r}")
        self.part = part
        # The invariants order the counters by distances that must not alias modulo 2^20.
        if (capacity + max_unsettled + line_age * (max_cost + capacity) >= _HALF
                or line_age < 1 or max_unsettled < max_cost):
            raise ValueError("line_age and max_unsettled must keep every counter distance "
                             "below 2^19 and let a chunk resolve")
        self.vcs = vcs
        self.capacity = capacity
        self.max_cost = max_cost
        self.line_age = line_age
        self.max_unsettled = max_unsettled
        self.params = dict(update_threshold=update_threshold, update_period=update_period,
                           sync_period=sync_period, counter_init=counter_init)
        self.counter_init = counter_init
        vc_shape = range(max(vcs, 2))
        self.req = Signal()
        self.req_vc = Signal(vc_shape)
        self.req_cost = [Signal(COST_BITS, name=f"req_cost{v}") for v in range(vcs)]
        self.ev = Signal(2)                  # 0 nothing, 1 deliver, 2 lose
        self.ev_vc = Signal(vc_shape)
        self.ev_cost = Signal(COST_BITS)
        self.rel = Signal()
        self.rel_vc = Signal(vc_shape)
        self.rel_cost = Signal(COST_BITS)
        self.drain = Signal()
        self.drain_vc = Signal(vc_shape)
        self.drain_cost = Signal(COST_BITS)
        self.upd_take, self.upd_lose, self.upd_deliver = Signal(), Signal(), Signal()
        self.sync_take, self.sync_lose, self.sync_deliver = Signal(), Signal(), Signal()
        self.clk = Signal()

    @property
    def ports(self):
        return [self.clk, self.req, self.req_vc, *self.req_cost, self.ev, self.ev_vc,
                self.ev_cost, self.rel, self.rel_vc, self.rel_cost, self.drain, self.drain_vc,
                self.drain_cost, self.upd_take, self.upd_lose, self.upd_deliver,
                self.sync_take, self.sync_lose, self.sync_deliver]

    def elaborate(self, platform):
        m = Module()
        # Registers start at their init values; no reset, so every trace starts there.
        m.domains.sync = cd = ClockDomain("sync", reset_less=True)
        m.d.comb += cd.clk.eq(self.clk)
        n, cap, init = self.vcs, self.capacity, self.counter_init % _MOD
        p = self.params
        m.submodules.tx = tx = CreditSender(n, sync_period=p["sync_period"],
                                            counter_init=init)
        m.submodules.rx = rx = CreditReceiver(n, cap, update_threshold=p["update_threshold"],
                                              update_period=p["update_period"],
                                              counter_init=init)

        def cost_ok(cost):
            return (cost >= 1) & (cost <= self.max_cost)

        checks = []

        def check(part, test, when=None):
            """A property of ``part`` (:attr:`PARTS`), asserted (where it is stated) if this
            harness checks that part."""
            ok = Signal(name=f"{part}_ok{len(checks)}")
            m.d.comb += ok.eq(test if when is None else ~when | test)
            checks.append(ok)
            if self.part in (None, part):
                m.d.comb += Assert(ok, src_loc_at=1)

        # --- requester --------------------------------------------------------------------
        for v in range(n):
            m.d.comb += [tx.cost[v].eq(self.req_cost[v]), tx.waiting[v].eq(1)]
            m.d.comb += Assume(cost_ok(self.req_cost[v]))
        m.d.comb += [tx.take.eq(self.req), tx.take_vc.eq(self.req_vc),
                     Assume(self.req_vc < n)]

        # --- the link: resolve sent credits in order, delivered or lost ------------------------
        resolved = [Signal(CREDIT_BITS, init=init, name=f"resolved{v}") for v in range(n)]
        delivered = [Signal(CREDIT_BITS, init=init, name=f"delivered{v}") for v in range(n)]
        lost = [Signal(CREDIT_BITS, name=f"lost{v}") for v in range(n)]
        m.d.comb += Assume((self.ev_vc < n) & (self.rel_vc < n) & (self.drain_vc < n))
        for v in range(n):
            in_flight = _behind(tx.sent[v], resolved[v])
            unsettled = _behind(resolved[v], tx.settled[v])
            with m.If((self.ev != 0) & (self.ev_vc == v)):
                # A finite replay buffer: no more than max_unsettled credits wait for their
                # acknowledgement (or FLUSH).
                m.d.comb += Assume(cost_ok(self.ev_cost) & (self.ev_cost <= in_flight)
                                   & (unsettled + self.ev_cost <= self.max_unsettled))
                m.d.sync += resolved[v].eq(resolved[v] + self.ev_cost)
                with m.If(self.ev == 1):
                    m.d.sync += delivered[v].eq(delivered[v] + self.ev_cost)
                with m.Else():
                    m.d.sync += lost[v].eq(lost[v] + self.ev_cost)
            with m.If(self.rel & (self.rel_vc == v)):
                m.d.comb += Assume(cost_ok(self.rel_cost) & (self.rel_cost <= unsettled))
            with m.If(self.drain & (self.drain_vc == v)):
                m.d.comb += Assume(cost_ok(self.drain_cost)
                                   & (self.drain_cost <= rx.occupancy[v]))
        m.d.comb += Assume(self.ev != 3)
        m.d.comb += [
            rx.arrive.eq(self.ev == 1), rx.arrive_vc.eq(self.ev_vc),
            rx.arrive_cost.eq(self.ev_cost),
            tx.release.eq(self.rel), tx.release_vc.eq(self.rel_vc),
            tx.release_cost.eq(self.rel_cost),
            rx.drain.eq(self.drain), rx.drain_vc.eq(self.drain_vc),
            rx.drain_cost.eq(self.drain_cost),
        ]

        # --- one-word lines for the LCWs, in order, lossy, delay below line_age -----------------
        def lcw_line(name, source, take, lose, step, lag=0):
            """A line taking words from ``source`` when ``take`` (dropping them if ``lose``).
            ``step`` bounds how far the value a word carries moves on at its source in a
            cycle, ``lag`` how many cycles old that value is when the word is offered;
            ``slack`` bounds how far it has moved on since the word was taken."""
            held = Signal(name=f"{name}_held")
            word = Signal.like(source.payload, name=f"{name}_word")
            top = (self.line_age + lag) * step
            slack = Signal(range(top + step + 1), name=f"{name}_slack")
            m.d.comb += source.ready.eq(take)
            gone = Signal(name=f"{name}_gone")
            # Bounded latency: a word still waiting after line_age cycles is lost.
            with m.If(gone | (slack > top - step)):
                m.d.sync += held.eq(0)
            with m.If(held):
                m.d.sync += slack.eq(slack + step)
            with m.If(source.valid & take & ~lose):
                m.d.sync += [held.eq(1), word.eq(source.payload), slack.eq((lag + 1) * step)]
            check("lines", slack <= top, when=held)
            return held, word, slack, gone

        # A receiver's limit grows by at most one drain and one leak (≤ capacity) a cycle, the
        # sender's settled by one release.
        # An update carries the limit of the cycle before (``offered``).
        upd_step = self.max_cost + cap
        upd_held, upd_word, upd_slack, upd_gone = lcw_line(
            "upd", rx.lcw_tx, self.upd_take, self.upd_lose, upd_step, lag=1)
        m.d.comb += [tx.lcw_rx.valid.eq(upd_held & self.upd_deliver),
                     tx.lcw_rx.payload.eq(upd_word), upd_gone.eq(tx.lcw_rx.valid)]
        sync_held, sync_word, sync_slack, sync_gone = lcw_line(
            "sync", tx.lcw_tx, self.sync_take, self.sync_lose, self.max_cost)
        offsets = CREDIT_PAYLOAD.offsets()
        vc_at, vc_bits = offsets["vc"]
        credits_at, _ = offsets["credits"]
        upd_vc = upd_word.payload[vc_at:vc_at + vc_bits]
        upd_value = upd_word.payload[credits_at:credits_at + CREDIT_BITS]
        sync_vc = sync_word.payload[vc_at:vc_at + vc_bits]
        sync_value = sync_word.payload[credits_at:credits_at + CREDIT_BITS]
        m.d.comb += [rx.sync.eq(sync_held & self.sync_deliver), rx.sync_vc.eq(sync_vc),
                     rx.sync_value.eq(sync_value),
                     sync_gone.eq(rx.sync & rx.sync_ready)]

        # --- properties ------------------------------------------------------------------------
        applied = Signal()
        applied_vc = Signal(range(max(n, 2)))
        applied_value = Signal(CREDIT_BITS)
        m.d.sync += [applied.eq(sync_gone), applied_vc.eq(sync_vc),
                     applied_value.eq(sync_value)]
        for v in range(n):
            recovered = _behind(rx.received[v], delivered[v])
            # 1. no overflow
            check("overflow", rx.occupancy[v] <= cap)
            # 2. the sender keeps to its limit
            check("limit", credits_ahead(tx.limit[v], tx.sent[v]))
            check("settled", credits_ahead(tx.sent[v], tx.settled[v]))
            # 3. differences stay below 2^19
            check("rx_limit", credits_ahead(rx.limit[v], tx.limit[v]))
            check("received", credits_ahead(tx.sent[v], rx.received[v]))
            check("room", _behind(rx.limit[v], tx.sent[v]) <= cap)
            # 4. leak recovery is exact
            check("leak", _behind(lost[v], recovered) < _HALF)
            check("sync", credits_ahead(rx.received[v], applied_value),
                  when=applied & (applied_vc == v))

            # Inductive invariants: freed ≤ received ≤ resolved ≤ sent ≤ limit ≤ freed + cap,
            # each a small distance, so that "ahead" composes despite the modulo.
            check("received", _behind(resolved[v], rx.received[v]) <= cap)
            check("in_flight", _behind(tx.sent[v], resolved[v]) <= cap)
            check("limit", _behind(tx.limit[v], tx.sent[v]) <= cap)
            check("limit", tx.room[v] == _behind(tx.limit[v], tx.sent[v]))
            check("rx_limit", _behind(tx.limit[v], rx.freed[v]) <= cap)
            check("leak", resolved[v] == (delivered[v] + lost[v])[:CREDIT_BITS])
            check("settled", _behind(resolved[v], tx.settled[v]) <= self.max_unsettled)
            # A word in its line is a past value of its source, which moved on since by at
            # most the line's slack.
            check("lines", _behind(rx.limit[v], upd_value) <= upd_slack,
                  when=upd_held & (upd_vc == v))
            check("lines", _behind(rx.limit[v], rx.offered[v]) <= upd_step)
            check("lines", _behind(tx.settled[v], sync_value) <= sync_slack,
                  when=sync_held & (rx.sync_vc == v))

            # Reachability.
            m.d.comb += Cover(rx.occupancy[v] == cap)
            m.d.comb += Cover((tx.count.stall_cycles[v] != 0) & tx.granted
                              & (self.req_vc == v))
            m.d.comb += Cover((recovered != 0) & tx.granted & (self.req_vc == v))
            m.d.comb += Cover(tx.sent[v] < init)      # wrapped past 2^20

        if self.part is not None:
            # One part of the induction step: this part's properties hold after a step from
            # any state where all properties held. They are assumed a cycle late, so never of
            # the state being checked: a trace that breaks one property first is kept up to
            # that state, where that property's part fails.
            held_before = Signal(init=1)
            m.d.sync += held_before.eq(Cat(*checks).all())
            m.d.comb += Assume(held_before)
        return m


def _sby_text(tasks, mode, depth, cover_depth):
    """``tasks`` maps each task to the RTLIL file of its harness; "cover" runs the covers."""
    reads = "\n".join(f"{task}: read_rtlil {il}" for task, il in tasks.items())
    files = "\n".join(sorted(set(tasks.values())))
    return f"""[tasks]
{chr(10).join(tasks)}

[options]
cover: mode cover
cover: depth {cover_depth}
~cover: mode {mode}
~cover: depth {depth}

[engines]
smtbmc yices

[script]
{reads}
prep -top top

[files]
{files}
"""


def run_proof(workdir, *, depth=None, cover_depth=None, mode="prove", **params):
    """Write the harness and its .sby file to ``workdir`` and run the proof and the covers.

    ``mode`` "prove" is k-induction of ``depth`` cycles (default 1), one task per part
    (:attr:`CbfcProof.PARTS`); "bmc" checks every property in the first ``depth`` cycles
    (default 10) in one task. The covers run to ``cover_depth``. Returns ``{"mode", "depth",
    "induction_depth" (prove only), "cover_depth", "seconds", "passed", "tasks": {task:
    status}, "params"}``.
    """
    if mode not in ("prove", "bmc"):
        raise ValueError(f"mode must be 'prove' or 'bmc', not {mode!r}")
    config = {**PROOF_DEFAULTS, **params}
    depth = depth or (config["depth"] if mode == "prove" else 10)
    cover_depth = cover_depth or config["cover_depth"]
    del config["depth"], config["cover_depth"]
    workdir = Path(workdir)
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    parts = CbfcProof.PARTS if mode == "prove" else ()
    tasks = {f"prove_{part}": f"{part}.il" for part in parts} or {"bmc": "all.il"}
    tasks["cover"] = "all.il"
    for part in (None, *parts):
        harness = CbfcProof(**config, part=part)
        (workdir / f"{part or 'all'}.il").write_text(rtlil.convert(harness,
                                                                   ports=harness.ports))
    (workdir / "cbfc.sby").write_text(_sby_text(tasks, mode, depth, cover_depth))
    returncode, seconds = run_sby(workdir, "cbfc.sby")
    for task in tasks:
        status = workdir / f"cbfc_{task}" / "status"
        tasks[task] = status.read_text().split()[0] if status.exists() else "ERROR"
    report = {"mode": mode, "depth": depth}
    if mode == "prove":
        report["induction_depth"] = depth
    return {**report, "cover_depth": cover_depth, "seconds": round(seconds, 1),
            "passed": returncode == 0 and all(s == "PASS" for s in tasks.values()),
            "tasks": tasks, "params": config}
