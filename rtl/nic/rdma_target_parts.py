"""The components an :class:`~.rdma_target.RdmaTarget` is made of, one job each: the request
check (is a request's range aligned, inside the address space and granted by a window; is a
WRITE well formed), the WRITE message contexts (which messages are being placed, how far
each got, which went stale) and the response framer (an ACK's or a READ_RSP's header).

Ref: spec §4.2, §9, §11 (the target's rules; :class:`~.rdma_target.RdmaTarget` says which
part implements which).
"""

from amaranth.hdl import Module, Signal, Cat, Const, Mux
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..arbiter import one_hot_index
from ..counters import CounterBank, Counters
from ..regbus import RegisterBus
from ..wire import ENDPOINT_BITS, HeaderLayout, Opcode, Status, VirtualChannel, OEFH_VERSION
from . import csr
from .dma import MoveLayout, LENGTH_BITS
from .engine import LINE_OCTETS, MSG_BITS, STAMP_BITS
from .rdma_requester_parts import RDMA_ADDR_BITS, PacketPositionSignature
from .windows import target_registers, count_refusal

__all__ = ["MAX_MESSAGE_OCTETS", "WindowQuerySignature", "MessageKeyLayout",
           "ContextClaimSignature", "ContextSweepSignature", "ContextAccountSignature",
           "TargetEventsSignature", "RdmaTargetCheck", "RdmaWriteContexts", "RdmaResponseFramer",
           "RdmaTargetRegisters"]

#: The longest message: ``offset`` and ``length`` are 24-bit TH fields.
MAX_MESSAGE_OCTETS = (1 << LENGTH_BITS) - 1

_LINE_BITS = (LINE_OCTETS - 1).bit_length()
#: The widths of a request's first line and of the line past its last (``addr + length``
#: rounded up to a line).
_FIRST_LINE_BITS = RDMA_ADDR_BITS - _LINE_BITS
_END_LINE_BITS = len((Signal(RDMA_ADDR_BITS + 1) + LINE_OCTETS - 1)[_LINE_BITS:])
_PERM_BITS = max(csr.PERM_READ, csr.PERM_WRITE).bit_length()


class WindowQuerySignature(wiring.Signature):
    """Ask the memory windows whether one of them holds lines ``first_line`` …
    ``end_line - 1`` with a permission of ``need``; ``granted`` back, combinationally."""
    def __init__(self):
        super().__init__({"first_line": Out(_FIRST_LINE_BITS), "end_line": Out(_END_LINE_BITS),
                          "need": Out(_PERM_BITS), "granted": In(1)})


class RdmaTargetCheck(wiring.Component):
    """Check a request (``header``, taken with ``load``) against the address space and the
    memory windows.

    ``status``: ADDRESS_ERROR if ``addr`` is not a multiple of ``beat_octets`` or ``[addr,
    addr + length)`` runs past the ``addr_width``-bit address space, else ACCESS_DENIED
    unless the windows grant every line of the range (``window``; write permission for a
    WRITE, read for anything else), else OK. ``total``: ``offset + length``, the message's
    length if the packet is its last. ``bad_write``: a WRITE of this length and offset is
    malformed (0 or more than ``mtu`` octets, or past a 16 MiB message).

    The sums (the range's end, its lines, ``total``) and the compares on them are made in
    the cycle ``load`` takes the header and kept in registers: the window check that decides
    ``status`` then starts from flip-flops, not behind two adders.

    Members
    -------
    header : In(HeaderLayout); load : In(1)
    window : Out(WindowQuerySignature)
    status : Out(Status); total : Out(LENGTH_BITS + 1); bad_write : Out(1)

    Latency: the answers for the header taken with ``load`` in cycle *t* hold from *t* + 1
    until the next ``load`` (``status`` follows the windows' registers combinationally).
    Throughput: one request per cycle.
    """
    def __init__(self, beat_octets=8, addr_width=32, mtu=1024):
        self.beat_octets = beat_octets
        self.addr_width = addr_width
        self.mtu = mtu
        super().__init__({
            "header": In(HeaderLayout()),
            "load": In(1),
            "window": Out(WindowQuerySignature()),
            "status": Out(Status),
            "total": Out(LENGTH_BITS + 1),
            "bad_write": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        beat_bits = (self.beat_octets - 1).bit_length()
        r = self.header.th.rdma
        end = Signal(r.addr.shape().width + 1)
        total = Signal.like(self.total)
        m.d.comb += [end.eq(r.addr + r.length), total.eq(r.offset + r.length)]
        address_error = Signal()
        query = self.window
        with m.If(self.load):
            m.d.sync += [
                # Ref: spec §11 — every line of the range in one window, with the permission.
                query.first_line.eq(r.addr[_LINE_BITS:]),
                query.end_line.eq((end + LINE_OCTETS - 1)[_LINE_BITS:]),
                query.need.eq(Mux(r.opcode == Opcode.WRITE, csr.PERM_WRITE, csr.PERM_READ)),
                address_error.eq((r.addr[:beat_bits] != 0) | (end > (1 << self.addr_width))),
                self.total.eq(total),
                self.bad_write.eq((r.length == 0) | (r.length > self.mtu) |
                                  (total > MAX_MESSAGE_OCTETS)),
            ]
        with m.If(address_error):
            m.d.comb += self.status.eq(Status.ADDRESS_ERROR)
        with m.Elif(~query.granted):
            m.d.comb += self.status.eq(Status.ACCESS_DENIED)
        with m.Else():
            m.d.comb += self.status.eq(Status.OK)
        return m


class MessageKeyLayout(data.StructLayout):
    """What names a WRITE message at the target: its source endpoint and its msg id."""
    def __init__(self):
        super().__init__({"src": ENDPOINT_BITS, "msg": MSG_BITS})


# The controls of the contexts, each seen from the sequencer that drives them.

class ContextClaimSignature(wiring.Signature):
    """Find the context of message ``key``: ``hit`` (it has one), ``free`` (one is free);
    ``en`` takes that context, or the lowest free one, for the next ``account``."""
    def __init__(self):
        super().__init__({"key": Out(MessageKeyLayout()), "en": Out(1),
                          "hit": In(1), "free": In(1)})


class ContextSweepSignature(wiring.Signature):
    """The stale contexts: ``any`` of them, ``count`` of them; ``en`` frees them."""
    def __init__(self, contexts):
        super().__init__({"en": Out(1), "any": In(1), "count": In(range(contexts + 1))})


class ContextAccountSignature(wiring.Signature):
    """Add a placed WRITE packet (``length`` octets, ``last`` with ``total``, ``status``) to
    the claimed context (a strobe, ``en``); back, combinationally: ``complete`` (the message's
    octets add up, the context is freed), its ACK's ``ack_length`` and ``ack_status``."""
    def __init__(self):
        super().__init__({"en": Out(1), "length": Out(LENGTH_BITS), "last": Out(1),
                          "total": Out(LENGTH_BITS + 1), "status": Out(Status),
                          "complete": In(1), "ack_length": In(LENGTH_BITS),
                          "ack_status": In(Status)})


class RdmaWriteContexts(wiring.Component):
    """Keep one context per WRITE message being placed: its key, the octets placed, its total
    (once its last packet came), its first non-OK status and when it was last touched.

    ``claim.en`` takes the context of ``claim.key`` if one is valid (``claim.hit``), else the
    lowest free one (``claim.free``: there is one). ``account.en`` adds a packet to the
    claimed context (a fresh one starts from nothing) and stamps it; when its octets reach
    the known total (``account.complete``) the context is freed. ``account.ack_status`` is
    the context's first non-OK status, else the packet's, ADDRESS_ERROR if more octets than
    the total were placed. A valid context untouched for ``timeout_cycles`` is stale
    (``sweep``); ``sweep.en`` frees every stale one.

    Members
    -------
    claim : In(ContextClaimSignature)
    account : In(ContextAccountSignature)
    sweep : In(ContextSweepSignature)

    Latency: ``claim`` and ``account`` answer combinationally. The claimed context, with
    ``account``'s ``length``, ``last`` and ``total`` added, is prepared in the cycle after
    ``claim.en``: those must hold from then on, and ``account.en`` come two cycles after the
    claim at the earliest. A freed context is free the cycle after ``en``; a context is
    stale the cycle after it reached ``timeout_cycles`` (the judgement is a register).

    Throughput: one claim, one account or one sweep per cycle.
    """
    def __init__(self, contexts=8, timeout_cycles=4096):
        self.contexts = contexts
        self.timeout_cycles = timeout_cycles
        super().__init__({
            "claim": In(ContextClaimSignature()),
            "account": In(ContextAccountSignature()),
            "sweep": In(ContextSweepSignature(contexts)),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.contexts
        now = Signal(STAMP_BITS)
        m.d.sync += now.eq(now + 1)

        valid = Signal(n)
        src = [Signal(ENDPOINT_BITS, name=f"ctx{c}_src") for c in range(n)]
        msg = [Signal(MSG_BITS, name=f"ctx{c}_msg") for c in range(n)]
        placed = [Signal(LENGTH_BITS + 1, name=f"ctx{c}_placed") for c in range(n)]
        goal = [Signal(LENGTH_BITS, name=f"ctx{c}_total") for c in range(n)]
        known = Signal(n)
        verdict = [Signal(Status, name=f"ctx{c}_status") for c in range(n)]
        stamp = [Signal(STAMP_BITS, name=f"ctx{c}_stamp") for c in range(n)]

        key = self.claim.key
        hits = Cat(valid[c] & (src[c] == key.src) & (msg[c] == key.msg) for c in range(n))
        free = Signal(n)            # the lowest free context, one-hot
        m.d.comb += free.eq(~valid & (valid + 1))
        slot = Signal(range(max(2, n)))
        slot_hit = Signal()
        m.d.comb += [self.claim.hit.eq(hits.any()), self.claim.free.eq(free.any())]
        with m.If(self.claim.en):
            m.d.sync += [slot.eq(one_hot_index(Mux(hits.any(), hits, free))),
                         slot_hit.eq(hits.any())]

        a = self.account
        # Stale contexts, judged a cycle ahead into a register (so a sweep starts from a
        # flip-flop): a context the account or the sweep of that cycle touches is not.
        expired = Signal(n)
        touched = Signal(n)
        m.d.comb += touched.eq(Mux(self.sweep.en, expired, 0)
                               | Mux(a.en, Const(1, n) << slot, 0))
        m.d.sync += expired.eq(Cat(valid[c] & ~touched[c]
                                   & ((now - stamp[c])[:STAMP_BITS] >= self.timeout_cycles)
                                   for c in range(n)))
        m.d.comb += [self.sweep.any.eq(expired.any()),
                     self.sweep.count.eq(sum(expired[c] for c in range(n)))]

        # The claimed context with this packet added, prepared in the cycle after the claim
        # (from ``slot``, a register), so the account only compares registers.
        prepare = Signal()
        m.d.sync += prepare.eq(self.claim.en)
        now_placed = Signal(LENGTH_BITS + 1)
        now_goal = Signal(LENGTH_BITS)
        now_known = Signal()
        held_verdict = Signal(Status)           # the context's first non-OK status, or OK
        now_verdict = Mux(held_verdict != Status.OK, held_verdict, a.status)
        with m.Switch(slot):
            for c in range(n):
                with m.Case(c):
                    with m.If(prepare):
                        m.d.sync += [
                            now_placed.eq(Mux(slot_hit, placed[c], 0) + a.length),
                            now_known.eq((slot_hit & known[c]) | a.last),
                            now_goal.eq(Mux(a.last, a.total, goal[c])),
                            held_verdict.eq(Mux(slot_hit, verdict[c], Status.OK)),
                        ]
                    with m.If(a.en):
                        m.d.sync += [src[c].eq(key.src), msg[c].eq(key.msg),
                                     placed[c].eq(now_placed), goal[c].eq(now_goal),
                                     known[c].eq(now_known),
                                     verdict[c].eq(now_verdict), stamp[c].eq(now)]
        complete = now_known & (now_placed >= now_goal)
        m.d.comb += [a.complete.eq(complete), a.ack_length.eq(now_goal),
                     a.ack_status.eq(Mux(now_placed > now_goal, Status.ADDRESS_ERROR,
                                         now_verdict))]
        # A sweep and an account never come in the same cycle.
        with m.If(self.sweep.en):
            # Their messages were lost or never finished.
            m.d.sync += valid.eq(valid & ~expired)
        with m.Elif(a.en):
            m.d.sync += valid.bit_select(slot, 1).eq(~complete)
        return m


class RdmaResponseFramer(wiring.Component):
    """Make the header of the response to ``request`` and the read that fetches a READ_RSP
    packet's payload.

    ``ack``: an ACK with ``ack_status`` and ``ack_length`` (``addr`` and ``offset`` 0); else a
    READ_RSP with ``status``: while ``serving``, packet ``position`` of the read (``addr +
    offset``, its octets; ``last`` from the position), else one with no payload (a refusal).
    Responses go to the request's src, from its dst, on VC 3; entropy ``msg ^ index`` (spec
    §9; ``index`` is 0 for an ACK or a refusal). ``read``: ``addr + offset``, the packet's
    octets.

    Members
    -------
    request : In(HeaderLayout)
    position : In(PacketPositionSignature)
    ack, serving : In(1); status, ack_status : In(Status); ack_length : In(LENGTH_BITS)
    header : Out(HeaderLayout)
    read : Out(MoveLayout(addr_width))

    Latency: combinational. Throughput: one header per cycle.
    """
    def __init__(self, addr_width=32):
        self.addr_width = addr_width
        super().__init__({
            "request": In(HeaderLayout()),
            "position": In(PacketPositionSignature()),
            "ack": In(1), "serving": In(1),
            "status": In(Status), "ack_status": In(Status),
            "ack_length": In(LENGTH_BITS),
            "header": Out(HeaderLayout()),
            "read": Out(MoveLayout(addr_width)),
        })

    def elaborate(self, platform):
        m = Module()
        req, pos = self.request, self.position
        r = req.th.rdma
        hdr = self.header
        rsp = hdr.th.rdma
        acking, serving = self.ack, self.serving
        m.d.comb += [
            hdr.oefh.ver.eq(OEFH_VERSION), hdr.oefh.vc.eq(VirtualChannel.RDMA_RSP),
            hdr.oefh.dst.eq(req.oefh.src), hdr.oefh.src.eq(req.oefh.dst),
            rsp.msg.eq(r.msg),
            # Ref: spec §9 — READ_RSP packets are sprayed: entropy msg ^ packet_index; project
            # choice (docs/nic.md): an ACK's or a refused READ_RSP's is the msg.
            hdr.oefh.entropy.eq(r.msg ^ pos.index),
            rsp.opcode.eq(Mux(acking, Opcode.ACK, Opcode.READ_RSP)),
            rsp.status.eq(Mux(acking, self.ack_status, self.status)),
            rsp.first.eq(pos.offset == 0), rsp.last.eq(~serving | pos.last),
            rsp.addr.eq(Mux(acking, 0, r.addr + pos.offset)), rsp.offset.eq(pos.offset),
            rsp.length.eq(Mux(acking, self.ack_length, Mux(serving, pos.octets, 0))),
            self.read.addr.eq(r.addr + pos.offset), self.read.octets.eq(pos.octets),
        ]
        return m


class TargetEventsSignature(wiring.Signature):
    """What the target's sequencer reports for counting, strobes unless said otherwise:
    ``placed`` (a WRITE packet accounted to its message) and ``refused`` (a READ_REQ refused),
    both with the request's ``status``; ``read`` (a READ_REQ served), ``ack``, ``malformed``,
    ``unexpected``, ``no_context``, ``axi_error``; ``swept`` with ``stale`` contexts freed."""
    def __init__(self, contexts):
        super().__init__({
            "placed": Out(1), "refused": Out(1), "status": Out(Status),
            "read": Out(1), "ack": Out(1), "malformed": Out(1), "unexpected": Out(1),
            "no_context": Out(1), "axi_error": Out(1),
            "swept": Out(1), "stale": Out(range(contexts + 1)),
        })


class RdmaTargetRegisters(wiring.Component):
    """Hold the target's register file (:mod:`.csr`: ID, PARAMS, the counters, the windows),
    count the sequencer's ``events`` and answer window queries.

    A placed WRITE packet counts in ``write_packets`` if its status is OK, else (as a refused
    READ_REQ) in ``denied`` or ``address_errors`` by its status; the other events each in the
    counter of their name (``read`` in ``reads``, ``ack`` in ``acks``, ``axi_error`` in
    ``axi_errors``), ``stale`` adds its amount.

    Members
    -------
    csr : In(RegisterBus(8))
    window : In(WindowQuerySignature)
    events : In(TargetEventsSignature)
    count : Out(Counters)
        Saturating counters, :attr:`COUNTERS`.

    Latency: a counter follows its event by 1 cycle; ``window.granted`` is combinational from
    the query and the window registers. Throughput: one register access and every event each
    cycle.
    """
    COUNTERS = ("write_packets", "reads", "acks", "denied", "address_errors", "malformed",
                "unexpected", "no_context", "stale", "axi_errors")

    def __init__(self, beat_octets=8, windows=8, addr_width=32, contexts=8):
        # What :func:`~.windows.target_registers` reads the PARAMS word from.
        self.beat_octets = beat_octets
        self.windows = windows
        self.addr_width = addr_width
        super().__init__({
            "csr": In(RegisterBus(csr.ADDR_BITS)),
            "window": In(WindowQuerySignature()),
            "events": In(TargetEventsSignature(contexts)),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        counters = CounterBank(m, self.count)
        windows = target_registers(m, self, counters)
        query, ev = self.window, self.events
        m.d.comb += query.granted.eq(windows.granted(query.first_line, query.end_line,
                                                     query.need))
        with m.If(ev.placed):
            counters["write_packets"].increment(m, ev.status == Status.OK)
        with m.If(ev.placed | ev.refused):
            count_refusal(m, counters, ev.status)
        counters["reads"].increment(m, ev.read)
        counters["acks"].increment(m, ev.ack)
        counters["malformed"].increment(m, ev.malformed)
        counters["unexpected"].increment(m, ev.unexpected)
        counters["no_context"].increment(m, ev.no_context)
        counters["axi_errors"].increment(m, ev.axi_error)
        counters["stale"].add(m, ev.stale, ev.swept)
        return m
