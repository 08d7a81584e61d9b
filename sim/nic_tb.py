"""Testbench pieces of the NIC L/S target shared by its cocotb tests and ``ethlink bench nic``:
the register bus, the AXI RAM that stands for GPU memory with the golden model beside it, and a
log of the cycles an AXI4 request is offered."""

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiBus, AxiRam

from ethlink.rtl.nic import csr
from ethlink.sim.models.nic import LINE_OCTETS, LsTargetModel, Window
from ethlink.sim.runner import export_params
from ethlink.sim.tb import pauses, start

__all__ = ["csr_write", "csr_read", "setup", "program_windows", "open_memory", "ValidLog"]


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
