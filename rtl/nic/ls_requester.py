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

from ..compose import forward
from ..counters import CounterBank, Counters
from ..forwarding.deparser import OefhDeparser
from ..forwarding.parser import OefhParser
from ..params import parameters
from ..stream import PacketStream, VerdictPacketStream, BEAT_OCTETS, keep_count
from ..wire import (ENDPOINT_BITS, HeaderLayout, LsSize, Opcode, VirtualChannel,
                    OEFH_VERSION)
from .path_select import PathRequest
from .engine import (CompletionLayout, CompletionStatus, FailQueue, FAIL_DEPTH_MAX,
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


def _failed_entry(head):
    """The :class:`_Failed` entry of a dropped request frame's header."""
    return {"opcode": head.th.ls.opcode, "size": head.th.ls.size, "tag": head.th.ls.tag,
            "dst": head.oefh.dst}


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
    dropped and counted (``mismatched``) and the request stays outstanding. A response may
    come before it is judged (cut-through, :class:`~ethlink.rtl.stream.VerdictPacketLayout`):
    one that ends with ``user.error`` is dropped whole, its data with it, and completes
    nothing (the link layer counts it and has it resent).

    **Unreachable.** The header of a request frame that could not be sent (no port reaches its
    dst, spec §9) comes back on ``fail`` into a queue of :attr:`fail_depth` entries (``tags``,
    at least 4, at most 64: one per outstanding request); ``fail`` is never held back, and a
    header that finds the queue full is dropped and counted (``fail_overflows``: the request
    then times out). If it is the outstanding request of its tag (same opcode, size and dst)
    the request completes with UNREACHABLE, otherwise it is counted (``stale_fails``: the
    request already timed out) and ignored.

    **Timeouts.** A scanner visits one tag per cycle (it stops while a timed-out tag waits for
    the completion side); a request outstanding for ``timeout_cycles`` or more completes with
    TIMEOUT when the scanner reaches it: its completion is offered within ``timeout_cycles +
    tags +`` :attr:`TIMEOUT_SLACK` cycles of its ``req`` transfer while the completion side is
    free (later under a flood of responses or of other timeouts).
    A response arriving after that is ``unexpected``.

    Members
    -------
    local_id : In(12)
        This endpoint's id.
    req : In(stream.Signature(LsRequestLayout())); req_data : In(PacketStream(beat_octets))
    cpl : Out(stream.Signature(CompletionLayout())); cpl_data : Out(PacketStream(beat_octets))
    o : Out(PacketStream(beat_octets)); i : In(VerdictPacketStream(beat_octets))
        Request frames out, response frames in (``user.error`` 0 where they are judged
        before they come).
    hint : Out(PathRequest(reachable=False))
        A request frame's ``dst`` and ``entropy`` in the cycle its request is taken,
        :attr:`TX_LATENCY` cycles before its first beat (for a lookup of its port ahead).
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
    #: the queue 2, the table read 1, the check 1 (into a register), acting on it 1.
    FAIL_LATENCY = 5
    #: A lost request's TIMEOUT completion is offered at most ``timeout_cycles + tags +
    #: TIMEOUT_SLACK`` cycles after its ``req`` transfer (completion side free): its tag may
    #: be judged a cycle before it is late, then once every ``tags`` cycles; an offer 1 cycle
    #: after the judgement, the completion 1 after that.
    TIMEOUT_SLACK = 1

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
            "hint": Out(PathRequest(reachable=False)),
            "i": In(VerdictPacketStream(beat_octets)),
            "fail": In(stream.Signature(HeaderLayout())),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.table = table = _TagTable(self.tags)
        m.submodules.sender = sender = _RequestSender(self.beat_octets, self.tags)
        m.submodules.scanner = scanner = _TimeoutScanner(self.tags, self.timeout_cycles)
        m.submodules.completer = completer = _Completer(self.beat_octets, self.tags)
        m.submodules.fail_q = fail_q = FailQueue(_Failed(), self.fail_depth, _failed_entry)
        m.d.comb += [sender.local_id.eq(self.local_id), self.outstanding.eq(table.outstanding),
                     sender.busy.eq(table.busy), scanner.busy.eq(table.busy),
                     completer.busy.eq(table.busy), scanner.now.eq(table.now)]
        wiring.connect(m, wiring.flipped(self.req), sender.req)
        wiring.connect(m, wiring.flipped(self.req_data), sender.req_data)
        wiring.connect(m, sender.o, wiring.flipped(self.o))
        wiring.connect(m, sender.hint, wiring.flipped(self.hint))
        wiring.connect(m, sender.claim, table.claim)
        wiring.connect(m, wiring.flipped(self.i), completer.i)
        wiring.connect(m, wiring.flipped(self.fail), fail_q.i)
        wiring.connect(m, fail_q.o, completer.failed)
        wiring.connect(m, completer.cpl, wiring.flipped(self.cpl))
        wiring.connect(m, completer.cpl_data, wiring.flipped(self.cpl_data))
        wiring.connect(m, completer.lookup, table.lookup)
        wiring.connect(m, completer.release, table.release)
        wiring.connect(m, scanner.read, table.scan)
        wiring.connect(m, scanner.expired, completer.expired)
        wiring.connect(m, sender.refusal, completer.refusal)
        forward(m, self.count, sender.count)
        forward(m, self.count, completer.count)
        forward(m, self.count, fail_q.count)
        return m


def _TagClaim(tag_bits):
    """A request taken into the tag table (as the sender sees it): its tag and what a
    response must match."""
    return wiring.Signature({"en": Out(1), "tag": Out(tag_bits), "store": Out(1),
                             "size": Out(LsSize), "dst": Out(ENDPOINT_BITS)})


def _TagRelease(tag_bits):
    """A tag freed (its request completed), as the completer sees it."""
    return wiring.Signature({"en": Out(1), "tag": Out(tag_bits)})


def _TagRead(tag_bits):
    """A read port of the tag table, as its reader sees it: the entry of ``addr`` is on
    ``data`` the next cycle."""
    return wiring.Signature({"addr": Out(tag_bits), "data": In(_Entry())})


class _TagTable(wiring.Component):
    """Keep the outstanding requests: a busy bit and an entry (kind, size, dst, time sent)
    per tag.

    A ``claim`` sets its tag's busy bit and writes its entry stamped with ``now`` (a
    free-running cycle count); a ``release`` clears the busy bit (in the same cycle as a claim
    of the same tag, the release wins). ``lookup`` and ``scan`` read entries; a read in the
    cycle of a write to the same tag sees the new entry.

    Members
    -------
    claim : In(_TagClaim); release : In(_TagRelease)
    lookup : In(_TagRead); scan : In(_TagRead)
    busy : Out(tags)
        The busy bits, updated the cycle after a claim or release.
    now : Out(STAMP_BITS)
        The cycle count the entries are stamped with.
    outstanding : Out(range(tags + 1))
        How many bits of ``busy`` are set.

    Latency: 1 cycle (claim or release to ``busy``; ``addr`` to ``data``).
    Throughput: one claim, one release and two reads per cycle.
    """
    def __init__(self, tags):
        self.tags = tags
        tag_bits = (tags - 1).bit_length()
        super().__init__({
            "claim": In(_TagClaim(tag_bits)), "release": In(_TagRelease(tag_bits)),
            "lookup": In(_TagRead(tag_bits)), "scan": In(_TagRead(tag_bits)),
            "busy": Out(tags), "now": Out(STAMP_BITS), "outstanding": Out(range(tags + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        now = Signal(STAMP_BITS)
        m.d.sync += now.eq(now + 1)
        busy = Signal(self.tags)
        m.submodules.entries = entries = Memory(shape=_Entry(), depth=self.tags, init=[])
        wr = entries.write_port()
        rsp_rd = entries.read_port(transparent_for=(wr,))
        scan_rd = entries.read_port(transparent_for=(wr,))
        claim, release = self.claim, self.release
        with m.If(claim.en):
            m.d.comb += [
                wr.en.eq(1), wr.addr.eq(claim.tag), wr.data.store.eq(claim.store),
                wr.data.size.eq(claim.size), wr.data.dst.eq(claim.dst), wr.data.stamp.eq(now),
            ]
        m.d.comb += [
            rsp_rd.addr.eq(self.lookup.addr), self.lookup.data.eq(rsp_rd.data),
            scan_rd.addr.eq(self.scan.addr), self.scan.data.eq(scan_rd.data),
            self.busy.eq(busy), self.now.eq(now),
        ]
        with m.If(claim.en):
            m.d.sync += busy.bit_select(claim.tag, 1).eq(1)
        with m.If(release.en):
            m.d.sync += busy.bit_select(release.tag, 1).eq(0)
        level = Signal(range(self.tags + 1))
        m.d.comb += self.outstanding.eq(level)
        m.d.sync += level.eq(level + claim.en - release.en)
        return m


class _RequestHeader(wiring.Component):
    """Frame a GPU request: the OEFH and L/S TH of its LOAD_REQ/STORE_REQ frame.

    VC 0, src ``local_id``, the request's dst, size, tag and line, entropy
    ``line[15:0] ^ line[31:16] ^ line[43:32]`` (spec §9).

    Members
    -------
    request : In(LsRequestLayout()); local_id : In(ENDPOINT_BITS)
    header : Out(HeaderLayout())

    Latency: 0 cycles (combinational). Throughput: one header per cycle.
    """
    request: In(LsRequestLayout())
    local_id: In(ENDPOINT_BITS)
    header: Out(HeaderLayout())

    def elaborate(self, platform):
        m = Module()
        cur, hdr = self.request, self.header
        m.d.comb += [
            hdr.oefh.ver.eq(OEFH_VERSION), hdr.oefh.vc.eq(VirtualChannel.LS_REQ),
            hdr.oefh.dst.eq(cur.dst), hdr.oefh.src.eq(self.local_id),
            # Ref: spec §9 — the L/S entropy: one cache line always takes one path.
            hdr.oefh.entropy.eq(ls_entropy(cur.line)),
            hdr.th.ls.opcode.eq(Mux(cur.store, Opcode.STORE_REQ, Opcode.LOAD_REQ)),
            hdr.th.ls.size.eq(cur.size), hdr.th.ls.tag.eq(cur.tag),
            hdr.th.ls.line.eq(cur.line),
        ]
        return m


def ls_entropy(line):
    """The entropy of an L/S request to cache line ``line`` (spec §9): one line, one path."""
    return line[:16] ^ line[16:32] ^ line[32:44]


class _RequestSender(wiring.Component):
    """Send GPU requests as frames, claiming their tags; refuse a request whose tag is taken.

    A request on ``req`` whose tag is below ``tags`` and not ``busy`` is claimed in the tag
    table in the cycle it is taken and sent on ``o``: its header (:class:`_RequestHeader`)
    and, for a store, its data packet from ``req_data`` through a deparser; a load's payload
    is one empty beat. Any other request is not sent: its tag is offered on ``refusal`` (for
    a BAD_TAG completion) and a store's data packet is dropped. ``req`` waits while a refusal
    is offered and while a frame is being sent.

    Members
    -------
    local_id : In(ENDPOINT_BITS)
    req : In(stream.Signature(LsRequestLayout())); req_data : In(PacketStream(beat_octets))
    o : Out(PacketStream(beat_octets))
        Request frames.
    hint : Out(PathRequest(reachable=False))
        The ``dst`` and ``entropy`` of the frame of a request being taken (``valid`` in that
        cycle), :attr:`LsRequester.TX_LATENCY` cycles before its first beat.
    claim : Out(_TagClaim); busy : In(tags)
        The tag table.
    refusal : Out(stream.Signature(TAG_BITS))
        The tag of a refused request, until taken.
    count : Out(Counters)
        ``requests`` (sent), ``bad_tags`` (refused).

    Latency: :attr:`LsRequester.TX_LATENCY` cycles from ``req`` to the frame's first beat;
    the refusal is offered 1 cycle after ``req``.
    Throughput: at best one request per (frame beats + 1) cycles.
    """
    COUNTERS = ("requests", "bad_tags")

    def __init__(self, beat_octets, tags):
        self.beat_octets = beat_octets
        self.tags = tags
        super().__init__({
            "local_id": In(ENDPOINT_BITS),
            "req": In(stream.Signature(LsRequestLayout())),
            "req_data": In(PacketStream(beat_octets)),
            "o": Out(PacketStream(beat_octets)),
            "hint": Out(PathRequest(reachable=False)),
            "claim": Out(_TagClaim((tags - 1).bit_length())),
            "busy": In(tags),
            "refusal": Out(stream.Signature(TAG_BITS)),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        tag_bits = (self.tags - 1).bit_length()
        counters = CounterBank(m, self.count)
        m.submodules.deparser = deparser = OefhDeparser(self.beat_octets)
        wiring.connect(m, deparser.o, wiring.flipped(self.o))
        m.submodules.header = header = _RequestHeader()
        req = self.req.payload
        cur = Signal(LsRequestLayout())
        m.d.comb += [header.request.eq(cur), header.local_id.eq(self.local_id),
                     deparser.header.payload.eq(header.header)]
        tag_ok = (req.tag < self.tags) & ~(self.busy >> req.tag[:tag_bits])[0]
        # The frame's dst and entropy, known TX_LATENCY cycles before its first beat: the port
        # can be looked up meanwhile (FrameSteer's lookups ahead).
        m.d.comb += [self.hint.dst.eq(req.dst), self.hint.entropy.eq(ls_entropy(req.line))]
        m.d.comb += [self.claim.tag.eq(req.tag[:tag_bits]), self.claim.store.eq(req.store),
                     self.claim.size.eq(req.size), self.claim.dst.eq(req.dst)]
        refused = Signal()          # a BAD_TAG completion waits for the completion side
        refused_tag = Signal(TAG_BITS)
        m.d.comb += [self.refusal.valid.eq(refused), self.refusal.payload.eq(refused_tag)]
        with m.If(self.refusal.ready):
            m.d.sync += refused.eq(0)
        hdr_sent = Signal()
        data_sent = Signal()
        with m.FSM(name="tx"):
            with m.State("IDLE"):
                m.d.comb += self.req.ready.eq(~refused)
                with m.If(self.req.valid & ~refused):
                    m.d.sync += [cur.eq(req), hdr_sent.eq(0), data_sent.eq(0)]
                    with m.If(tag_ok):
                        m.d.comb += [self.claim.en.eq(1), self.hint.valid.eq(1)]
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
        return m


class _TimeoutScanner(wiring.Component):
    """Find timed-out requests: visit one tag per cycle, offer it if it is outstanding and
    was sent ``timeout_cycles`` or more cycles ago.

    The scan reads the entry of one tag a cycle (round robin). The cycle after, it judges
    that tag (``busy`` bit set and ``now`` minus its stamp at least ``timeout_cycles``) into
    a register, and a tag judged expired is offered on ``expired`` from the next cycle until
    it is taken. While an offer waits, the scan stops (it reads the same tag again). An offer
    is withdrawn as soon as its tag's ``busy`` bit is clear: the request completed meanwhile,
    and a tag is free for at least a cycle between its release and the next claim, so a new
    request on the same tag is never taken for the one judged.

    Members
    -------
    read : Out(_TagRead); busy : In(tags); now : In(STAMP_BITS)
        The tag table.
    expired : Out(stream.Signature(tag_bits))
        A timed-out tag; ``valid`` from registers and the ``busy`` bit.

    Latency: 2 cycles (an entry read in *t* is judged in *t* + 1 and offered in *t* + 2).
    Nothing on ``expired`` waits on the entry read or the judgement in the same cycle: on
    the ECP5 the table's LUT RAM, the stamp's subtraction and compare and the completer's
    choice after them were the NIC's critical path. Throughput: one tag per cycle while no
    offer waits.
    """
    def __init__(self, tags, timeout_cycles):
        self.tags = tags
        self.timeout_cycles = timeout_cycles
        tag_bits = (tags - 1).bit_length()
        super().__init__({
            "read": Out(_TagRead(tag_bits)), "busy": In(tags), "now": In(STAMP_BITS),
            "expired": Out(stream.Signature(tag_bits)),
        })

    def elaborate(self, platform):
        m = Module()
        tag_bits = (self.tags - 1).bit_length()
        ptr = Signal(tag_bits)       # the next tag to read
        judging = Signal(tag_bits)   # the tag whose entry is on read.data
        primed = Signal()            # read.data holds an entry (from the second cycle on)
        offer = Signal()
        offer_tag = Signal(tag_bits)
        # `offer` and `expired.ready` are registers (the completer is ready when idle), so the
        # scan's step and the table's read address do not wait on a judgement.
        step = ~offer | self.expired.ready
        late = (self.now - self.read.data.stamp)[:STAMP_BITS] >= self.timeout_cycles
        still_busy = (self.busy >> offer_tag)[0]     # the offered tag's request is outstanding
        m.d.comb += [
            self.read.addr.eq(Mux(step, ptr, judging)),
            self.expired.payload.eq(offer_tag),
            self.expired.valid.eq(offer & still_busy),
        ]
        with m.If(step):
            m.d.sync += [
                offer.eq(primed & (self.busy >> judging)[0] & late),
                offer_tag.eq(judging),
                judging.eq(ptr), ptr.eq(ptr + 1), primed.eq(1),
            ]
        with m.Elif(~still_busy):
            m.d.sync += offer.eq(0)
        return m


class _LoadData(wiring.Component):
    """Hold a load's data until its response is checked, then give it as one packet of full
    beats.

    Beats on ``i`` go into a buffer of :data:`MAX_LS_OCTETS` (``i`` waits while it is full).
    ``start`` sets the packet's length to ``lines`` cache lines; while ``play`` the buffer's
    beats leave on ``o``, ``first`` on the first and ``last`` on the last of that length;
    while ``flush`` they are dropped, one per cycle, until ``empty``.

    Members
    -------
    i : In(stream.Signature(8 * beat_octets)); o : Out(PacketStream(beat_octets))
    lines : In(range(MAX_LS_OCTETS // LINE_OCTETS + 1)); start : In(1)
    play : In(1); flush : In(1); empty : Out(1)

    Latency: 2 cycles from a beat taken on ``i`` into the empty buffer to ``o`` (the
    buffer's).
    Throughput: one beat per cycle.
    """
    def __init__(self, beat_octets):
        self.beat_octets = beat_octets
        super().__init__({
            "i": In(stream.Signature(8 * beat_octets)), "o": Out(PacketStream(beat_octets)),
            "lines": In(range(MAX_LS_OCTETS // LINE_OCTETS + 1)), "start": In(1),
            "play": In(1), "flush": In(1), "empty": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        m.submodules.data_q = data_q = SyncFIFOBuffered(width=8 * W,
                                                        depth=max(2, MAX_LS_OCTETS // W))
        line_beats = max(1, LINE_OCTETS // W)
        beats_left = Signal(range(MAX_LS_OCTETS // W + 1))
        wiring.connect(m, wiring.flipped(self.i), data_q.w_stream)
        m.d.comb += self.empty.eq(data_q.level == 0)
        with m.If(self.flush):
            m.d.comb += data_q.r_en.eq(1)
        with m.If(self.play):
            m.d.comb += [
                self.o.valid.eq(data_q.r_rdy),
                self.o.payload.data.eq(data_q.r_data),
                self.o.payload.keep.eq(C(-1, W)),
                self.o.payload.first.eq(beats_left == self.lines * line_beats),
                self.o.payload.last.eq(beats_left == 1),
                data_q.r_en.eq(self.o.ready),
            ]
        with m.If(self.start):
            m.d.sync += beats_left.eq(self.lines * line_beats)
        with m.Elif(self.o.valid & self.o.ready):
            m.d.sync += beats_left.eq(beats_left - 1)
        return m


class _Completer(wiring.Component):
    """Complete requests: match responses and unreachable notices against the tag table,
    give timeouts and refusals their completions, one at a time.

    When idle it takes, by priority, an ``expired`` tag (TIMEOUT), a ``refusal`` (BAD_TAG),
    a ``failed`` request frame (UNREACHABLE if it is the outstanding request of its tag,
    else counted ``stale_fails``), or a response frame from ``i``; ``expired.ready`` is the
    idle state itself (a register). A response is checked against the ``lookup`` entry of its tag
    (as :class:`LsRequester` describes), an OK load's data held in :class:`_LoadData` until
    its length is checked; then ``cpl`` is offered and, for an OK load, ``cpl_data`` follows.
    A completion other than BAD_TAG ``release`` s its tag.

    Members
    -------
    i : In(VerdictPacketStream(beat_octets)); failed : In(stream.Signature(_Failed()))
        Response frames, a bad one ending with ``user.error`` (dropped whole, completing
        nothing); request frames dropped as unroutable (:class:`~.engine.FailQueue`).
    cpl : Out(stream.Signature(CompletionLayout())); cpl_data : Out(PacketStream(beat_octets))
    lookup : Out(_TagRead); release : Out(_TagRelease); busy : In(tags)
        The tag table.
    expired : In(stream.Signature(tag_bits))
        The timeout scanner.
    refusal : In(stream.Signature(TAG_BITS))
        Refused requests from the sender.
    count : Out(Counters)
        :attr:`COUNTERS`.

    Latency: :attr:`LsRequester.RX_LATENCY` and :attr:`LsRequester.FAIL_LATENCY` cycles; an
    expired tag or a refusal is offered on ``cpl`` 1 cycle after it is taken.
    Throughput: one completion per response frame length + 3 cycles (+ its data).

    Its ``elaborate`` is one state machine a little over 120 lines: every state chooses the
    next completion or finishes one, and splitting it would split that choice.
    """
    COUNTERS = ("completions", "timeouts", "unexpected", "mismatched", "unreachable",
                "stale_fails")

    def __init__(self, beat_octets, tags):
        self.beat_octets = beat_octets
        self.tags = tags
        tag_bits = (tags - 1).bit_length()
        super().__init__({
            "i": In(VerdictPacketStream(beat_octets)),
            "failed": In(stream.Signature(_Failed())),
            "cpl": Out(stream.Signature(CompletionLayout())),
            "cpl_data": Out(PacketStream(beat_octets)),
            "lookup": Out(_TagRead(tag_bits)), "release": Out(_TagRelease(tag_bits)),
            "busy": In(tags),
            "expired": In(stream.Signature(tag_bits)),
            "refusal": In(stream.Signature(TAG_BITS)),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        tag_bits = (self.tags - 1).bit_length()
        counters = CounterBank(m, self.count)
        busy, entry_in = self.busy, self.lookup.data
        m.submodules.parser = parser = OefhParser(W, verdict=True)
        wiring.connect(m, wiring.flipped(self.i), parser.i)
        m.submodules.data = data = _LoadData(W)
        wiring.connect(m, data.o, wiring.flipped(self.cpl_data))
        failed = Signal(_Failed())
        rh = Signal(HeaderLayout())
        ls = rh.th.ls
        entry = Signal(_Entry())
        known, match = Signal(), Signal()
        known_r, match_r = Signal(), Signal()
        fail_ok = Signal()          # the failed frame is its tag's outstanding request
        push = Signal()
        status = Signal(CompletionStatus)
        lines = Signal(range(MAX_LS_OCTETS // LINE_OCTETS + 1))
        m.d.comb += [lines.eq(Const(1, 3) << entry.size), data.lines.eq(lines)]
        expected = Signal(range(MAX_LS_OCTETS + 1))
        m.d.comb += expected.eq(Mux(push, lines * LINE_OCTETS, 0))
        octets = Signal(range(MAX_LS_OCTETS + W + 1))
        m.d.comb += self.lookup.addr.eq(parser.header.payload.th.ls.tag)
        cpl_tag = Signal(TAG_BITS)
        m.d.comb += [self.cpl.payload.tag.eq(cpl_tag), self.cpl.payload.status.eq(status),
                     self.release.tag.eq(cpl_tag[:tag_bits])]
        done = self.cpl.valid & self.cpl.ready
        counters["completions"].increment(m, done)

        with m.FSM(name="rx"):
            with m.State("IDLE"):
                m.d.comb += self.expired.ready.eq(1)
                with m.If(self.expired.valid):
                    m.d.sync += [cpl_tag.eq(self.expired.payload),
                                 status.eq(CompletionStatus.TIMEOUT)]
                    m.next = "ERROR"
                with m.Elif(self.refusal.valid):
                    m.d.sync += [cpl_tag.eq(self.refusal.payload),
                                 status.eq(CompletionStatus.BAD_TAG)]
                    m.next = "REFUSED"
                with m.Elif(self.failed.valid):
                    m.d.comb += [self.failed.ready.eq(1),
                                 self.lookup.addr.eq(self.failed.payload.tag)]
                    m.d.sync += failed.eq(self.failed.payload)
                    m.next = "FAIL"
                with m.Elif(parser.header.valid):
                    m.d.comb += parser.header.ready.eq(1)
                    m.d.sync += [rh.eq(parser.header.payload), octets.eq(0)]
                    m.next = "CHECK"
            with m.State("FAIL"):
                # The table entry of the dropped request's tag is on lookup.data this cycle.
                # Its judgement goes into a register and is acted on in the next state: on
                # the ECP5 the table's block RAM through this compare into the completion's
                # registers was a critical path of the NIC. Only the completer releases a tag,
                # so the busy bit cannot clear in between.
                sent_as = Mux(entry_in.store, failed.opcode == Opcode.STORE_REQ,
                              failed.opcode == Opcode.LOAD_REQ)
                m.d.sync += [
                    fail_ok.eq((failed.tag < self.tags) & (busy >> failed.tag[:tag_bits])[0] &
                               sent_as & (failed.size == entry_in.size) &
                               (failed.dst == entry_in.dst)),
                    cpl_tag.eq(failed.tag), status.eq(CompletionStatus.UNREACHABLE),
                ]
                m.next = "FAILED"
            with m.State("FAILED"):
                with m.If(fail_ok):
                    m.next = "ERROR"
                with m.Else():
                    counters["stale_fails"].increment(m, 1)
                    m.next = "IDLE"
            with m.State("ERROR"):
                # TIMEOUT or UNREACHABLE: the request is given up.
                m.d.comb += self.cpl.valid.eq(1)
                with m.If(self.cpl.ready):
                    m.d.comb += self.release.en.eq(1)
                    counters["timeouts"].increment(m, status == CompletionStatus.TIMEOUT)
                    counters["unreachable"].increment(
                        m, status == CompletionStatus.UNREACHABLE)
                    m.next = "IDLE"
            with m.State("REFUSED"):
                m.d.comb += self.cpl.valid.eq(1)
                with m.If(self.cpl.ready):
                    m.d.comb += self.refusal.ready.eq(1)
                    m.next = "IDLE"
            with m.State("CHECK"):
                # The table entry of the response's tag is on lookup.data this cycle.
                tag_in_range = ls.tag < self.tags
                is_load = ls.opcode == Opcode.LOAD_RSP
                m.d.comb += [
                    known.eq(tag_in_range & (busy >> ls.tag[:tag_bits])[0]),
                    match.eq(known & ((is_load & ~entry_in.store) |
                                      ((ls.opcode == Opcode.STORE_RSP) & entry_in.store)) &
                             (ls.size == entry_in.size) & (rh.oefh.src == entry_in.dst) &
                             (ls.status <= CompletionStatus.ADDRESS_ERROR.value)),
                ]
                m.d.sync += [entry.eq(entry_in), status.eq(ls.status), cpl_tag.eq(ls.tag),
                             push.eq(match & is_load & (ls.status == 0)),
                             Cat(known_r, match_r).eq(Cat(known, match))]
                m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                take = parser.o.valid & parser.o.ready
                want = push & (octets < expected)
                m.d.comb += [parser.o.ready.eq(~want | data.i.ready),
                             data.i.payload.eq(parser.o.payload.data),
                             data.i.valid.eq(parser.o.valid & want)]
                count = keep_count(parser.o.payload.keep, W)
                with m.If(take):
                    with m.If(octets <= MAX_LS_OCTETS):
                        m.d.sync += octets.eq(octets + count)
                    with m.If(parser.o.payload.last):
                        m.d.comb += data.start.eq(1)
                        with m.If(parser.o.payload.user.error):
                            # Judged bad after it began to come (cut-through): the link
                            # layer has counted it and has it resent.
                            m.next = "FLUSH"
                        with m.Elif(~known_r):
                            counters["unexpected"].increment(m, 1)
                            m.next = "FLUSH"
                        with m.Elif(~match_r | (octets + count != expected)):
                            counters["mismatched"].increment(m, 1)
                            m.next = "FLUSH"
                        with m.Else():
                            m.next = "COMPLETE"
            with m.State("FLUSH"):
                m.d.comb += data.flush.eq(1)
                with m.If(data.empty):
                    m.next = "IDLE"
            with m.State("COMPLETE"):
                m.d.comb += self.cpl.valid.eq(1)
                with m.If(self.cpl.ready):
                    m.d.comb += self.release.en.eq(1)
                    m.next = "IDLE"
                    with m.If(push):
                        m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += data.play.eq(1)
                cpl_data = self.cpl_data
                with m.If(cpl_data.valid & cpl_data.ready & cpl_data.payload.last):
                    m.next = "IDLE"
        return m
