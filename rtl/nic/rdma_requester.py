"""The NIC's RDMA requester: the DMA engine's commands out as WRITE packets (read from local
memory, segmented at the MTU) or a READ_REQ, their ACK or READ_RSP packets back (written to
local memory), one completion per command.

Ref: spec §3 (VC 2 requests, VC 3 responses, the MTU), §4.2 (RDMA TH, ACK per message, READ_RSP
octets counted per message), §9 (WRITE entropy ``msg ^ packet_index``), §11 (bogus responses
never complete a message or touch memory; nothing hangs).
"""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..compose import forward
from ..counters import CounterBank, Counters
from ..forwarding.deparser import OefhDeparser
from ..forwarding.parser import OefhParser
from ..params import parameters
from ..stream import PacketStream, BEAT_OCTETS
from ..wire import (ENDPOINT_BITS, HeaderLayout, Opcode, Status, VirtualChannel, OEFH_VERSION,
                    RDMA_TH)
from .axi import Axi4Signature, ADDR_WIDTH
from .dma import AxiReader, AxiWriter, PacketSender, MAX_PACKET_OCTETS, LENGTH_BITS
from .engine import (CompletionLayout, CompletionStatus, fail_queue, FAIL_DEPTH_MAX, MESSAGES,
                     MSG_BITS, MTU, STAMP_BITS, TIMEOUT_CYCLES)

__all__ = ["RdmaRequester", "RdmaCommandLayout", "RDMA_ADDR_BITS"]

RDMA_ADDR_BITS = dict(RDMA_TH.fields)["addr"]


class RdmaCommandLayout(data.StructLayout):
    """One DMA command: ``read`` (0: WRITE local → remote, 1: READ remote → local), ``dst``,
    ``id`` (the message id, echoed by the completion), ``remote`` and ``local`` byte addresses,
    ``length`` in octets (1 to 2^24 - 1). 19 octets with ``pad``."""
    def __init__(self):
        super().__init__({"read": 1, "dst": ENDPOINT_BITS, "id": MSG_BITS,
                          "remote": RDMA_ADDR_BITS,
                          "local": RDMA_ADDR_BITS, "length": LENGTH_BITS, "pad": 7})


class _Static(data.StructLayout):
    """What a message's command said (written once, when it is accepted)."""
    def __init__(self, addr_width):
        super().__init__({"read": 1, "dst": ENDPOINT_BITS, "length": LENGTH_BITS,
                          "local": addr_width})


class _Progress(data.StructLayout):
    """How far a message got: READ octets placed, the cycle of its last activity, and whether
    a local memory access of it failed."""
    def __init__(self):
        super().__init__({"placed": LENGTH_BITS, "stamp": STAMP_BITS, "failed": 1})


class _Failed(data.StructLayout):
    """What the requester keeps of a dropped WRITE or READ_REQ packet's header."""
    def __init__(self):
        super().__init__({"msg": MSG_BITS, "dst": ENDPOINT_BITS, "read": 1, "last": 1})


@parameters(beat_octets=BEAT_OCTETS, messages=MESSAGES, mtu=MTU,
            timeout_cycles=TIMEOUT_CYCLES, addr_width=ADDR_WIDTH)
class RdmaRequester(wiring.Component):
    """Execute DMA commands against a remote NIC; complete every command exactly once.

    **Commands** (``cmd``) are taken one at a time. A command is refused without sending
    anything when its ``id`` is already outstanding or not below ``messages`` (BAD_TAG), or
    when its length is 0, an address is not a multiple of ``beat_octets``, or the local range
    runs past the AXI address space (ADDRESS_ERROR).

    * WRITE: the message is read from local memory (``m_axi`` AR/R) and sent as packets of
      ``mtu`` octets (the last one shorter) on VC 2: packet ``k`` has ``offset = k * mtu``,
      ``addr = remote + offset``, ``first``/``last`` flags and entropy ``(id ^ k)[15:0]``
      (spec §9: sprayed over the ports). It completes with the status of the target's ACK.
    * READ: one READ_REQ (``addr = remote``, ``length`` = the whole message, entropy ``id``).
      Each READ_RSP's payload is written to ``local + offset`` (``m_axi`` AW/W/B); the message
      completes OK when the octets placed add up to ``length``, or with the status of a
      READ_RSP that refuses it.

    A response must name a message outstanding with its source (the command's ``dst``),
    else it is ``unexpected``; it must then be of the message's kind (ACK for a WRITE,
    READ_RSP for a READ), carry a defined status and (a READ_RSP) fit inside the message at a
    beat-aligned offset, or (a refusal) have no length and offset 0, else it is
    ``mismatched``. Either way it is dropped, counted and
    touches no memory. A
    READ_RSP whose payload is not ``length`` octets long is ``mismatched`` too; its octets
    inside the message's range may have been written, but it does not count towards the
    message, which then times out. A local AXI error makes the message complete with
    ADDRESS_ERROR.

    **Timeouts.** A scanner visits one message per cycle in which no response is handled; a
    message with no activity (its last packet sent, or a READ_RSP placed) for
    ``timeout_cycles`` completes with TIMEOUT.

    **Unreachable.** The header of a packet that could not be sent (no port reaches its dst,
    spec §9) comes back on ``fail`` (never held back) into a queue of :attr:`fail_depth`
    entries; a header that finds it full is dropped and counted (``fail_overflows``). A header
    that names an outstanding message (same msg, dst and kind) marks it *unreachable*: the
    target can no longer complete it. If the header is the message's last packet (a READ_REQ
    always is) and the message is no longer being sent, the message completes with
    UNREACHABLE at once; otherwise (a WRITE whose later packets still reached the target) it
    completes with UNREACHABLE, not TIMEOUT, when it times out, unless a response completes
    it first. A header naming no outstanding message is counted (``stale_fails``).

    Members
    -------
    local_id : In(12)
    cmd : In(stream.Signature(RdmaCommandLayout()))
    cpl : Out(stream.Signature(CompletionLayout()))
        ``tag`` is the command's ``id``.
    o : Out(PacketStream(beat_octets)); i : In(PacketStream(beat_octets))
        WRITE/READ_REQ frames out (VC 2), ACK/READ_RSP frames in (FCS removed).
    fail : In(stream.Signature(HeaderLayout()))
        Headers of WRITE/READ_REQ frames dropped as unroutable (one per cycle, always ready).
    m_axi : Out(Axi4Signature(addr_width, beat_octets))
        The AXI4 manager port to local memory (reads for WRITE, writes for READ_RSP).
    outstanding : Out(range(messages + 1))
    count : Out(Counters)
        Saturating counters, :attr:`COUNTERS`.

    Latency: a command's first frame beat leaves :attr:`READ_REQ_LATENCY` cycles after its
    ``cmd`` transfer for a READ; a WRITE's first beat follows its first read data by 1. A
    message's last packet reported on ``fail`` completes it :attr:`FAIL_LATENCY` cycles later
    (the completion side idle).

    Throughput: one packet at a time each way; a WRITE streams at one beat per cycle within a
    packet.
    """
    COUNTERS = ("commands", "completions", "timeouts", "bad_ids", "refused", "packets_sent",
                "packets_received", "unexpected", "mismatched", "axi_errors", "unreachable",
                "stale_fails", "fail_overflows")
    #: ``cmd`` transfer → first READ_REQ beat on ``o``: the check 1, the table 1, the deparser 1.
    READ_REQ_LATENCY = 3
    #: ``fail`` transfer → its UNREACHABLE ``cpl`` valid: the queue 2, the table read 1, the
    #: check 1.
    FAIL_LATENCY = 4

    def __init__(self, beat_octets=8, messages=16, mtu=1024, timeout_cycles=4096,
                 addr_width=32):
        self.beat_octets = beat_octets
        self.messages = messages
        self.mtu = mtu
        self.timeout_cycles = timeout_cycles
        self.addr_width = addr_width
        #: What the GPU's DMA engine sees: the endpoint's id, commands, completions, the
        #: messages in flight.
        self.gpu_members = {
            "local_id": In(ENDPOINT_BITS),
            "cmd": In(stream.Signature(RdmaCommandLayout())),
            "cpl": Out(stream.Signature(CompletionLayout())),
            "outstanding": Out(range(messages + 1)),
        }
        self.fail_depth = max(4, min(self.messages, FAIL_DEPTH_MAX))
        super().__init__({
            **self.gpu_members,
            "o": Out(PacketStream(beat_octets)),
            "i": In(PacketStream(beat_octets)),
            "fail": In(stream.Signature(HeaderLayout())),
            "m_axi": Out(Axi4Signature(addr_width, beat_octets)),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        beat_bits = (W - 1).bit_length()
        id_bits = (self.messages - 1).bit_length()
        counters = CounterBank(m, self.count)

        m.submodules.reader = reader = AxiReader(W, self.addr_width)
        m.submodules.writer = writer = AxiWriter(W, self.addr_width)
        forward(m, self.m_axi, reader.m_axi)
        forward(m, self.m_axi, writer.m_axi)

        now = Signal(STAMP_BITS)
        m.d.sync += now.eq(now + 1)
        busy = Signal(self.messages)
        unreachable = Signal(self.messages)     # a packet of the message was dropped
        level = Signal(range(self.messages + 1))
        set_busy, clear_busy = Signal(), Signal()
        m.d.sync += level.eq(level + set_busy - clear_busy)
        m.d.comb += self.outstanding.eq(level)

        m.submodules.static = static = Memory(shape=_Static(self.addr_width),
                                              depth=self.messages, init=[])
        static_wr = static.write_port()
        static_rd = static.read_port(transparent_for=(static_wr,))
        m.submodules.progress = progress = Memory(shape=_Progress(), depth=self.messages,
                                                  init=[])
        progress_wr = progress.write_port()
        progress_rd = progress.read_port(transparent_for=(progress_wr,))
        progress_scan = progress.read_port(transparent_for=(progress_wr,))
        # The progress table has one write port: the receive side has it when it wants it,
        # the transmit side waits a cycle.
        rx_write = Signal()
        tx_write = Signal()
        tx_progress = Signal(_Progress())
        tx_failed = Signal()        # a local read of the message being sent failed
        m.d.comb += [tx_progress.placed.eq(0), tx_progress.stamp.eq(now),
                     tx_progress.failed.eq(tx_failed)]
        tx_write_id = Signal(id_bits)
        rx_progress = Signal(_Progress())
        rx_write_id = Signal(id_bits)
        m.d.comb += [
            progress_wr.en.eq(rx_write | tx_write),
            progress_wr.addr.eq(Mux(rx_write, rx_write_id, tx_write_id)),
            progress_wr.data.eq(Mux(rx_write, rx_progress, tx_progress)),
        ]
        tx_granted = tx_write & ~rx_write

        # --- commands out ----------------------------------------------------------------------
        m.submodules.deparser = deparser = OefhDeparser(W)
        wiring.connect(m, deparser.o, wiring.flipped(self.o))
        cmd = self.cmd.payload
        cur = Signal(RdmaCommandLayout())
        tx_active = Signal()        # ``cur`` is being sent: its message cannot time out
        sender = PacketSender(m, self.mtu, deparser, reader)
        offset, index, octets = sender.offset, sender.index, sender.octets

        hdr = Signal(HeaderLayout())
        th = hdr.th.rdma
        m.d.comb += [
            hdr.oefh.ver.eq(OEFH_VERSION), hdr.oefh.vc.eq(VirtualChannel.RDMA_REQ),
            hdr.oefh.dst.eq(cur.dst), hdr.oefh.src.eq(self.local_id),
            th.msg.eq(cur.id),
            deparser.header.payload.eq(hdr),
        ]
        m.d.comb += [
            # Ref: spec §9 — WRITE packets are sprayed: entropy msg ^ packet_index; project
            # choice (docs/nic.md): a READ_REQ's is its msg (``index`` stays 0).
            hdr.oefh.entropy.eq(cur.id ^ index),
            th.opcode.eq(Mux(cur.read, Opcode.READ_REQ, Opcode.WRITE)),
            th.first.eq(offset == 0), th.last.eq(cur.read | sender.last),
            th.addr.eq(cur.remote + offset), th.offset.eq(offset),
            # Ref: spec §4.2 — READ_REQ: the octets wanted; WRITE: the octets of this packet.
            th.length.eq(Mux(cur.read, cur.length, octets)),
        ]
        m.d.comb += [reader.cmd.payload.addr.eq(cur.local + offset),
                     reader.cmd.payload.octets.eq(octets)]
        counters["axi_errors"].increment(m, reader.error | (writer.done.valid &
                                                            writer.done.ready &
                                                            ~writer.done.payload.ok))
        with m.If(reader.error):
            m.d.sync += tx_failed.eq(1)

        id_free = (cmd.id < self.messages) & ~(busy >> cmd.id[:id_bits])[0]
        end = cmd.local + cmd.length
        well_formed = ((cmd.length != 0) & (cmd.remote[:beat_bits] == 0) &
                       (cmd.local[:beat_bits] == 0) & (end <= (1 << self.addr_width)))
        refused = Signal()          # a refused command's completion waits for the RX side
        refused_id = Signal(MSG_BITS)
        refused_status = Signal(CompletionStatus)
        clear_refused = Signal()
        with m.If(clear_refused):
            m.d.sync += refused.eq(0)

        with m.FSM(name="tx"):
            with m.State("IDLE"):
                m.d.comb += self.cmd.ready.eq(~refused)
                with m.If(self.cmd.valid & ~refused):
                    m.d.sync += [cur.eq(cmd), tx_failed.eq(0)]
                    sender.start(m, cmd.length)
                    with m.If(~id_free):
                        m.d.sync += [refused.eq(1), refused_id.eq(cmd.id),
                                     refused_status.eq(CompletionStatus.BAD_TAG)]
                        counters["bad_ids"].increment(m, 1)
                    with m.Elif(~well_formed):
                        m.d.sync += [refused.eq(1), refused_id.eq(cmd.id),
                                     refused_status.eq(CompletionStatus.ADDRESS_ERROR)]
                        counters["refused"].increment(m, 1)
                    with m.Else():
                        m.d.comb += [
                            static_wr.en.eq(1), static_wr.addr.eq(cmd.id[:id_bits]),
                            static_wr.data.read.eq(cmd.read), static_wr.data.dst.eq(cmd.dst),
                            static_wr.data.length.eq(cmd.length),
                            static_wr.data.local.eq(cmd.local), set_busy.eq(1),
                        ]
                        m.d.sync += [busy.bit_select(cmd.id[:id_bits], 1).eq(1),
                                     unreachable.bit_select(cmd.id[:id_bits], 1).eq(0),
                                     tx_active.eq(1)]
                        counters["commands"].increment(m, 1)
                        m.next = "START"
            with m.State("START"):
                m.d.comb += [tx_write.eq(1), tx_write_id.eq(cur.id[:id_bits])]
                with m.If(tx_granted):
                    m.next = "READ_REQ"
                    with m.If(~cur.read):
                        m.next = "PACKET"
            with m.State("READ_REQ"):
                # A READ_REQ has no payload.
                with m.If(sender.empty(m)):
                    m.d.sync += tx_active.eq(0)
                    counters["packets_sent"].increment(m, 1)
                    m.next = "IDLE"
            with m.State("PACKET"):
                # One WRITE packet at a time: its header and its read run side by side.
                sent, done = sender.segment(m)
                counters["packets_sent"].increment(m, sent)
                with m.If(done):
                    m.next = "SENT"
            with m.State("SENT"):
                # The timeout of a WRITE runs from its last packet.
                m.d.comb += [tx_write.eq(1), tx_write_id.eq(cur.id[:id_bits])]
                with m.If(tx_granted):
                    m.d.sync += tx_active.eq(0)
                    m.next = "IDLE"

        # --- responses in, timeouts, completions -----------------------------------------------
        m.submodules.parser = parser = OefhParser(W)
        wiring.connect(m, wiring.flipped(self.i), parser.i)
        fail_in = Signal(_Failed())
        head = self.fail.payload
        m.d.comb += [fail_in.msg.eq(head.th.rdma.msg), fail_in.dst.eq(head.oefh.dst),
                     fail_in.read.eq(head.th.rdma.opcode == Opcode.READ_REQ),
                     fail_in.last.eq(head.th.rdma.last)]
        fail_q = fail_queue(m, self.fail, fail_in, self.fail_depth, counters["fail_overflows"])
        fail_out = _Failed()(fail_q.r_data)
        failed = Signal(_Failed())
        rh = Signal(HeaderLayout())
        r = rh.th.rdma
        m.d.comb += [static_rd.addr.eq(parser.header.payload.th.rdma.msg[:id_bits]),
                     progress_rd.addr.eq(parser.header.payload.th.rdma.msg[:id_bits])]
        # The tables' entries of the response's msg: on the read ports in CHECK, held after.
        entry_r = Signal(_Static(self.addr_width))
        done_r = Signal(_Progress())
        in_check = Signal()
        entry = Signal(_Static(self.addr_width))
        done_so_far = Signal(_Progress())
        m.d.comb += [entry.eq(Mux(in_check, static_rd.data, entry_r)),
                     done_so_far.eq(Mux(in_check, progress_rd.data, done_r))]
        cpl_id = Signal(MSG_BITS)
        status = Signal(CompletionStatus)
        m.d.comb += [self.cpl.payload.tag.eq(cpl_id), self.cpl.payload.status.eq(status)]
        counters["completions"].increment(m, self.cpl.valid & self.cpl.ready)
        counters["unreachable"].increment(m, self.cpl.valid & self.cpl.ready &
                                          (status == CompletionStatus.UNREACHABLE))
        after_drain = Signal()      # DRAIN goes on to CPL (else to IDLE)

        ptr = Signal(id_bits)
        ptr_r = Signal(id_bits)
        scanned = Signal()
        m.d.comb += progress_scan.addr.eq(ptr)
        expired = (scanned & (busy >> ptr_r)[0] & ~(tx_active & (cur.id[:id_bits] == ptr_r)) &
                   ((now - progress_scan.data.stamp)[:STAMP_BITS] >= self.timeout_cycles))
        gave_up = Signal(CompletionStatus)      # the status of an expired message
        m.d.comb += gave_up.eq(Mux((unreachable >> ptr_r)[0], CompletionStatus.UNREACHABLE,
                                   CompletionStatus.TIMEOUT))

        # ``live``: a message of this msg is outstanding with the response's source (msg ids
        # are unique per source, spec §4.2); else the response is unexpected.
        live = ((r.msg < self.messages) & (busy >> r.msg[:id_bits])[0] &
                ~(tx_active & (cur.id == r.msg)) & (rh.oefh.src == entry.dst))
        sane = r.status <= Status.ADDRESS_ERROR
        is_ack = live & sane & (r.opcode == Opcode.ACK) & ~entry.read
        is_rsp = live & sane & (r.opcode == Opcode.READ_RSP) & entry.read
        fits = ((r.length != 0) & (r.length <= MAX_PACKET_OCTETS) &
                (r.offset[:beat_bits] == 0) & (r.offset + r.length <= entry.length))
        placed = Signal(LENGTH_BITS + 1)
        m.d.comb += placed.eq(done_so_far.placed + r.length)
        exact = Signal()
        write_ok = Signal()
        move_sent = Signal()
        m.d.comb += [writer.cmd.payload.addr.eq(entry.local + r.offset),
                     writer.cmd.payload.octets.eq(r.length),
                     writer.cmd.payload.write.eq(1)]

        with m.FSM(name="rx"):
            with m.State("IDLE"):
                m.d.sync += scanned.eq(0)
                with m.If(expired):
                    m.d.sync += [cpl_id.eq(ptr_r), status.eq(gave_up)]
                    counters["timeouts"].increment(m, gave_up == CompletionStatus.TIMEOUT)
                    m.next = "CPL"
                with m.Elif(refused):
                    m.d.sync += [cpl_id.eq(refused_id), status.eq(refused_status)]
                    m.next = "REFUSED"
                with m.Elif(fail_q.r_rdy):
                    m.d.comb += [fail_q.r_en.eq(1), static_rd.addr.eq(fail_out.msg[:id_bits])]
                    m.d.sync += failed.eq(fail_out)
                    m.next = "FAIL"
                with m.Elif(parser.header.valid):
                    m.d.comb += parser.header.ready.eq(1)
                    m.d.sync += rh.eq(parser.header.payload)
                    m.next = "CHECK"
                with m.Else():
                    m.d.sync += [ptr.eq(ptr + 1), ptr_r.eq(ptr), scanned.eq(1)]
            with m.State("FAIL"):
                # The static entry of the dropped packet's msg is on static_rd.data this cycle.
                sending = tx_active & (cur.id == failed.msg)
                with m.If((failed.msg < self.messages) & (busy >> failed.msg[:id_bits])[0] &
                          (static_rd.data.dst == failed.dst) &
                          (static_rd.data.read == failed.read)):
                    with m.If(failed.last & ~sending):
                        m.d.sync += [cpl_id.eq(failed.msg),
                                     status.eq(CompletionStatus.UNREACHABLE)]
                        m.next = "CPL"
                    with m.Else():
                        m.d.sync += unreachable.bit_select(failed.msg[:id_bits], 1).eq(1)
                        m.next = "IDLE"
                with m.Else():
                    counters["stale_fails"].increment(m, 1)
                    m.next = "IDLE"
            with m.State("REFUSED"):
                m.d.comb += self.cpl.valid.eq(1)
                with m.If(self.cpl.ready):
                    m.d.comb += clear_refused.eq(1)
                    m.next = "IDLE"
            with m.State("CHECK"):
                m.d.comb += in_check.eq(1)
                m.d.sync += [cpl_id.eq(r.msg), move_sent.eq(0), after_drain.eq(0),
                             entry_r.eq(static_rd.data), done_r.eq(progress_rd.data)]
                # A refused READ is answered by one READ_RSP with its status and nothing else.
                refusal = is_rsp & (r.status != Status.OK) & (r.length == 0) & (r.offset == 0)
                with m.If(is_ack | refusal):
                    # The target's verdict on the whole message.
                    m.d.sync += [after_drain.eq(1),
                                 status.eq(Mux((r.status == Status.OK) & done_so_far.failed,
                                               CompletionStatus.ADDRESS_ERROR, r.status))]
                    counters["packets_received"].increment(m, 1)
                    m.next = "DRAIN"
                with m.Elif(is_rsp & (r.status == Status.OK) & fits):
                    m.next = "PLACE"
                with m.Else():
                    counters["unexpected"].increment(m, ~live)
                    counters["mismatched"].increment(m, live)
                    m.next = "DRAIN"
            with m.State("PLACE"):
                wiring.connect(m, parser.o, writer.i)
                m.d.comb += writer.cmd.valid.eq(~move_sent)
                with m.If(writer.cmd.ready):
                    m.d.sync += move_sent.eq(1)
                m.d.comb += writer.done.ready.eq(1)
                with m.If(writer.done.valid):
                    m.d.sync += [exact.eq(writer.done.payload.exact),
                                 write_ok.eq(writer.done.payload.ok)]
                    m.next = "PLACED"
            with m.State("PLACED"):
                with m.If(exact):
                    m.d.comb += [rx_write.eq(1), rx_write_id.eq(r.msg[:id_bits]),
                                 rx_progress.placed.eq(placed), rx_progress.stamp.eq(now),
                                 rx_progress.failed.eq(done_so_far.failed | ~write_ok)]
                    counters["packets_received"].increment(m, 1)
                    with m.If(placed == entry.length):
                        m.d.sync += status.eq(Mux(done_so_far.failed | ~write_ok,
                                                  CompletionStatus.ADDRESS_ERROR,
                                                  CompletionStatus.OK))
                        m.next = "CPL"
                    with m.Else():
                        m.next = "IDLE"
                with m.Else():
                    counters["mismatched"].increment(m, 1)
                    m.next = "IDLE"
            with m.State("DRAIN"):
                m.d.comb += parser.o.ready.eq(1)
                with m.If(parser.o.valid & parser.o.payload.last):
                    with m.If(after_drain):
                        m.next = "CPL"
                    with m.Else():
                        m.next = "IDLE"
            with m.State("CPL"):
                m.d.comb += self.cpl.valid.eq(1)
                with m.If(self.cpl.ready):
                    m.d.sync += busy.bit_select(cpl_id[:id_bits], 1).eq(0)
                    m.d.comb += clear_busy.eq(1)
                    m.next = "IDLE"
        return m
