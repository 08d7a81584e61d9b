"""The NIC: the Load/Store and RDMA requesters and targets over 1–4 lossless ports, with
multipath steering; and two NICs joined port to port by simulated lines.

Ref: spec §3 (VCs), §5–§8 (each port: MAC, LLR, CBFC), §9 (path selection over the ports that
are reachable and up), §10 (SEN received per port), §11.

::

    m_axi ◀─▶ LsTarget.o ──────────┬▶ PacketArbiter ▶ FrameSteer ─┬▶ port 0: CbfcEnd i[0,1]
    GPU req ─▶ LsRequester.o ──────┘   (port from Reachability i) └▶ port n-1 …   ─▶ txd0 …
    m_axi_rdma ◀─▶ RdmaTarget.o ───┬▶ PacketArbiter ▶ FrameSteer ─┬▶ port 0: CbfcEnd i[2,3]
    GPU rdma.cmd ─▶ RdmaRequester.o┘   (port from Reachability i1)└▶ port n-1 …
    m_axi ◀─── LsTarget.i ◀────── PacketArbiter ◀─ o[0] of every port   (L/S requests)
    GPU cpl ◀─ LsRequester.i ◀─── PacketArbiter ◀─ o[1] of every port   (L/S responses)
    m_axi_rdma ◀─ RdmaTarget.i ◀─ PacketArbiter ◀─ o[2] of every port   (RDMA requests)
    m_axi_dma ◀─ RdmaRequester.i ◀ PacketArbiter ◀─ o[3] of every port  (RDMA responses)
               SEN LCWs received on port p ─▶ Reachability.lcw[p]; LLR up ─▶ links_up
"""

from amaranth.hdl import Module, Signal, Cat, C, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..arbiter import PacketArbiter
from ..cbfc.cbfc_end import CbfcEnd
from ..compose import forward
from ..counters import COUNTER_WIDTH, CounterBank, Counters, merge_counters
from ..link.layouts import LcwStream, MAC_BEAT_OCTETS, xgmii_rx, xgmii_tx
from ..link import TxState
from ..params import parameters
from ..queue import SkidBuffer, TwoEntryFifo
from ..stream import PacketLayout, PacketStream, connect_packets
from ..wire import OEFH, HEADER_OCTETS, HeaderLayout, VirtualChannel, lanes_to_value
from .axi import ADDR_WIDTH
from .engine import CONTEXTS, MESSAGES, MTU, TAGS, TIMEOUT_CYCLES
from .ls_requester import LsRequester
from .ls_responder import LsTarget
from .rdma_requester import RdmaRequester
from .rdma_target import RdmaTarget
from .path_select import MAX_PORTS, PathAnswer, PathRequest
from .reachability import Reachability, PORTS
from .windows import WINDOWS

__all__ = ["FrameSteer", "Nic", "NIC_VCS"]

#: VCs a NIC port carries: L/S requests, L/S responses, RDMA requests, RDMA responses
#: (spec §3).
NIC_VCS = 4


class FrameSteer(wiring.Component):
    """Send each frame of ``i`` to the port the path lookup picks, on the frame's own VC.

    On a frame's first beat the block asks ``lookup`` for the port of its OEFH ``dst`` and
    ``entropy`` and holds the frame until the answer arrives on ``result`` (one lookup at a
    time; :class:`Reachability` answers :attr:`Reachability.LATENCY` cycles later); the frame
    then leaves whole on ``o[port][vc - first_vc]``, its first beat the cycle after the answer
    (the block serves VCs ``first_vc`` … ``first_vc + vcs - 1``), or, if the register stage
    below is full then, as soon as it has room (the answer is kept: it comes only once). Every beat leaves through a
    register stage of its port (a :class:`TwoEntryFifo` per port): ``o`` is driven by
    flip-flops and ``i.ready`` is one, so neither the ports' transmit logic nor their
    back-pressure reaches back through the block into the engines, and each port's logic
    starts from registers of its own that no other port's back-pressure moves (on the NIC
    these chains bounded its clock, docs/timing.md). Frames to one port leave in the order
    they came; a frame to one port may leave before the end of an earlier one to another
    port that waits. A frame no port reaches (``result.none``) is dropped and
    counted (``count.unroutable``); one of another VC likewise (``count.bad_vc``): both are
    consumed at one beat per cycle. The header of an unroutable
    frame (its first 16 octets as a :class:`HeaderLayout`: the OEFH and an L/S TH whole, or an
    RDMA TH's opcode, flags and msg, the rest zero) is then offered on ``failed`` — for the
    requester to fail the operation at once (spec §9) — and the next frame waits until it is
    taken (the NIC's requesters always take it); a frame of one beat has no TH and is not
    reported. ``idle`` is high between frames (no frame started, none being sent, no ``failed``
    offered). ``retry`` high in the answer's cycle discards the answer: the first beat stays
    held and the frame is looked up again once ``i`` is offered again (the paths changed
    meanwhile).

    **Lookups ahead** (``hints`` > 0). An engine that knows a frame's ``dst`` and ``entropy``
    before the frame's first beat (the L/S requester, as it takes a request) asks for its port
    on ``hint[k]``; the lookup is made when the block is not looking up a frame of its own
    (else the hint is dropped), and a good answer (a port, nothing changed meanwhile) is kept
    in source *k*'s entry until the next one replaces it. A first beat whose ``dst`` and
    ``entropy`` match an entry, or the answer arriving in that very cycle, is taken at once for
    that port (no lookup, no hold). ``changed`` (a SEN taken, a link's state changed) empties
    every entry and spoils the answers still on their way, so a frame never takes a port
    looked up before the paths changed; nor does it while ``retry`` is high. With hints the
    lookup must answer exactly ``lookup_latency`` cycles after it is asked (as
    :class:`Reachability` does); without them, any time later.

    Latency: a frame's first beat leaves 1 cycle (the register stage) plus as many as the
    lookup takes (2 with :class:`Reachability`) after it is offered, or 1 cycle after when a
    lookup ahead found its port; the rest follow at one beat per cycle, with the output's
    back-pressure. Throughput: one beat per cycle within a frame, plus the lookup's cycles
    between frames (none after a lookup ahead). ``idle`` also waits for the register stage
    to drain.
    """
    def __init__(self, ports, vcs=NIC_VCS, hints=0, lookup_latency=Reachability.LATENCY,
                 first_vc=0):
        self.ports = PORTS.validate("ports", ports)
        self.vcs = vcs
        self.first_vc = first_vc
        self.hints = hints
        self.lookup_latency = lookup_latency
        octets = MAC_BEAT_OCTETS
        super().__init__({
            "i": In(PacketStream(octets)),
            "o": Out(PacketStream(octets)).array(ports, vcs),
            "failed": Out(stream.Signature(HeaderLayout())),
            "lookup": Out(PathRequest(reachable=False)),
            "result": In(PathAnswer()),
            "count": Out(Counters(self.COUNTERS)),
            "idle": Out(1), "retry": In(1),
            **({"hint": In(PathRequest(reachable=False)).array(hints),
                "changed": In(1)} if hints else {}),
        })

    COUNTERS = ("unroutable", "bad_vc")

    def _ahead(self, m, oefh, asked):
        """Lookups ahead (see the class docstring): drives ``lookup.valid`` (the frame's own
        lookup when ``asked``, else a hint's, whose ``dst`` and ``entropy`` it then drives) and
        returns ``(own, hit, hit_port)``: the answer on ``result`` is the block's own; the
        first beat's port is known now, and which it is."""
        L, lookup, result = self.lookup_latency, self.lookup, self.result
        m.d.comb += lookup.valid.eq(asked)
        if not self.hints:
            # One lookup at a time: any answer is the block's own, however late it comes.
            return C(1, 1), C(0, 1), C(0, 2)
        # The lookup port is shared with the hints: answers are told apart by their time.
        own = [Signal(name=f"own{k}") for k in range(L + 1)]
        m.d.comb += own[0].eq(asked)
        for k in range(L):
            m.d.sync += own[k + 1].eq(own[k])
        n = self.hints
        changed = self.changed
        src = Signal(range(max(n, 2)))
        ask = Signal()
        for k in reversed(range(n)):
            with m.If(self.hint[k].valid):
                m.d.comb += [ask.eq(1), src.eq(k)]
        with m.If(~asked & ask):
            m.d.comb += lookup.valid.eq(1)
            for k in range(n):
                with m.If(src == k):
                    m.d.comb += [lookup.dst.eq(self.hint[k].dst),
                                 lookup.entropy.eq(self.hint[k].entropy)]
        # The answers on their way: whose, and whether the paths changed since they were asked.
        fields = ("hint", "src", "dst", "entropy", "stale")
        stage = [{"hint": Signal(name=f"ahead{k}"), "src": Signal.like(src, name=f"src{k}"),
                  "dst": Signal.like(lookup.dst, name=f"dst{k}"),
                  "entropy": Signal.like(lookup.entropy, name=f"entropy{k}"),
                  "stale": Signal(name=f"stale{k}")} for k in range(L + 1)]
        m.d.comb += [stage[0]["hint"].eq(~asked & ask), stage[0]["src"].eq(src),
                     stage[0]["dst"].eq(lookup.dst), stage[0]["entropy"].eq(lookup.entropy),
                     stage[0]["stale"].eq(changed)]
        for k in range(L):
            m.d.sync += [stage[k + 1][f].eq(stage[k][f]) for f in fields[:-1]]
            m.d.sync += stage[k + 1]["stale"].eq(stage[k]["stale"] | changed)
        last = stage[L]
        good = Signal()
        m.d.comb += good.eq(result.valid & last["hint"] & ~last["stale"] & ~changed
                            & ~result.none)
        hit_port = Signal(range(MAX_PORTS))
        hit = Signal()
        for k in range(n):
            valid = Signal(name=f"ahead_valid{k}")
            dst = Signal.like(lookup.dst, name=f"ahead_dst{k}")
            entropy = Signal.like(lookup.entropy, name=f"ahead_entropy{k}")
            port = Signal(range(MAX_PORTS), name=f"ahead_port{k}")
            with m.If(changed):
                m.d.sync += valid.eq(0)
            with m.Elif(good & (last["src"] == k)):
                m.d.sync += [valid.eq(1), dst.eq(last["dst"]), entropy.eq(last["entropy"]),
                             port.eq(result.port)]
            with m.If(valid & (dst == oefh.dst) & (entropy == oefh.entropy)):
                m.d.comb += [hit.eq(1), hit_port.eq(port)]
        # The answer arriving now, before it is kept.
        with m.If(good & (last["dst"] == oefh.dst) & (last["entropy"] == oefh.entropy)):
            m.d.comb += [hit.eq(1), hit_port.eq(result.port)]
        return own[L], hit & ~changed & ~self.retry & self._ours(oefh.vc), hit_port

    def _ours(self, vc):
        """``vc`` has an output here (``first_vc`` ≤ ``vc`` < ``first_vc + vcs``)."""
        above = vc >= self.first_vc if self.first_vc else C(1, 1)
        return above & (vc < self.first_vc + self.vcs)

    def elaborate(self, platform):
        m = Module()
        beat = self.i.payload
        oefh = OEFH.layout(lanes_to_value(beat.data[:8 * OEFH.octets], OEFH.octets))
        port = Signal(range(MAX_PORTS))
        vc = Signal(3)
        lookup, result = self.lookup, self.result
        m.d.comb += [lookup.dst.eq(oefh.dst), lookup.entropy.eq(oefh.entropy)]
        counters = CounterBank(m, self.count)
        unroutable, bad_vc = counters.unroutable, counters.bad_vc
        # A dropped frame's first beats, for ``failed``.
        first, second, unroutable_frame = Signal(), Signal(), Signal()
        head = Signal(8 * MAC_BEAT_OCTETS)
        # The steered beats pass through a register stage per port (a queue of two whose head
        # and ``ready`` are flip-flops): each port's transmit logic starts from registers of
        # its own, placed beside it, and its back-pressure stops there, not in the engines nor
        # in the other ports' stages (nic.md §8, timing).
        out_q = []
        for p in range(self.ports):
            m.submodules[f"out_q{p}"] = queue = TwoEntryFifo(data.StructLayout({
                "beat": PacketLayout(MAC_BEAT_OCTETS), "vc": 3}))
            out_q.append(queue)
            steered = queue.r_stream
            for v in range(self.vcs):
                out = self.o[p][v]
                with m.If(steered.payload.vc == self.first_vc + v):
                    m.d.comb += [out.valid.eq(steered.valid),
                                 out.payload.eq(steered.payload.beat),
                                 steered.ready.eq(out.ready)]

        def forward(to_port, to_vc=vc):
            for p, queue in enumerate(out_q):
                m.d.comb += [queue.w_stream.payload.beat.eq(beat),
                             queue.w_stream.payload.vc.eq(to_vc)]
                with m.If(to_port == p):
                    m.d.comb += [queue.w_stream.valid.eq(self.i.valid),
                                 self.i.ready.eq(queue.w_stream.ready)]

        asked = Signal()
        own, hit, hit_port = self._ahead(m, oefh, asked)
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.idle.eq(Cat(q.level == 0 for q in out_q).all())
                with m.If(self.i.valid & hit):
                    # Its port was looked up ahead: the first beat is taken now.
                    forward(hit_port, oefh.vc)
                    with m.If(self.i.ready):
                        m.d.sync += [port.eq(hit_port), vc.eq(oefh.vc)]
                        with m.If(~beat.last):
                            m.next = "SEND"
                # A frame starts: ask for its port, hold its first beat until the answer.
                with m.Elif(self.i.valid):
                    m.d.comb += asked.eq(1)
                    m.d.sync += vc.eq(oefh.vc)
                    m.next = "LOOKUP"
            with m.State("LOOKUP"):
                with m.If(result.valid & own):
                    m.d.sync += port.eq(result.port)
                    with m.If(self.retry):
                        m.next = "IDLE"
                    with m.Elif(result.none | ~self._ours(vc)):
                        unroutable.increment(m, result.none)
                        bad_vc.increment(m, ~result.none)
                        m.d.sync += [first.eq(1), second.eq(0),
                                     unroutable_frame.eq(result.none)]
                        m.next = "DROP"
                    with m.Else():
                        # The first beat is taken in the answer's cycle if the register stage
                        # has room; else it waits in HELD, the answer kept (it never comes
                        # again).
                        forward(result.port)
                        with m.If(self.i.valid & self.i.ready):
                            m.next = "SEND"
                            with m.If(beat.last):
                                m.next = "IDLE"
                        with m.Else():
                            m.next = "HELD"
            with m.State("HELD"):
                # Its port is known, its first beat not yet taken: taken as soon as the register
                # stage has room, unless the paths changed meanwhile (``retry``, a port died):
                # then it is looked up again, as in LOOKUP.
                with m.If(self.retry):
                    m.next = "IDLE"
                with m.Else():
                    forward(port)
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


#: Ports of a NIC's CBFC end that the NIC wires itself are its frame streams, ``lcw_rx`` and
#: ``resteer``; what it shows of each port is this.
def NicPortSignature(end, line=True):
    """What a NIC shows of one port (its :class:`CbfcEnd` ``end``): the XGMII towards the line
    (``line``), the LCWs to send after the link's and the credits' own (a test's SENs), and the
    end's management members (link controls and states, credits, counters)."""
    return wiring.Signature({**({**xgmii_tx(), **xgmii_rx()} if line else {}),
                             "lcw_tx": In(LcwStream()), **end.management_members})


@parameters(forward=CbfcEnd, exclude=("vcs", "rx_pass_vcs", "urgent_vcs", "bypass", "resteer"),
            ports=PORTS, tags=TAGS, timeout_cycles=TIMEOUT_CYCLES, windows=WINDOWS,
            addr_width=ADDR_WIDTH, messages=MESSAGES, mtu=MTU, contexts=CONTEXTS)
class Nic(wiring.Component):
    """An EthLink NIC: :class:`LsRequester` and :class:`RdmaRequester` for the local GPU's
    cache-line requests and DMA commands, :class:`LsTarget` and :class:`RdmaTarget` for remote
    requests against local memory (AXI4 managers), and ``ports`` lossless link stacks
    (:class:`CbfcEnd`: MAC + LLR + CBFC; VC 0 L/S requests, 1 L/S responses, 2 RDMA requests,
    3 RDMA responses).

    **Transmit.** Two paths, so that L/S never waits behind RDMA before its port: the L/S
    target's and requester's frames are merged a frame at a time (round robin) and a
    :class:`FrameSteer` sends each to the port that :class:`Reachability` picks for its
    ``dst`` and ``entropy`` among the ports that reach ``dst`` and whose link is up (spec §9);
    the RDMA target's and requester's likewise, on a steer and a lookup port of their own.
    At each port the transmit arbiter serves the L/S VCs first (:attr:`URGENT_VCS`), so an
    L/S frame waits at most for the frame on the line. A frame no port reaches is dropped
    and counted (``count.unroutable``, both paths); its header goes back to its requester
    (``FrameSteer.failed``), and the L/S request or the RDMA message it belongs to completes
    with UNREACHABLE; a response so lost leaves the remote request to time out.

    **Re-steering** (spec §10). When a port's path dies — a SEN taken on it saying an
    endpoint is unreachable there, or its link going down — the port grants no new frame from
    that cycle, and once both paths are between frames the engines are held while the frames
    wholly queued in the port's CBFC queues come back through a two-entry register queue and
    the L/S path's :class:`FrameSteer` (in their order, VC by VC) and are steered again
    (``count.purges``; docs/nic.md §8).

    **Receive.** Each VC's frames from all ports are merged a frame at a time: VC 0 to the L/S
    target, VC 1 to the L/S requester, VC 2 to the RDMA target, VC 3 to the RDMA requester.
    SEN LCWs received on port ``p`` update reachable[·][p] (spec §10). A port's link is up
    while its LLR transmitter is in ADVANCE or REPLAY (``links_up``).

    Members
    -------
    local_id, req, req_data, cpl, cpl_data, outstanding
        :class:`LsRequester`'s ``gpu_members`` (``local_id`` is the RDMA requester's too).
    count : Out(Counters)
        The L/S requester's counters, :class:`Reachability`'s (``sen_down``, ``sen_up``,
        ``sen_stale``), :class:`FrameSteer`'s (``unroutable``, ``bad_vc``) and ``purges``
        (ports purged, their queued frames steered again, after their path died).
    m_axi, csr, target_count
        :class:`LsTarget`'s AXI4 port, register bus and counters.
    rdma : Out(...)
        The RDMA engines as the GPU sees them: :class:`RdmaRequester`'s ``cmd``, ``cpl``,
        ``outstanding`` and ``count``; :class:`RdmaTarget`'s register bus ``csr`` (its own
        windows) and counters ``target_count``.
    m_axi_dma, m_axi_rdma
        The AXI4 ports of :class:`RdmaRequester` (its local memory) and :class:`RdmaTarget`.
    p : Out(NicPortSignature).array(ports)
        Each port: XGMII ``txd``/``txc``/``rxd``/``rxc``, ``lcw_tx``, and its
        :class:`CbfcEnd`'s ``enable``, ``replay_timeout``, ``rx_credits``, states, credits and
        counters.
    links_up : Out(ports)
    reach_busy : Out(1)
        :class:`Reachability`'s ``busy``.

    Latency (cycles, asserted by the tests): a request's first frame beat reaches its port's
    CbfcEnd ``LsRequester.TX_LATENCY`` + 1 cycles after ``req`` is taken (its port was looked
    up meanwhile, :class:`FrameSteer`'s lookup ahead; the 1 is the steer's output register;
    a frame without a lookup ahead waits :attr:`STEER_LATENCY` more); the XGMII side adds the
    LLR and MAC, and CbfcTx its bypass decision (1 cycle when the frame bypasses its empty
    queue):
    :attr:`TX_LATENCY` in all, to the start word on ``txd``. A response's last beat on ``rxd``
    reaches the requester after the MAC, LLR, CbfcRx and the port merge.
    """
    #: Cycles of :class:`FrameSteer` with :class:`Reachability` (lookup) for a frame whose
    #: port was not looked up ahead.
    STEER_LATENCY = Reachability.LATENCY
    #: Cycles from a 64 B LOAD_REQ taken on ``req`` to its start word on ``txd``: requester 2
    #: (its port looked up meanwhile) + steering 1 (the output register that keeps the
    #: engines' logic apart from the ports') + CbfcTx 1 (the frame bypasses its empty queue,
    #: its cost from the TH; its first beat waits the cycle of the decision) + LLR and MAC
    #: 2. A store is as fast: its first beat leaves as it comes (the MAC fills a late beat
    #: with an LCW).
    TX_LATENCY = 6
    #: Cycles from a 64 B LOAD_REQ's start word on ``rxd`` to the target's AXI read request
    #: (``m_axi_arvalid``): the frame off the line through the MAC (its last body beat 2
    #: cycles after the ``/T/`` word, with the verdict) and the LLR (cut-through), CbfcRx 1
    #: (VC 0's buffer passes each beat on as it arrives, :attr:`RX_PASS_VCS`), the port merge
    #: 0, the target 3 from the beat that completes the TH (:attr:`LsTarget.LOAD_ISSUE_LATENCY`;
    #: it acts on the verdict on that same beat, so no read is made for a bad frame).
    RX_LATENCY = 10
    #: The VCs whose receive buffers pass a frame on as it arrives (:class:`CbfcRx`
    #: ``pass_vcs``): L/S requests and responses, whose engines drop a frame that ends bad
    #: (the L/S target before it touches memory). RDMA's buffers hold a frame until it is
    #: judged.
    RX_PASS_VCS = (1 << VirtualChannel.LS_REQ) | (1 << VirtualChannel.LS_RSP)
    #: The VCs each port's transmit arbiter serves before the others (:class:`CbfcTx`
    #: ``urgent_vcs``; at least one RDMA frame in ``urgent_burst + 1`` under saturating L/S):
    #: L/S requests and responses.
    URGENT_VCS = (1 << VirtualChannel.LS_REQ) | (1 << VirtualChannel.LS_RSP)
    #: How each port's :class:`CbfcEnd` is built (beside the NIC's parameters): also the
    #: ``cbfc_end`` build of ``ethlink bench timing`` that times a NIC port alone.
    PORT_PARAMS = {"vcs": NIC_VCS, "resteer": 1, "bypass": 1, "rx_pass_vcs": RX_PASS_VCS,
                   "urgent_vcs": URGENT_VCS}
    #: The NIC's own counters (beside its engines').
    COUNTERS = ("purges",)

    def __init__(self, *, ports=2, tags=64, timeout_cycles=4096, windows=8, addr_width=32,
                 messages=16, mtu=1024, contexts=8, **port_params):
        self.ports = ports
        W = MAC_BEAT_OCTETS
        self._requester = LsRequester(W, tags, timeout_cycles)
        self._target = LsTarget(W, windows, addr_width)
        self._rdma_requester = RdmaRequester(W, messages, mtu, timeout_cycles, addr_width)
        self._rdma_target = RdmaTarget(W, windows, addr_width, mtu, contexts, timeout_cycles)
        self._ends = [CbfcEnd(**self.PORT_PARAMS, **port_params) for _ in range(ports)]
        target = self._target.signature.members
        rdma_req = self._rdma_requester.signature.members
        rdma_tgt = self._rdma_target.signature.members
        gpu = dict(self._requester.gpu_members)
        rdma = {name: member for name, member in self._rdma_requester.gpu_members.items()
                if name != "local_id"}
        #: What the NIC shows besides its ports' lines: the GPU side, the memories, the
        #: registers, the counters.
        self.client_members = {
            **gpu,
            "count": Out(merge_counters(Counters(LsRequester.COUNTERS + self.COUNTERS),
                                        Counters(FrameSteer.COUNTERS),
                                        Counters(Reachability.COUNTERS))),
            "m_axi": target["m_axi"], "csr": target["csr"], "target_count": target["count"],
            "rdma": Out(wiring.Signature({
                **rdma, "count": rdma_req["count"],
                "csr": rdma_tgt["csr"], "target_count": rdma_tgt["count"]})),
            "m_axi_dma": rdma_req["m_axi"], "m_axi_rdma": rdma_tgt["m_axi"],
            "links_up": Out(ports),
            "reach_busy": Out(1),
        }
        super().__init__({
            **self.client_members,
            "p": Out(NicPortSignature(self._ends[0])).array(ports),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.requester = req = self._requester
        m.submodules.target = tgt = self._target
        m.submodules.rdma_requester = rdma_req = self._rdma_requester
        m.submodules.rdma_target = rdma_tgt = self._rdma_target
        m.submodules.reach = reach = Reachability(self.ports, lookups=2)
        # Two transmit paths, so that an L/S frame never waits behind an RDMA packet before
        # its port: L/S (and the frames a purge steers again), and RDMA.
        m.submodules.steer = steer = FrameSteer(self.ports, hints=2)
        m.submodules.rdma_steer = rdma_steer = FrameSteer(
            self.ports, vcs=NIC_VCS - VirtualChannel.RDMA_REQ, first_vc=VirtualChannel.RDMA_REQ)
        m.submodules.tx_merge = tx_merge = PacketArbiter(2, MAC_BEAT_OCTETS)
        m.submodules.rdma_tx_merge = rdma_tx_merge = PacketArbiter(2, MAC_BEAT_OCTETS)
        rx_merge = []
        for v in range(NIC_VCS):
            m.submodules[f"rx_merge_vc{v}"] = merge = PacketArbiter(
                self.ports, MAC_BEAT_OCTETS, verdict=bool(self.RX_PASS_VCS >> v & 1))
            rx_merge.append(merge)

        # The GPU side, the memories, the registers.
        forward(m, self, req, req.gpu_members)
        forward(m, self.rdma, rdma_req, {name: member for name, member
                                         in rdma_req.gpu_members.items() if name != "local_id"})
        m.d.comb += rdma_req.local_id.eq(self.local_id)
        wiring.connect(m, wiring.flipped(self.m_axi), tgt.m_axi)
        wiring.connect(m, wiring.flipped(self.csr), tgt.csr)
        wiring.connect(m, wiring.flipped(self.m_axi_dma), rdma_req.m_axi)
        wiring.connect(m, wiring.flipped(self.m_axi_rdma), rdma_tgt.m_axi)
        wiring.connect(m, wiring.flipped(self.rdma.csr), rdma_tgt.csr)
        wiring.connect(m, tgt.count, wiring.flipped(self.target_count))
        wiring.connect(m, rdma_req.count, wiring.flipped(self.rdma.count))
        wiring.connect(m, rdma_tgt.count, wiring.flipped(self.rdma.target_count))
        for unit in (req, reach):
            forward(m, self.count, unit.count)
        for name in FrameSteer.COUNTERS:
            # Both paths' drops in one count, saturating like each of them.
            total = Signal(COUNTER_WIDTH + 1, name=f"{name}_total")
            m.d.comb += [total.eq(getattr(steer.count, name) + getattr(rdma_steer.count, name)),
                         getattr(self.count, name).eq(Mux(total[-1], (1 << COUNTER_WIDTH) - 1,
                                                          total[:-1]))]
        purges = CounterBank(m, self.count, skip=[name for name in self.count.signature.members
                                                  if name not in self.COUNTERS]).purges

        # Transmit: each path's responses and requests merged, then steered to a port.
        for k, engine in enumerate((tgt, req)):
            wiring.connect(m, engine.o, tx_merge.i[k])
        for k, engine in enumerate((rdma_tgt, rdma_req)):
            wiring.connect(m, engine.o, rdma_tx_merge.i[k])
        # Each merge's output passes a skid stage: a steer's ``ready`` depends on the frame it
        # is offered (its port looked up ahead or not, and in a purge the frame a port gives
        # back), and without the stage it ran on through the merge into the engines' output
        # logic (NIC timing, docs/timing.md). The stage adds no cycle.
        merged = []
        for name, merge in (("tx_skid", tx_merge), ("rdma_tx_skid", rdma_tx_merge)):
            m.submodules[name] = skid = SkidBuffer(merge.o.payload.shape())
            wiring.connect(m, merge.o, skid.i)
            merged.append(skid.o)
        purging = self._resteer(m, merged, (steer, rdma_steer), reach, purges)
        # Ref: spec §9 — a request no port reaches completes at once (UNREACHABLE); a
        # response so dropped leaves the remote request to time out. (The L/S path steers
        # RDMA frames only in a purge, while the RDMA path is held between frames: the two
        # never offer a failed header at once.)
        for path in (steer, rdma_steer):
            m.d.comb += path.failed.ready.eq(1)
            for vc, engine in ((VirtualChannel.LS_REQ, req),
                               (VirtualChannel.RDMA_REQ, rdma_req)):
                with m.If(path.failed.valid & (path.failed.payload.oefh.vc == vc)):
                    m.d.comb += [engine.fail.valid.eq(1),
                                 engine.fail.payload.eq(path.failed.payload),
                                 path.failed.ready.eq(engine.fail.ready)]
        wiring.connect(m, steer.lookup, reach.i)
        wiring.connect(m, reach.o, steer.result)
        wiring.connect(m, rdma_steer.lookup, reach.i1)
        wiring.connect(m, reach.o1, rdma_steer.result)
        # The lookups ahead of the requester and of the L/S target (a response's port is asked
        # for as its request is taken); any change of the paths spoils what was looked up.
        wiring.connect(m, req.hint, steer.hint[0])
        wiring.connect(m, tgt.hint, steer.hint[1])
        links_before = Signal(self.ports)
        m.d.sync += links_before.eq(self.links_up)
        m.d.comb += steer.changed.eq(reach.changed | (links_before != self.links_up))
        m.d.comb += [self.reach_busy.eq(reach.busy), reach.links_up.eq(self.links_up)]

        port_members = NicPortSignature(self._ends[0], line=True).members
        for p, end in enumerate(self._ends):
            m.submodules[f"port{p}"] = end
            forward(m, self.p[p], end, {name: member for name, member in port_members.items()
                                        if name != "lcw_tx"})
            wiring.connect(m, wiring.flipped(self.p[p].lcw_tx), end.lcw_tx)
            for v in range(NIC_VCS):
                if v < VirtualChannel.RDMA_REQ:
                    wiring.connect(m, steer.o[p][v], end.i[v])
                else:
                    with m.If(purging):
                        connect_packets(m, steer.o[p][v], end.i[v])
                    with m.Else():
                        connect_packets(m, rdma_steer.o[p][v - VirtualChannel.RDMA_REQ],
                                        end.i[v])
                if self.RX_PASS_VCS >> v & 1:
                    wiring.connect(m, end.o[v], rx_merge[v].i[p])
                else:
                    connect_packets(m, end.o[v], rx_merge[v].i[p])   # judged: no verdict
            # Ref: spec §10 — a SEN is taken on the port it arrived on. The table is not
            # ready for one during its sweep after reset (``busy``): such a SEN is not kept.
            # The LCWs are registered on their way: the SEN decode starts from a flip-flop,
            # not from port p's MAC (a SEN is judged a cycle later, as over a line a cycle
            # longer; ``reach`` writes its judgement a cycle after that, see Reachability).
            m.d.sync += [reach.lcw[p].valid.eq(end.lcw_rx.valid),
                         reach.lcw[p].payload.eq(end.lcw_rx.payload)]
            m.d.comb += self.links_up[p].eq((end.tx_state == TxState.ADVANCE)
                                            | (end.tx_state == TxState.REPLAY))
        # Receive: each VC to its engine.
        for vc, engine in ((VirtualChannel.LS_REQ, tgt), (VirtualChannel.LS_RSP, req),
                           (VirtualChannel.RDMA_REQ, rdma_tgt),
                           (VirtualChannel.RDMA_RSP, rdma_req)):
            wiring.connect(m, rx_merge[vc].o, engine.i)
        return m

    def _resteer(self, m, new, paths, reach, purges):
        """Feed each transmit path (``paths``: the L/S and the RDMA :class:`FrameSteer`) with
        its engines' ``new`` frames, or the L/S path with the frames a port gives back when its
        path dies, while the RDMA path is held (spec §10; the class docstring). Returns the
        signal high during such a purge."""
        steer = paths[0]
        idle = Cat(*(path.idle for path in paths)).all()
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
        # Both paths between frames, with a port to purge: hold the engines' frames, purge it.
        m.d.comb += start.eq(~active & (pending != 0) & idle)
        cleared = Signal(self.ports)
        with m.If(start):
            m.d.sync += [active.eq(1), port.eq(pick)]
            m.d.comb += cleared.eq(1 << pick)
        m.d.sync += pending.eq(pending & ~cleared | died)
        purges.increment(m, start)

        # A frame looked up after a path died but before the purge started would overtake
        # the frames of its cache line waiting in the dead port's queue: it is looked up
        # again after the purge (its first beat never left).
        for path, frames in zip(paths, new):
            m.d.comb += path.retry.eq((pending != 0) & ~active)
            with m.If(~active):
                hold = (pending != 0) & path.idle
                m.d.comb += [path.i.valid.eq(frames.valid & ~hold),
                             path.i.payload.eq(frames.payload),
                             frames.ready.eq(path.i.ready & ~hold)]
        # The frames the purged port gives back reach the steer through a register stage: from
        # a queue's block RAM straight into the steer's lookup and on into a port's queue was
        # the NIC's critical path (docs/timing.md). The queue fills while the steer looks a
        # frame up, so a purge takes no cycle more per frame, and no other frame passes it.
        m.submodules.divert = divert = TwoEntryFifo(steer.i.payload.shape())
        purging = Signal()
        for p, end in enumerate(ends):
            # No frame leaves a port from the cycle its path dies until it is purged — except
            # while another port's purge runs: that purge may be steering frames into this
            # port's queues, which must be able to drain (or the two would wait on each other).
            m.d.comb += [end.resteer.pause.eq(died[p] | pending[p] & ~active | active & (port == p)),
                         end.resteer.purge.eq(start & (pick == p))]
            with m.If(active & (port == p)):
                m.d.comb += [divert.w_stream.valid.eq(end.resteer.divert.valid),
                             divert.w_stream.payload.eq(end.resteer.divert.payload),
                             end.resteer.divert.ready.eq(divert.w_stream.ready),
                             purging.eq(end.resteer.purging)]
        with m.If(active):
            m.d.comb += [steer.i.valid.eq(divert.r_stream.valid),
                         steer.i.payload.eq(divert.r_stream.payload),
                         divert.r_stream.ready.eq(steer.i.ready)]
            # Every frame the port gave back has been steered again.
            with m.If(~purging & (divert.level == 0) & steer.idle):
                m.d.sync += active.eq(0)
        return active
