"""Scenarios on ``nic_pair`` that both its cocotb tests and ``ethlink bench nic`` run:
:func:`probe_latency` (one request alone, timed through both NICs) and :func:`run_link_loss`
(a line cut under load, checked against the golden model)."""

import copy
import itertools
from dataclasses import dataclass, field
from typing import Optional

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from ethlink.rtl.nic.ls_requester import CompletionStatus
from ethlink.rtl.nic.nic import NIC_VCS
from ethlink.rtl.wire import LsSize, XgmiiControl
from ethlink.sim.models.nic import LINE_OCTETS
from ethlink.sim.models.path import ls_entropy, select_port
from ethlink.sim.nic_pair_tb import NicPairTB, random_requests
from ethlink.sim.nic_tb import LsRequest
from ethlink.sim.runner import export_params
from ethlink.sim.tb import TransferLog, ValidLog, wait_idle

__all__ = ["XgmiiStarts", "probe_latency", "PortWatch", "LinkLoss", "run_link_loss"]


class XgmiiStarts:
    """The cycles in which an XGMII start word (``/S/`` in lane 0) is on tap ``tap`` (its
    ``d`` and ``c`` ports, a :class:`~ethlink.sim.tb.Ports`)."""
    def __init__(self, tap, clk, counter):
        self.cycles = []
        cocotb.start_soon(self._run(tap["d"], tap["c"], clk, counter))

    async def _run(self, data, ctrl, clk, counter):
        while True:
            await RisingEdge(clk)
            await ReadOnly()
            if int(ctrl.value) & 1 and int(data.value) & 0xFF == XgmiiControl.START:
                self.cycles.append(counter.now)


async def probe_latency(pair, store=False, tag=0):
    """One 64 B load (or store) of A from B on idle links, to a line whose path is a port
    without FEC, sent half-way between two periodic LCWs; returns its cycles: ``tx`` (A's
    request taken → its frame's start word on A's line side), ``rx`` (that start word on B's
    line side → B's AXI read or write address valid), ``round_trip`` (request taken →
    completion valid), and what the pair's configuration adds: ``line`` (the start word on A's
    line side → on B's) and, for a load, ``memory`` (B's AR valid → its first R valid).

    ``budget`` splits the round trip into consecutive spans that add up to it exactly: A's
    transmit, the line to B, B's receive (to AR or AW valid), B's memory or store (to the
    first R valid, or to the response's start word for a store), B's response transmit (first
    R valid → the response's start word on B's line side; 0 for a store), the line back, and
    A's receive (that start word on A's line side → completion valid)."""
    dut, counter = pair.dut, pair.counter
    a, b = pair.sides
    fec = export_params().get("fec", 0)
    line, port = next((line, port) for line in range(64, pair.memory_lines, 4)
                      for port in [select_port(b.id, ls_entropy(line), (1 << pair.ports) - 1)]
                      if not fec >> port & 1)
    req_log = TransferLog(dut, "s_axis_req_a", counter)
    ab = pair.line("ab", port)
    tx_starts = XgmiiStarts(ab.sub("tap_tx"), dut.clk, counter)
    rx_starts = XgmiiStarts(ab.sub("tap_rx"), dut.clk, counter)
    # The response may come back on any port (its own path selection at B).
    back = [(XgmiiStarts(pair.line("ba", p).sub("tap_tx"), dut.clk, counter),
             XgmiiStarts(pair.line("ba", p).sub("tap_rx"), dut.clk, counter))
            for p in range(pair.ports)]
    issued = ValidLog(b.io[f"m_axi_{'aw' if store else 'ar'}valid"], dut.clk, counter)
    answered = ValidLog(b.io["m_axi_rvalid"], dut.clk, counter)
    cpl_valid = ValidLog(dut.m_axis_cpl_a_tvalid, dut.clk, counter)
    # Clear of the periodic LCWs (PING, CREDIT_UPDATE, CREDIT_SYNC: every 1024 or 4096
    # cycles from reset), which the MAC may put between two words of the frame.
    while counter.now % 1024 != 512:
        await RisingEdge(dut.clk)
    expected = await a.issue([LsRequest(store, LsSize.B64, b.id, tag, line,
                                        bytes(range(64)) if store else b"")])
    await wait_idle(dut, [a.reqs, a.data], [(a.cpls, 1)])
    order, errors = await a.collect_completions(expected)
    assert not errors, errors
    taken = req_log.transfers[0][0]
    response_tx, response_rx = min(
        (tx.cycles[0], rx.cycles[0]) for tx, rx in back
        if tx.cycles and tx.cycles[0] > issued.rises[0])
    memory = None if store else answered.rises[0] - issued.rises[0]
    served = response_tx if store else answered.rises[0]
    budget = {"tx": tx_starts.cycles[0] - taken,
              "line": rx_starts.cycles[0] - tx_starts.cycles[0],
              "rx": issued.rises[0] - rx_starts.cycles[0],
              "memory": served - issued.rises[0],
              "response_tx": response_tx - served,
              "line_back": response_rx - response_tx,
              "response_rx": cpl_valid.rises[0] - response_rx}
    round_trip = cpl_valid.rises[0] - taken
    assert sum(budget.values()) == round_trip, (budget, round_trip)
    return {"tx": budget["tx"], "rx": budget["rx"], "round_trip": round_trip,
            "line": budget["line"], "memory": memory, "budget": budget}


class PortWatch:
    """Port ``port`` of NIC ``side``, every cycle until :meth:`stop`: the cycle it leaves
    ``links_up`` (``down``), the last cycle its CBFC transmitter handed a frame to its LLR
    (``last_sent``) or gave one back to be steered again (``last_diverted``). :meth:`sent`
    and :meth:`diverted` count those frames since the watch began."""
    def __init__(self, side, port):
        self.side, self.port = side, port
        self.sent0, self.diverted0 = self._frames("sent"), self._frames("diverted")
        self.down = self.last_sent = self.last_diverted = None
        self._done = False
        self._task = cocotb.start_soon(self._run())

    def _frames(self, what):
        """Counter ``count_frames_{what}`` of the port, summed over the VCs."""
        return sum(self.side.io.elements(f"p{self.port}_count_frames_{what}", NIC_VCS))

    def sent(self):
        return self._frames("sent") - self.sent0

    def diverted(self):
        return self._frames("diverted") - self.diverted0

    async def stop(self):
        self._done = True
        await self._task

    def _state(self):
        return (self.side.value("links_up") >> self.port & 1, self._frames("sent"),
                self._frames("diverted"))

    async def _run(self):
        up, sent, diverted = 1, self.sent0, self.diverted0
        clk, counter = self.side.dut.clk, self.side.counter
        while not self._done:
            await RisingEdge(clk)
            now = self._state()
            if up and not now[0]:
                self.down = counter.now
            if now[1] != sent:
                self.last_sent = counter.now
            if now[2] != diverted:
                self.last_diverted = counter.now
            up, sent, diverted = now


@dataclass
class LinkLoss:
    """What :func:`run_link_loss` saw: the cycles of the ``cut``, of A's port 0 going
    ``down``, of the ``last_sent`` frame its CBFC transmitter handed to its LLR and the
    ``last_diverted`` one it gave back; every way completions or memory differ from the model
    (``errors``, must be empty); the frames ``sent`` and ``diverted`` since the cut; ``lost``
    (TIMEOUT completions), ``lost_responses`` (of those, the ones whose request B may have
    executed: its response path is B's port 0) and A's ``purges``."""
    cut: int
    down: Optional[int] = None
    last_sent: Optional[int] = None
    last_diverted: Optional[int] = None
    errors: list = field(default_factory=list)
    sent: int = 0
    diverted: int = 0
    lost: int = 0
    lost_responses: int = 0
    purges: int = 0


async def run_link_loss(dut, rng, count, *, credits=16, memory_lines=None,
                        replay_timeout=100, **options):
    """Link loss with frames queued (spec §10): the pair is made (``options``: as
    :class:`~ethlink.sim.nic_pair_tb.NicPairTB`) with B advertising ``credits`` per VC on its
    port 0, one read/write window over all memory and the links up; then A's line to B on
    port 0 is cut and A sends ``count`` random requests to B on the first ``memory_lines``
    lines (all of them by default). The frames that take port 0 go into its LLR (lost on the
    line) as long as B's credits last, then wait in its CBFC queue; when the LLR gives up
    (FLUSH, after ``replay_timeout`` × (``replay_max`` + 1) cycles) the port goes down and
    what its queues hold is steered again, to the other ports.

    Every request must complete once, TIMEOUT or as the golden model executing the requests
    in issue order says (status and load data), and B's memory must equal the model's. A
    TIMEOUT says only that the request or its response was lost: its frame went into the dead
    LLR (never executed), or B executed it and its response took B's port 0, which B still
    believes up but which no longer delivers (A's port 0 is down and sends B no ACKs). So the
    model runs with each timed-out store whose response path is B's port 0 executed or not
    (the others must not have executed), and one of those choices must match everything; and
    every timed-out request must have taken port 0 one way or the other. Returns a
    :class:`LinkLoss`."""
    pair = NicPairTB(dut, rng, rx_credits=[("b", 0, credits)], **options)
    await pair.reset()
    await pair.open_memories()
    await pair.wait_links()
    memory_lines = memory_lines or pair.memory_lines
    a, b = pair.sides
    initial = copy.deepcopy(b.model)
    a.io.set(p0_replay_timeout=replay_timeout)
    pair.line("ab", 0).set(link_up=0)
    watch = PortWatch(a, 0)
    seen = LinkLoss(cut=pair.counter.now)
    requests = list(random_requests(rng, count, memory_lines, b.id))
    await a.issue(requests, answer=False)
    await wait_idle(dut, [a.reqs, a.data], [(a.cpls, count)],
                    timeout_cycles=export_params()["timeout_cycles"] * 3 + 100 * count)
    await watch.stop()
    seen.down, seen.last_sent, seen.last_diverted = watch.down, watch.last_sent, \
        watch.last_diverted
    statuses, order = {}, []
    for _ in range(count):
        tag, status = await a.completion()
        if tag in statuses:
            seen.errors.append(f"tag {tag} completed twice")
        statuses[tag] = status
        order.append(tag)
    lost = [request for request in requests
            if statuses.get(request.tag) == CompletionStatus.TIMEOUT]
    everything = (1 << pair.ports) - 1
    via = {request.tag: (select_port(b.id, ls_entropy(request.line), everything),
                         select_port(a.id, ls_entropy(request.line), everything))
           for request in lost}
    seen.errors += [f"tag {tag} timed out on paths (A→B, B→A) {ports}, neither port 0"
                    for tag, ports in via.items() if 0 not in ports]
    # Load data arrives in completion order, one packet per load answered OK.
    stores = {request.tag: request.store for request in requests}
    loads = [tag for tag in order if not stores[tag] and statuses[tag] == CompletionStatus.OK]
    data = await a.load_data(loads, seen.errors)
    # Executed or not: a timed-out store whose response path is B's port 0 (any other one
    # was lost in A's dead LLR, never executed).
    maybe = [request.tag for request in lost if request.store and via[request.tag][1] == 0]
    seen.errors += explain_loss(a, requests, statuses, data, b.ram.read(0, len(initial.memory)),
                                initial, set(via), maybe)
    seen.sent, seen.diverted = watch.sent(), watch.diverted()
    seen.lost = len(lost)
    seen.lost_responses = sum(ports[1] == 0 for ports in via.values())
    seen.purges = a.value("count_purges")
    return seen


def explain_loss(side, requests, statuses, data, memory, initial, timed_out, maybe):
    """Whether the golden model, from state ``initial``, explains what ``side``'s
    ``requests`` got (``statuses``, load ``data``) and the ``memory`` they left, with the
    ``timed_out`` tags never executed except some of ``maybe``: ``[]`` if one choice of those
    does, else the differences of the choice that executes none of them."""
    assert len(maybe) <= 12, f"{len(maybe)} stores timed out: too many to check"
    first_wrong = []
    for executed in itertools.product((False, True), repeat=len(maybe)):
        run = dict(zip(maybe, executed))
        model, wrong = copy.deepcopy(initial), []
        for request in requests:
            tag = request.tag
            if not run.get(tag, tag not in timed_out):
                continue
            answer = side.answer(request, model)
            if tag in timed_out:
                continue
            if statuses.get(tag) != answer.status:
                wrong.append(f"tag {tag}: {statuses.get(tag)}, model {answer.status.name}")
            elif answer.data is not None and data.get(tag) != answer.data:
                wrong.append(f"tag {tag}: load data differs")
        if memory != bytes(model.memory):
            lines = sorted({k // LINE_OCTETS for k, (x, y) in
                            enumerate(zip(memory, model.memory)) if x != y})
            wrong.append(f"B's memory differs from the model on lines {lines[:8]}")
        if not wrong:
            return []
        if not any(executed):
            first_wrong = wrong     # reported: the choice "no timed-out store executed"
    return first_wrong
