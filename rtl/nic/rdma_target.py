"""The NIC's RDMA target: remote WRITE packets placed in local memory and acknowledged once per
message, remote READ_REQs answered with READ_RSP packets read from local memory, all checked
against the memory windows.

Ref: spec §3 (VC 2 in, VC 3 out, the MTU), §4.2 (RDMA TH, one ACK per WRITE message once its
octets add up, READ_RSP offsets), §9 (READ_RSP entropy ``msg ^ packet_index``), §11 (windows,
ACCESS_DENIED writes nothing, malformed frames dropped and counted).
"""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..compose import forward, members_of
from ..counters import Counters
from ..forwarding.deparser import OefhDeparser
from ..forwarding.parser import OefhParser
from ..params import parameters
from ..regbus import RegisterBus
from ..stream import PacketStream, BEAT_OCTETS, keep_count
from ..wire import HeaderLayout, Opcode, Status
from . import csr
from .axi import Axi4Signature, ADDR_WIDTH
from .dma import AxiReader, AxiWriter, PacketSender, MAX_PACKET_OCTETS, LENGTH_BITS
from .engine import CONTEXTS, MTU, TIMEOUT_CYCLES
from .rdma_target_parts import (RdmaTargetCheck, RdmaWriteContexts, RdmaResponseFramer,
                                RdmaTargetRegisters)
from .windows import WINDOWS

__all__ = ["RdmaTarget"]


@parameters(beat_octets=BEAT_OCTETS, windows=WINDOWS, addr_width=ADDR_WIDTH, mtu=MTU,
            contexts=CONTEXTS, timeout_cycles=TIMEOUT_CYCLES)
class RdmaTarget(wiring.Component):
    """Execute remote RDMA requests (frames on ``i``, FCS removed) against memory; answer on
    ``o``.

    Every packet's range ``[addr, addr + length)`` is checked: ADDRESS_ERROR if ``addr`` is not
    a multiple of ``beat_octets`` or the range runs past the AXI address space, else
    ACCESS_DENIED unless one window holds all of its lines with the permission (write for
    WRITE, read for READ_REQ), else OK.

    * **WRITE**: 1 to ``mtu`` octets ending inside a 16 MiB message, else *malformed* (dropped,
      counted, not counted towards its message). The packet belongs to the message
      (src, msg): a *context* holds the octets placed so far, the total (from the packet
      flagged ``last``: offset + length) and the first non-OK status. A packet of a message
      with no context takes a free one; with none free it is dropped and counted
      (``no_context``; its message times out at the requester). An OK packet is written with
      INCR bursts as it arrives; a refused one writes nothing. When the octets placed reach
      the total, one ACK (status: the context's, ADDRESS_ERROR if more octets than the total
      were placed or a write failed) goes out and the context is freed. A context with no
      packet for ``timeout_cycles`` is freed (``stale``). A WRITE whose payload is not
      ``length`` octets is malformed; its octets inside its granted range may have been
      written.
    * **READ_REQ**: no payload and a length above 0, else malformed. OK: READ_RSP packets of
      ``mtu`` octets (the last shorter) read from ``addr + offset``; refused: one READ_RSP
      with the status and no payload.

    Responses go to the request's src, from its dst, on VC 3; ACK and a refused READ_RSP
    carry entropy ``msg``, the READ_RSP packets ``(msg ^ k)[15:0]`` (spec §9). An ACK's
    ``length`` is the message's length, its ``addr`` and ``offset`` 0. Other opcodes are
    ``unexpected``: dropped and counted.

    It is made of one part per job (:mod:`.rdma_target_parts`): the
    :class:`~.rdma_target_parts.RdmaTargetCheck` (range, alignment, windows, malformed
    WRITEs), the :class:`~.rdma_target_parts.RdmaWriteContexts` (WRITE messages in progress,
    stale ones), the :class:`~.rdma_target_parts.RdmaResponseFramer` (ACK and READ_RSP
    headers) and the :class:`~.rdma_target_parts.RdmaTargetRegisters` (register file,
    counters). Its own ``elaborate`` is the sequencing: one FSM taking a request through check,
    placement or read and response. It stays in one piece (about 140 lines) because every
    state drives the same parser, writer, sender and request registers; cut apart, each piece
    would take all of them as members.

    Members
    -------
    i : In(PacketStream(beat_octets)); o : Out(PacketStream(beat_octets))
    m_axi_* : the AXI4 manager port to local memory.
    m_axi : Out(Axi4Signature(addr_width, beat_octets))
    csr : In(RegisterBus(8))
        The register bus (:mod:`.csr`: ID, PARAMS, the counters, the windows).
    count : Out(Counters)
        Saturating counters, :attr:`COUNTERS`; ``count.rx`` are the frame parser's.

    Latency (memory answering at once): a WRITE's AW is valid :attr:`WRITE_ISSUE_LATENCY`
    cycles after the frame beat that completes its TH, a READ_REQ's AR
    :attr:`READ_ISSUE_LATENCY` cycles after its last beat (at 8 octets per beat the TH ends
    in the last beat of a READ_REQ).

    Throughput: one request at a time; a READ_RSP or WRITE packet moves one beat per cycle.
    """
    COUNTERS = RdmaTargetRegisters.COUNTERS
    #: Parser 1, header taken 1, window check and context lookup 1, the writer's command 1.
    WRITE_ISSUE_LATENCY = 4
    #: Parser 1, header taken 1, window check 1, the (empty) payload beat checked 1, the
    #: reader's command 1.
    READ_ISSUE_LATENCY = 5

    def __init__(self, beat_octets=8, windows=8, addr_width=32, mtu=1024, contexts=8,
                 timeout_cycles=4096):
        self.beat_octets = beat_octets
        self.windows = windows
        self.addr_width = addr_width
        self.mtu = mtu
        self.contexts = contexts
        self.timeout_cycles = timeout_cycles
        super().__init__({
            "i": In(PacketStream(beat_octets)),
            "o": Out(PacketStream(beat_octets)),
            "m_axi": Out(Axi4Signature(addr_width, beat_octets)),
            "csr": In(RegisterBus(csr.ADDR_BITS)),
            "count": Out(Counters(self.COUNTERS, groups={"rx": Counters(OefhParser.COUNTERS)})),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets

        m.submodules.parser = parser = OefhParser(W)
        m.submodules.deparser = deparser = OefhDeparser(W)
        m.submodules.reader = reader = AxiReader(W, self.addr_width)
        m.submodules.writer = writer = AxiWriter(W, self.addr_width)
        m.submodules.check = check = RdmaTargetCheck(W, self.addr_width, self.mtu)
        m.submodules.contexts = contexts = RdmaWriteContexts(self.contexts,
                                                             self.timeout_cycles)
        m.submodules.framer = framer = RdmaResponseFramer(self.addr_width)
        m.submodules.registers = registers = RdmaTargetRegisters(W, self.windows,
                                                                 self.addr_width, self.contexts)
        wiring.connect(m, wiring.flipped(self.i), parser.i)
        wiring.connect(m, deparser.o, wiring.flipped(self.o))
        wiring.connect(m, parser.count, wiring.flipped(self.count.rx))
        forward(m, self.m_axi, reader.m_axi)
        forward(m, self.m_axi, writer.m_axi)
        forward(m, self, registers, members_of(registers.signature, "csr"))
        forward(m, self.count, registers.count)
        wiring.connect(m, check.window, registers.window)

        # The request being served, its checked status, the response's parts.
        req = Signal(HeaderLayout())
        r = req.th.rdma
        status = Signal(Status)
        acking, serving = Signal(), Signal()     # in ACK, in SERVE
        sender = PacketSender(m, self.mtu, deparser, reader)
        ack_status = Signal(Status)
        ack_length = Signal(LENGTH_BITS)
        claim, account, sweep = contexts.claim, contexts.account, contexts.sweep
        ev = registers.events
        m.d.comb += [
            check.header.eq(parser.header.payload),
            claim.key.src.eq(req.oefh.src), claim.key.msg.eq(r.msg),
            account.length.eq(r.length), account.last.eq(r.last),
            account.total.eq(check.total),
            framer.request.eq(req), framer.ack.eq(acking), framer.serving.eq(serving),
            framer.status.eq(status), framer.ack_status.eq(ack_status),
            framer.ack_length.eq(ack_length),
            framer.position.offset.eq(sender.offset), framer.position.index.eq(sender.index),
            framer.position.octets.eq(sender.octets), framer.position.last.eq(sender.last),
            deparser.header.payload.eq(framer.header),
            reader.cmd.payload.eq(framer.read),
            writer.cmd.payload.addr.eq(r.addr), writer.cmd.payload.octets.eq(r.length),
            writer.cmd.payload.write.eq(status == Status.OK),
            ev.status.eq(status), ev.stale.eq(sweep.count),
            ev.axi_error.eq(reader.error | (writer.done.valid & writer.done.ready &
                                            ~writer.done.payload.ok)),
        ]
        seen = Signal(range(MAX_PACKET_OCTETS + W + 1))     # payload octets of a READ_REQ
        exact, write_ok = Signal(), Signal()
        move_sent = Signal()        # the writer has the WRITE's command

        with m.FSM():
            with m.State("IDLE"):
                with m.If(sweep.any):
                    m.d.comb += [sweep.en.eq(1), ev.swept.eq(1)]
                with m.Elif(parser.header.valid):
                    m.d.comb += [parser.header.ready.eq(1), check.load.eq(1)]
                    m.d.sync += [req.eq(parser.header.payload), seen.eq(0), move_sent.eq(0)]
                    m.next = "CHECK"
            with m.State("CHECK"):
                m.d.sync += status.eq(check.status)
                m.d.comb += claim.en.eq(1)
                sender.start(m, r.length)
                with m.If(r.opcode == Opcode.WRITE):
                    with m.If(check.bad_write):
                        m.d.comb += ev.malformed.eq(1)
                        m.next = "DRAIN"
                    with m.Elif(~claim.hit & ~claim.free):
                        m.d.comb += ev.no_context.eq(1)
                        m.next = "DRAIN"
                    with m.Else():
                        m.next = "PLACE"
                with m.Elif(r.opcode == Opcode.READ_REQ):
                    m.next = "READ_CHECK"
                with m.Else():
                    m.d.comb += ev.unexpected.eq(1)
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.comb += parser.o.ready.eq(1)
                with m.If(parser.o.valid & parser.o.payload.last):
                    m.next = "IDLE"
            with m.State("PLACE"):
                wiring.connect(m, parser.o, writer.i)
                m.d.comb += [writer.cmd.valid.eq(~move_sent), writer.done.ready.eq(1)]
                with m.If(writer.cmd.ready):
                    m.d.sync += move_sent.eq(1)
                with m.If(writer.done.valid):
                    m.d.sync += [exact.eq(writer.done.payload.exact),
                                 write_ok.eq(writer.done.payload.ok)]
                    m.next = "ACCOUNT"
            with m.State("ACCOUNT"):
                with m.If(~exact):
                    m.d.comb += ev.malformed.eq(1)
                    m.next = "IDLE"
                with m.Else():
                    m.d.comb += [account.en.eq(1), ev.placed.eq(1),
                                 account.status.eq(Mux(write_ok, status,
                                                       Status.ADDRESS_ERROR))]
                    m.d.sync += [ack_length.eq(account.ack_length),
                                 ack_status.eq(account.ack_status)]
                    with m.If(account.complete):
                        m.next = "ACK"
                    with m.Else():
                        m.next = "IDLE"
            with m.State("ACK"):
                m.d.comb += acking.eq(1)
                with m.If(sender.empty(m)):
                    m.d.comb += ev.ack.eq(1)
                    m.next = "IDLE"
            with m.State("READ_CHECK"):
                # A READ_REQ carries no payload: its one beat must be empty.
                m.d.comb += parser.o.ready.eq(1)
                with m.If(parser.o.valid):
                    count = seen + keep_count(parser.o.payload.keep, W)
                    with m.If(seen <= MAX_PACKET_OCTETS):
                        m.d.sync += seen.eq(count)
                    with m.If(parser.o.payload.last):
                        with m.If((count != 0) | (r.length == 0)):
                            m.d.comb += ev.malformed.eq(1)
                            m.next = "IDLE"
                        with m.Elif(status != Status.OK):
                            m.d.comb += ev.refused.eq(1)
                            m.next = "REFUSE"
                        with m.Else():
                            m.d.comb += ev.read.eq(1)
                            m.next = "SERVE"
            with m.State("REFUSE"):
                with m.If(sender.empty(m)):
                    m.next = "IDLE"
            with m.State("SERVE"):
                # One READ_RSP packet at a time: its header and its read run side by side.
                m.d.comb += serving.eq(1)
                _, done = sender.segment(m)
                with m.If(done):
                    m.next = "IDLE"
        return m
