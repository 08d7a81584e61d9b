"""Testbench pieces of the NIC L/S target shared by its cocotb tests and ``ethlink bench nic``:
the register bus, the AXI RAM that stands for GPU memory with the golden model beside it, and a
log of the cycles an AXI4 request is offered."""

import copy
import itertools
from types import SimpleNamespace

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiRam, AxiStreamFrame

from ethlink.rtl.link.layouts import LcwLayout, MAC_BEAT_OCTETS
from ethlink.rtl.nic import csr
from ethlink.rtl.nic.ls_requester import CompletionStatus, LsRequestLayout
from ethlink.rtl.nic.nic import Nic, NIC_VCS
from ethlink.rtl.nic.rdma_requester import RdmaCommandLayout
from ethlink.rtl.wire import LsSize, Opcode, Status, XgmiiControl, lanes_to_value
from ethlink.sim.link_tb import setup_line
from ethlink.sim.models import Frame
from ethlink.sim.models.nic import LINE_OCTETS, LsTargetModel, Window
from ethlink.sim.models.path import ls_entropy, select_port
from ethlink.sim.models.rdma import RdmaCommand, RdmaTargetModel, run_command
from ethlink.sim.runner import export_params
from ethlink.sim.tb import Ports, TransferLog, axis_sink, axis_source, pauses, start, wait_idle

__all__ = ["csr_write", "csr_read", "axi_ram", "attach_memory", "setup", "program_windows",
           "open_memory", "ValidLog", "request_octets", "command_octets", "completion",
           "LoopbackPorts", "lcw_tdata", "NicPairSides", "XgmiiStarts", "PAIR_PARAMS",
           "random_requests", "issue", "collect_completions", "probe_latency", "RdmaAreas",
           "run_rdma", "nic_params", "run_link_loss"]


async def csr_write(dut, addr, data, prefix=""):
    """Write a target register; ``prefix`` names the NIC of a pair (``"a_"``)."""
    for name, value in (("addr", addr), ("wdata", data), ("we", 1)):
        getattr(dut, f"{prefix}csr_{name}").value = value
    await RisingEdge(dut.clk)
    getattr(dut, f"{prefix}csr_we").value = 0


async def csr_read(dut, addr, prefix=""):
    getattr(dut, f"{prefix}csr_addr").value = addr
    getattr(dut, f"{prefix}csr_re").value = 1
    await RisingEdge(dut.clk)
    getattr(dut, f"{prefix}csr_re").value = 0
    await ReadOnly()
    assert int(getattr(dut, f"{prefix}csr_rvalid").value) == 1
    value = int(getattr(dut, f"{prefix}csr_rdata").value)
    await RisingEdge(dut.clk)
    return value


def axi_ram(dut, prefix, rng, axi_pause=0.0, share=None):
    """An AXI RAM of the whole address space on AXI4 port ``prefix``, pausing every channel
    with probability ``axi_pause``. Without ``share`` it is filled with random octets and
    returned with a bytearray copy of them; with ``share`` (another such RAM) it is another
    port onto that RAM's memory, returned alone."""
    size = 1 << export_params()["addr_width"]
    ram = AxiRam(AxiBus.from_prefix(dut, prefix), dut.clk, dut.rst, size=size,
                 mem=None if share is None else share.mem)
    for channel in (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                    ram.read_if.ar_channel, ram.read_if.r_channel):
        channel.set_pause_generator(pauses(rng, axi_pause))
    ram.write_if.log.setLevel("WARNING")
    ram.read_if.log.setLevel("WARNING")
    if share is not None:
        return ram
    initial = rng.randbytes(size)
    ram.write(0, initial)
    return ram, bytearray(initial)


def attach_memory(dut, rng, axi_pause=0.0, prefix=""):
    """An AXI RAM of the whole address space on ``{prefix}m_axi``, filled with random octets,
    pausing every channel with probability ``axi_pause``, and a golden target model holding
    the same octets. Returns ``(ram, model)``."""
    getattr(dut, f"{prefix}csr_we").value = getattr(dut, f"{prefix}csr_re").value = 0
    ram, initial = axi_ram(dut, f"{prefix}m_axi", rng, axi_pause)
    return ram, LsTargetModel(initial, [], export_params()["addr_width"])


async def setup(dut, rng, axi_pause=0.0):
    """Clock, reset and :func:`attach_memory`. Returns ``(counter, ram, model)``."""
    counter = await start(dut)
    ram, model = attach_memory(dut, rng, axi_pause)
    return counter, ram, model


async def program_windows(dut, model, windows, prefix=""):
    model.windows = list(windows)
    for index, window in enumerate(windows):
        for addr, data in window.csr_writes(index):
            await csr_write(dut, addr, data, prefix)


async def open_memory(dut, rng):
    """:func:`setup` with one read/write window over the whole memory."""
    counter, ram, model = await setup(dut, rng)
    memory_lines = (1 << export_params()["addr_width"]) // LINE_OCTETS
    await program_windows(dut, model, [Window(0, memory_lines, csr.PERM_READ | csr.PERM_WRITE)])
    return counter, ram, model


def lcw_tdata(lcw_type, payload):
    """``tdata`` of an LCW stream beat: the LcwLayout value (type in bits 7:0, P above) in the
    export's lane order."""
    return lanes_to_value(lcw_type | payload << 8, LcwLayout().size // 8)


class ValidLog:
    """The cycles in which ``valid`` rises (an AXI4 request is offered, whatever its ready)."""
    def __init__(self, valid, clk, counter):
        self.rises = []
        cocotb.start_soon(self._run(valid, clk, counter))

    async def _run(self, valid, clk, counter):
        was = 0
        while True:
            await RisingEdge(clk)
            await ReadOnly()
            now = int(valid.value)
            if now and not was:
                self.rises.append(counter.now)
            was = now


def request_octets(store, size, dst, tag, line):
    """The ``s_axis_req`` octets of one L/S request (the layout value in lane order)."""
    layout = LsRequestLayout()
    value = layout.const({"store": store, "size": size, "dst": dst, "tag": tag,
                          "line": line}).as_value().value
    return value.to_bytes(layout.size // 8, "big")


def command_octets(cmd):
    """The ``s_axis_cmd`` octets of one RDMA command (an
    :class:`~ethlink.sim.models.rdma.RdmaCommand`), the layout value in lane order."""
    layout = RdmaCommandLayout()
    value = layout.const({"read": int(cmd.read), "dst": cmd.dst, "id": cmd.id,
                          "remote": cmd.remote, "local": cmd.local,
                          "length": cmd.length}).as_value().value
    return value.to_bytes(layout.size // 8, "big")


def completion(octets):
    """``(tag, CompletionStatus)`` of the ``m_axis_cpl`` octets of one completion."""
    value = int.from_bytes(bytes(octets), "big")
    return value & 0xFFF, CompletionStatus(value >> 12 & 0b111)


def LoopbackPorts(dut, counter, rng=None, idle=0.0, backpressure=0.0):
    """The GPU-side bus models of ``nic_ls_loopback`` (``reqs``, ``data``, ``cpls``,
    ``cpl_data``) and the logs its latencies are measured with: requests taken (``req_log``),
    request and response frames (``tx``, ``rx``), completions offered (``cpl_valid``)."""
    return SimpleNamespace(
        reqs=axis_source(dut, "s_axis_req", rng, idle),
        data=axis_source(dut, "s_axis_req_data", rng, idle),
        cpls=axis_sink(dut, "m_axis_cpl", rng, backpressure),
        cpl_data=axis_sink(dut, "m_axis_cpl_data", rng, backpressure),
        req_log=TransferLog(dut, "s_axis_req", counter),
        tx=TransferLog(dut, "tap_req", counter),
        rx=TransferLog(dut, "tap_rsp", counter),
        cpl_valid=ValidLog(dut.m_axis_cpl_tvalid, dut.clk, counter))


class XgmiiStarts:
    """The cycles in which an XGMII start word (``/S/`` in lane 0) is on ``{prefix}d`` /
    ``{prefix}c``."""
    def __init__(self, dut, prefix, counter):
        self.cycles = []
        cocotb.start_soon(self._run(getattr(dut, f"{prefix}d"), getattr(dut, f"{prefix}c"),
                                    dut.clk, counter))

    async def _run(self, data, ctrl, clk, counter):
        while True:
            await RisingEdge(clk)
            await ReadOnly()
            if int(ctrl.value) & 1 and int(data.value) & 0xFF == XgmiiControl.START:
                self.cycles.append(counter.now)


#: Endpoint ids of the two NICs of ``nic_pair``.
PAIR_IDS = {"a": 0x021, "b": 0x155}


def nic_params():
    """The ``nic_pair`` build's NIC parameters, defaults included."""
    return {**Nic.__init__.__kwdefaults__, **export_params()}


class NicSide:
    """One NIC of ``nic_pair``: its GPU-side bus models, its SEN sources (``lcw_sources``, one
    per port), its memory and the golden model of its target; ``peer`` is the other NIC."""
    def __init__(self, dut, name, rng, idle, backpressure, axi_pause):
        self.dut, self.name, self.id = dut, name, PAIR_IDS[name]
        self.reqs = axis_source(dut, f"s_axis_req_{name}", rng, idle)
        self.data = axis_source(dut, f"s_axis_req_data_{name}", rng, idle)
        self.cpls = axis_sink(dut, f"m_axis_cpl_{name}", rng, backpressure)
        self.cpl_data = axis_sink(dut, f"m_axis_cpl_data_{name}", rng, backpressure)
        self.lcw_sources = [axis_source(dut, f"s_axis_lcw{p}_{name}")
                            for p in range(export_params()["ports"])]
        self.ram, self.model = attach_memory(dut, rng, axi_pause, f"{name}_")
        # The RDMA engines reach the same memory through ports of their own.
        for port in ("m_axi_dma", "m_axi_rdma"):
            axi_ram(dut, f"{name}_{port}", rng, axi_pause, share=self.ram)
        getattr(dut, f"{name}_rdma_csr_we").value = 0
        getattr(dut, f"{name}_rdma_csr_re").value = 0
        params = nic_params()
        self.rdma_model = RdmaTargetModel(self.model.memory, [], params["addr_width"],
                                          params["mtu"], MAC_BEAT_OCTETS, params["contexts"])
        self.cmds = axis_source(dut, f"s_axis_rdma_cmd_{name}", rng, idle)
        self.rdma_cpls = axis_sink(dut, f"m_axis_rdma_cpl_{name}", rng, backpressure)
        self.peer = None

    def value(self, name):
        """The value of this NIC's member ``name`` (a counter, ``links_up``...)."""
        return int(getattr(self.dut, f"{self.name}_{name}").value)


class NicPairSides:
    """Both NICs of ``nic_pair`` set up: :meth:`start` drives every control, starts the clock,
    attaches the memories; ``sides`` is ``(A, B)``."""
    @classmethod
    async def start(cls, dut, rng, ber=0.0, axi_pause=0.0, idle=0.0, backpressure=0.0,
                    rx_credits=()):
        """``rx_credits``: ``(nic, port, credits)`` to advertise per VC on that port instead of
        the whole buffer."""
        self = cls()
        self.dut = dut
        params = export_params()
        self.ports = params["ports"]
        self.memory_lines = (1 << params["addr_width"]) // LINE_OCTETS
        for name, end_id in PAIR_IDS.items():
            getattr(dut, f"{name}_local_id").value = end_id
            for p in range(self.ports):
                getattr(dut, f"{name}_p{p}_enable").value = 1
                getattr(dut, f"{name}_p{p}_replay_timeout").value = 0
                getattr(dut, f"{name}_p{p}_rx_credits").value = 0
        for name, p, credits in rx_credits:
            getattr(dut, f"{name}_p{p}_rx_credits").value = credits
        for p in range(self.ports):
            for n, direction in enumerate(("ab", "ba")):
                setup_line(Ports(dut, f"{direction}{p}_"), ber, seed=2 * (2 * p + n) + 1)
        if hasattr(dut, "fec_bypass"):
            dut.fec_bypass.value = 0
        self.counter = await start(dut)
        self.sides = tuple(NicSide(dut, name, rng, idle, backpressure, axi_pause)
                           for name in PAIR_IDS)
        self.sides[0].peer, self.sides[1].peer = self.sides[1], self.sides[0]
        return self

    async def program_windows(self, windows):
        for side in self.sides:
            await program_windows(self.dut, side.model, windows, f"{side.name}_")

    async def wait_links(self, timeout_cycles=20000):
        """Until every link of both NICs is up and both reachability tables are ready."""
        everything = (1 << self.ports) - 1
        for _ in range(timeout_cycles):
            await RisingEdge(self.dut.clk)
            if all(side.value("links_up") == everything and not side.value("reach_busy")
                   for side in self.sides):
                return
        raise AssertionError("the links did not come up")

    async def program_rdma_windows(self, windows):
        for side in self.sides:
            await program_windows(self.dut, side.rdma_model, windows, f"{side.name}_rdma_")

    def frames_sent(self):
        """``{nic: [[frames of VC v per port] for v in VCs 0…3]}`` sent by the ports' CBFC
        transmitters."""
        mask = (1 << 32) - 1
        return {side.name: [[side.value(f"p{p}_count_frames_sent") >> (32 * vc) & mask
                             for p in range(self.ports)] for vc in range(NIC_VCS)]
                for side in self.sides}


#: The ``nic_pair`` build the tests, ``ethlink bench nic`` and ``ethlink demo`` share (one
#: Verilator build): two ports, port 1's lines with RS(272,258) FEC, 64 KiB memories.
PAIR_PARAMS = {"ports": 2, "tags": 256, "timeout_cycles": 4000, "addr_width": 16, "fec": 0b10,
               "mtu": 256}


def random_requests(rng, count, memory_lines, first_tag=0, store_fraction=0.5,
                    sizes=(LsSize.B64, LsSize.B128, LsSize.B256)):
    """``count`` random L/S requests ``(store, size, tag, line, payload)`` with tags from
    ``first_tag``. Every request starts on a 4-line boundary, so requests that overlap have the
    same line, hence the same entropy and path, and reach the target in the order sent."""
    for tag in range(first_tag, first_tag + count):
        store = rng.random() < store_fraction
        size = rng.choice(sizes)
        line = rng.randrange(memory_lines // 4) * 4
        payload = rng.randbytes(LsSize(size).octets) if store else b""
        yield store, size, tag, line, payload


def model_answer(side, request, model=None):
    """The ``(status, load data or None)`` the golden model of ``side``'s peer (or ``model``)
    gives ``request`` (executing it there)."""
    store, size, tag, line, payload = request
    response = (model or side.peer.model).handle(Frame(
        opcode=Opcode.STORE_REQ if store else Opcode.LOAD_REQ, dst=side.peer.id,
        src=side.id, size=size, tag=tag, line=line, payload=payload))
    return (CompletionStatus(response.status),
            response.payload if not store and response.status == Status.OK else None)


async def issue(side, requests, window=None, answer=True):
    """Send ``requests`` from ``side`` to its peer, with at most ``window`` of them
    outstanding (completions not yet received) if given; returns ``{tag: (status, load data
    or None)}`` as the peer's golden target model answers them (``answer``; otherwise the
    model is left alone and ``{}`` returned)."""
    expected = {}
    base = side.cpls.count()
    for sent, request in enumerate(requests):
        store, size, tag, line, payload = request
        while window is not None and sent - (side.cpls.count() - base) >= window:
            await RisingEdge(side.dut.clk)
        if answer:
            expected[tag] = model_answer(side, request)
        await side.reqs.send(request_octets(int(store), size, side.peer.id, tag, line))
        if store:
            await side.data.send(AxiStreamFrame(payload))
    return expected


async def collect_completions(side, expected):
    """Receive ``side``'s completions of ``expected`` (all must have arrived); returns the
    completed tags in order and a list of every way they differ from ``expected``: a tag
    completed twice or unknown, a status or load data other than the model's, a completion or
    data beyond those expected."""
    order, errors = [], []
    for _ in range(len(expected)):
        tag, status = completion((await side.cpls.recv()).tdata)
        if tag in order or tag not in expected:
            errors.append(f"{side.name}: tag {tag} completed twice or unknown")
        elif status != expected[tag][0]:
            errors.append(f"{side.name} tag {tag}: {status.name}, model "
                          f"{expected[tag][0].name}")
        order.append(tag)
    if not side.cpls.empty():
        errors.append(f"{side.name}: more completions than requests")
    await check_load_data(side, order, expected, errors)
    return order, errors


async def check_load_data(side, order, expected, errors):
    """Compare the load data ``side`` received with ``expected`` (``{tag: (status, data or
    None)}``): one packet per load with data, in completion ``order``; adds to ``errors``."""
    loads = [tag for tag in order if expected.get(tag, (None, None))[1] is not None]
    # A load's data may follow its completion by a few cycles.
    for _ in range(1000):
        if side.cpl_data.count() >= len(loads):
            break
        await RisingEdge(side.dut.clk)
    if side.cpl_data.count() != len(loads):
        errors.append(f"{side.name}: {side.cpl_data.count()} load data packets, "
                      f"{len(loads)} expected")
    for tag in loads[:side.cpl_data.count()]:
        if bytes((await side.cpl_data.recv()).tdata) != expected[tag][1]:
            errors.append(f"{side.name} tag {tag}: load data differs")


async def probe_latency(dut, pair, store=False, tag=0):
    """One 64 B load (or store) of A from B on idle links, to a line whose path is a port
    without FEC, sent half-way between two periodic LCWs; returns its cycles: ``tx`` (A's
    request taken → its frame's start word on A's line side), ``rx`` (that start word on B's
    line side → B's AXI read or write address valid), ``round_trip`` (request taken →
    completion valid)."""
    a, b = pair.sides
    fec = export_params().get("fec", 0)
    line, port = next((line, port) for line in range(64, pair.memory_lines, 4)
                      for port in [select_port(b.id, ls_entropy(line), (1 << pair.ports) - 1)]
                      if not fec >> port & 1)
    req_log = TransferLog(dut, "s_axis_req_a", pair.counter)
    tx_starts = XgmiiStarts(dut, f"ab{port}_tap_tx", pair.counter)
    rx_starts = XgmiiStarts(dut, f"ab{port}_tap_rx", pair.counter)
    issued = ValidLog(getattr(dut, f"b_m_axi_{'aw' if store else 'ar'}valid"), dut.clk,
                      pair.counter)
    cpl_valid = ValidLog(dut.m_axis_cpl_a_tvalid, dut.clk, pair.counter)
    # Clear of the periodic LCWs (PING, CREDIT_UPDATE, CREDIT_SYNC: every 1024 or 4096
    # cycles from reset), which the MAC may put between two words of the frame.
    while pair.counter.now % 1024 != 512:
        await RisingEdge(dut.clk)
    expected = await issue(a, [(store, LsSize.B64, tag, line,
                                bytes(range(64)) if store else b"")])
    await wait_idle(dut, [a.reqs, a.data], [(a.cpls, 1)])
    order, errors = await collect_completions(a, expected)
    assert not errors, errors
    taken = req_log.transfers[0][0]
    return {"tx": tx_starts.cycles[0] - taken, "rx": issued.rises[0] - rx_starts.cycles[0],
            "round_trip": cpl_valid.rises[0] - taken}


class RdmaAreas:
    """Where the pair's RDMA traffic goes in each NIC's memory of ``octets`` octets, so that
    commands in flight never touch the same octets and the golden models, applied in the
    order commands are issued, stay exact: the first quarter is left to L/S; message ``id``
    of a NIC uses slot ``id`` of its own ``local`` quarter and of the peer's ``remote``
    quarter (a read/write window), or of the peer's ``read_only`` eighth (a read-only
    window) or ``closed`` eighth (no window)."""
    def __init__(self, octets, messages):
        self.quarter = octets // 4
        self.local, self.remote = self.quarter, 2 * self.quarter
        self.read_only, self.closed = 3 * self.quarter, 3 * self.quarter + self.quarter // 2
        self.slot = self.quarter // messages

    def windows(self):
        """The RDMA targets' windows."""
        line = LINE_OCTETS
        return [Window(self.remote // line, self.quarter // line, csr.PERM_READ | csr.PERM_WRITE),
                Window(self.read_only // line, self.quarter // 2 // line, csr.PERM_READ)]

    def command(self, rng, ident, dst, mtu, read=None, length=None, misaligned=0.03):
        """A random command of message ``ident`` to ``dst``: mostly inside the read/write
        window, some in the read-only or the closed area, some misaligned."""
        beat = MAC_BEAT_OCTETS
        read = rng.random() < 0.5 if read is None else read
        where = rng.random()
        base, room = ((self.remote, self.slot) if length is not None or where < 0.8 else
                      (self.read_only, self.slot // 2) if where < 0.9 else
                      (self.closed, self.slot // 2))
        if length is None:
            length = rng.choice([rng.randint(1, 64), rng.randint(1, room), mtu, room])
        length = min(length, room)
        remote = base + ident * room + rng.randrange(0, room - length + 1, beat)
        if rng.random() < misaligned:
            remote += rng.randrange(1, beat)
        local = self.local + ident * self.slot + rng.randrange(0, self.slot - length + 1, beat)
        return RdmaCommand(read=read, dst=dst, id=ident, remote=remote, local=local,
                           length=length)


async def run_rdma(side, rng, count, window=None, make=None, frames=None):
    """Issue ``count`` commands from ``side`` to its peer, at most ``window`` (default: all
    the message ids) outstanding, each made by ``make(rng, ident)`` (default: a random
    :meth:`RdmaAreas.command`), and apply each to the golden models as it is issued (the
    request and response frames appended to ``frames``). Returns ``statuses`` (in completion
    order), ``cycles`` (each command's, queued → completion), ``octets`` (of the commands
    that completed OK) and ``errors`` (every way completions differ from the models)."""
    params = nic_params()
    messages = params["messages"]
    areas = RdmaAreas(1 << params["addr_width"], messages)
    if make is None:
        def make(rng, ident):
            return areas.command(rng, ident, side.peer.id, params["mtu"])
    free = list(range(min(window or messages, messages)))
    waiting, statuses, cycles, errors = {}, [], [], []
    octets = [0]
    clock = side.dut.clk
    now = [0]

    async def count_cycles():
        while True:
            await RisingEdge(clock)
            now[0] += 1

    async def collect():
        while True:
            ident, status = completion((await side.rdma_cpls.recv()).tdata)
            if ident not in waiting:
                errors.append(f"{side.name}: completion of message {ident}, not outstanding")
                continue
            cmd, want, issued = waiting.pop(ident)
            statuses.append(status)
            cycles.append(now[0] - issued)
            if status != want:
                errors.append(f"{side.name} {cmd}: {status.name}, model {want.name}")
            elif status == CompletionStatus.OK:
                octets[0] += cmd.length
            free.append(ident)

    tasks = [cocotb.start_soon(count_cycles()), cocotb.start_soon(collect())]
    for _ in range(count):
        while not free:
            await RisingEdge(clock)
        ident = free.pop(rng.randrange(len(free)))
        cmd = make(rng, ident)
        want = CompletionStatus(run_command(
            cmd, side.id, side.model.memory, side.peer.rdma_model, params["mtu"],
            MAC_BEAT_OCTETS, params["addr_width"], frames))
        waiting[ident] = (cmd, want, now[0])
        await side.cmds.send(command_octets(cmd))
    for _ in range(params["timeout_cycles"] * 4 + 2000 * count):
        if not waiting:
            break
        await RisingEdge(clock)
    else:
        errors.append(f"{side.name}: {len(waiting)} commands never completed")
    for task in tasks:
        task.cancel()
    return SimpleNamespace(statuses=statuses, cycles=cycles, octets=octets[0], errors=errors)


async def run_link_loss(dut, rng, count, *, credits=16, memory_lines=None,
                        replay_timeout=100, **start):
    """Link loss with frames queued (spec §10): the pair is started (``start``: as
    :meth:`NicPairSides.start`) with B advertising ``credits`` per VC on its port 0, one
    read/write window over all memory and the links up; then A's line to B on port 0 is cut
    and A sends ``count`` random requests to B on the first ``memory_lines`` lines (all of
    them by default). The frames that take port 0 go into its LLR (lost on the line) as long
    as B's credits last, then wait in its CBFC queue; when the LLR gives up (FLUSH, after
    ``replay_timeout`` × (``replay_max`` + 1) cycles) the port goes down and what its queues
    hold is steered again, to the other ports.

    Every request must complete once, TIMEOUT or as the golden model executing the requests
    in issue order says (status and load data), and B's memory must equal the model's. A
    TIMEOUT says only that the request or its response was lost: its frame went into the dead
    LLR (never executed), or B executed it and its response took B's port 0, which B still
    believes up but which no longer delivers (A's port 0 is down and sends B no ACKs). So the
    model runs with each timed-out store whose response path is B's port 0 executed or not
    (the others must not have executed), and one of those choices must match everything; and
    every timed-out request must have taken port 0 one way or the other.
    Returns the ``errors`` (must be empty) and the cycles and counts seen: ``cut`` (line
    cut), ``down`` (A's port 0 leaves ``links_up``), ``last_sent`` (the last frame port 0's
    CBFC transmitter handed to its LLR), ``last_diverted`` (the last frame it gave back),
    ``sent`` and ``diverted`` (those frames since the cut), ``lost`` (TIMEOUT completions),
    ``lost_responses`` (of those, the ones whose request B may have executed: its response
    path is B's port 0)."""
    pair = await NicPairSides.start(dut, rng, rx_credits=[("b", 0, credits)], **start)
    await pair.program_windows([Window(0, pair.memory_lines, csr.PERM_READ | csr.PERM_WRITE)])
    await pair.wait_links()
    memory_lines = memory_lines or pair.memory_lines
    a, b = pair.sides
    initial = copy.deepcopy(b.model)
    getattr(dut, "a_p0_replay_timeout").value = replay_timeout
    getattr(dut, "ab0_link_up").value = 0

    def frames(name):
        """A per-VC counter of A's port 0, summed over the VCs."""
        value = a.value(f"p0_{name}")
        return sum(value >> 32 * vc & (1 << 32) - 1 for vc in range(NIC_VCS))

    sent0, diverted0 = frames("count_frames_sent"), frames("count_frames_diverted")
    seen = {"cut": pair.counter.now, "down": None, "last_sent": None, "last_diverted": None}
    requests = list(random_requests(rng, count, memory_lines))
    done = False

    async def watch():
        up, sent, diverted = 1, sent0, diverted0
        while not done:
            await RisingEdge(dut.clk)
            now = (a.value("links_up") & 1, frames("count_frames_sent"),
                   frames("count_frames_diverted"))
            if up and not now[0]:
                seen["down"] = pair.counter.now
            if now[1] != sent:
                seen["last_sent"] = pair.counter.now
            if now[2] != diverted:
                seen["last_diverted"] = pair.counter.now
            up, sent, diverted = now

    watcher = cocotb.start_soon(watch())
    await issue(a, requests, answer=False)
    await wait_idle(dut, [a.reqs, a.data], [(a.cpls, count)],
                    timeout_cycles=export_params()["timeout_cycles"] * 3 + 100 * count)
    done = True
    await watcher
    statuses, order, errors = {}, [], []
    for _ in range(count):
        tag, status = completion((await a.cpls.recv()).tdata)
        if tag in statuses:
            errors.append(f"tag {tag} completed twice")
        statuses[tag] = status
        order.append(tag)
    lost = [request for request in requests
            if statuses.get(request[2]) == CompletionStatus.TIMEOUT]
    everything = (1 << pair.ports) - 1
    via = {request[2]: (select_port(b.id, ls_entropy(request[3]), everything),
                        select_port(a.id, ls_entropy(request[3]), everything))
           for request in lost}
    errors += [f"tag {tag} timed out on paths (A→B, B→A) {ports}, neither port 0"
               for tag, ports in via.items() if 0 not in ports]
    # Load data arrives in completion order, one packet per load answered OK.
    stores = {request[2]: request[0] for request in requests}
    loads = [tag for tag in order if not stores[tag] and statuses[tag] == CompletionStatus.OK]
    for _ in range(1000):
        if a.cpl_data.count() >= len(loads):
            break
        await RisingEdge(dut.clk)
    data = {tag: bytes((await a.cpl_data.recv()).tdata)
            for tag in loads[:a.cpl_data.count()]}
    if len(data) != len(loads):
        errors.append(f"{len(data)} load data packets, {len(loads)} expected")
    memory = b.ram.read(0, len(initial.memory))
    # Executed or not: a timed-out store whose response path is B's port 0 (any other one
    # was lost in A's dead LLR, never executed).
    maybe = [request for request in lost if request[0] and via[request[2]][1] == 0]
    assert len(maybe) <= 12, f"{len(maybe)} stores timed out: too many to check"
    for executed in itertools.product((False, True), repeat=len(maybe)):
        run = dict(zip((request[2] for request in maybe), executed))
        model, wrong = copy.deepcopy(initial), []
        for request in requests:
            tag = request[2]
            if run.get(tag, tag not in via):
                answer = model_answer(a, request, model)
                if tag in via:
                    continue
                if statuses.get(tag) != answer[0]:
                    wrong.append(f"tag {tag}: {statuses.get(tag)}, model {answer[0].name}")
                elif answer[1] is not None and data.get(tag) != answer[1]:
                    wrong.append(f"tag {tag}: load data differs")
        if memory != bytes(model.memory):
            lines = sorted({k // LINE_OCTETS for k, (x, y) in
                            enumerate(zip(memory, model.memory)) if x != y})
            wrong.append(f"B's memory differs from the model on lines {lines[:8]}")
        if not wrong:
            break
        if not any(executed):
            first_wrong = wrong     # reported: the choice "no timed-out store executed"
    else:
        errors += first_wrong
    seen.update({
        "errors": errors,
        "sent": frames("count_frames_sent") - sent0,
        "diverted": frames("count_frames_diverted") - diverted0,
        "lost": len(lost),
        "lost_responses": sum(ports[1] == 0 for ports in via.values()),
        "purges": a.value("count_purges"),
    })
    return seen
