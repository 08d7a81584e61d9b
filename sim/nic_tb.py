"""Testbench pieces of one NIC shared by its cocotb tests and ``ethlink bench nic``: the typed
transactions of the GPU side (:class:`LsRequest`, :class:`Completion`) and their octets, the
register bus (:class:`CsrBus`), the AXI RAM that stands for GPU memory with the golden model
beside it, and the harnesses of the L/S target (:class:`LsTargetTB`) and of the L/S requester
and target back to back (:class:`LsLoopbackTB`)."""

from dataclasses import dataclass
from typing import NamedTuple, Optional

from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiRam, AxiStreamFrame

from ethlink.rtl.nic import csr
from ethlink.rtl.nic.ls_requester import CompletionStatus, LsRequestLayout
from ethlink.rtl.nic.rdma_requester import RdmaCommandLayout
from ethlink.rtl.wire import LsSize, Opcode, Status
from ethlink.sim.models import Frame
from ethlink.sim.models.nic import LINE_OCTETS, LsTargetModel, Window
from ethlink.sim.runner import export_params
from ethlink.sim.tb import TB, Ports, TransferLog, ValidLog, axis_sink, axis_source, pauses

__all__ = ["LsRequest", "Completion", "Answer", "command_octets", "CsrBus",
           "axi_ram", "gpu_memory", "memory_lines", "LsMemoryTB", "LsTargetTB", "LsLoopbackTB"]


@dataclass(frozen=True)
class LsRequest:
    """One L/S request of a GPU (``s_axis_req``) to endpoint ``dst``, and a store's data."""
    store: bool
    size: LsSize
    dst: int
    tag: int
    line: int
    payload: bytes = b""

    def octets(self):
        """The ``s_axis_req`` octets (the layout value in lane order)."""
        layout = LsRequestLayout()
        value = layout.const({"store": int(self.store), "size": self.size, "dst": self.dst,
                              "tag": self.tag, "line": self.line}).as_value().value
        return value.to_bytes(layout.size // 8, "big")

    def frame(self, src):
        """The request frame endpoint ``src`` sends for it."""
        return Frame(opcode=Opcode.STORE_REQ if self.store else Opcode.LOAD_REQ, dst=self.dst,
                     src=src, size=self.size, tag=self.tag, line=self.line,
                     payload=self.payload)


class Completion(NamedTuple):
    """One completion (``m_axis_cpl`` or ``m_axis_rdma_cpl``): the request's tag or the
    command's message id, and its status."""
    tag: int
    status: CompletionStatus

    @classmethod
    def from_octets(cls, octets):
        value = int.from_bytes(bytes(octets), "big")
        return cls(value & 0xFFF, CompletionStatus(value >> 12 & 0b111))


class Answer(NamedTuple):
    """What the golden target model answers a request: the completion status, and a load's
    data when it completes OK."""
    status: CompletionStatus
    data: Optional[bytes] = None

    @classmethod
    def of(cls, request, model, src):
        """The model's answer to ``request`` of endpoint ``src`` (executing it there)."""
        response = model.handle(request.frame(src))
        ok = not request.store and response.status == Status.OK
        return cls(CompletionStatus(response.status), response.payload if ok else None)


def command_octets(cmd):
    """The ``s_axis_cmd`` octets of one RDMA command (an
    :class:`~ethlink.sim.models.rdma.RdmaCommand`), the layout value in lane order."""
    layout = RdmaCommandLayout()
    value = layout.const({"read": int(cmd.read), "dst": cmd.dst, "id": cmd.id,
                          "remote": cmd.remote, "local": cmd.local,
                          "length": cmd.length}).as_value().value
    return value.to_bytes(layout.size // 8, "big")


class CsrBus:
    """The register bus ``{prefix}csr_*`` of a NIC block (``prefix`` names a NIC of a pair and
    an engine, ``"a_rdma_"``): one write or read per call."""
    def __init__(self, dut, prefix=""):
        self.clk = dut.clk
        self.ports = Ports(dut, f"{prefix}csr_")
        self.ports.set(we=0, re=0)

    async def write(self, addr, data):
        self.ports.set(addr=addr, wdata=data, we=1)
        await RisingEdge(self.clk)
        self.ports.set(we=0)

    async def read(self, addr):
        self.ports.set(addr=addr, re=1)
        await RisingEdge(self.clk)
        self.ports.set(re=0)
        await ReadOnly()
        assert self.ports.value("rvalid") == 1
        value = self.ports.value("rdata")
        await RisingEdge(self.clk)
        return value

    async def program_windows(self, model, windows):
        """Open ``windows`` (:class:`~ethlink.sim.models.nic.Window`) in the block and in its
        golden ``model``."""
        model.windows = list(windows)
        for index, window in enumerate(windows):
            for addr, data in window.csr_writes(index):
                await self.write(addr, data)


def memory_lines():
    """Lines of the build's memory (``addr_width``)."""
    return (1 << export_params()["addr_width"]) // LINE_OCTETS


def axi_ram(dut, prefix, rng, axi_pause=0.0, share=None):
    """An AXI RAM of the whole address space on AXI4 port ``prefix``, pausing every channel
    with probability ``axi_pause``. Without ``share`` it is filled with random octets and
    returned with a bytearray copy of them; with ``share`` (another such RAM) it is another
    port onto that RAM's memory, returned alone."""
    size = 1 << export_params()["addr_width"]
    ram = AxiRam(AxiBus.from_prefix(dut, prefix), dut.clk, dut.rst, size=size,
                 mem=None if share is None else share.mem)
    if axi_pause > 0:
        for channel in (ram.write_if.aw_channel, ram.write_if.w_channel,
                        ram.write_if.b_channel, ram.read_if.ar_channel, ram.read_if.r_channel):
            channel.set_pause_generator(pauses(rng, axi_pause))
    ram.write_if.log.setLevel("WARNING")
    ram.read_if.log.setLevel("WARNING")
    if share is not None:
        return ram
    initial = rng.randbytes(size)
    ram.write(0, initial)
    return ram, bytearray(initial)


def gpu_memory(dut, rng, axi_pause=0.0, prefix=""):
    """An AXI RAM of the whole address space on ``{prefix}m_axi``, filled with random octets,
    pausing every channel with probability ``axi_pause``, and a golden target model holding
    the same octets. Returns ``(ram, model)``."""
    ram, initial = axi_ram(dut, f"{prefix}m_axi", rng, axi_pause)
    return ram, LsTargetModel(initial, [], export_params()["addr_width"])


class LsMemoryTB(TB):
    """Base of the harnesses of a DUT with an L/S target: its register bus (``csr``), the GPU
    memory (``ram``, every AXI channel paused ``axi_pause`` of the time) and the golden target
    model beside it (``model``)."""
    def __init__(self, dut, rng, axi_pause=0.0):
        super().__init__(dut)
        self.memory_lines = memory_lines()
        self.csr = CsrBus(dut)
        self.ram, self.model = gpu_memory(dut, rng, axi_pause)

    async def program_windows(self, windows):
        await self.csr.program_windows(self.model, windows)

    async def open_memory(self):
        """One read/write window over the whole memory."""
        await self.program_windows([Window(0, self.memory_lines,
                                           csr.PERM_READ | csr.PERM_WRITE)])

    def memory_matches(self):
        return self.ram.read(0, len(self.model.memory)) == bytes(self.model.memory)


class LsTargetTB(LsMemoryTB):
    """``nic_ls_target``: request frames in on ``s_axis`` (``source``, idle ``idle`` of the
    time), responses out on ``m_axis`` (``sink``, refusing ``backpressure`` of the beats), and
    the target's memory and model (:class:`LsMemoryTB`)."""
    def __init__(self, dut, rng, axi_pause=0.0, idle=0.0, backpressure=0.0):
        super().__init__(dut, rng, axi_pause)
        self.source = axis_source(dut, "s_axis", rng, idle)
        self.sink = axis_sink(dut, "m_axis", rng, backpressure)


class LsLoopbackTB(LsMemoryTB):
    """``nic_ls_loopback`` (an L/S requester, a lossy path, an L/S target): the NIC is
    ``local_id`` and its request frames to ``drop_dst`` are lost. The GPU-side bus models
    (``reqs``, ``data``, ``cpls``, ``cpl_data``, with idles and back-pressure), the target's
    memory and model (:class:`LsMemoryTB`), and the logs its latencies are measured with:
    requests taken (``req_log``), request and response frames (``tx``, ``rx``), completions
    offered (``cpl_valid``)."""
    def __init__(self, dut, rng, local_id, drop_dst, axi_pause=0.0, idle=0.0,
                 backpressure=0.0):
        dut.local_id.value, dut.drop_dst.value = local_id, drop_dst
        super().__init__(dut, rng, axi_pause)
        self.reqs = axis_source(dut, "s_axis_req", rng, idle)
        self.data = axis_source(dut, "s_axis_req_data", rng, idle)
        self.cpls = axis_sink(dut, "m_axis_cpl", rng, backpressure)
        self.cpl_data = axis_sink(dut, "m_axis_cpl_data", rng, backpressure)
        self.req_log = TransferLog(dut, "s_axis_req", self.counter)
        self.tx = TransferLog(dut, "tap_req", self.counter)
        self.rx = TransferLog(dut, "tap_rsp", self.counter)
        self.cpl_valid = ValidLog(dut.m_axis_cpl_tvalid, dut.clk, self.counter)

    async def send(self, request):
        """Queue ``request`` (an :class:`LsRequest`) and a store's data."""
        await self.reqs.send(request.octets())
        if request.store:
            await self.data.send(AxiStreamFrame(request.payload))

    async def completion(self):
        return Completion.from_octets((await self.cpls.recv()).tdata)
