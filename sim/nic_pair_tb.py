"""The harness of ``nic_pair`` (two NICs back to back over ``ports`` lossless links), shared by
its cocotb tests, ``ethlink bench nic`` and ``ethlink demo``: :class:`NicPairTB` builds both
NICs' bus models, memories and golden models (:class:`NicSide`) and the lines between them;
a side issues typed L/S requests (:class:`~ethlink.sim.nic_tb.LsRequest`) and checks their
completions; :func:`run_rdma` runs RDMA commands against the golden models; and the
spreading check compares the frames each port sent with the path-selection model."""

from dataclasses import dataclass, field

import cocotb
from cocotbext.axi import AxiStreamFrame

from ethlink.rtl.link.layouts import MAC_BEAT_OCTETS
from ethlink.rtl.nic import csr
from ethlink.rtl.nic.ls_requester import CompletionStatus
from ethlink.rtl.nic.nic import Nic, NIC_VCS
from ethlink.rtl.wire import LsSize
from ethlink.sim.link_tb import setup_line
from ethlink.sim.models.nic import LINE_OCTETS, Window
from ethlink.sim.models.path import ls_entropy, select_port
from ethlink.sim.models.rdma import RdmaCommand, RdmaTargetModel, run_command
from ethlink.sim.nic_tb import (Answer, Completion, CsrBus, LsRequest, axi_ram,
                                command_octets, gpu_memory, memory_lines)
from ethlink.sim.runner import export_params
from ethlink.sim.tb import TB, Ports, axis_sink, axis_source, wait_until

__all__ = ["PAIR_PARAMS", "PAIR_IDS", "AXI_RAM_READ_CYCLES", "nic_params", "NicPairTB",
           "NicSide", "random_requests", "RdmaAreas", "RdmaRun", "run_rdma"]

#: The ``nic_pair`` build the tests, ``ethlink bench nic`` and ``ethlink demo`` share (one
#: Verilator build): two ports, port 1's lines with RS(272,258) FEC, 64 KiB memories.
PAIR_PARAMS = {"ports": 2, "tags": 256, "timeout_cycles": 4000, "addr_width": 16, "fec": 0b10,
               "mtu": 256}

#: Endpoint ids of the two NICs of ``nic_pair``.
PAIR_IDS = {"a": 0x021, "b": 0x155}

#: Cycles from AR valid to the first R valid of the memory behind every AXI port of the pair
#: (cocotbext-axi's ``AxiRam`` with no pauses, AR taken at once). The harness sets no delay:
#: this is the model's own answer time (its AR and R channel coroutines each take a clock edge),
#: which :func:`~ethlink.sim.nic_pair_scenarios.probe_latency` measures as ``memory``.
AXI_RAM_READ_CYCLES = 2


def nic_params():
    """The ``nic_pair`` build's NIC parameters, defaults included."""
    return {**{name: default for name, (default, _) in Nic.PARAMETERS.items()},
            **export_params()}


def random_requests(rng, count, memory_lines, dst, first_tag=0, store_fraction=0.5,
                    sizes=(LsSize.B64, LsSize.B128, LsSize.B256)):
    """``count`` random :class:`~ethlink.sim.nic_tb.LsRequest` to ``dst`` with tags from
    ``first_tag``. Every request starts on a 4-line boundary, so requests that overlap have the
    same line, hence the same entropy and path, and reach the target in the order sent."""
    for tag in range(first_tag, first_tag + count):
        store = rng.random() < store_fraction
        size = rng.choice(sizes)
        line = rng.randrange(memory_lines // 4) * 4
        payload = rng.randbytes(LsSize(size).octets) if store else b""
        yield LsRequest(store, size, dst, tag, line, payload)


class NicSide:
    """One NIC of ``nic_pair`` (``io``: its ports ``{name}_…``): its GPU-side bus models, its SEN
    sources (``lcw_sources``, one per port), its register buses (``csr``, ``rdma_csr``), its
    memory (``ram``, also behind the RDMA engines' AXI ports) and the golden models of its
    targets (``model``, ``rdma_model``); ``peer`` is the other NIC."""
    def __init__(self, dut, name, counter, rng, idle, backpressure, axi_pause):
        self.dut, self.name, self.id, self.counter = dut, name, PAIR_IDS[name], counter
        self.io = Ports(dut, f"{name}_")
        self.reqs = axis_source(dut, f"s_axis_req_{name}", rng, idle)
        self.data = axis_source(dut, f"s_axis_req_data_{name}", rng, idle)
        self.cpls = axis_sink(dut, f"m_axis_cpl_{name}", rng, backpressure)
        self.cpl_data = axis_sink(dut, f"m_axis_cpl_data_{name}", rng, backpressure)
        self.lcw_sources = [axis_source(dut, f"s_axis_lcw{p}_{name}")
                            for p in range(export_params()["ports"])]
        self.csr = CsrBus(dut, f"{name}_")
        self.ram, self.model = gpu_memory(dut, rng, axi_pause, f"{name}_")
        # The RDMA engines reach the same memory through ports of their own.
        for port in ("m_axi_dma", "m_axi_rdma"):
            axi_ram(dut, f"{name}_{port}", rng, axi_pause, share=self.ram)
        self.rdma_csr = CsrBus(dut, f"{name}_rdma_")
        params = nic_params()
        self.rdma_model = RdmaTargetModel(self.model.memory, [], params["addr_width"],
                                          params["mtu"], MAC_BEAT_OCTETS, params["contexts"])
        self.cmds = axis_source(dut, f"s_axis_rdma_cmd_{name}", rng, idle)
        self.rdma_cpls = axis_sink(dut, f"m_axis_rdma_cpl_{name}", rng, backpressure)
        self.peer = None

    def value(self, name):
        """The value of this NIC's port ``name`` (a counter, ``links_up``...)."""
        return self.io.value(name)

    def frames_sent(self):
        """``[[frames of VC v per port] for v in VCs 0…3]`` sent by the ports' CBFC
        transmitters."""
        ports = export_params()["ports"]
        per_port = [self.io.elements(f"p{p}_count_frames_sent", NIC_VCS)
                    for p in range(ports)]
        return [[per_port[p][vc] for p in range(ports)] for vc in range(NIC_VCS)]

    def memory_matches(self):
        """Whether this NIC's memory holds what its golden models say."""
        return self.ram.read(0, len(self.model.memory)) == bytes(self.model.memory)

    def answer(self, request, model=None):
        """The :class:`~ethlink.sim.nic_tb.Answer` the peer's golden target model (or
        ``model``) gives ``request`` of this NIC (executing it there)."""
        return Answer.of(request, model or self.peer.model, self.id)

    async def completion(self):
        return Completion.from_octets((await self.cpls.recv()).tdata)

    async def rdma_completion(self):
        return Completion.from_octets((await self.rdma_cpls.recv()).tdata)

    async def issue(self, requests, window=None, answer=True):
        """Send ``requests`` (to the peer), with at most ``window`` of them outstanding
        (completions not yet received) if given; returns ``{tag: Answer}`` as the peer's
        golden target model answers them (``answer``; otherwise the model is left alone and
        ``{}`` returned)."""
        expected = {}
        base = self.cpls.count()
        for sent, request in enumerate(requests):
            if window is not None and sent - (self.cpls.count() - base) >= window:
                await wait_until(self.dut.clk,
                                 lambda: sent - (self.cpls.count() - base) < window, None)
            if answer:
                expected[request.tag] = self.answer(request)
            await self.reqs.send(request.octets())
            if request.store:
                await self.data.send(AxiStreamFrame(request.payload))
        return expected

    async def collect_completions(self, expected):
        """Receive the completions of ``expected`` (``{tag: Answer}``, all must have
        arrived); returns the completed tags in order and a list of every way they differ
        from ``expected``: a tag completed twice or unknown, a status or load data other than
        the model's, a completion or data beyond those expected."""
        order, errors = [], []
        for _ in range(len(expected)):
            tag, status = await self.completion()
            if tag in order or tag not in expected:
                errors.append(f"{self.name}: tag {tag} completed twice or unknown")
            elif status != expected[tag].status:
                errors.append(f"{self.name} tag {tag}: {status.name}, model "
                              f"{expected[tag].status.name}")
            order.append(tag)
        if not self.cpls.empty():
            errors.append(f"{self.name}: more completions than requests")
        loads = [tag for tag in order if tag in expected and expected[tag].data is not None]
        data = await self.load_data(loads, errors)
        errors += [f"{self.name} tag {tag}: load data differs" for tag in data
                   if data[tag] != expected[tag].data]
        return order, errors

    async def load_data(self, loads, errors):
        """The load data of tags ``loads`` (one packet each, in that order): ``{tag: data}``
        of those that arrived, adding to ``errors`` if some did not."""
        # A load's data may follow its completion by a few cycles.
        if self.cpl_data.count() < len(loads):
            await wait_until(self.dut.clk, lambda: self.cpl_data.count() >= len(loads), 1000)
        if self.cpl_data.count() != len(loads):
            errors.append(f"{self.name}: {self.cpl_data.count()} load data packets, "
                          f"{len(loads)} expected")
        return {tag: bytes((await self.cpl_data.recv()).tdata)
                for tag in loads[:self.cpl_data.count()]}


class NicPairTB(TB):
    """``nic_pair``: both NICs (``sides``, ``(A, B)``), every link enabled, the lines up with
    raw bit error rate ``ber``; ``idle``, ``backpressure`` and ``axi_pause`` are the pause
    fractions of the GPU-side sources, sinks and AXI channels. ``rx_credits``: ``(nic, port,
    credits)`` to advertise per VC on that port instead of the whole buffer."""
    def __init__(self, dut, rng, ber=0.0, axi_pause=0.0, idle=0.0, backpressure=0.0,
                 rx_credits=()):
        super().__init__(dut)
        self.ports = export_params()["ports"]
        self.memory_lines = memory_lines()
        for name, end_id in PAIR_IDS.items():
            nic = Ports(dut, f"{name}_")
            nic.set(local_id=end_id)
            for p in range(self.ports):
                nic.set(**{f"p{p}_enable": 1, f"p{p}_replay_timeout": 0,
                           f"p{p}_rx_credits": 0})
        for name, p, credits in rx_credits:
            Ports(dut, f"{name}_p{p}_").set(rx_credits=credits)
        for p in range(self.ports):
            for n, direction in enumerate(("ab", "ba")):
                setup_line(self.line(direction, p), ber, seed=2 * (2 * p + n) + 1)
        if hasattr(dut, "fec_bypass"):
            dut.fec_bypass.value = 0
        self.sides = tuple(NicSide(dut, name, self.counter, rng, idle, backpressure, axi_pause)
                           for name in PAIR_IDS)
        self.sides[0].peer, self.sides[1].peer = self.sides[1], self.sides[0]

    def line(self, direction, port):
        """The controls and taps of line ``direction`` (``"ab"``: A to B) of ``port``."""
        return Ports(self.dut, f"{direction}{port}_")

    async def program_windows(self, windows):
        for side in self.sides:
            await side.csr.program_windows(side.model, windows)

    async def open_memories(self):
        """One read/write L/S window over each NIC's whole memory."""
        await self.program_windows([Window(0, self.memory_lines,
                                           csr.PERM_READ | csr.PERM_WRITE)])

    async def program_rdma_windows(self, windows):
        for side in self.sides:
            await side.rdma_csr.program_windows(side.rdma_model, windows)

    async def wait_links(self, timeout_cycles=20000):
        """Until every link of both NICs is up and both reachability tables are ready."""
        everything = (1 << self.ports) - 1
        await self.wait_until(
            lambda: all(side.value("links_up") == everything and not side.value("reach_busy")
                        for side in self.sides), timeout_cycles, "the links did not come up")

    def port_total(self, name):
        """Counter ``p{p}_{name}`` summed over both NICs and every port."""
        return sum(side.value(f"p{p}_{name}") for side in self.sides for p in range(self.ports))

    def frames_sent(self):
        """``{nic: [[frames of VC v per port] for v in VCs 0…3]}`` sent by the ports' CBFC
        transmitters."""
        return {side.name: side.frames_sent() for side in self.sides}

    def expected_spread(self, frames):
        """The frames per VC and port each NIC sends, as the path-selection model picks their
        ports: ``frames`` are ``(sending side, vc, dst, entropy)``."""
        everything = (1 << self.ports) - 1
        want = {side.name: [[0] * self.ports for _ in range(NIC_VCS)] for side in self.sides}
        for side, vc, dst, entropy in frames:
            want[side.name][vc][select_port(dst, entropy, everything)] += 1
        return want

    def ls_spread(self, requests):
        """:meth:`expected_spread` of L/S requests (``{nic: [LsRequest]}``) and their
        responses: a response copies its request's entropy, so it is steered by the same hash
        towards the requester."""
        frames = []
        for side in self.sides:
            for request in requests[side.name]:
                entropy = ls_entropy(request.line)
                frames += [(side, 0, side.peer.id, entropy), (side.peer, 1, side.id, entropy)]
        return self.expected_spread(frames)

    def assert_spread(self, before, want, vcs, busy_vcs, what):
        """Spreading: the frames each port sent in VCs ``vcs`` since ``before`` (a
        :meth:`frames_sent`) are exactly ``want`` (:meth:`expected_spread`), and every port
        carried some of VCs ``busy_vcs``."""
        sent = self.frames_sent()
        for side in self.sides:
            got = [[sent[side.name][vc][p] - before[side.name][vc][p] for p in range(self.ports)]
                   for vc in vcs]
            self.dut._log.info(f"{side.name}: {what} per port (VCs {list(vcs)}) {got}")
            assert got == [want[side.name][vc] for vc in vcs], \
                f"{side.name}: frames per port {got}, model {want}"
            assert all(all(got[vc]) for vc in busy_vcs), f"{side.name}: a port carried no " \
                                                         f"frame of VCs {list(busy_vcs)}"


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

    @classmethod
    def of_build(cls):
        """The areas of the ``nic_pair`` build's memories."""
        params = nic_params()
        return cls(1 << params["addr_width"], params["messages"])

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


@dataclass
class RdmaRun:
    """What :func:`run_rdma` saw: ``statuses`` (in completion order), ``cycles`` (each
    command's, queued → completion), ``octets`` (of the commands that completed OK) and
    ``errors`` (every way completions differ from the models)."""
    statuses: list = field(default_factory=list)
    cycles: list = field(default_factory=list)
    octets: int = 0
    errors: list = field(default_factory=list)


async def run_rdma(side, rng, count, window=None, make=None, frames=None, until=None):
    """Issue ``count`` commands from ``side`` to its peer, at most ``window`` (default: all
    the message ids) outstanding, each made by ``make(rng, ident)`` (default: a random
    :meth:`RdmaAreas.command`), and apply each to the golden models as it is issued (the
    request and response frames appended to ``frames``); with ``until`` (a function), stop
    issuing as soon as ``until()`` is true (``count`` may then be ``None``: no other limit).
    Returns an :class:`RdmaRun` once every command issued has completed."""
    params = nic_params()
    messages = params["messages"]
    if make is None:
        areas = RdmaAreas.of_build()

        def make(rng, ident):
            return areas.command(rng, ident, side.peer.id, params["mtu"])
    free = list(range(min(window or messages, messages)))
    waiting = {}            # message id -> (command, expected status, cycle issued)
    run = RdmaRun()
    counter = side.counter

    async def collect():
        while True:
            ident, status = await side.rdma_completion()
            if ident not in waiting:
                run.errors.append(f"{side.name}: completion of message {ident}, not "
                                  f"outstanding")
                continue
            cmd, want, issued = waiting.pop(ident)
            run.statuses.append(status)
            run.cycles.append(counter.now - issued)
            if status != want:
                run.errors.append(f"{side.name} {cmd}: {status.name}, model {want.name}")
            elif status == CompletionStatus.OK:
                run.octets += cmd.length
            free.append(ident)

    collector = cocotb.start_soon(collect())
    issued = 0
    while count is None or issued < count:
        if not free:
            await wait_until(side.dut.clk, lambda: free, None)
        if until is not None and until():
            break
        issued += 1
        ident = free.pop(rng.randrange(len(free)))
        cmd = make(rng, ident)
        want = CompletionStatus(run_command(
            cmd, side.id, side.model.memory, side.peer.rdma_model, params["mtu"],
            MAC_BEAT_OCTETS, params["addr_width"], frames))
        waiting[ident] = (cmd, want, counter.now)
        await side.cmds.send(command_octets(cmd))
    if waiting and await wait_until(side.dut.clk, lambda: not waiting,
                                    params["timeout_cycles"] * 4 + 2000 * issued) is None:
        run.errors.append(f"{side.name}: {len(waiting)} commands never completed")
    collector.cancel()
    return run
