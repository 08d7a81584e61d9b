"""The NIC's Load/Store requester: the GPU's cache-line requests out as LOAD_REQ/STORE_REQ
frames, their responses back as completions, with an outstanding-tag table and timeouts.

Ref: spec §3 (VC 0 carries L/S requests), §4.2 (L/S TH, responses copy tag and line), §9 (the
L/S entropy), §11 (bogus responses never complete an operation; nothing hangs).
"""

from amaranth.hdl import Module, Signal, Cat, C, Const, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..counters import CounterBank, Counters
from ..forwarding.deparser import OefhDeparser
from ..forwarding.parser import OefhParser
from ..params import parameters
from ..stream import PacketStream, BEAT_OCTETS, keep_count
from ..wire import (ENDPOINT_BITS, HeaderLayout, LsSize, Opcode, VirtualChannel,
                    OEFH_VERSION)
from .engine import (CompletionLayout, CompletionStatus, fail_queue, FAIL_DEPTH_MAX,
                     LINE_BITS, LINE_OCTETS, MAX_LS_OCTETS, STAMP_BITS, TAG_BITS, TAGS,
                     TIMEOUT_CYCLES)

__all__ = ["LsRequester", "LsRequestLayout"]

class LsRequestLayout(data.StructLayout):
    """One GPU L/S request: ``store`` (0 load, 1 store), ``size`` (spec §4.2 code), ``dst``,
    ``tag``, ``line`` (cache-line address)."""
    def __init__(self):
        # ``pad`` makes the request 9 whole octets (an AXI4-Stream ``tdata`` at the export).
        super().__init__({"store": 1, "size": LsSize, "dst": ENDPOINT_BITS, "tag": TAG_BITS,
                          "line": LINE_BITS, "pad": 1})


class _Failed(data.StructLayout):
    """What the requester keeps of a dropped request frame's header."""
    def __init__(self):
        super().__init__({"opcode": Opcode, "size": LsSize, "tag": TAG_BITS,
                          "dst": ENDPOINT_BITS})


class _Entry(data.StructLayout):
    def __init__(self):
        super().__init__({"store": 1, "size": LsSize, "dst": ENDPOINT_BITS,
                          "stamp": STAMP_BITS})


@parameters(beat_octets=BEAT_OCTETS, tags=TAGS, timeout_cycles=TIMEOUT_CYCLES)
class LsRequester(wiring.Component):
    """Send L/S requests, match their responses, complete every request exactly once.

    **Requests** (``req``, and for a store its data packet of exactly ``size`` octets on
    ``req_data``) leave on ``o`` as LOAD_REQ/STORE_REQ frames: VC 0, src ``local_id``, entropy
    ``line[15:0] ^ line[31:16] ^ line[43:32]`` (spec §9), the GPU's tag. A request whose tag is
    already outstanding or not below ``tags`` is not sent; it completes with BAD_TAG.

    **Responses** (frames on ``i``, FCS removed) complete the outstanding request of their tag
    if they match it: LOAD_RSP for a load, STORE_RSP for a store, same size, src = the
    request's dst, and for an OK LOAD_RSP exactly ``size`` octets of data. The data is held in
    a buffer until its length is checked; then ``cpl`` gives (tag, status) and, for an OK load,
    ``cpl_data`` the data packet. A response that matches nothing outstanding is dropped and
    counted (``unexpected``); one that names an outstanding tag but does not match it is
    dropped and counted (``mismatched``) and the request stays outstanding.

    **Unreachable.** The header of a request frame that could not be sent (no port reaches its
    dst, spec §9) comes back on ``fail`` into a queue of :attr:`fail_depth` entries (``tags``,
    at least 4, at most 64: one per outstanding request); ``fail`` is never held back, and a
    header that finds the queue full is dropped and counted (``fail_overflows``: the request
    then times out). If it is the outstanding request of its tag (same opcode, size and dst)
    the request completes with UNREACHABLE, otherwise it is counted (``stale_fails``: the
    request already timed out) and ignored.

    **Timeouts.** A scanner visits one tag per cycle in which no response is being completed;
    a request outstanding for ``timeout_cycles`` or more completes with TIMEOUT when the scanner
    reaches it, so within ``timeout_cycles + tags`` cycles (more under a flood of responses).
    A response arriving after that is ``unexpected``.

    Members
    -------
    local_id : In(12)
        This endpoint's id.
    req : In(stream.Signature(LsRequestLayout())); req_data : In(PacketStream(beat_octets))
    cpl : Out(stream.Signature(CompletionLayout())); cpl_data : Out(PacketStream(beat_octets))
    o : Out(PacketStream(beat_octets)); i : In(PacketStream(beat_octets))
        Request frames out, response frames in.
    fail : In(stream.Signature(HeaderLayout()))
        Headers of request frames dropped as unroutable (one per cycle, always ready).
    outstanding : Out(range(tags + 1))
        Requests sent and not yet completed.
    count : Out(Counters)
        Saturating counters, :attr:`COUNTERS`.

    Latency: a request frame's first beat leaves :attr:`TX_LATENCY` cycles after its ``req``
    transfer. A completion is offered :attr:`RX_LATENCY` cycles after the last beat of its
    response frame.
    """
    COUNTERS = ("requests", "completions", "timeouts", "bad_tags", "unexpected", "mismatched",
                "unreachable", "stale_fails", "fail_overflows")
    #: ``req`` transfer → first frame beat on ``o`` (the deparser's register).
    TX_LATENCY = 2
    #: Last response beat on ``i`` → ``cpl`` valid: the parser 1, the payload's last beat
    #: taken (length checked) 1, the completion 1. Load data is held until then (the length
    #: check), so ``cpl_data`` follows the completion.
    RX_LATENCY = 3
    #: ``fail`` transfer → its UNREACHABLE ``cpl`` valid, when the completion side is idle:
    #: the queue 2, the table read 1, the check 1.
    FAIL_LATENCY = 4

    def __init__(self, beat_octets=8, tags=64, timeout_cycles=4096):
        self.beat_octets = beat_octets
        self.tags = tags
        self.timeout_cycles = timeout_cycles
        #: What the GPU sees: the endpoint's id, requests, completions, the tags in use.
        self.gpu_members = {
            "local_id": In(ENDPOINT_BITS),
            "req": In(stream.Signature(LsRequestLayout())),
            "req_data": In(PacketStream(beat_octets)),
            "cpl": Out(stream.Signature(CompletionLayout())),
            "cpl_data": Out(PacketStream(beat_octets)),
            "outstanding": Out(range(tags + 1)),
        }
        self.fail_depth = max(4, min(self.tags, FAIL_DEPTH_MAX))
        super().__init__({
            **self.gpu_members,
            "o": Out(PacketStream(beat_octets)),
            "i": In(PacketStream(beat_octets)),
            "fail": In(stream.Signature(HeaderLayout())),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        tag_bits = (self.tags - 1).bit_length()
        counters = CounterBank(m, self.count)

        now = Signal(STAMP_BITS)
        m.d.sync += now.eq(now + 1)
        busy = Signal(self.tags)              # outstanding bit per tag
        m.submodules.table = table = Memory(shape=_Entry(), depth=self.tags, init=[])
        wr = table.write_port()
        rsp_rd = table.read_port(transparent_for=(wr,))
        scan_rd = table.read_port(transparent_for=(wr,))
        level = Signal(range(self.tags + 1))
        m.d.comb += self.outstanding.eq(level)
        set_busy = Signal()
        clear_busy = Signal()
        m.d.sync += level.eq(level + set_busy - clear_busy)

        # --- requests out --------------------------------------------------------------------
        m.submodules.deparser = deparser = OefhDeparser(W)
        wiring.connect(m, deparser.o, wiring.flipped(self.o))
        req = self.req.payload
        cur = Signal(LsRequestLayout())
        hdr = Signal(HeaderLayout())
        m.d.comb += [
            hdr.oefh.ver.eq(OEFH_VERSION), hdr.oefh.vc.eq(VirtualChannel.LS_REQ),
            hdr.oefh.dst.eq(cur.dst), hdr.oefh.src.eq(self.local_id),
            # Ref: spec §9 — the L/S entropy: one cache line always takes one path.
            hdr.oefh.entropy.eq(cur.line[:16] ^ cur.line[16:32] ^ cur.line[32:44]),
            hdr.th.ls.opcode.eq(Mux(cur.store, Opcode.STORE_REQ, Opcode.LOAD_REQ)),
            hdr.th.ls.size.eq(cur.size), hdr.th.ls.tag.eq(cur.tag),
            hdr.th.ls.line.eq(cur.line),
            deparser.header.payload.eq(hdr),
        ]
        tag_ok = (req.tag < self.tags) & ~(busy >> req.tag[:tag_bits])[0]
        refused = Signal()          # a BAD_TAG completion waits for the completion side
        refused_tag = Signal(TAG_BITS)
        clear_refused = Signal()
        with m.If(clear_refused):
            m.d.sync += refused.eq(0)
        hdr_sent = Signal()
        data_sent = Signal()
        with m.FSM(name="tx"):
            with m.State("IDLE"):
                m.d.comb += self.req.ready.eq(~refused)
                with m.If(self.req.valid & ~refused):
                    m.d.sync += [cur.eq(req), hdr_sent.eq(0), data_sent.eq(0)]
                    with m.If(tag_ok):
                        m.d.comb += [
                            wr.en.eq(1), wr.addr.eq(req.tag[:tag_bits]),
                            wr.data.store.eq(req.store), wr.data.size.eq(req.size),
                            wr.data.dst.eq(req.dst), wr.data.stamp.eq(now),
                            set_busy.eq(1),
                        ]
                        m.d.sync += busy.bit_select(req.tag[:tag_bits], 1).eq(1)
                        counters["requests"].increment(m, 1)
                        m.next = "SEND"
                    with m.Else():
                        # Not sent: completed with BAD_TAG, its store data dropped.
                        m.d.sync += [refused.eq(1), refused_tag.eq(req.tag)]
                        counters["bad_tags"].increment(m, 1)
                        with m.If(req.store):
                            m.next = "DROP"
            with m.State("SEND"):
                m.d.comb += deparser.header.valid.eq(~hdr_sent)
                with m.If(cur.store):
                    m.d.comb += [deparser.i.valid.eq(self.req_data.valid & ~data_sent),
                                 deparser.i.payload.eq(self.req_data.payload),
                                 self.req_data.ready.eq(deparser.i.ready & ~data_sent)]
                with m.Else():
                    # A load has no payload: one empty beat.
                    m.d.comb += [deparser.i.valid.eq(~data_sent),
                                 deparser.i.payload.first.eq(1),
                                 deparser.i.payload.last.eq(1)]
                hdr_done = hdr_sent | deparser.header.ready
                data_done = data_sent | (deparser.i.valid & deparser.i.ready &
                                         deparser.i.payload.last)
                m.d.sync += [hdr_sent.eq(hdr_done), data_sent.eq(data_done)]
                with m.If(hdr_done & data_done):
                    m.next = "IDLE"
            with m.State("DROP"):
                m.d.comb += self.req_data.ready.eq(1)
                with m.If(self.req_data.valid & self.req_data.payload.last):
                    m.next = "IDLE"

        # --- responses in, timeouts, completions ---------------------------------------------
        m.submodules.parser = parser = OefhParser(W)
        wiring.connect(m, wiring.flipped(self.i), parser.i)
        fail_in = Signal(_Failed())
        head = self.fail.payload
        m.d.comb += [fail_in.opcode.eq(head.th.ls.opcode), fail_in.size.eq(head.th.ls.size),
                     fail_in.tag.eq(head.th.ls.tag), fail_in.dst.eq(head.oefh.dst)]
        fail_q = fail_queue(m, self.fail, fail_in, self.fail_depth, counters["fail_overflows"])
        fail_out = _Failed()(fail_q.r_data)
        failed = Signal(_Failed())
        rh = Signal(HeaderLayout())
        ls = rh.th.ls
        entry = Signal(_Entry())
        known, match = Signal(), Signal()
        known_r, match_r = Signal(), Signal()
        push = Signal()
        status = Signal(CompletionStatus)
        m.submodules.data_q = data_q = SyncFIFOBuffered(width=8 * W,
                                                        depth=max(2, MAX_LS_OCTETS // W))
        lines = Signal(range(MAX_LS_OCTETS // LINE_OCTETS + 1))
        m.d.comb += lines.eq(Const(1, 3) << entry.size)
        expected = Signal(range(MAX_LS_OCTETS + 1))
        m.d.comb += expected.eq(Mux(push, lines * LINE_OCTETS, 0))
        octets = Signal(range(MAX_LS_OCTETS + W + 1))
        beats_left = Signal(range(MAX_LS_OCTETS // W + 1))
        line_beats = max(1, LINE_OCTETS // W)

        ptr = Signal(tag_bits)
        ptr_r = Signal(tag_bits)
        scanned = Signal()           # scan_rd.data holds the entry of ptr_r
        m.d.comb += [scan_rd.addr.eq(ptr), rsp_rd.addr.eq(parser.header.payload.th.ls.tag)]
        expired = scanned & (busy >> ptr_r)[0] & (
            (now - scan_rd.data.stamp)[:STAMP_BITS] >= self.timeout_cycles)
        cpl_tag = Signal(TAG_BITS)
        m.d.comb += [self.cpl.payload.tag.eq(cpl_tag), self.cpl.payload.status.eq(status)]
        done = self.cpl.valid & self.cpl.ready
        counters["completions"].increment(m, done)

        with m.FSM(name="rx"):
            with m.State("IDLE"):
                m.d.sync += scanned.eq(0)
                with m.If(expired):
                    m.d.sync += [cpl_tag.eq(ptr_r), status.eq(CompletionStatus.TIMEOUT)]
                    m.next = "ERROR"
                with m.Elif(refused):
                    m.d.sync += [cpl_tag.eq(refused_tag), status.eq(CompletionStatus.BAD_TAG)]
                    m.next = "REFUSED"
                with m.Elif(fail_q.r_rdy):
                    m.d.comb += [fail_q.r_en.eq(1), rsp_rd.addr.eq(fail_out.tag)]
                    m.d.sync += failed.eq(fail_out)
                    m.next = "FAIL"
                with m.Elif(parser.header.valid):
                    m.d.comb += parser.header.ready.eq(1)
                    m.d.sync += [rh.eq(parser.header.payload), octets.eq(0)]
                    m.next = "CHECK"
                with m.Else():
                    m.d.sync += [ptr.eq(ptr + 1), ptr_r.eq(ptr), scanned.eq(1)]
            with m.State("FAIL"):
                # The table entry of the dropped request's tag is on rsp_rd.data this cycle.
                sent_as = Mux(rsp_rd.data.store, failed.opcode == Opcode.STORE_REQ,
                              failed.opcode == Opcode.LOAD_REQ)
                with m.If((failed.tag < self.tags) & (busy >> failed.tag[:tag_bits])[0] &
                          sent_as & (failed.size == rsp_rd.data.size) &
                          (failed.dst == rsp_rd.data.dst)):
                    m.d.sync += [cpl_tag.eq(failed.tag),
                                 status.eq(CompletionStatus.UNREACHABLE)]
                    m.next = "ERROR"
                with m.Else():
                    counters["stale_fails"].increment(m, 1)
                    m.next = "IDLE"
            with m.State("ERROR"):
                # TIMEOUT or UNREACHABLE: the request is given up.
                m.d.comb += self.cpl.valid.eq(1)
                with m.If(self.cpl.ready):
                    m.d.sync += busy.bit_select(cpl_tag[:tag_bits], 1).eq(0)
                    m.d.comb += clear_busy.eq(1)
                    counters["timeouts"].increment(m, status == CompletionStatus.TIMEOUT)
                    counters["unreachable"].increment(
                        m, status == CompletionStatus.UNREACHABLE)
                    m.next = "IDLE"
            with m.State("REFUSED"):
                m.d.comb += self.cpl.valid.eq(1)
                with m.If(self.cpl.ready):
                    m.d.comb += clear_refused.eq(1)
                    m.next = "IDLE"
            with m.State("CHECK"):
                # The table entry of the response's tag is on rsp_rd.data this cycle.
                tag_in_range = ls.tag < self.tags
                is_load = ls.opcode == Opcode.LOAD_RSP
                m.d.comb += [
                    known.eq(tag_in_range & (busy >> ls.tag[:tag_bits])[0]),
                    match.eq(known & ((is_load & ~rsp_rd.data.store) |
                                      ((ls.opcode == Opcode.STORE_RSP) & rsp_rd.data.store)) &
                             (ls.size == rsp_rd.data.size) & (rh.oefh.src == rsp_rd.data.dst) &
                             (ls.status <= CompletionStatus.ADDRESS_ERROR.value)),
                ]
                m.d.sync += [entry.eq(rsp_rd.data), status.eq(ls.status), cpl_tag.eq(ls.tag),
                             push.eq(match & is_load & (ls.status == 0)),
                             Cat(known_r, match_r).eq(Cat(known, match))]
                m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                take = parser.o.valid & parser.o.ready
                want = push & (octets < expected)
                m.d.comb += [parser.o.ready.eq(~want | data_q.w_rdy),
                             data_q.w_data.eq(parser.o.payload.data),
                             data_q.w_en.eq(take & want)]
                count = keep_count(parser.o.payload.keep, W)
                with m.If(take):
                    with m.If(octets <= MAX_LS_OCTETS):
                        m.d.sync += octets.eq(octets + count)
                    with m.If(parser.o.payload.last):
                        m.d.sync += beats_left.eq(lines * line_beats)
                        with m.If(~known_r):
                            counters["unexpected"].increment(m, 1)
                            m.next = "FLUSH"
                        with m.Elif(~match_r | (octets + count != expected)):
                            counters["mismatched"].increment(m, 1)
                            m.next = "FLUSH"
                        with m.Else():
                            m.next = "COMPLETE"
            with m.State("FLUSH"):
                m.d.comb += data_q.r_en.eq(1)
                with m.If(data_q.level == 0):
                    m.next = "IDLE"
            with m.State("COMPLETE"):
                m.d.comb += self.cpl.valid.eq(1)
                with m.If(self.cpl.ready):
                    m.d.sync += busy.bit_select(cpl_tag[:tag_bits], 1).eq(0)
                    m.d.comb += clear_busy.eq(1)
                    m.next = "IDLE"
                    with m.If(push):
                        m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += [
                    self.cpl_data.valid.eq(data_q.r_rdy),
                    self.cpl_data.payload.data.eq(data_q.r_data),
                    self.cpl_data.payload.keep.eq(C(-1, W)),
                    self.cpl_data.payload.first.eq(beats_left == lines * line_beats),
                    self.cpl_data.payload.last.eq(beats_left == 1),
                    data_q.r_en.eq(self.cpl_data.ready),
                ]
                with m.If(self.cpl_data.valid & self.cpl_data.ready):
                    m.d.sync += beats_left.eq(beats_left - 1)
                    with m.If(beats_left == 1):
                        m.next = "IDLE"
        return m
