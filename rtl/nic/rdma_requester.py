"""The NIC's RDMA requester: the DMA engine's commands out as WRITE packets (read from local
memory, segmented at the MTU) or a READ_REQ, their ACK or READ_RSP packets back (written to
local memory), one completion per command.

Ref: spec §3 (VC 2 requests, VC 3 responses, the MTU), §4.2 (RDMA TH, ACK per message, READ_RSP
octets counted per message), §9 (WRITE entropy ``msg ^ packet_index``), §11 (bogus responses
never complete a message or touch memory; nothing hangs).
"""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..compose import forward, members_of
from ..counters import CounterBank, Counters
from ..params import parameters
from ..stream import PacketStream, BEAT_OCTETS
from ..wire import ENDPOINT_BITS, HeaderLayout
from .axi import Axi4Signature, ADDR_WIDTH
from .engine import CompletionLayout, FAIL_DEPTH_MAX, FailQueue, MESSAGES, MTU, TIMEOUT_CYCLES
from .rdma_requester_parts import (RDMA_ADDR_BITS, RdmaCommandLayout, RdmaMessageTable,
                                   RdmaCommandSequencer, RdmaResponseSequencer, failed_entry,
                                   FailedLayout)

__all__ = ["RdmaRequester", "RdmaCommandLayout", "RDMA_ADDR_BITS"]


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

    It is made of one part per job (:mod:`.rdma_requester_parts`): the
    :class:`~.rdma_requester_parts.RdmaCommandSequencer` (admission, sending, with the
    :class:`~.rdma_requester_parts.RdmaRequestFramer`), the
    :class:`~.rdma_requester_parts.RdmaMessageTable` (outstanding messages, progress,
    timeouts), the :class:`~.engine.FailQueue` and the
    :class:`~.rdma_requester_parts.RdmaResponseSequencer` (responses, completions, with the
    :class:`~.rdma_requester_parts.RdmaResponseCheck`); this block only joins them and counts
    ``axi_errors``.

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
        # Commands and packets out; the message table; failures and responses in.
        m.submodules.tx = tx = RdmaCommandSequencer(W, self.messages, self.mtu, self.addr_width)
        m.submodules.table = table = RdmaMessageTable(self.messages, self.addr_width,
                                                      self.timeout_cycles)
        m.submodules.fails = fails = FailQueue(FailedLayout(), self.fail_depth, failed_entry)
        m.submodules.rx = rx = RdmaResponseSequencer(W, self.messages, self.addr_width)

        forward(m, self, tx, members_of(tx.signature, "local_id", "cmd", "o"))
        forward(m, self, rx, members_of(rx.signature, "i", "cpl"))
        wiring.connect(m, wiring.flipped(self.fail), fails.i)
        forward(m, self, table, members_of(table.signature, "outstanding"))
        forward(m, self.m_axi, tx.m_axi)
        forward(m, self.m_axi, rx.m_axi)

        wiring.connect(m, fails.o, rx.failed)
        wiring.connect(m, tx.open, table.open)
        wiring.connect(m, tx.touch, table.touch)
        wiring.connect(m, tx.refusal, rx.refusal)
        wiring.connect(m, tx.sending, rx.sending, table.sending)
        wiring.connect(m, rx.lookup, table.lookup)
        wiring.connect(m, rx.scan, table.scan)
        wiring.connect(m, rx.place, table.place)
        wiring.connect(m, rx.close, table.close)
        wiring.connect(m, rx.mark, table.mark)
        m.d.comb += [tx.busy.eq(table.busy), rx.busy.eq(table.busy), rx.now.eq(table.now)]

        forward(m, self.count, tx.count)
        forward(m, self.count, fails.count)
        forward(m, self.count, rx.count)
        counters = CounterBank(m, self.count, skip=(*tx.COUNTERS, *fails.COUNTERS,
                                                    *rx.COUNTERS))
        counters["axi_errors"].increment(m, tx.read_error | rx.write_error)
        return m
