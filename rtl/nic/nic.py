"""The NIC: the Load/Store and RDMA requesters and targets over 1–4 lossless ports, with
multipath steering; and two NICs joined port to port by simulated lines.

Ref: spec §3 (VCs), §5–§8 (each port: MAC, LLR, CBFC), §9 (path selection over the ports that
are reachable and up), §10 (SEN received per port), §11.

::

    m_axi ◀─▶ LsTarget.o ─────────┐                    ┌─▶ port 0: CbfcEnd i_vc0…3 ─▶ txd0
    m_axi_rdma ◀─▶ RdmaTarget.o ──┤
    GPU req ─▶ LsRequester.o ─────┼▶ PacketArbiter ▶ FrameSteer (port from Reachability)
    GPU rdma_cmd ─▶ RdmaRequester.o┘                   └─▶ port n-1 …
    m_axi ◀─── LsTarget.i ◀────── PacketArbiter ◀─ o_vc0 of every port   (L/S requests)
    GPU cpl ◀─ LsRequester.i ◀─── PacketArbiter ◀─ o_vc1 of every port   (L/S responses)
    m_axi_rdma ◀─ RdmaTarget.i ◀─ PacketArbiter ◀─ o_vc2 of every port   (RDMA requests)
    m_axi_dma ◀─ RdmaRequester.i ◀ PacketArbiter ◀─ o_vc3 of every port  (RDMA responses)
               SEN LCWs received on port p ─▶ Reachability.lcw{p}; LLR up ─▶ links_up
"""

from amaranth.hdl import Module, Signal, Cat, C
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..arbiter import PacketArbiter
from ..cbfc.cbfc_end import CbfcEnd
from ..hierarchy import forward_member, pair_name
from ..link.layouts import MAC_BEAT_OCTETS
from ..link.link_end import add_line, line_members
from ..link.llr_tx import TxState
from ..stream import PacketStream, SaturatingCounter, COUNTER_WIDTH
from ..wire import OEFH, HEADER_OCTETS, HeaderLayout, VirtualChannel, lanes_to_value
from .ls_requester import LsRequester
from .ls_responder import LsTarget
from .rdma_requester import RdmaRequester
from .rdma_target import RdmaTarget
from .path_select import MAX_PORTS, DST_WIDTH, ENTROPY_WIDTH
from .reachability import Reachability, check_ports

__all__ = ["FrameSteer", "Nic", "NicPair", "NIC_VCS"]

#: VCs a NIC port carries: L/S requests, L/S responses, RDMA requests, RDMA responses
#: (spec §3).
NIC_VCS = 4


class FrameSteer(wiring.Component):
    """Send each frame of ``i`` to the port the path lookup picks, on the frame's own VC.

    On a frame's first beat the block asks ``lookup_*`` for the port of its OEFH ``dst`` and
    ``entropy`` and holds the frame until the answer arrives on ``result_*`` (one lookup at a
    time; :class:`Reachability` answers :attr:`Reachability.LATENCY` cycles later); the frame
    then leaves whole on ``o{port}_vc{vc}``, its first beat in the answer's cycle. A frame no
    port reaches (``result_none``) is dropped and counted (``count_unroutable``); one whose VC
    has no queue (``vc >= vcs``) likewise (``count_bad_vc``): both are consumed at one beat
    per cycle. The header of an unroutable frame (its first 16 octets as a
    :class:`HeaderLayout`: the OEFH and an L/S TH whole, or an RDMA TH's opcode, flags and
    msg, the rest zero) is then offered on ``failed`` — for the requester to fail the
    operation at once (spec §9) — and the next frame waits until it is taken (the NIC's
    requesters always take it); a frame of one beat has no TH and is not reported. ``idle``
    is high between frames (no frame started, none being sent, no ``failed`` offered).
    ``retry`` high in the answer's cycle discards the answer: the first beat stays held and
    the frame is looked up again once ``i`` is offered again (the paths changed meanwhile).

    Latency: a frame's first beat leaves as many cycles after it is offered as the lookup takes
    (2 with :class:`Reachability`); the rest follow at one beat per cycle, with the output's
    back-pressure. Throughput: one beat per cycle within a frame, plus the lookup's cycles
    between frames.
    """
    def __init__(self, ports, vcs=NIC_VCS):
        self.ports = check_ports(ports)
        self.vcs = vcs
        octets = MAC_BEAT_OCTETS
        super().__init__({
            "i": In(PacketStream(octets)),
            **{f"o{p}_vc{v}": Out(PacketStream(octets)) for p in range(ports)
               for v in range(vcs)},
            "failed": Out(stream.Signature(HeaderLayout())),
            "lookup_valid": Out(1), "lookup_dst": Out(DST_WIDTH),
            "lookup_entropy": Out(ENTROPY_WIDTH),
            "result_valid": In(1), "result_port": In(range(MAX_PORTS)), "result_none": In(1),
            "count_unroutable": Out(COUNTER_WIDTH), "count_bad_vc": Out(COUNTER_WIDTH),
            "idle": Out(1), "retry": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        beat = self.i.payload
        oefh = OEFH.layout(lanes_to_value(beat.data[:8 * OEFH.octets], OEFH.octets))
        port = Signal(range(MAX_PORTS))
        vc = Signal(3)
        m.d.comb += [self.lookup_dst.eq(oefh.dst), self.lookup_entropy.eq(oefh.entropy)]
        unroutable = SaturatingCounter("count_unroutable")
        bad_vc = SaturatingCounter("count_bad_vc")
        m.d.comb += [self.count_unroutable.eq(unroutable.value),
                     self.count_bad_vc.eq(bad_vc.value)]
        # A dropped frame's first beats, for ``failed``.
        first, second, unroutable_frame = Signal(), Signal(), Signal()
        head = Signal(8 * MAC_BEAT_OCTETS)
        outputs = {(p, v): getattr(self, f"o{p}_vc{v}")
                   for p in range(self.ports) for v in range(self.vcs)}

        def forward(to_port):
            for (p, v), out in outputs.items():
                with m.If((to_port == p) & (vc == v)):
                    m.d.comb += [out.valid.eq(self.i.valid), out.payload.eq(beat),
                                 self.i.ready.eq(out.ready)]

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.idle.eq(1)
                # A frame starts: ask for its port, hold its first beat until the answer.
                with m.If(self.i.valid):
                    m.d.comb += self.lookup_valid.eq(1)
                    m.d.sync += vc.eq(oefh.vc)
                    m.next = "LOOKUP"
            with m.State("LOOKUP"):
                with m.If(self.result_valid):
                    m.d.sync += port.eq(self.result_port)
                    with m.If(self.retry):
                        m.next = "IDLE"
                    with m.Elif(self.result_none | (vc >= self.vcs)):
                        unroutable.increment(m, self.result_none)
                        bad_vc.increment(m, ~self.result_none)
                        m.d.sync += [first.eq(1), second.eq(0),
                                     unroutable_frame.eq(self.result_none)]
                        m.next = "DROP"
                    with m.Else():
                        # The first beat leaves in the answer's cycle.
                        forward(self.result_port)
                        with m.If(self.i.valid & self.i.ready):
                            m.next = "SEND"
                            with m.If(beat.last):
                                m.next = "IDLE"
            with m.State("SEND"):
                forward(port)
                with m.If(self.i.valid & self.i.ready & beat.last):
                    m.next = "IDLE"
            with m.State("DROP"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid):
                    m.d.sync += [second.eq(first), first.eq(0), head.eq(beat.data)]
                    with m.If(second):
                        # Ref: spec §4 — OEFH and L/S TH are the frame's first 14 octets.
                        m.d.sync += self.failed.payload.eq(
                            Cat(C(0, 8 * (HEADER_OCTETS - 16)),
                                lanes_to_value(Cat(head, beat.data), 16)))
                    with m.If(beat.last):
                        m.next = "IDLE"
                        with m.If(unroutable_frame & ~first):
                            m.next = "REPORT"
            with m.State("REPORT"):
                m.d.comb += self.failed.valid.eq(1)
                with m.If(self.failed.ready):
                    m.next = "IDLE"
        return m


#: Members of an engine the NIC wires itself.
_ENGINE_INTERNAL = ("o", "i", "fail")
#: Members of a port's :class:`CbfcEnd` the NIC wires itself.
_PORT_INTERNAL = (*(f"{d}_vc{v}" for d in "io" for v in range(NIC_VCS)), "lcw_rx", "pause",
                  "purge", "purging", "divert")


class Nic(wiring.Component):
    """An EthLink NIC: :class:`LsRequester` and :class:`RdmaRequester` for the local GPU's
    cache-line requests and DMA commands, :class:`LsTarget` and :class:`RdmaTarget` for remote
    requests against local memory (AXI4 managers), and ``ports`` lossless link stacks
    (:class:`CbfcEnd`: MAC + LLR + CBFC; VC 0 L/S requests, 1 L/S responses, 2 RDMA requests,
    3 RDMA responses).

    **Transmit.** Frames of the four engines are merged a frame at a time (round robin), and
    :class:`FrameSteer` sends each to the port that :class:`Reachability` picks for its
    ``dst`` and ``entropy`` among the ports that reach ``dst`` and whose link is up (spec §9).
    A frame no port reaches is dropped and counted (``count_unroutable``); its header goes
    back to its requester (``FrameSteer.failed``), and the L/S request or the RDMA message it
    belongs to completes with UNREACHABLE; a response so lost leaves the remote request to
    time out. The merge is shared: an RDMA packet of ``mtu`` octets holds it for ``mtu / 8``
    cycles, which an L/S request behind it waits.

    **Re-steering** (spec §10). When a port's path dies — a SEN taken on it saying an
    endpoint is unreachable there, or its link going down — the port grants no new frame from
    that cycle, and once :class:`FrameSteer` is between frames the engines are held while the
    frames wholly queued in the port's CBFC queues come back through :class:`FrameSteer` (in
    their order, VC by VC) and are steered again (``count_purges``; docs/nic.md §8).

    **Receive.** Each VC's frames from all ports are merged a frame at a time: VC 0 to the L/S
    target, VC 1 to the L/S requester, VC 2 to the RDMA target, VC 3 to the RDMA requester.
    SEN LCWs received on port ``p`` update reachable[·][p] (spec §10). A port's link is up
    while its LLR transmitter is in ADVANCE or REPLAY (``links_up``).

    Members
    -------
    local_id, req, req_data, cpl, cpl_data, outstanding, count_* (requester)
        As :class:`LsRequester`.
    m_axi_*, csr_*, target_count_*
        As :class:`LsTarget` (its counters prefixed ``target_``).
    rdma_cmd, rdma_cpl, rdma_outstanding, rdma_count_*, m_axi_dma_*
        :class:`RdmaRequester`'s ``cmd``, ``cpl``, ``outstanding``, counters and AXI4 port.
    m_axi_rdma_*, rdma_csr_*, rdma_target_count_*
        :class:`RdmaTarget`'s AXI4 port, register bus (its own windows) and counters.
    p{p}_* : port ``p``'s :class:`CbfcEnd` ports
        XGMII ``txd``/``txc``/``rxd``/``rxc``, ``enable``, ``replay_timeout``, ``rx_credits``,
        status and counters.
    lcw_tx{p} : In(stream.Signature(LcwLayout()))
        LCWs to send on port ``p`` after the link's and the credits' own (a test's SENs).
    links_up : Out(ports)
    reach_busy, count_sen_down, count_sen_up, count_sen_stale
        As :class:`Reachability` (``busy`` renamed).
    count_unroutable, count_bad_vc : Out(32)
        Frames dropped by :class:`FrameSteer`.
    count_purges : Out(32)
        Ports purged (their queued frames steered again) after their path died.

    Latency (cycles, asserted by the tests): a request's first frame beat reaches its port's
    CbfcEnd ``LsRequester.TX_LATENCY`` + :attr:`STEER_LATENCY` cycles after ``req`` is taken;
    the XGMII side adds CbfcTx, LLR and MAC (:attr:`TX_LATENCY` in all, to the start word on
    ``txd``). A response's last beat on ``rxd`` reaches the requester after the MAC, LLR,
    CbfcRx and the port merge.
    """
    #: Cycles of :class:`FrameSteer` with :class:`Reachability` (lookup).
    STEER_LATENCY = Reachability.LATENCY
    #: Cycles from a 64 B LOAD_REQ taken on ``req`` to its start word on ``txd``: requester
    #: 2 + steering 2 + the frame's second (last) beat 1 + CbfcTx 2 + LLR and MAC 2. A request
    #: of ``n`` beats (a store) takes ``n − 2`` more: CbfcTx sends a frame once wholly queued.
    TX_LATENCY = 9
    #: Cycles from a 64 B LOAD_REQ's start word on ``rxd`` to the target's AXI read request
    #: (``m_axi_arvalid``): the MAC and LLR take the frame whole (its FCS is checked before
    #: any of it is passed on), CbfcRx 2 (cut-through), the port merge 0, the target 3
    #: (:attr:`LsTarget.LOAD_ISSUE_LATENCY`).
    RX_LATENCY = 13

    def __init__(self, *, ports=2, tags=64, timeout_cycles=4096, windows=8, addr_width=32,
                 messages=16, mtu=1024, contexts=8, **port_params):
        self.ports = check_ports(ports)
        W = MAC_BEAT_OCTETS
        # The engines, each with the names its members take on the NIC.
        self._engines = (
            (LsRequester(W, tags, timeout_cycles), lambda name: name),
            (LsTarget(W, windows, addr_width), self._target_name),
            (RdmaRequester(W, messages, mtu, timeout_cycles, addr_width), self._rdma_name),
            (RdmaTarget(W, windows, addr_width, mtu, contexts, timeout_cycles),
             self._rdma_target_name),
        )
        self._ends = [CbfcEnd(vcs=NIC_VCS, resteer=True, **port_params) for _ in range(ports)]
        members = {}
        for engine, rename in self._engines:
            for name, member in engine.signature.members.items():
                if name not in _ENGINE_INTERNAL:
                    members[rename(name)] = member
        for p, end in enumerate(self._ends):
            for name, member in end.signature.members.items():
                if name not in _PORT_INTERNAL:
                    members[self._port_name(p, name)] = member
        members.update({
            "links_up": Out(ports),
            "reach_busy": Out(1),
            **{f"count_sen_{name}": Out(COUNTER_WIDTH) for name in ("down", "up", "stale")},
            "count_unroutable": Out(COUNTER_WIDTH), "count_bad_vc": Out(COUNTER_WIDTH),
            "count_purges": Out(COUNTER_WIDTH),
        })
        super().__init__(members)

    @staticmethod
    def _target_name(name):
        return f"target_{name}" if name.startswith("count_") else name

    @staticmethod
    def _rdma_name(name):
        if name == "local_id":
            return name
        if name.startswith("m_axi_"):
            return "m_axi_dma" + name[len("m_axi"):]
        return f"rdma_{name}"

    @staticmethod
    def _rdma_target_name(name):
        if name.startswith("m_axi_"):
            return "m_axi_rdma" + name[len("m_axi"):]
        return f"rdma_target_{name}" if name.startswith("count_") else f"rdma_{name}"

    @staticmethod
    def _port_name(p, name):
        return f"lcw_tx{p}" if name == "lcw_tx" else f"p{p}_{name}"

    def elaborate(self, platform):
        m = Module()
        for (engine, rename), name in zip(self._engines, ("requester", "target",
                                                         "rdma_requester", "rdma_target")):
            m.submodules[name] = engine
            for member_name, member in engine.signature.members.items():
                if member_name not in _ENGINE_INTERNAL:
                    forward_member(m, getattr(self, rename(member_name)),
                                   getattr(engine, member_name), member)
        req, tgt, rdma_req, rdma_tgt = (engine for engine, _ in self._engines)
        m.submodules.reach = reach = Reachability(self.ports)
        m.submodules.steer = steer = FrameSteer(self.ports)
        m.submodules.tx_merge = tx_merge = PacketArbiter(4, MAC_BEAT_OCTETS)
        rx_merge = []
        for v in range(NIC_VCS):
            m.submodules[f"rx_merge_vc{v}"] = merge = PacketArbiter(self.ports, MAC_BEAT_OCTETS)
            rx_merge.append(merge)

        # Transmit: responses and requests merged, then steered to a port.
        for k, engine in enumerate((tgt, rdma_tgt, req, rdma_req)):
            wiring.connect(m, engine.o, getattr(tx_merge, f"i{k}"))
        self._resteer(m, tx_merge.o, steer, reach)
        # Ref: spec §9 — a request no port reaches completes at once (UNREACHABLE); a
        # response so dropped leaves the remote request to time out.
        m.d.comb += steer.failed.ready.eq(1)
        for vc, engine in ((VirtualChannel.LS_REQ, req), (VirtualChannel.RDMA_REQ, rdma_req)):
            ours = steer.failed.payload.oefh.vc == vc
            m.d.comb += [engine.fail.payload.eq(steer.failed.payload),
                         engine.fail.valid.eq(steer.failed.valid & ours)]
            with m.If(ours):
                m.d.comb += steer.failed.ready.eq(engine.fail.ready)
        m.d.comb += [
            reach.i_valid.eq(steer.lookup_valid), reach.i_dst.eq(steer.lookup_dst),
            reach.i_entropy.eq(steer.lookup_entropy),
            steer.result_valid.eq(reach.o_valid), steer.result_port.eq(reach.o_port),
            steer.result_none.eq(reach.o_none),
            self.count_unroutable.eq(steer.count_unroutable),
            self.count_bad_vc.eq(steer.count_bad_vc),
            self.reach_busy.eq(reach.busy),
            reach.links_up.eq(self.links_up),
        ]
        for name in ("down", "up", "stale"):
            m.d.comb += getattr(self, f"count_sen_{name}").eq(getattr(reach, f"count_sen_{name}"))

        for p, end in enumerate(self._ends):
            m.submodules[f"port{p}"] = end
            for name, member in end.signature.members.items():
                if name not in _PORT_INTERNAL:
                    forward_member(m, getattr(self, self._port_name(p, name)),
                                   getattr(end, name), member)
            for v in range(NIC_VCS):
                wiring.connect(m, getattr(steer, f"o{p}_vc{v}"), getattr(end, f"i_vc{v}"))
                wiring.connect(m, getattr(end, f"o_vc{v}"), getattr(rx_merge[v], f"i{p}"))
            lcw = getattr(reach, f"lcw{p}")
            m.d.comb += [
                lcw.valid.eq(end.lcw_rx.valid), lcw.payload.eq(end.lcw_rx.payload),
                end.lcw_rx.ready.eq(1),
                self.links_up[p].eq((end.tx_state == TxState.ADVANCE)
                                    | (end.tx_state == TxState.REPLAY)),
            ]
        # Receive: each VC to its engine.
        for vc, engine in ((VirtualChannel.LS_REQ, tgt), (VirtualChannel.LS_RSP, req),
                           (VirtualChannel.RDMA_REQ, rdma_tgt),
                           (VirtualChannel.RDMA_RSP, rdma_req)):
            wiring.connect(m, rx_merge[vc].o, engine.i)
        return m

    def _resteer(self, m, new, steer, reach):
        """Feed ``steer`` with the engines' ``new`` frames, or with the frames a port gives back
        when its path dies (spec §10; the class docstring)."""
        ends = self._ends
        was_up = Signal(self.ports)
        m.d.sync += was_up.eq(self.links_up)
        # A SEN that takes a port away from an endpoint, or the port's link going down.
        died = Signal(self.ports)
        m.d.comb += died.eq(reach.took_down | (was_up & ~self.links_up))
        pending = Signal(self.ports)
        active = Signal()
        port = Signal(range(max(self.ports, 2)))
        start = Signal()
        pick = Signal.like(port)
        for p in reversed(range(self.ports)):
            with m.If(pending[p]):
                m.d.comb += pick.eq(p)
        # Between frames, with a port to purge: hold the engines' frames, purge it.
        m.d.comb += start.eq(~active & (pending != 0) & steer.idle)
        cleared = Signal(self.ports)
        with m.If(start):
            m.d.sync += [active.eq(1), port.eq(pick)]
            m.d.comb += cleared.eq(1 << pick)
        m.d.sync += pending.eq(pending & ~cleared | died)
        purges = SaturatingCounter("count_purges")
        purges.increment(m, start)
        m.d.comb += self.count_purges.eq(purges.value)

        # A frame looked up after a path died but before the purge started would overtake
        # the frames of its cache line waiting in the dead port's queue: it is looked up
        # again after the purge (its first beat never left).
        m.d.comb += steer.retry.eq((pending != 0) & ~active)
        with m.If(~active):
            hold = (pending != 0) & steer.idle
            m.d.comb += [steer.i.valid.eq(new.valid & ~hold), steer.i.payload.eq(new.payload),
                         new.ready.eq(steer.i.ready & ~hold)]
        for p, end in enumerate(ends):
            # No frame leaves a port from the cycle its path dies until it is purged — except
            # while another port's purge runs: that purge may be steering frames into this
            # port's queues, which must be able to drain (or the two would wait on each other).
            m.d.comb += [end.pause.eq(died[p] | pending[p] & ~active | active & (port == p)),
                         end.purge.eq(start & (pick == p))]
            with m.If(active & (port == p)):
                m.d.comb += [steer.i.valid.eq(end.divert.valid),
                             steer.i.payload.eq(end.divert.payload),
                             end.divert.ready.eq(steer.i.ready)]
                # Every frame the port gave back has been steered again.
                with m.If(~end.purging & steer.idle):
                    m.d.sync += active.eq(0)


class NicPair(wiring.Component):
    """Two :class:`Nic` s, A and B, port ``p`` of A joined to port ``p`` of B by two simulated
    lines (``ab{p}``: A→B, ``ba{p}``: B→A) as :func:`~ethlink.rtl.link.link_end.add_line`
    builds them: ``delay`` cycles each, RS(272,258) FEC on the ports whose bit is set in
    ``fec`` (``fec_bypass`` switches it off at run time).

    Members: each NIC's streams suffixed ``_a``/``_b``, its other ports prefixed ``a_``/``b_``;
    each line's controls and counters prefixed ``ab{p}_``/``ba{p}_`` (error rate, bursts, link
    up, seed), and ``ab{p}_tap_txd``/``_txc`` (the XGMII words the sender puts on the line)
    and ``_tap_rxd``/``_rxc`` (those the receiver takes off it), for latency measurement.
    Every other parameter is a :class:`Nic` parameter, the same for both.
    """
    def __init__(self, *, fec=0, delay=8, **nic_params):
        self.ports = check_ports(nic_params.get("ports", Nic.__init__.__kwdefaults__["ports"]))
        if not 0 <= fec < 1 << self.ports:
            raise ValueError(f"fec is a mask of the {self.ports} ports, not {fec}")
        self._nics = {name: Nic(**nic_params) for name in "ab"}
        self.fec = fec
        self.delay = delay
        self._internal = {f"p{p}_{name}" for p in range(self.ports)
                          for name in ("txd", "txc", "rxd", "rxc")}
        members = {"fec_bypass": In(1)} if fec else {}
        for end, nic in self._nics.items():
            for name, member in nic.signature.members.items():
                if name not in self._internal:
                    members[pair_name(end, name, member)] = member
        for p in range(self.ports):
            line = line_members(fec >> p & 1, delay)
            for direction in ("ab", "ba"):
                members.update({f"{direction}{p}_{name}": member
                                for name, member in line.items()})
                members.update({f"{direction}{p}_tap_{name}": Out(width) for name, width in
                                (("txd", 64), ("txc", 8), ("rxd", 64), ("rxc", 8))})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        for end, nic in self._nics.items():
            m.submodules[f"nic_{end}"] = nic
            for name, member in nic.signature.members.items():
                if name in self._internal:
                    continue
                forward_member(m, getattr(self, pair_name(end, name, member)),
                               getattr(nic, name), member)
        a, b = self._nics["a"], self._nics["b"]
        for p in range(self.ports):
            for direction, (tx, rx) in (("ab", (a, b)), ("ba", (b, a))):
                line = f"{direction}{p}"
                sender, receiver = _PortView(tx, p), _PortView(rx, p)
                add_line(m, self, line, sender, receiver, fec=self.fec >> p & 1,
                         delay=self.delay)
                for name, value in (("txd", sender.txd), ("txc", sender.txc),
                                    ("rxd", receiver.rxd), ("rxc", receiver.rxc)):
                    m.d.comb += getattr(self, f"{line}_tap_{name}").eq(value)
        return m


class _PortView:
    """Port ``p``'s XGMII members of a :class:`Nic` under the names :func:`add_line` uses."""
    def __init__(self, nic, p):
        for name in ("txd", "txc", "rxd", "rxc"):
            setattr(self, name, getattr(nic, f"p{p}_{name}"))
