"""The NIC's RDMA target: remote WRITE packets placed in local memory and acknowledged once per
message, remote READ_REQs answered with READ_RSP packets read from local memory, all checked
against the memory windows.

Ref: spec §3 (VC 2 in, VC 3 out, the MTU), §4.2 (RDMA TH, one ACK per WRITE message once its
octets add up, READ_RSP offsets), §9 (READ_RSP entropy ``msg ^ packet_index``), §11 (windows,
ACCESS_DENIED writes nothing, malformed frames dropped and counted).
"""

from amaranth.hdl import Module, Signal, Cat, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..arbiter import one_hot_index
from ..compose import forward
from ..counters import CounterBank, Counters
from ..forwarding.deparser import OefhDeparser
from ..forwarding.parser import OefhParser
from ..params import parameters
from ..regbus import RegisterBus
from ..stream import PacketStream, BEAT_OCTETS, keep_count
from ..wire import ENDPOINT_BITS, HeaderLayout, Opcode, Status, VirtualChannel, OEFH_VERSION
from . import csr
from .axi import Axi4Signature, ADDR_WIDTH
from .dma import AxiReader, AxiWriter, PacketSender, MAX_PACKET_OCTETS, LENGTH_BITS
from .engine import CONTEXTS, LINE_OCTETS, MSG_BITS, MTU, STAMP_BITS, TIMEOUT_CYCLES
from .windows import target_registers, count_refusal, WINDOWS

__all__ = ["RdmaTarget"]

#: The longest message: ``offset`` and ``length`` are 24-bit TH fields.
MAX_MESSAGE_OCTETS = (1 << LENGTH_BITS) - 1


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
    COUNTERS = ("write_packets", "reads", "acks", "denied", "address_errors", "malformed",
                "unexpected", "no_context", "stale", "axi_errors")
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
        beat_bits = (W - 1).bit_length()
        counters = CounterBank(m, self.count)

        m.submodules.parser = parser = OefhParser(W)
        m.submodules.deparser = deparser = OefhDeparser(W)
        m.submodules.reader = reader = AxiReader(W, self.addr_width)
        m.submodules.writer = writer = AxiWriter(W, self.addr_width)
        wiring.connect(m, wiring.flipped(self.i), parser.i)
        wiring.connect(m, deparser.o, wiring.flipped(self.o))
        wiring.connect(m, parser.count, wiring.flipped(self.count.rx))
        forward(m, self.m_axi, reader.m_axi)
        forward(m, self.m_axi, writer.m_axi)

        windows = target_registers(m, self, counters)

        now = Signal(STAMP_BITS)
        m.d.sync += now.eq(now + 1)

        # --- the request being served -----------------------------------------------------------
        req = Signal(HeaderLayout())
        r = req.th.rdma
        is_write = r.opcode == Opcode.WRITE
        end = Signal(r.addr.shape().width + 1)
        m.d.comb += end.eq(r.addr + r.length)
        # Ref: spec §11 — every line of the range in one window, with the permission.
        granted = windows.granted(r.addr[6:], (end + LINE_OCTETS - 1)[6:],
                                  Mux(is_write, csr.PERM_WRITE, csr.PERM_READ))
        status = Signal(Status)
        total = Signal(LENGTH_BITS + 1)
        m.d.comb += total.eq(r.offset + r.length)
        bad_write = (r.length == 0) | (r.length > self.mtu) | (total > MAX_MESSAGE_OCTETS)

        # --- WRITE message contexts -------------------------------------------------------------
        n = self.contexts
        valid = Signal(n)
        src = [Signal(ENDPOINT_BITS, name=f"ctx{c}_src") for c in range(n)]
        msg = [Signal(MSG_BITS, name=f"ctx{c}_msg") for c in range(n)]
        placed = [Signal(LENGTH_BITS + 1, name=f"ctx{c}_placed") for c in range(n)]
        goal = [Signal(LENGTH_BITS, name=f"ctx{c}_total") for c in range(n)]
        known = Signal(n)
        verdict = [Signal(Status, name=f"ctx{c}_status") for c in range(n)]
        stamp = [Signal(STAMP_BITS, name=f"ctx{c}_stamp") for c in range(n)]
        hits = Cat(valid[c] & (src[c] == req.oefh.src) & (msg[c] == r.msg) for c in range(n))
        free = Signal(n)            # the lowest free context, one-hot
        m.d.comb += free.eq(~valid & (valid + 1))
        slot = Signal(range(max(2, n)))
        slot_hit = Signal()
        expired = Cat(valid[c] & ((now - stamp[c])[:STAMP_BITS] >= self.timeout_cycles)
                      for c in range(n))

        # --- responses ---------------------------------------------------------------------------
        hdr = Signal(HeaderLayout())
        rsp = hdr.th.rdma
        m.d.comb += [
            hdr.oefh.ver.eq(OEFH_VERSION), hdr.oefh.vc.eq(VirtualChannel.RDMA_RSP),
            hdr.oefh.dst.eq(req.oefh.src), hdr.oefh.src.eq(req.oefh.dst),
            rsp.msg.eq(r.msg),
            deparser.header.payload.eq(hdr),
        ]
        acking, serving = Signal(), Signal()     # in ACK, in SERVE
        sender = PacketSender(m, self.mtu, deparser, reader)
        offset, index, octets = sender.offset, sender.index, sender.octets
        ack_status = Signal(Status)
        ack_length = Signal(LENGTH_BITS)
        m.d.comb += [reader.cmd.payload.addr.eq(r.addr + offset),
                     reader.cmd.payload.octets.eq(octets),
                     writer.cmd.payload.addr.eq(r.addr), writer.cmd.payload.octets.eq(r.length),
                     writer.cmd.payload.write.eq(status == Status.OK)]
        counters["axi_errors"].increment(m, reader.error | (writer.done.valid &
                                                            writer.done.ready &
                                                            ~writer.done.payload.ok))
        seen = Signal(range(MAX_PACKET_OCTETS + W + 1))     # payload octets of a READ_REQ
        exact, write_ok = Signal(), Signal()
        move_sent = Signal()        # the writer has the WRITE's command

        with m.FSM():
            with m.State("IDLE"):
                with m.If(expired.any()):
                    # Free the stale contexts (their messages were lost or never finished).
                    m.d.sync += valid.eq(valid & ~expired)
                    counters["stale"].add(m, sum(expired[c] for c in range(n)), 1)
                with m.Elif(parser.header.valid):
                    m.d.comb += parser.header.ready.eq(1)
                    m.d.sync += [req.eq(parser.header.payload), seen.eq(0), move_sent.eq(0)]
                    m.next = "CHECK"
            with m.State("CHECK"):
                with m.If((r.addr[:beat_bits] != 0) | (end > (1 << self.addr_width))):
                    m.d.sync += status.eq(Status.ADDRESS_ERROR)
                with m.Elif(~granted):
                    m.d.sync += status.eq(Status.ACCESS_DENIED)
                with m.Else():
                    m.d.sync += status.eq(Status.OK)
                m.d.sync += [slot.eq(one_hot_index(Mux(hits.any(), hits, free))),
                             slot_hit.eq(hits.any())]
                sender.start(m, r.length)
                with m.If(is_write):
                    with m.If(bad_write):
                        counters["malformed"].increment(m, 1)
                        m.next = "DRAIN"
                    with m.Elif(~hits.any() & ~free.any()):
                        counters["no_context"].increment(m, 1)
                        m.next = "DRAIN"
                    with m.Else():
                        m.next = "PLACE"
                with m.Elif(r.opcode == Opcode.READ_REQ):
                    m.next = "READ_CHECK"
                with m.Else():
                    counters["unexpected"].increment(m, 1)
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
                    counters["malformed"].increment(m, 1)
                    m.next = "IDLE"
                with m.Else():
                    counters["write_packets"].increment(m, status == Status.OK)
                    count_refusal(m, counters, status)
                    this = Mux(write_ok, status, Status.ADDRESS_ERROR)
                    now_placed = Signal(LENGTH_BITS + 1)
                    now_goal = Signal(LENGTH_BITS)
                    now_known = Signal()
                    now_verdict = Signal(Status)
                    with m.Switch(slot):
                        for c in range(n):
                            with m.Case(c):
                                m.d.comb += [
                                    now_placed.eq(Mux(slot_hit, placed[c], 0) + r.length),
                                    now_known.eq((slot_hit & known[c]) | r.last),
                                    now_goal.eq(Mux(r.last, total, goal[c])),
                                    now_verdict.eq(Mux(slot_hit & (verdict[c] != Status.OK),
                                                       verdict[c], this)),
                                ]
                                m.d.sync += [src[c].eq(req.oefh.src), msg[c].eq(r.msg),
                                             placed[c].eq(now_placed), goal[c].eq(now_goal),
                                             known[c].eq(now_known),
                                             verdict[c].eq(now_verdict), stamp[c].eq(now)]
                    complete = now_known & (now_placed >= now_goal)
                    m.d.sync += [valid.bit_select(slot, 1).eq(~complete),
                                 ack_length.eq(now_goal),
                                 ack_status.eq(Mux(now_placed > now_goal, Status.ADDRESS_ERROR,
                                                   now_verdict))]
                    with m.If(complete):
                        m.next = "ACK"
                    with m.Else():
                        m.next = "IDLE"
            with m.State("ACK"):
                m.d.comb += acking.eq(1)
                with m.If(sender.empty(m)):
                    counters["acks"].increment(m, 1)
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
                            counters["malformed"].increment(m, 1)
                            m.next = "IDLE"
                        with m.Elif(status != Status.OK):
                            count_refusal(m, counters, status)
                            m.next = "REFUSE"
                        with m.Else():
                            counters["reads"].increment(m, 1)
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

        # The response header: an ACK, a refused READ_RSP (no payload, the request's addr) or
        # READ_RSP packet ``index`` (``offset`` and ``index`` are 0 outside SERVE).
        m.d.comb += [
            # Ref: spec §9 — READ_RSP packets are sprayed: entropy msg ^ packet_index; project
            # choice (docs/nic.md): an ACK's or a refused READ_RSP's is the msg.
            hdr.oefh.entropy.eq(r.msg ^ index),
            rsp.opcode.eq(Mux(acking, Opcode.ACK, Opcode.READ_RSP)),
            rsp.status.eq(Mux(acking, ack_status, status)),
            rsp.first.eq(offset == 0), rsp.last.eq(~serving | sender.last),
            rsp.addr.eq(Mux(acking, 0, r.addr + offset)), rsp.offset.eq(offset),
            rsp.length.eq(Mux(acking, ack_length, Mux(serving, octets, 0))),
        ]
        return m
