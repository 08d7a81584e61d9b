"""The NIC's Load/Store target: remote LOAD_REQ/STORE_REQ executed against local memory through
an AXI4 manager port, checked against the memory windows, answered with LOAD_RSP/STORE_RSP.

Ref: spec §3 (VC 1 carries L/S responses), §4.2 (L/S TH, response rules), §11 (windows,
ACCESS_DENIED touches no memory, malformed frames are dropped and counted, never executed).
"""

from types import SimpleNamespace

from amaranth.hdl import Module, Signal, Cat, C, Const, Mux
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from ..compose import forward, members_of
from ..counters import CounterBank, Counters, counter_values
from ..forwarding.deparser import OefhDeparser
from ..forwarding.parser import OefhParser
from ..params import parameters
from ..regbus import RegisterBus
from ..stream import PacketStream, VerdictPacketStream, BEAT_OCTETS, keep_count
from ..wire import HeaderLayout, LsSize, Opcode, Status, VirtualChannel, OEFH_VERSION
from . import csr
from .axi import Axi4Signature, ADDR_WIDTH, BURST_INCR, RESP_OKAY
from .engine import LINE_BITS, LINE_OCTETS, MAX_LS_OCTETS
from .windows import target_registers, count_refusal, WINDOWS
from .path_select import PathRequest

__all__ = ["LsResponder", "LsTarget"]


class _Job(enum.Enum, shape=2):
    """What :class:`LsResponder`'s execution does with a request its intake has finished."""
    LOAD = 0        # AXI read, LOAD_RSP with the data
    STORE = 1       # AXI write of the buffered data, STORE_RSP
    RESPOND = 2     # refused: a response with the status only
    DISCARD = 3     # malformed or unexpected: drop what it left in the store buffer


class _Phase(enum.Enum, shape=3):
    """What :class:`LsResponder`'s data stage is doing."""
    IDLE = 0
    R = 1           # read data into the response
    W = 2           # the store buffer onto W
    B = 3           # waiting for the write response
    RESPOND = 4     # a response without payload
    DISCARD = 5     # dropping a malformed store's buffered beats


class LsResponder(wiring.Component):
    """Execute parsed L/S requests against memory and build their responses.

    For every request (a transfer on ``header`` and its payload packet on ``i``, as
    :class:`~ethlink.rtl.forwarding.parser.OefhParser` gives them with ``verdict``: a request
    passed on before it was judged whose payload ends with ``user.error`` is dropped, its
    buffered store data with it, not executed, not answered, not counted — the link layer
    counted it and has it resent) the responder

    1. checks it: the payload must be exactly what the opcode says (LOAD_REQ: none, STORE_REQ:
       ``size`` octets) — otherwise the request is *malformed*: dropped, counted, never
       executed, not answered; an opcode other than LOAD_REQ/STORE_REQ is *unexpected*
       (dropped and counted: responses and RDMA belong to other engines);
    2. decides the status: ADDRESS_ERROR if the line is not aligned to the size or the access
       runs past the AXI address space, else ACCESS_DENIED unless one window (spec §11) holds
       every line of the access and grants the permission (read for a load, write for a
       store), else OK;
    3. if OK, runs one AXI4 INCR burst of ``size / beat_octets`` full beats (a store's data is
       held in a buffer until its last octet has arrived and its length is checked, so a
       malformed store writes nothing);
    4. answers on VC 1 with dst/src swapped and the request's tag, line, size and entropy
       (spec §4.2, §9): LOAD_RSP carries the data read (status OK), STORE_RSP none; a refused
       request gets its status and no payload. A store whose write response is not OKAY is
       answered ADDRESS_ERROR; a load beat whose read response is not OKAY is counted in
       ``count_axi_errors`` (its data is already on its way).

    Three requests are in flight, in order, in three stages: *intake* takes a request, checks
    it and receives its payload; the *address* stage issues its AR or AW; the *data* stage
    moves its data (R into the response, the store buffer onto W, then B) and answers it.
    Intake hands a request on in the cycle the address stage frees (the cycle of its last
    payload beat when the stage is empty), and the address stage passes it on once its
    AR/AW is taken and the data stage frees. A load's AR goes out while the load before
    streams its data and a store's AW while the store before is written, but a load never
    overtakes a store or the reverse: AXI does not order reads against writes. The store
    buffer holds two stores' data, so the next store streams in while one is written.

    Members
    -------
    header : In(stream.Signature(HeaderLayout())); i : In(VerdictPacketStream(beat_octets))
        Requests.
    rsp_header : Out(stream.Signature(HeaderLayout())); o : Out(PacketStream(beat_octets))
        Responses (one header and one payload packet each, for a deparser).
    m_axi : Out(Axi4Signature(addr_width, beat_octets))
        The AXI4 manager port (:mod:`.axi`).
    csr : In(RegisterBus(8))
        Register bus (:mod:`.csr`): the windows, the counters.
    count : Out(Counters)
        Saturating counters, names in :attr:`COUNTERS`.

    Latency (cycles, counted from the ``header`` transfer, memory answering at once, the
    target idle): AR valid 2 cycles later for a load; for a store, AW valid 1 cycle after
    its payload's last beat is taken (the payload is taken from the cycle after the header,
    one beat per cycle). A refused request's response header is offered one cycle later
    than its AR/AW would have been (it reaches the data stage at once).

    Throughput: the data phases run at one beat per cycle; back-to-back loads (or stores)
    keep R (or W) busy with no gap between bursts when the memory answers in time.
    """
    COUNTERS = ("loads", "stores", "denied", "address_errors", "malformed", "unexpected",
                "axi_errors")

    def __init__(self, beat_octets=8, windows=8, addr_width=32):
        self.beat_octets = BEAT_OCTETS.validate("beat_octets", beat_octets)
        self.windows = WINDOWS.validate("windows", windows)
        self.addr_width = ADDR_WIDTH.validate("addr_width", addr_width)
        super().__init__({
            "header": In(stream.Signature(HeaderLayout())),
            "i": In(VerdictPacketStream(beat_octets)),
            "rsp_header": Out(stream.Signature(HeaderLayout())),
            "o": Out(PacketStream(beat_octets)),
            "m_axi": Out(Axi4Signature(addr_width, beat_octets)),
            "csr": In(RegisterBus(csr.ADDR_BITS)),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        m.submodules.intake = intake = _Intake(W, self.addr_width)
        m.submodules.address = address = _AddressStage(W, self.addr_width)
        m.submodules.data = data = _DataStage(W, self.addr_width)
        # target_registers reads a counter as ``counters[name].value``: here the stages'
        # own counters, as they reach ``count``.
        readings = {name: SimpleNamespace(value=value)
                    for name, value in counter_values(self.count).items()}
        windows = target_registers(m, self, readings)
        query = intake.window
        m.d.comb += query.granted.eq(windows.granted_aligned(query.line, query.lines_log2,
                                                             query.need))
        # Store data waits here until its length is known to be right; it holds the data of the
        # store being written and of the next one.
        m.submodules.store_q = store_q = SyncFIFOBuffered(
            width=8 * W, depth=max(2, 2 * _max_beats(W)))
        wiring.connect(m, wiring.flipped(self.header), intake.header)
        wiring.connect(m, wiring.flipped(self.i), intake.i)
        wiring.connect(m, intake.store, store_q.w_stream)
        wiring.connect(m, intake.job, address.job)
        wiring.connect(m, address.next, data.job)
        wiring.connect(m, store_q.r_stream, data.store)
        wiring.connect(m, data.rsp_header, wiring.flipped(self.rsp_header))
        wiring.connect(m, data.o, wiring.flipped(self.o))
        m.d.comb += [address.reading.eq(data.reading), address.writing.eq(data.writing)]
        forward(m, self.m_axi, address.m_axi)
        forward(m, self.m_axi, data.m_axi)
        forward(m, self.count, intake.count)
        forward(m, self.count, data.count)
        return m


def _max_beats(beat_octets):
    """Beats of the largest L/S access."""
    return MAX_LS_OCTETS // beat_octets if beat_octets < MAX_LS_OCTETS else 1


class _JobLayout(data.StructLayout):
    """A request on its way through :class:`LsResponder`'s stages: its ``header``, the
    ``status`` decided for it, what execution does with it (``kind``) and the ``beats`` it
    left in the store buffer."""
    def __init__(self, beat_octets):
        super().__init__({"header": HeaderLayout(), "status": Status, "kind": _Job,
                          "beats": range(_max_beats(beat_octets) + 1)})


def _WindowQuery():
    """A window check, as the asker sees it: is there one window that holds the ``2 **
    lines_log2`` lines from ``line`` and grants a permission of ``need`` (read, write bits)?
    Only asked of a ``line`` aligned to that count (:meth:`.Windows.granted_aligned`)."""
    return wiring.Signature({"line": Out(LINE_BITS), "lines_log2": Out(LsSize),
                             "need": Out(2), "granted": In(1)})


def _AxiAddress(addr_width, beat_octets):
    """The AR and AW channels of :func:`.axi.Axi4Signature`."""
    return wiring.Signature(members_of(
        Axi4Signature(addr_width, beat_octets),
        "awid", "awaddr", "awlen", "awsize", "awburst", "awvalid", "awready",
        "arid", "araddr", "arlen", "arsize", "arburst", "arvalid", "arready"))


def _AxiData(addr_width, beat_octets):
    """The W, B and R channels of :func:`.axi.Axi4Signature`."""
    return wiring.Signature(members_of(
        Axi4Signature(addr_width, beat_octets),
        "wdata", "wstrb", "wlast", "wvalid", "wready", "bid", "bresp", "bvalid", "bready",
        "rid", "rdata", "rresp", "rlast", "rvalid", "rready"))


class _Intake(wiring.Component):
    """Take a request, decide its status, receive and check its payload, hand it on.

    The status is decided in the cycle the ``header`` is taken: ADDRESS_ERROR if the line is
    not aligned to the size or the access runs past ``addr_width``, else ACCESS_DENIED unless
    the ``window`` check grants it, else OK. The payload packet on ``i`` follows: an OK
    store's octets up to its size go on ``store`` (``i`` waits for it), any others are only
    counted. At the payload's last beat the request is classified (:class:`_Job`) and counted
    (``unexpected``, ``malformed``, ``denied`` or ``address_errors``, ``loads``, ``stores``),
    and offered on ``job`` until taken; the next header is taken the cycle after. A payload
    that ends with ``user.error`` (the frame was found bad after it was passed on) makes the
    request a discard, counted nowhere.

    Members
    -------
    header : In(stream.Signature(HeaderLayout())); i : In(VerdictPacketStream(beat_octets))
        Requests, as a parser gives them.
    window : Out(_WindowQuery)
        The check of the request on ``header`` (combinational).
    store : Out(stream.Signature(8 * beat_octets))
        Store data for the store buffer.
    job : Out(stream.Signature(_JobLayout))
        Requests for execution.
    count : Out(Counters)
        :attr:`COUNTERS`.

    Latency: ``job`` is offered in the cycle of the payload's last beat.
    Throughput: one beat per cycle; one request per payload length + 1 cycles.
    """
    COUNTERS = ("loads", "stores", "denied", "address_errors", "malformed", "unexpected")

    def __init__(self, beat_octets, addr_width):
        self.beat_octets = beat_octets
        self.addr_width = addr_width
        super().__init__({
            "header": In(stream.Signature(HeaderLayout())),
            "i": In(VerdictPacketStream(beat_octets)),
            "window": Out(_WindowQuery()),
            "store": Out(stream.Signature(8 * beat_octets)),
            "job": Out(stream.Signature(_JobLayout(beat_octets))),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        counters = CounterBank(m, self.count)
        req = Signal(HeaderLayout())
        ls = req.th.ls
        is_load = ls.opcode == Opcode.LOAD_REQ
        is_store = ls.opcode == Opcode.STORE_REQ
        lines = Signal(range(MAX_LS_OCTETS // LINE_OCTETS + 1))
        m.d.comb += lines.eq(Const(1, 3) << ls.size)
        # The status of the request on ``header``, decided as it is taken (from the parser's
        # output register, so the window compares have a cycle of their own).
        new = self.header.payload.th.ls
        new_lines = Signal.like(lines)
        m.d.comb += new_lines.eq(Const(1, 3) << new.size)
        # Ref: spec §4.2 — the byte address must be aligned to the size.
        misaligned = (new.line & (new_lines - 1)) != 0
        # An aligned access of 2**size lines (at most 4, and the space a power of 2 of at least
        # 64) runs past the address space exactly when it starts beyond it; neither this nor
        # the window check needs ``line + lines``, an adder in front of every compare.
        beyond = new.line[self.addr_width - 6:] != 0
        granted = Signal()
        m.d.comb += [
            self.window.line.eq(new.line), self.window.lines_log2.eq(new.size),
            self.window.need.eq(Cat(new.opcode == Opcode.LOAD_REQ,
                                    new.opcode == Opcode.STORE_REQ)),
            granted.eq(self.window.granted),
        ]
        status = Signal(Status)      # decided when the header is taken
        expected_octets = Signal(range(MAX_LS_OCTETS + 1))
        m.d.comb += expected_octets.eq(Mux(is_store, lines * LINE_OCTETS, 0))
        octets = Signal(range(MAX_LS_OCTETS + W + 1))   # payload octets seen (saturating)
        pushed = Signal(range(_max_beats(W) + 1))       # beats put in the store buffer
        kind = Signal(_Job)
        hand_kind = Signal(_Job)
        hand_beats = Signal.like(pushed)
        job = self.job.payload
        m.d.comb += [job.header.eq(req), job.status.eq(status), job.kind.eq(hand_kind),
                     job.beats.eq(hand_beats)]

        take_i = self.i.valid & self.i.ready
        with m.FSM(name="intake"):
            with m.State("IDLE"):
                m.d.comb += self.header.ready.eq(1)
                with m.If(self.header.valid):
                    m.d.sync += [req.eq(self.header.payload), octets.eq(0), pushed.eq(0)]
                    with m.If(misaligned | beyond):
                        m.d.sync += status.eq(Status.ADDRESS_ERROR)
                    with m.Elif(~granted):
                        m.d.sync += status.eq(Status.ACCESS_DENIED)
                    with m.Else():
                        m.d.sync += status.eq(Status.OK)
                    m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                # The request's payload: kept for an accepted store, else only counted.
                # Octets past the expected length are only counted (a request buffers at most
                # its own access), so a too-long store cannot stall on a full buffer.
                push = is_store & (status == Status.OK) & (octets < expected_octets)
                m.d.comb += [
                    self.i.ready.eq(~push | self.store.ready),
                    self.store.payload.eq(self.i.payload.data),
                    self.store.valid.eq(self.i.valid & push),
                ]
                count = keep_count(self.i.payload.keep, W)
                with m.If(take_i):
                    with m.If(octets <= MAX_LS_OCTETS):
                        m.d.sync += octets.eq(octets + count)
                    m.d.sync += pushed.eq(pushed + push)
                    with m.If(self.i.payload.last):
                        total = octets + count
                        m.d.comb += hand_beats.eq(pushed + push)
                        with m.If(self.i.payload.user.error):
                            m.d.comb += hand_kind.eq(_Job.DISCARD)
                        with m.Elif(~is_load & ~is_store):
                            counters["unexpected"].increment(m, 1)
                            m.d.comb += hand_kind.eq(_Job.DISCARD)
                        with m.Elif(total != expected_octets):
                            counters["malformed"].increment(m, 1)
                            m.d.comb += hand_kind.eq(_Job.DISCARD)
                        with m.Elif(status != Status.OK):
                            count_refusal(m, counters, status)
                            m.d.comb += hand_kind.eq(_Job.RESPOND)
                        with m.Elif(is_load):
                            counters["loads"].increment(m, 1)
                            m.d.comb += hand_kind.eq(_Job.LOAD)
                        with m.Else():
                            counters["stores"].increment(m, 1)
                            m.d.comb += hand_kind.eq(_Job.STORE)
                        m.d.sync += kind.eq(hand_kind)
                        m.d.comb += self.job.valid.eq(1)
                        with m.If(self.job.ready):
                            m.next = "IDLE"
                        with m.Else():
                            m.next = "HAND"
            with m.State("HAND"):
                # The address stage still holds the request before: wait for it to pass on.
                m.d.comb += [hand_kind.eq(kind), hand_beats.eq(pushed), self.job.valid.eq(1)]
                with m.If(self.job.ready):
                    m.next = "IDLE"
        return m


class _AddressStage(wiring.Component):
    """Issue a request's AR or AW, then pass the request on to the data stage.

    A load's AR goes out as soon as the data stage is not ``writing``, a store's AW as soon
    as it is not ``reading`` (AXI does not order reads against writes): one INCR burst of
    full beats at the request's line. A request of another kind issues nothing. The request
    is offered on ``next`` once its AR/AW has been taken; ``job`` is ready while the stage is
    empty or passes its request on.

    Members
    -------
    job : In(stream.Signature(_JobLayout)); next : Out(stream.Signature(_JobLayout))
    m_axi : Out(_AxiAddress)
        The AR and AW channels.
    reading, writing : In(1)
        The data stage streams R; sends W or waits for B.

    Latency: AR/AW valid 1 cycle after ``job``; ``next`` valid in the cycle AR/AW is taken.
    Throughput: one request per cycle while addresses are taken at once.
    """
    def __init__(self, beat_octets, addr_width):
        self.beat_octets = beat_octets
        self.addr_width = addr_width
        super().__init__({
            "job": In(stream.Signature(_JobLayout(beat_octets))),
            "next": Out(stream.Signature(_JobLayout(beat_octets))),
            "m_axi": Out(_AxiAddress(addr_width, beat_octets)),
            "reading": In(1), "writing": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        beat_bits = (W - 1).bit_length()
        line_beats = LINE_OCTETS // W if W < LINE_OCTETS else 1
        axi = self.m_axi
        a_job = Signal(HeaderLayout())
        a_ls = a_job.th.ls
        a_status = Signal(Status)
        a_kind = Signal(_Job)
        a_beats = Signal(range(_max_beats(W) + 1))
        a_valid = Signal()
        a_issued = Signal()         # its AR/AW has been taken
        a_lines = Signal(range(MAX_LS_OCTETS // LINE_OCTETS + 1))
        m.d.comb += a_lines.eq(Const(1, 3) << a_ls.size)
        nxt = self.next.payload
        m.d.comb += [nxt.header.eq(a_job), nxt.status.eq(a_status), nxt.kind.eq(a_kind),
                     nxt.beats.eq(a_beats)]

        byte_addr = Cat(C(0, 6), a_ls.line)[:self.addr_width]
        burst = {"len": (a_lines * line_beats - 1)[:8], "size": C(beat_bits, 3),
                 "burst": C(BURST_INCR, 2)}
        m.d.comb += [
            axi.awaddr.eq(byte_addr), axi.araddr.eq(byte_addr),
            axi.awlen.eq(burst["len"]), axi.arlen.eq(burst["len"]),
            axi.awsize.eq(burst["size"]), axi.arsize.eq(burst["size"]),
            axi.awburst.eq(burst["burst"]), axi.arburst.eq(burst["burst"]),
            axi.awid.eq(0), axi.arid.eq(0),
        ]
        a_load = a_kind == _Job.LOAD
        a_store = a_kind == _Job.STORE
        m.d.comb += [
            axi.arvalid.eq(a_valid & ~a_issued & a_load & ~self.writing),
            axi.awvalid.eq(a_valid & ~a_issued & a_store & ~self.reading),
        ]
        addressed = (a_issued | ~(a_load | a_store)
                     | (axi.arvalid & axi.arready)
                     | (axi.awvalid & axi.awready))
        with m.If((axi.arvalid & axi.arready)
                  | (axi.awvalid & axi.awready)):
            m.d.sync += a_issued.eq(1)
        m.d.comb += [self.next.valid.eq(a_valid & addressed),
                     self.job.ready.eq(~a_valid | (self.next.valid & self.next.ready))]
        with m.If(self.next.valid & self.next.ready):
            m.d.sync += [a_valid.eq(0), a_issued.eq(0)]
        with m.If(self.job.valid & self.job.ready):
            m.d.sync += [a_job.eq(self.job.payload.header), a_status.eq(self.job.payload.status),
                         a_kind.eq(self.job.payload.kind), a_beats.eq(self.job.payload.beats),
                         a_valid.eq(1)]
        return m


class _ResponseHeader(wiring.Component):
    """Frame the response to a request: its OEFH and L/S TH.

    VC 1, dst and src swapped, the request's entropy, size, tag and line, LOAD_RSP for a
    LOAD_REQ and STORE_RSP otherwise, the given ``status`` (spec §4.2, §9).

    Members
    -------
    request : In(HeaderLayout()); status : In(Status)
    header : Out(HeaderLayout())

    Latency: 0 cycles (combinational). Throughput: one header per cycle.
    """
    request: In(HeaderLayout())
    status: In(Status)
    header: Out(HeaderLayout())

    def elaborate(self, platform):
        m = Module()
        req, ls, rsp = self.request, self.request.th.ls, self.header
        m.d.comb += [
            rsp.oefh.ver.eq(OEFH_VERSION),
            rsp.oefh.vc.eq(VirtualChannel.LS_RSP),
            rsp.oefh.dst.eq(req.oefh.src),
            rsp.oefh.src.eq(req.oefh.dst),
            rsp.oefh.entropy.eq(req.oefh.entropy),
            rsp.th.ls.opcode.eq(Mux(ls.opcode == Opcode.LOAD_REQ, Opcode.LOAD_RSP,
                                    Opcode.STORE_RSP)),
            rsp.th.ls.size.eq(ls.size),
            rsp.th.ls.status.eq(self.status),
            rsp.th.ls.tag.eq(ls.tag),
            rsp.th.ls.line.eq(ls.line),
        ]
        return m


class _DataStage(wiring.Component):
    """Move a request's data and answer it.

    By the request's kind (:class:`_Job`): a load's read data goes from R straight to ``o``,
    its response header with the first beat (a beat whose read response is not OKAY is
    counted in ``axi_errors``); a store's buffered beats go from ``store`` onto W, then B is
    awaited (not OKAY: counted, answered ADDRESS_ERROR) and the response sent without payload;
    a refused request is answered without payload; a discarded one's buffered beats are
    dropped. A response without payload is its header on ``rsp_header`` and one empty beat
    on ``o``. ``job`` is ready while the stage is idle and in the cycle its request ends.

    Members
    -------
    job : In(stream.Signature(_JobLayout)); store : In(stream.Signature(8 * beat_octets))
    m_axi : Out(_AxiData)
        The W, B and R channels.
    rsp_header : Out(stream.Signature(HeaderLayout())); o : Out(PacketStream(beat_octets))
        Responses, for a deparser.
    reading, writing : Out(1)
        Streaming R; sending W or waiting for B.
    count : Out(Counters)
        ``axi_errors``.

    Latency: 0 cycles (R to ``o``, ``store`` to W); a response without payload is offered
    1 cycle after ``job`` or after B.
    Throughput: one beat per cycle; back to back bursts without a gap.
    """
    COUNTERS = ("axi_errors",)

    def __init__(self, beat_octets, addr_width):
        self.beat_octets = beat_octets
        super().__init__({
            "job": In(stream.Signature(_JobLayout(beat_octets))),
            "store": In(stream.Signature(8 * beat_octets)),
            "m_axi": Out(_AxiData(addr_width, beat_octets)),
            "rsp_header": Out(stream.Signature(HeaderLayout())),
            "o": Out(PacketStream(beat_octets)),
            "reading": Out(1), "writing": Out(1),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        W = self.beat_octets
        counters = CounterBank(m, self.count)
        axi, store, job = self.m_axi, self.store, self.job.payload
        d_job = Signal(HeaderLayout())
        d_status = Signal(Status)
        d_phase = Signal(_Phase)
        beats_left = Signal(range(_max_beats(W) + 1))
        m.submodules.header = header = _ResponseHeader()
        m.d.comb += [header.request.eq(d_job), header.status.eq(d_status),
                     self.rsp_header.payload.eq(header.header)]
        m.d.comb += [axi.wdata.eq(store.payload), axi.wstrb.eq(C(-1, W)),
                     axi.wlast.eq(beats_left == 1)]
        m.d.comb += [self.reading.eq(d_phase == _Phase.R),
                     self.writing.eq((d_phase == _Phase.W) | (d_phase == _Phase.B))]

        hdr_sent = Signal()
        beat_sent = Signal()
        first = Signal()
        d_done = Signal()           # the data stage's request ends this cycle
        m.d.comb += self.job.ready.eq((d_phase == _Phase.IDLE) | d_done)
        with m.Switch(d_phase):
            with m.Case(_Phase.DISCARD):
                # Drop what a malformed store left in the buffer.
                with m.If(beats_left == 0):
                    m.d.comb += d_done.eq(1)
                with m.Else():
                    m.d.comb += store.ready.eq(1)
                    with m.If(store.valid):
                        m.d.sync += beats_left.eq(beats_left - 1)
            with m.Case(_Phase.R):
                # Read data goes straight to the response; its header leaves with beat 0.
                m.d.comb += [
                    self.o.valid.eq(axi.rvalid),
                    self.o.payload.data.eq(axi.rdata),
                    self.o.payload.keep.eq(C(-1, W)),
                    self.o.payload.first.eq(first),
                    self.o.payload.last.eq(axi.rlast),
                    axi.rready.eq(self.o.ready),
                    self.rsp_header.valid.eq(~hdr_sent & axi.rvalid),
                ]
                with m.If(self.rsp_header.valid & self.rsp_header.ready):
                    m.d.sync += hdr_sent.eq(1)
                with m.If(axi.rvalid & axi.rready):
                    m.d.sync += first.eq(0)
                    counters["axi_errors"].increment(m, axi.rresp != RESP_OKAY)
                    m.d.comb += d_done.eq(axi.rlast)
            with m.Case(_Phase.W):
                m.d.comb += [axi.wvalid.eq(store.valid),
                             store.ready.eq(axi.wready)]
                with m.If(axi.wvalid & axi.wready):
                    m.d.sync += beats_left.eq(beats_left - 1)
                    with m.If(beats_left == 1):
                        m.d.sync += d_phase.eq(_Phase.B)
            with m.Case(_Phase.B):
                m.d.comb += axi.bready.eq(1)
                with m.If(axi.bvalid):
                    with m.If(axi.bresp != RESP_OKAY):
                        m.d.sync += d_status.eq(Status.ADDRESS_ERROR)
                    counters["axi_errors"].increment(m, axi.bresp != RESP_OKAY)
                    m.d.sync += d_phase.eq(_Phase.RESPOND)
            with m.Case(_Phase.RESPOND):
                # A response without payload: the header and one empty beat.
                m.d.comb += [
                    self.rsp_header.valid.eq(~hdr_sent),
                    self.o.valid.eq(~beat_sent),
                    self.o.payload.first.eq(1),
                    self.o.payload.last.eq(1),
                ]
                hdr_done = hdr_sent | self.rsp_header.ready
                beat_done = beat_sent | self.o.ready
                m.d.sync += [hdr_sent.eq(hdr_done), beat_sent.eq(beat_done)]
                m.d.comb += d_done.eq(hdr_done & beat_done)
        # Taking the next request comes last: it overrides the flags the phases set.
        with m.If(d_done):
            m.d.sync += d_phase.eq(_Phase.IDLE)
        with m.If(self.job.valid & self.job.ready):
            m.d.sync += [d_job.eq(job.header), d_status.eq(job.status),
                         beats_left.eq(job.beats), hdr_sent.eq(0), beat_sent.eq(0), first.eq(1)]
            with m.Switch(job.kind):
                with m.Case(_Job.LOAD):
                    m.d.sync += d_phase.eq(_Phase.R)
                with m.Case(_Job.STORE):
                    m.d.sync += d_phase.eq(_Phase.W)
                with m.Case(_Job.RESPOND):
                    m.d.sync += d_phase.eq(_Phase.RESPOND)
                with m.Case(_Job.DISCARD):
                    m.d.sync += d_phase.eq(_Phase.DISCARD)
        return m


@parameters(beat_octets=BEAT_OCTETS, windows=WINDOWS, addr_width=ADDR_WIDTH)
class LsTarget(wiring.Component):
    """Frames in, responses out: :class:`OefhParser` → :class:`LsResponder` →
    :class:`OefhDeparser`, the L/S target of a NIC behind its link layer (FCS already
    checked and removed on ``i``, to be added on ``o``).

    Members
    -------
    i : In(VerdictPacketStream(beat_octets)); o : Out(PacketStream(beat_octets))
        Request frames (OEFH + TH + payload) in, which may come before they are judged (a
        bad one ends with ``user.error`` and is dropped, :class:`LsResponder`); response
        frames out.
    hint : Out(PathRequest(reachable=False))
        The ``dst`` and ``entropy`` of a response (the request's ``src`` and ``entropy``)
        the cycle after its request's header is taken, at least 3 cycles before the
        response's first beat (for a lookup of its port ahead,
        :class:`~ethlink.rtl.nic.nic.FrameSteer`).
    m_axi, csr, count : those of :class:`LsResponder`; ``count.rx`` are the parser's.

    Latency (cycles, asserted by the tests): :attr:`LOAD_ISSUE_LATENCY`,
    :attr:`STORE_ISSUE_LATENCY`, :attr:`LOAD_RESPONSE_LATENCY`; the memory's own latency comes
    on top of them.
    """
    #: Cycles from the frame beat that completes a LOAD_REQ's TH to AR valid: parser 1, header
    #: taken and window check 1, the (empty) payload beat 1.
    LOAD_ISSUE_LATENCY = 3
    #: Cycles from a STORE_REQ's last frame beat to AW valid: parser 1 (the realigned last
    #: payload beat), the beat taken with the length check 1.
    STORE_ISSUE_LATENCY = 2
    #: Cycles from the first read data (R valid) to the first LOAD_RSP beat on ``o``: read
    #: data and the response header go straight to the deparser, whose register is the cycle.
    LOAD_RESPONSE_LATENCY = 1

    def __init__(self, beat_octets=8, windows=8, addr_width=32):
        self._responder = LsResponder(beat_octets, windows, addr_width)
        self._parser = OefhParser(beat_octets, verdict=True)
        self._deparser = OefhDeparser(beat_octets)
        super().__init__({
            "i": In(VerdictPacketStream(beat_octets)), "o": Out(PacketStream(beat_octets)),
            "hint": Out(PathRequest(reachable=False)),
            "m_axi": Out(Axi4Signature(addr_width, beat_octets)),
            "csr": In(RegisterBus(csr.ADDR_BITS)),
            "count": Out(Counters(LsResponder.COUNTERS,
                                  groups={"rx": Counters(OefhParser.COUNTERS)})),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.parser = parser = self._parser
        m.submodules.responder = responder = self._responder
        m.submodules.deparser = deparser = self._deparser
        wiring.connect(m, wiring.flipped(self.i), parser.i)
        wiring.connect(m, parser.header, responder.header)
        # Registered: the response leaves at least 4 cycles after its request's header, and the
        # lookup's path starts here rather than at the parser's header queue.
        request = parser.header.payload.oefh
        m.d.sync += [self.hint.valid.eq(parser.header.valid & parser.header.ready),
                     self.hint.dst.eq(request.src), self.hint.entropy.eq(request.entropy)]
        wiring.connect(m, parser.o, responder.i)
        wiring.connect(m, responder.rsp_header, deparser.header)
        wiring.connect(m, responder.o, deparser.i)
        wiring.connect(m, deparser.o, wiring.flipped(self.o))
        wiring.connect(m, wiring.flipped(self.m_axi), responder.m_axi)
        wiring.connect(m, wiring.flipped(self.csr), responder.csr)
        forward(m, self.count, responder.count)
        wiring.connect(m, parser.count, wiring.flipped(self.count.rx))
        return m
