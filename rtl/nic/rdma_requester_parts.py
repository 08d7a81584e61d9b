"""The components an :class:`~.rdma_requester.RdmaRequester` is made of, one job each: the
message table (what is outstanding, timeouts), the framer (a command's packet headers), the
command sequencer (admission and sending), the fail queue (headers of unroutable packets),
the response check (is a response acceptable) and the response sequencer (responses,
timeouts, failures in; completions out).

Ref: spec §4.2, §9, §11 (the requester's rules; :class:`~.rdma_requester.RdmaRequester` says
which part implements which).
"""

from amaranth.hdl import Module, Signal, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..counters import CounterBank, Counters
from ..forwarding.deparser import OefhDeparser
from ..forwarding.parser import OefhParser
from ..stream import PacketStream
from ..wire import (ENDPOINT_BITS, HeaderLayout, Opcode, Status, VirtualChannel, OEFH_VERSION,
                    RDMA_TH)
from .axi import Axi4Signature
from .dma import (AxiReader, AxiWriter, PacketSender, MoveLayout, MAX_PACKET_OCTETS,
                  LENGTH_BITS)
from .engine import CompletionLayout, CompletionStatus, MSG_BITS, STAMP_BITS

__all__ = ["RDMA_ADDR_BITS", "RdmaCommandLayout", "StaticLayout", "ProgressLayout", "FailedLayout",
           "PacketPositionSignature", "SendingSignature", "RefusalSignature", "OpenSignature",
           "ReleaseSignature", "TouchSignature", "PlaceSignature", "LookupSignature",
           "ScanSignature", "RdmaMessageTable", "RdmaRequestFramer", "RdmaCommandSequencer",
           "failed_entry", "RdmaResponseCheck", "RdmaResponseSequencer"]


RDMA_ADDR_BITS = dict(RDMA_TH.fields)["addr"]


class RdmaCommandLayout(data.StructLayout):
    """One DMA command: ``read`` (0: WRITE local → remote, 1: READ remote → local), ``dst``,
    ``id`` (the message id, echoed by the completion), ``remote`` and ``local`` byte addresses,
    ``length`` in octets (1 to 2^24 - 1). 19 octets with ``pad``."""
    def __init__(self):
        super().__init__({"read": 1, "dst": ENDPOINT_BITS, "id": MSG_BITS,
                          "remote": RDMA_ADDR_BITS,
                          "local": RDMA_ADDR_BITS, "length": LENGTH_BITS, "pad": 7})


def _id_bits(messages):
    return (messages - 1).bit_length()


class StaticLayout(data.StructLayout):
    """What a message's command said (written once, when it is accepted)."""
    def __init__(self, addr_width):
        super().__init__({"read": 1, "dst": ENDPOINT_BITS, "length": LENGTH_BITS,
                          "local": addr_width})


class ProgressLayout(data.StructLayout):
    """How far a message got: READ octets placed, the cycle of its last activity, and whether
    a local memory access of it failed."""
    def __init__(self):
        super().__init__({"placed": LENGTH_BITS, "stamp": STAMP_BITS, "failed": 1})


class FailedLayout(data.StructLayout):
    """What the requester keeps of a dropped WRITE or READ_REQ packet's header."""
    def __init__(self):
        super().__init__({"msg": MSG_BITS, "dst": ENDPOINT_BITS, "read": 1, "last": 1})


# The groups of controls between the parts, each seen from the part that drives most of it.

class SendingSignature(wiring.Signature):
    """The message the command side is sending (``active``), whose message ``id`` cannot time
    out or take a response yet."""
    def __init__(self):
        super().__init__({"active": Out(1), "id": Out(MSG_BITS)})


class RefusalSignature(wiring.Signature):
    """A refused command waiting for its completion (``valid``, ``id``, ``status``); ``clear``
    in the cycle the completion is taken."""
    def __init__(self):
        super().__init__({"valid": Out(1), "id": Out(MSG_BITS), "status": Out(CompletionStatus),
                          "clear": In(1)})


class OpenSignature(wiring.Signature):
    """Open message ``id`` with its ``entry`` (a strobe, ``en``)."""
    def __init__(self, messages, addr_width):
        super().__init__({"en": Out(1), "id": Out(_id_bits(messages)),
                          "entry": Out(StaticLayout(addr_width))})


class ReleaseSignature(wiring.Signature):
    """A strobe ``en`` on message ``id``: close it, or mark it unreachable."""
    def __init__(self, messages):
        super().__init__({"en": Out(1), "id": Out(_id_bits(messages))})


class TouchSignature(wiring.Signature):
    """Restart the timeout of message ``id`` (no octets placed, ``failed``); wait for
    ``granted`` (the progress table's write port is the response side's first)."""
    def __init__(self, messages):
        super().__init__({"en": Out(1), "id": Out(_id_bits(messages)), "failed": Out(1),
                          "granted": In(1)})


class PlaceSignature(wiring.Signature):
    """Write message ``id``'s ``progress`` (a strobe, ``en``; it always has the port)."""
    def __init__(self, messages):
        super().__init__({"en": Out(1), "id": Out(_id_bits(messages)),
                          "progress": Out(ProgressLayout())})


class LookupSignature(wiring.Signature):
    """Read the static and the progress entries of a message: addresses out, the entries back
    one cycle later."""
    def __init__(self, messages, addr_width):
        super().__init__({"static_addr": Out(_id_bits(messages)),
                          "progress_addr": Out(_id_bits(messages)),
                          "static": In(StaticLayout(addr_width)),
                          "progress": In(ProgressLayout())})


class ScanSignature(wiring.Signature):
    """The timeout scanner: ``idle`` (the response side can take an expiry), ``step`` (visit
    the next message); back, message ``id`` ``expired`` with ``status`` (TIMEOUT or
    UNREACHABLE)."""
    def __init__(self, messages):
        super().__init__({"idle": Out(1), "step": Out(1), "expired": In(1),
                          "id": In(_id_bits(messages)), "status": In(CompletionStatus)})


class RdmaMessageTable(wiring.Component):
    """Keep the state of every message slot: outstanding, unreachable, what its command said,
    how far it got; find the messages that timed out.

    ``open`` marks a message outstanding (and reachable) and writes its static entry; ``close``
    ends it; ``mark`` makes it unreachable (``close`` and ``mark`` win over ``open`` on the same
    message). ``place`` (the response side) and ``touch`` (the command side, when granted)
    write a message's progress entry stamped with ``now``; ``place`` wins. ``lookup`` reads
    both entries (transparent to their writes). The scanner visits one message per ``scan.step``;
    a visited message outstanding, not being sent and untouched for ``timeout_cycles`` (judged
    in the cycle after the step, when the response side steps again) is ``scan.expired`` from
    the cycle after that until the next ``scan.idle`` without a step.

    Members
    -------
    open : In(OpenSignature); close, mark : In(ReleaseSignature)
    touch : In(TouchSignature); place : In(PlaceSignature)
    lookup : In(LookupSignature); scan : In(ScanSignature)
    sending : In(SendingSignature)
    busy : Out(messages)
        One bit per outstanding message (registered).
    outstanding : Out(range(messages + 1))
    now : Out(STAMP_BITS)
        The free-running cycle count stamps are taken from.

    Latency: ``busy``, ``outstanding`` follow ``open``/``close`` by 1 cycle; ``lookup`` entries
    follow their address by 1; ``scan.expired`` follows its ``step`` by 2 (a register after the
    age's compare).

    Throughput: one open, one close or mark, one progress write and one lookup per cycle.
    """
    def __init__(self, messages=16, addr_width=32, timeout_cycles=4096):
        self.messages = messages
        self.addr_width = addr_width
        self.timeout_cycles = timeout_cycles
        super().__init__({
            "open": In(OpenSignature(messages, addr_width)),
            "close": In(ReleaseSignature(messages)),
            "mark": In(ReleaseSignature(messages)),
            "touch": In(TouchSignature(messages)),
            "place": In(PlaceSignature(messages)),
            "lookup": In(LookupSignature(messages, addr_width)),
            "scan": In(ScanSignature(messages)),
            "sending": In(SendingSignature()),
            "busy": Out(messages),
            "outstanding": Out(range(messages + 1)),
            "now": Out(STAMP_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        id_bits = _id_bits(self.messages)

        now = Signal(STAMP_BITS)
        m.d.sync += now.eq(now + 1)
        busy = Signal(self.messages)
        unreachable = Signal(self.messages)     # a packet of the message was dropped
        level = Signal(range(self.messages + 1))
        m.d.sync += level.eq(level + self.open.en - self.close.en)
        m.d.comb += [self.outstanding.eq(level), self.busy.eq(busy), self.now.eq(now)]
        with m.If(self.open.en):
            m.d.sync += [busy.bit_select(self.open.id, 1).eq(1),
                         unreachable.bit_select(self.open.id, 1).eq(0)]
        with m.If(self.mark.en):
            m.d.sync += unreachable.bit_select(self.mark.id, 1).eq(1)
        with m.If(self.close.en):
            m.d.sync += busy.bit_select(self.close.id, 1).eq(0)

        m.submodules.static = static = Memory(shape=StaticLayout(self.addr_width),
                                              depth=self.messages, init=[])
        static_wr = static.write_port()
        static_rd = static.read_port(transparent_for=(static_wr,))
        m.submodules.progress = progress = Memory(shape=ProgressLayout(), depth=self.messages,
                                                  init=[])
        progress_wr = progress.write_port()
        progress_rd = progress.read_port(transparent_for=(progress_wr,))
        progress_scan = progress.read_port(transparent_for=(progress_wr,))
        m.d.comb += [
            static_wr.en.eq(self.open.en), static_wr.addr.eq(self.open.id),
            static_wr.data.eq(self.open.entry),
            static_rd.addr.eq(self.lookup.static_addr), self.lookup.static.eq(static_rd.data),
            progress_rd.addr.eq(self.lookup.progress_addr),
            self.lookup.progress.eq(progress_rd.data),
        ]
        # One progress write port: the response side has it when it wants it, the command
        # side waits a cycle.
        touched = Signal(ProgressLayout())
        m.d.comb += [touched.placed.eq(0), touched.stamp.eq(now),
                     touched.failed.eq(self.touch.failed)]
        m.d.comb += [
            progress_wr.en.eq(self.place.en | self.touch.en),
            progress_wr.addr.eq(Mux(self.place.en, self.place.id, self.touch.id)),
            progress_wr.data.eq(Mux(self.place.en, self.place.progress, touched)),
            self.touch.granted.eq(self.touch.en & ~self.place.en),
        ]

        # The scanner, two stages: a step reads the visited message's progress entry; in the
        # next cycle its age is judged and the verdict goes into a register (``expired``), so
        # the response side's choice of what to do next starts from a register, not from the
        # progress memory through the age's subtraction. A verdict counts only while the
        # response side keeps stepping (idle with nothing else to do): a message visited
        # while it turns to other work is visited again on the next round.
        ptr = Signal(id_bits)
        ptr_r = Signal(id_bits)         # the message whose entry is on the scan port
        scanned = Signal()              # ... read by a step in the cycle before
        expired = Signal()
        expired_id = Signal(id_bits)
        m.d.comb += progress_scan.addr.eq(ptr)
        with m.If(self.scan.idle):
            m.d.sync += scanned.eq(0)
            with m.If(self.scan.step):
                m.d.sync += [ptr.eq(ptr + 1), ptr_r.eq(ptr), scanned.eq(1)]
        sending = self.sending.active & (self.sending.id[:id_bits] == ptr_r)
        # A progress write to the message in the judging cycle is not on the scan port yet:
        # the message was just touched or placed, so it has not timed out.
        written = progress_wr.en & (progress_wr.addr == ptr_r)
        m.d.sync += [
            expired.eq(scanned & self.scan.step & (busy >> ptr_r)[0] & ~sending & ~written &
                       ((now - progress_scan.data.stamp)[:STAMP_BITS] >= self.timeout_cycles)),
            expired_id.eq(ptr_r),
        ]
        with m.If(self.scan.idle & ~self.scan.step):
            m.d.sync += expired.eq(0)           # taken, or the response side turned away
        m.d.comb += [
            self.scan.expired.eq(expired),
            self.scan.id.eq(expired_id),
            self.scan.status.eq(Mux((unreachable >> expired_id)[0],
                                    CompletionStatus.UNREACHABLE, CompletionStatus.TIMEOUT)),
        ]
        return m


class PacketPositionSignature(wiring.Signature):
    """Where the packet being sent sits in its message (a :class:`~.dma.PacketSender`'s
    ``offset``, ``index``, ``octets``, ``last``)."""
    def __init__(self):
        super().__init__({"offset": Out(LENGTH_BITS), "index": Out(16),
                          "octets": Out(range(MAX_PACKET_OCTETS + 1)), "last": Out(1)})


class RdmaRequestFramer(wiring.Component):
    """Make the header of a command's current packet and its local read.

    WRITE packet ``k`` (``position``): ``addr = remote + offset``, ``first``/``last`` flags,
    the packet's octets, entropy ``(id ^ k)[15:0]`` (spec §9); a READ_REQ: ``addr = remote``,
    the whole ``length``, entropy ``id``; both on VC 2 to the command's ``dst`` from
    ``local_id``. ``read`` is the move that fetches the packet's payload (``local + offset``).

    Members
    -------
    command : In(RdmaCommandLayout())
    local_id : In(ENDPOINT_BITS)
    position : In(PacketPositionSignature)
    header : Out(HeaderLayout)
    read : Out(MoveLayout(addr_width))

    Latency: combinational. Throughput: one header per cycle.
    """
    def __init__(self, addr_width=32):
        self.addr_width = addr_width
        super().__init__({
            "command": In(RdmaCommandLayout()),
            "local_id": In(ENDPOINT_BITS),
            "position": In(PacketPositionSignature()),
            "header": Out(HeaderLayout()),
            "read": Out(MoveLayout(addr_width)),
        })

    def elaborate(self, platform):
        m = Module()
        cur, pos = self.command, self.position
        hdr = self.header
        th = hdr.th.rdma
        m.d.comb += [
            hdr.oefh.ver.eq(OEFH_VERSION), hdr.oefh.vc.eq(VirtualChannel.RDMA_REQ),
            hdr.oefh.dst.eq(cur.dst), hdr.oefh.src.eq(self.local_id),
            th.msg.eq(cur.id),
            # Ref: spec §9 — WRITE packets are sprayed: entropy msg ^ packet_index; project
            # choice (docs/nic.md): a READ_REQ's is its msg (``index`` stays 0).
            hdr.oefh.entropy.eq(cur.id ^ pos.index),
            th.opcode.eq(Mux(cur.read, Opcode.READ_REQ, Opcode.WRITE)),
            th.first.eq(pos.offset == 0), th.last.eq(cur.read | pos.last),
            th.addr.eq(cur.remote + pos.offset), th.offset.eq(pos.offset),
            # Ref: spec §4.2 — READ_REQ: the octets wanted; WRITE: the octets of this packet.
            th.length.eq(Mux(cur.read, cur.length, pos.octets)),
            self.read.addr.eq(cur.local + pos.offset), self.read.octets.eq(pos.octets),
        ]
        return m


class RdmaCommandSequencer(wiring.Component):
    """Admit DMA commands one at a time and send each as WRITE packets or one READ_REQ.

    A command whose ``id`` is busy or not below ``messages`` is refused with BAD_TAG, one with
    length 0, an address not a multiple of ``beat_octets`` or a local range past the AXI
    address space with ADDRESS_ERROR: ``refusal`` holds it (and ``cmd`` waits) until its
    completion is taken. Otherwise the message is opened in the table (``open``), its timeout
    started (``touch``) and its packets sent: a WRITE's payloads read from local memory (one
    packet at a time, header and read side by side), a READ_REQ with an empty payload. A
    WRITE's timeout restarts from its last packet (``touch``); a failed local read marks the
    message ``failed`` in that write. ``sending`` is high from admission to the end.

    Members
    -------
    local_id : In(ENDPOINT_BITS)
    cmd : In(stream.Signature(RdmaCommandLayout()))
    o : Out(PacketStream(beat_octets))
        WRITE/READ_REQ frames (VC 2).
    m_axi : Out(Axi4Signature(addr_width, beat_octets, write=False))
    busy : In(messages)
    open : Out(OpenSignature); touch : Out(TouchSignature)
    refusal : Out(RefusalSignature); sending : Out(SendingSignature)
    read_error : Out(1)
        A local read failed (this cycle).
    count : Out(Counters)
        :attr:`COUNTERS`.

    Latency: a READ_REQ's first beat leaves 3 cycles after its ``cmd`` transfer (the check 1,
    the table write 1, the deparser 1); a WRITE's first beat follows its first read data by 1.

    Throughput: one command at a time; a WRITE streams one beat per cycle within a packet.
    ``cmd.ready`` depends on registers only.
    """
    COUNTERS = ("commands", "bad_ids", "refused", "packets_sent")

    def __init__(self, beat_octets=8, messages=16, mtu=1024, addr_width=32):
        self.beat_octets = beat_octets
        self.messages = messages
        self.mtu = mtu
        self.addr_width = addr_width
        super().__init__({
            "local_id": In(ENDPOINT_BITS),
            "cmd": In(stream.Signature(RdmaCommandLayout())),
            "o": Out(PacketStream(beat_octets)),
            "m_axi": Out(Axi4Signature(addr_width, beat_octets, write=False)),
            "busy": In(messages),
            "open": Out(OpenSignature(messages, addr_width)),
            "touch": Out(TouchSignature(messages)),
            "refusal": Out(RefusalSignature()),
            "sending": Out(SendingSignature()),
            "read_error": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        beat_bits = (W - 1).bit_length()
        id_bits = _id_bits(self.messages)
        counters = CounterBank(m, self.count)

        m.submodules.reader = reader = AxiReader(W, self.addr_width)
        m.submodules.deparser = deparser = OefhDeparser(W)
        m.submodules.framer = framer = RdmaRequestFramer(self.addr_width)
        wiring.connect(m, wiring.flipped(self.m_axi), reader.m_axi)
        wiring.connect(m, deparser.o, wiring.flipped(self.o))
        cmd = self.cmd.payload
        cur = Signal(RdmaCommandLayout())
        tx_active = Signal()        # ``cur`` is being sent: its message cannot time out
        sender = PacketSender(m, self.mtu, deparser, reader)
        m.d.comb += [
            framer.command.eq(cur), framer.local_id.eq(self.local_id),
            framer.position.offset.eq(sender.offset), framer.position.index.eq(sender.index),
            framer.position.octets.eq(sender.octets), framer.position.last.eq(sender.last),
            deparser.header.payload.eq(framer.header),
            reader.cmd.payload.addr.eq(framer.read.addr),
            reader.cmd.payload.octets.eq(framer.read.octets),
            self.sending.active.eq(tx_active), self.sending.id.eq(cur.id),
            self.read_error.eq(reader.error),
        ]
        tx_failed = Signal()        # a local read of the message being sent failed
        m.d.comb += self.touch.failed.eq(tx_failed)
        with m.If(reader.error):
            m.d.sync += tx_failed.eq(1)

        id_free = (cmd.id < self.messages) & ~(self.busy >> cmd.id[:id_bits])[0]
        end = cmd.local + cmd.length
        well_formed = ((cmd.length != 0) & (cmd.remote[:beat_bits] == 0) &
                       (cmd.local[:beat_bits] == 0) & (end <= (1 << self.addr_width)))
        refused = self.refusal.valid    # a refused command's completion waits for the RX side
        refused_id, refused_status = self.refusal.id, self.refusal.status
        with m.If(self.refusal.clear):
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
                        entry = self.open.entry
                        m.d.comb += [
                            self.open.en.eq(1), self.open.id.eq(cmd.id[:id_bits]),
                            entry.read.eq(cmd.read), entry.dst.eq(cmd.dst),
                            entry.length.eq(cmd.length), entry.local.eq(cmd.local),
                        ]
                        m.d.sync += tx_active.eq(1)
                        counters["commands"].increment(m, 1)
                        m.next = "START"
            with m.State("START"):
                m.d.comb += [self.touch.en.eq(1), self.touch.id.eq(cur.id[:id_bits])]
                with m.If(self.touch.granted):
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
                m.d.comb += [self.touch.en.eq(1), self.touch.id.eq(cur.id[:id_bits])]
                with m.If(self.touch.granted):
                    m.d.sync += tx_active.eq(0)
                    m.next = "IDLE"
        return m


def failed_entry(head):
    """The :class:`FailedLayout` entry of a dropped RDMA packet's header."""
    return {"msg": head.th.rdma.msg, "dst": head.oefh.dst,
            "read": head.th.rdma.opcode == Opcode.READ_REQ, "last": head.th.rdma.last}


class RdmaResponseCheck(wiring.Component):
    """Decide what a response (``header``) does to its message (``entry``, ``progress``).

    ``live``: the message is outstanding (``busy``), not being sent, and the response comes
    from the message's ``dst`` (msg ids are unique per source, spec §4.2); else the response
    is unexpected. ``verdict``: an ACK of a WRITE, or a READ_RSP refusing a READ (a defined
    non-OK status, no length, offset 0): the target's word on the whole message. ``place``:
    an OK READ_RSP of a READ that fits inside the message at a beat-aligned offset.
    ``placed``: the message's octets with this response's.

    Members
    -------
    header : In(HeaderLayout); entry : In(StaticLayout); progress : In(ProgressLayout)
    busy : In(messages); sending : In(SendingSignature)
    live, verdict, place : Out(1); placed : Out(LENGTH_BITS + 1)

    Latency: combinational. Throughput: one response per cycle.
    """
    def __init__(self, beat_octets=8, messages=16, addr_width=32):
        self.beat_octets = beat_octets
        self.messages = messages
        super().__init__({
            "header": In(HeaderLayout()),
            "entry": In(StaticLayout(addr_width)),
            "progress": In(ProgressLayout()),
            "busy": In(messages),
            "sending": In(SendingSignature()),
            "live": Out(1), "verdict": Out(1), "place": Out(1),
            "placed": Out(LENGTH_BITS + 1),
        })

    def elaborate(self, platform):
        m = Module()
        beat_bits = (self.beat_octets - 1).bit_length()
        id_bits = _id_bits(self.messages)
        r, entry = self.header.th.rdma, self.entry
        live = ((r.msg < self.messages) & (self.busy >> r.msg[:id_bits])[0] &
                ~(self.sending.active & (self.sending.id == r.msg)) &
                (self.header.oefh.src == entry.dst))
        sane = r.status <= Status.ADDRESS_ERROR
        is_ack = live & sane & (r.opcode == Opcode.ACK) & ~entry.read
        is_rsp = live & sane & (r.opcode == Opcode.READ_RSP) & entry.read
        fits = ((r.length != 0) & (r.length <= MAX_PACKET_OCTETS) &
                (r.offset[:beat_bits] == 0) & (r.offset + r.length <= entry.length))
        # A refused READ is answered by one READ_RSP with its status and nothing else.
        refusal = is_rsp & (r.status != Status.OK) & (r.length == 0) & (r.offset == 0)
        m.d.comb += [
            self.live.eq(live), self.verdict.eq(is_ack | refusal),
            self.place.eq(is_rsp & (r.status == Status.OK) & fits),
            self.placed.eq(self.progress.placed + r.length),
        ]
        return m


class RdmaResponseSequencer(wiring.Component):
    """Take responses, timeouts, failures and refusals one at a time and complete messages.

    In order of priority, when idle: an expired message (``scan``) completes with TIMEOUT or
    UNREACHABLE; a refused command (``refusal``) with its status; a failed packet's entry
    (``failed``) that names an outstanding message (msg, dst, kind) completes it with
    UNREACHABLE if it was the message's last packet and the message is no longer being sent,
    else marks it unreachable (``mark``), and else is counted (``stale_fails``); a response
    header is checked (:class:`RdmaResponseCheck`): a verdict completes the message after its
    frame (ADDRESS_ERROR if OK but a local access failed), an acceptable READ_RSP's payload is
    written to ``local + offset`` and, if exactly ``length`` octets, counted towards the
    message (``place``; complete when all octets are placed), anything else is dropped and
    counted (``unexpected`` or ``mismatched``). With nothing to do it steps the scanner.
    A completion closes its message (``close``) when taken.

    Members
    -------
    i : In(PacketStream(beat_octets))
        ACK/READ_RSP frames (FCS removed).
    failed : In(stream.Signature(FailedLayout()))
    cpl : Out(stream.Signature(CompletionLayout()))
    m_axi : Out(Axi4Signature(addr_width, beat_octets, read=False))
    busy : In(messages); now : In(STAMP_BITS)
    sending : In(SendingSignature); refusal : In(RefusalSignature)
    lookup : Out(LookupSignature); scan : Out(ScanSignature)
    place : Out(PlaceSignature); close, mark : Out(ReleaseSignature)
    write_error : Out(1)
        A local write failed (this cycle).
    count : Out(Counters)
        :attr:`COUNTERS`.

    Latency: a ``failed`` entry of a message's last packet makes its UNREACHABLE ``cpl``
    valid 2 cycles after its transfer (the table read 1, the check 1).

    Throughput: one event at a time; a READ_RSP's payload moves one beat per cycle.
    """
    COUNTERS = ("completions", "timeouts", "packets_received", "unexpected", "mismatched",
                "unreachable", "stale_fails")

    def __init__(self, beat_octets=8, messages=16, addr_width=32):
        self.beat_octets = beat_octets
        self.messages = messages
        self.addr_width = addr_width
        super().__init__({
            "i": In(PacketStream(beat_octets)),
            "failed": In(stream.Signature(FailedLayout())),
            "cpl": Out(stream.Signature(CompletionLayout())),
            "m_axi": Out(Axi4Signature(addr_width, beat_octets, read=False)),
            "busy": In(messages),
            "now": In(STAMP_BITS),
            "sending": In(SendingSignature()),
            "refusal": In(RefusalSignature()),
            "lookup": Out(LookupSignature(messages, addr_width)),
            "scan": Out(ScanSignature(messages)),
            "place": Out(PlaceSignature(messages)),
            "close": Out(ReleaseSignature(messages)),
            "mark": Out(ReleaseSignature(messages)),
            "write_error": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        """One FSM owns the completions: its states are the ways a message ends, and they share
        ``cpl_id`` and ``status``. That is why this ``elaborate`` is ~145 lines: splitting the
        FSM would split those registers and change its encoding."""
        m = Module()
        W = self.beat_octets
        id_bits = _id_bits(self.messages)
        counters = CounterBank(m, self.count)

        m.submodules.parser = parser = OefhParser(W)
        m.submodules.writer = writer = AxiWriter(W, self.addr_width)
        m.submodules.check = check = RdmaResponseCheck(W, self.messages, self.addr_width)
        wiring.connect(m, wiring.flipped(self.i), parser.i)
        wiring.connect(m, wiring.flipped(self.m_axi), writer.m_axi)
        failed = Signal(FailedLayout())
        rh = Signal(HeaderLayout())
        r = rh.th.rdma
        lookup = self.lookup
        m.d.comb += [lookup.static_addr.eq(parser.header.payload.th.rdma.msg[:id_bits]),
                     lookup.progress_addr.eq(parser.header.payload.th.rdma.msg[:id_bits])]
        # The tables' entries of the response's msg: on the read ports in CHECK, held after.
        entry_r = Signal(StaticLayout(self.addr_width))
        done_r = Signal(ProgressLayout())
        in_check = Signal()
        entry = Signal(StaticLayout(self.addr_width))
        done_so_far = Signal(ProgressLayout())
        m.d.comb += [entry.eq(Mux(in_check, lookup.static, entry_r)),
                     done_so_far.eq(Mux(in_check, lookup.progress, done_r))]
        m.d.comb += [check.header.eq(rh), check.entry.eq(entry),
                     check.progress.eq(done_so_far), check.busy.eq(self.busy)]
        wiring.connect(m, wiring.flipped(self.sending), check.sending)
        cpl_id = Signal(MSG_BITS)
        status = Signal(CompletionStatus)
        m.d.comb += [self.cpl.payload.tag.eq(cpl_id), self.cpl.payload.status.eq(status)]
        counters["completions"].increment(m, self.cpl.valid & self.cpl.ready)
        counters["unreachable"].increment(m, self.cpl.valid & self.cpl.ready &
                                          (status == CompletionStatus.UNREACHABLE))
        m.d.comb += self.write_error.eq(writer.done.valid & writer.done.ready &
                                        ~writer.done.payload.ok)
        after_drain = Signal()      # DRAIN goes on to CPL (else to IDLE)
        exact = Signal()
        write_ok = Signal()
        move_sent = Signal()
        m.d.comb += [writer.cmd.payload.addr.eq(entry.local + r.offset),
                     writer.cmd.payload.octets.eq(r.length),
                     writer.cmd.payload.write.eq(1)]

        with m.FSM(name="rx"):
            with m.State("IDLE"):
                m.d.comb += self.scan.idle.eq(1)
                with m.If(self.scan.expired):
                    m.d.sync += [cpl_id.eq(self.scan.id), status.eq(self.scan.status)]
                    counters["timeouts"].increment(m, self.scan.status ==
                                                   CompletionStatus.TIMEOUT)
                    m.next = "CPL"
                with m.Elif(self.refusal.valid):
                    m.d.sync += [cpl_id.eq(self.refusal.id), status.eq(self.refusal.status)]
                    m.next = "REFUSED"
                with m.Elif(self.failed.valid):
                    m.d.comb += [self.failed.ready.eq(1),
                                 lookup.static_addr.eq(self.failed.payload.msg[:id_bits])]
                    m.d.sync += failed.eq(self.failed.payload)
                    m.next = "FAIL"
                with m.Elif(parser.header.valid):
                    m.d.comb += parser.header.ready.eq(1)
                    m.d.sync += rh.eq(parser.header.payload)
                    m.next = "CHECK"
                with m.Else():
                    m.d.comb += self.scan.step.eq(1)
            with m.State("FAIL"):
                # The static entry of the dropped packet's msg is on lookup.static this cycle.
                sending = self.sending.active & (self.sending.id == failed.msg)
                with m.If((failed.msg < self.messages) & (self.busy >> failed.msg[:id_bits])[0] &
                          (lookup.static.dst == failed.dst) &
                          (lookup.static.read == failed.read)):
                    with m.If(failed.last & ~sending):
                        m.d.sync += [cpl_id.eq(failed.msg),
                                     status.eq(CompletionStatus.UNREACHABLE)]
                        m.next = "CPL"
                    with m.Else():
                        m.d.comb += [self.mark.en.eq(1), self.mark.id.eq(failed.msg[:id_bits])]
                        m.next = "IDLE"
                with m.Else():
                    counters["stale_fails"].increment(m, 1)
                    m.next = "IDLE"
            with m.State("REFUSED"):
                m.d.comb += self.cpl.valid.eq(1)
                with m.If(self.cpl.ready):
                    m.d.comb += self.refusal.clear.eq(1)
                    m.next = "IDLE"
            with m.State("CHECK"):
                m.d.comb += in_check.eq(1)
                m.d.sync += [cpl_id.eq(r.msg), move_sent.eq(0), after_drain.eq(0),
                             entry_r.eq(lookup.static), done_r.eq(lookup.progress)]
                with m.If(check.verdict):
                    # The target's verdict on the whole message.
                    m.d.sync += [after_drain.eq(1),
                                 status.eq(Mux((r.status == Status.OK) & done_so_far.failed,
                                               CompletionStatus.ADDRESS_ERROR, r.status))]
                    counters["packets_received"].increment(m, 1)
                    m.next = "DRAIN"
                with m.Elif(check.place):
                    m.next = "PLACE"
                with m.Else():
                    counters["unexpected"].increment(m, ~check.live)
                    counters["mismatched"].increment(m, check.live)
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
                    progress = self.place.progress
                    m.d.comb += [self.place.en.eq(1), self.place.id.eq(r.msg[:id_bits]),
                                 progress.placed.eq(check.placed), progress.stamp.eq(self.now),
                                 progress.failed.eq(done_so_far.failed | ~write_ok)]
                    counters["packets_received"].increment(m, 1)
                    with m.If(check.placed == entry.length):
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
                    m.d.comb += [self.close.en.eq(1), self.close.id.eq(cpl_id[:id_bits])]
                    m.next = "IDLE"
        return m
