"""The memory windows of a NIC target (spec §11), as registers on the target's register bus
(:mod:`.csr`) and as the check every remote access passes before it touches memory.

Both targets of the NIC (L/S and RDMA) are built from these pieces; each has its own set of
windows on its own register bus.
"""

from amaranth.hdl import Signal, Cat, C

from ..config import check_int_range
from ..regbus import register_reads
from ..wire import LS_TH, Status
from . import csr

__all__ = ["Windows", "window_registers", "target_registers", "count_refusal", "check_windows", "LINE_OCTETS",
           "LINE_BITS"]

#: Windows are counted in 64-octet cache lines (the L/S TH's ``line`` unit).
LINE_OCTETS = 64
LINE_BITS = dict(LS_TH.fields)["line"]


def check_windows(value):
    return check_int_range("windows", value, csr.MIN_WINDOWS, csr.MAX_WINDOWS)


class Windows:
    """The registers of ``count`` windows: ``base``, ``size``, ``perm`` lists of signals."""
    def __init__(self, count):
        self.base = [Signal(LINE_BITS, name=f"win{k}_base") for k in range(count)]
        self.size = [Signal(32, name=f"win{k}_size") for k in range(count)]
        self.perm = [Signal(2, name=f"win{k}_perm") for k in range(count)]

    def registers(self):
        """``[(address, value), ...]`` of the read side (:func:`~..regbus.register_reads`)."""
        reads = []
        for k, (base, size, perm) in enumerate(zip(self.base, self.size, self.perm)):
            at = csr.WINDOW + csr.WINDOW_STRIDE * k
            reads += [(at + j, value) for j, value in
                      enumerate((base[:32], base[32:], size, perm))]
        return reads

    def granted(self, first_line, end_line, need):
        """1 when one window holds lines ``first_line`` … ``end_line - 1`` and grants a
        permission of ``need`` (:data:`csr.PERM_READ`/``PERM_WRITE`` bits)."""
        return Cat(((perm & need) != 0) & (first_line >= base) & (end_line <= base + size)
                   for base, size, perm in zip(self.base, self.size, self.perm)).any()


def window_registers(m, bus, count):
    """:class:`Windows` of ``count`` windows written from ``bus`` (a component with
    :func:`~..regbus.register_bus_members`) as :mod:`.csr` lays them out."""
    windows = Windows(count)
    for k, (base, size, perm) in enumerate(zip(windows.base, windows.size, windows.perm)):
        at = csr.WINDOW + csr.WINDOW_STRIDE * k
        with m.If(bus.csr_we):
            with m.Switch(bus.csr_addr):
                with m.Case(at + 0):
                    m.d.sync += base[:32].eq(bus.csr_wdata)
                with m.Case(at + 1):
                    m.d.sync += base[32:].eq(bus.csr_wdata)
                with m.Case(at + 2):
                    m.d.sync += size.eq(bus.csr_wdata)
                with m.Case(at + 3):
                    m.d.sync += perm.eq(bus.csr_wdata[:2])
    return windows


def target_registers(m, target, counters):
    """The register file of a NIC target (:mod:`.csr`): ``target`` is the component with the
    register bus and ``windows``, ``beat_octets``, ``addr_width`` and ``COUNTERS``;
    ``counters`` its :class:`~..stream.SaturatingCounter` s by name. Returns its
    :class:`Windows`."""
    windows = window_registers(m, target, target.windows)
    beat_bits = (target.beat_octets - 1).bit_length()
    params = Cat(C(target.windows, 5), C(beat_bits, 3), C(target.addr_width, 6))
    registers = [(csr.ID, csr.ID_VALUE), (csr.PARAMS, params)]
    registers += [(csr.COUNTERS + k, counters[name].value)
                  for k, name in enumerate(target.COUNTERS)]
    register_reads(m, target, registers + windows.registers())
    return windows


def count_refusal(m, counters, status):
    """Count a request refused with ``status`` in the targets' ``denied`` or
    ``address_errors`` counter (a dict of :class:`~..stream.SaturatingCounter`)."""
    counters["denied"].increment(m, status == Status.ACCESS_DENIED)
    counters["address_errors"].increment(m, status == Status.ADDRESS_ERROR)
