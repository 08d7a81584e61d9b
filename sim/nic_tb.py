"""Testbench pieces of the NIC L/S target shared by its cocotb tests and ``ethlink bench nic``:
the register bus, the AXI RAM that stands for GPU memory with the golden model beside it, and a
log of the cycles an AXI4 request is offered."""

from types import SimpleNamespace

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiRam

from ethlink.rtl.nic import csr
from ethlink.rtl.nic.ls_requester import CompletionStatus, LsRequestLayout
from ethlink.sim.models.nic import LINE_OCTETS, LsTargetModel, Window
from ethlink.sim.runner import export_params
from ethlink.sim.tb import TransferLog, axis_sink, axis_source, pauses, start

__all__ = ["csr_write", "csr_read", "setup", "program_windows", "open_memory", "ValidLog",
           "request_octets", "completion", "LoopbackPorts"]


async def csr_write(dut, addr, data):
    dut.csr_addr.value, dut.csr_wdata.value, dut.csr_we.value = addr, data, 1
    await RisingEdge(dut.clk)
    dut.csr_we.value = 0


async def csr_read(dut, addr):
    dut.csr_addr.value, dut.csr_re.value = addr, 1
    await RisingEdge(dut.clk)
    dut.csr_re.value = 0
    await ReadOnly()
    assert int(dut.csr_rvalid.value) == 1
    value = int(dut.csr_rdata.value)
    await RisingEdge(dut.clk)
    return value


async def setup(dut, rng, axi_pause=0.0):
    """Clock, reset, an AXI RAM of the whole address space filled with random octets, and a
    model holding the same octets. Returns ``(counter, ram, model)``."""
    params = export_params()
    counter = await start(dut)
    dut.csr_we.value = dut.csr_re.value = 0
    size = 1 << params["addr_width"]
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=size)
    for channel in (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                    ram.read_if.ar_channel, ram.read_if.r_channel):
        channel.set_pause_generator(pauses(rng, axi_pause))
    ram.write_if.log.setLevel("WARNING")
    ram.read_if.log.setLevel("WARNING")
    initial = rng.randbytes(size)
    ram.write(0, initial)
    return counter, ram, LsTargetModel(bytearray(initial), [], params["addr_width"])


async def program_windows(dut, model, windows):
    model.windows = list(windows)
    for index, window in enumerate(windows):
        for addr, data in window.csr_writes(index):
            await csr_write(dut, addr, data)


async def open_memory(dut, rng):
    """:func:`setup` with one read/write window over the whole memory."""
    counter, ram, model = await setup(dut, rng)
    memory_lines = (1 << export_params()["addr_width"]) // LINE_OCTETS
    await program_windows(dut, model, [Window(0, memory_lines, csr.PERM_READ | csr.PERM_WRITE)])
    return counter, ram, model


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
