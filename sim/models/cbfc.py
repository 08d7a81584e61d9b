"""Golden model of the CBFC credit counters (spec §8), cycle by cycle.

Written from the spec's rules, not from the gateware: the tests drive
:class:`~ethlink.rtl.cbfc.credit.CreditSender` / :class:`~ethlink.rtl.cbfc.credit.
CreditReceiver` and these models with the same random inputs and compare every output in every
cycle. The project's choices where the spec leaves one (docs/cbfc.md) are modelled as stated
there: a CREDIT_UPDATE behind ``sent`` or behind the current limit is bogus; a CREDIT_SYNC
beyond the receiver's limit is bogus, one behind ``received`` is stale; SYNC values are the
sender's settled credits; pending LCWs go out lowest VC first.
"""

from ethlink.rtl.wire import CREDIT_PAYLOAD, LcwType

__all__ = ["CreditSenderModel", "CreditReceiverModel", "MOD", "ahead"]

MOD = 1 << 20
_HALF = 1 << 19
_COUNT_MAX = (1 << 32) - 1


def ahead(a, b):
    """``a`` is at or after ``b`` modulo 2^20."""
    return (a - b) % MOD < _HALF


def _word(lcw_type, vc, credits):
    return int(lcw_type), CREDIT_PAYLOAD.to_int(vc=vc, credits=credits % MOD)


class CreditSenderModel:
    """Sender side: ``sent``, ``limit``, ``settled`` per VC and the periodic CREDIT_SYNC."""
    def __init__(self, vcs, sync_period, init=0):
        self.vcs, self.sync_period = vcs, sync_period
        self.sent = [init] * vcs
        self.limit = [init] * vcs
        self.settled = [init] * vcs
        self.timer = 0
        self.due = set()
        self.counts = {"count_updates_received": 0, "count_bogus_updates": 0,
                       "count_syncs_sent": 0}
        self.stalls = [0] * vcs

    def ok(self, costs):
        return [(self.limit[v] - self.sent[v]) % MOD >= costs[v] for v in range(self.vcs)]

    def lcw_tx(self):
        """``(type, payload)`` offered this cycle, or ``None``."""
        if not self.due:
            return None
        vc = min(self.due)
        return _word(LcwType.CREDIT_SYNC, vc, self.settled[vc])

    def step(self, costs, waiting, take, take_vc, release, release_vc, release_cost,
             lcw_rx, lcw_tx_ready):
        """One clock edge. ``lcw_rx`` is ``(type, payload)`` or ``None``. Returns whether the
        take was granted."""
        ok = self.ok(costs)
        granted = bool(take and take_vc < self.vcs and ok[take_vc])
        offered = self.lcw_tx()
        for v in range(self.vcs):
            if waiting[v] and not ok[v]:
                self.stalls[v] = min(self.stalls[v] + 1, _COUNT_MAX)
        if granted:
            self.sent[take_vc] = (self.sent[take_vc] + costs[take_vc]) % MOD
        if release and release_vc < self.vcs:
            self.settled[release_vc] = (self.settled[release_vc] + release_cost) % MOD
        if lcw_rx is not None and lcw_rx[0] == LcwType.CREDIT_UPDATE:
            fields = CREDIT_PAYLOAD.from_int(lcw_rx[1])
            vc, new = fields["vc"], fields["credits"]
            self.counts["count_updates_received"] += 1
            if vc < self.vcs and ahead(new, self.sent[vc]) and ahead(new, self.limit[vc]):
                self.limit[vc] = new
            else:
                self.counts["count_bogus_updates"] += 1
        if offered is not None and lcw_tx_ready:
            self.counts["count_syncs_sent"] += 1
            self.due.discard(min(self.due))
        if self.timer == self.sync_period - 1:
            self.timer = 0
            self.due = set(range(self.vcs))
        else:
            self.timer += 1
        return granted


class CreditReceiverModel:
    """Receiver side: ``received``, ``freed`` per VC, CREDIT_UPDATE and leak recovery."""
    def __init__(self, vcs, capacity, update_threshold, update_period, init=0):
        self.vcs, self.capacity = vcs, capacity
        self.update_threshold, self.period = update_threshold, update_period
        self.received = [init] * vcs
        self.freed = [init] * vcs
        self.advertised = [init] * vcs
        # An update carries the limit of the cycle before (``offered``) and is due when that
        # moved by the threshold, as seen a cycle before (``moved``): docs/cbfc.md.
        self.offered = [init] * vcs
        self.moved = set()
        self.timer = 0
        self.periodic = set()
        self.counts = {"count_updates_sent": 0, "count_syncs_received": 0,
                       "count_leaked_credits": 0, "count_bogus_syncs": 0}

    def limit(self, v, credits=0):
        capacity = credits if 0 < credits <= self.capacity else self.capacity
        return (self.freed[v] + capacity) % MOD

    def occupancy(self, v):
        return (self.received[v] - self.freed[v]) % MOD

    def threshold(self, credits):
        """``update_threshold``, or with 0 an eighth of the credits advertised (at least 1)."""
        if self.update_threshold:
            return self.update_threshold
        capacity = credits if 0 < credits <= self.capacity else self.capacity
        return max(1, capacity // 8)

    def lcw_tx(self, credits=0):
        due = sorted(self.periodic | self.moved)
        if not due:
            return None
        return _word(LcwType.CREDIT_UPDATE, due[0], self.offered[due[0]])

    def sync_ready(self, arrive, arrive_vc, sync_vc):
        return not (arrive and arrive_vc == sync_vc)

    def step(self, arrive, arrive_vc, arrive_cost, drain, drain_vc, drain_cost, sync, sync_vc,
             sync_value, lcw_tx_ready, credits=0):
        """One clock edge."""
        offered = self.lcw_tx(credits)
        syncing = sync and self.sync_ready(arrive, arrive_vc, sync_vc)
        leak = 0
        if syncing:
            self.counts["count_syncs_received"] += 1
            if sync_vc < self.vcs:
                beyond = (sync_value - self.limit(sync_vc, credits)) % MOD
                if 0 < beyond < _HALF:
                    self.counts["count_bogus_syncs"] += 1
                else:
                    gap = (sync_value - self.received[sync_vc]) % MOD
                    if 0 < gap < _HALF:
                        leak = gap
                        self.counts["count_leaked_credits"] += gap
        sending = None
        if offered is not None and lcw_tx_ready:
            sending = CREDIT_PAYLOAD.from_int(offered[1])["vc"]
            self.counts["count_updates_sent"] += 1
        self.moved = {v for v in range(self.vcs) if v != sending
                      and (self.offered[v] - self.advertised[v]) % MOD
                      >= self.threshold(credits)}
        if sending is not None:
            self.advertised[sending] = self.offered[sending]
            self.periodic.discard(sending)
        self.offered = [self.limit(v, credits) for v in range(self.vcs)]
        for v in range(self.vcs):
            add_r = (arrive_cost if arrive and arrive_vc == v else 0)
            add_f = (drain_cost if drain and drain_vc == v else 0)
            if leak and sync_vc == v:
                add_r += leak
                add_f += leak
            self.received[v] = (self.received[v] + add_r) % MOD
            self.freed[v] = (self.freed[v] + add_f) % MOD
        if self.timer == self.period - 1:
            self.timer = 0
            self.periodic = set(range(self.vcs))
        else:
            self.timer += 1
