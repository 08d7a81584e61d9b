"""The memory windows of a NIC target (spec §11), as registers on the target's register bus
(:mod:`.csr`) and as the check every remote access passes before it touches memory.

Both targets of the NIC (L/S and RDMA) are built from these pieces; each has its own set of
windows on its own register bus.
"""

from amaranth.hdl import Signal, Cat, Const, Value

from ..params import IntRange, Param
from ..regbus import register_reads, word_view
from ..wire import Status
from . import csr
from .engine import LINE_BITS

__all__ = ["Windows", "window_registers", "target_registers", "count_refusal", "WINDOWS"]

WINDOWS = Param("memory windows", IntRange(csr.MIN_WINDOWS, csr.MAX_WINDOWS))


class Windows:
    """The registers of ``count`` windows: ``base``, ``size``, ``perm`` lists of signals, and
    ``end`` (``base + size``, a register of its own: the 44-bit add stays out of every
    access's compare)."""
    def __init__(self, count):
        self.base = [Signal(LINE_BITS, name=f"win{k}_base") for k in range(count)]
        self.size = [Signal(32, name=f"win{k}_size") for k in range(count)]
        self.perm = [Signal(2, name=f"win{k}_perm") for k in range(count)]
        self.end = [Signal(LINE_BITS + 1, name=f"win{k}_end") for k in range(count)]

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
        return Cat(((perm & need) != 0) & (first_line >= base) & (end_line <= end)
                   for base, end, perm in zip(self.base, self.end, self.perm)).any()

    def granted_aligned(self, line, lines_log2, need):
        """:meth:`granted` for the ``2 ** lines_log2`` lines from ``line``, when ``line`` is a
        multiple of their count (an L/S access; the answer for any other ``line`` is
        meaningless, and the asker refuses such a request before it looks).

        Then ``line + lines ≤ end`` exactly when ``line`` is below ``end`` with its low
        ``lines_log2`` bits cleared (both sides multiples of the count), so each window is
        two compares of ``line`` against registers and a mask, without an adder in front of
        them."""
        # The low bits of ``end`` a shift of ``lines_log2`` can reach, and which of them stay.
        lines_log2 = Value.cast(lines_log2)
        k = (1 << len(lines_log2)) - 1
        keep = (~((Const(1, k + 1) << lines_log2) - 1))[:k]
        return Cat(((perm & need) != 0) & (line >= base) & (line < Cat(end[:k] & keep, end[k:]))
                   for base, end, perm in zip(self.base, self.end, self.perm)).any()


def window_registers(m, bus, count):
    """:class:`Windows` of ``count`` windows written from ``bus`` (a block's ``csr``
    interface, :func:`~..regbus.RegisterBus`) as :mod:`.csr` lays them out. A window's end
    follows its base and size a cycle later: a write takes effect on the second cycle after
    it (the register bus is slow next to that; no access can tell)."""
    windows = Windows(count)
    base_hi = word_view(csr.BaseHighWord, bus.wdata).base_hi
    perm_word = word_view(csr.PermWord, bus.wdata).as_value()
    for k, (base, size, perm) in enumerate(zip(windows.base, windows.size, windows.perm)):
        at = csr.WINDOW + csr.WINDOW_STRIDE * k
        m.d.sync += windows.end[k].eq(base + size)
        with m.If(bus.we):
            with m.Switch(bus.addr):
                with m.Case(at + 0):
                    m.d.sync += base[:32].eq(bus.wdata)
                with m.Case(at + 1):
                    m.d.sync += base[32:].eq(base_hi)
                with m.Case(at + 2):
                    m.d.sync += size.eq(bus.wdata)
                with m.Case(at + 3):
                    m.d.sync += perm.eq(perm_word)
    return windows


def target_registers(m, target, counters):
    """The register file of a NIC target (:mod:`.csr`): ``target`` is the component with the
    register bus ``csr`` and ``windows``, ``beat_octets``, ``addr_width`` and ``COUNTERS``;
    ``counters`` its :class:`~..counters.CounterBank`. Returns its :class:`Windows`."""
    windows = window_registers(m, target.csr, target.windows)
    params = csr.ParamsWord.const({"windows": target.windows,
                                   "log2_beat_octets": (target.beat_octets - 1).bit_length(),
                                   "addr_width": target.addr_width})
    registers = [(csr.ID, csr.ID_VALUE), (csr.PARAMS, params.as_value())]
    registers += [(csr.COUNTERS + k, counters[name].value)
                  for k, name in enumerate(target.COUNTERS)]
    register_reads(m, target.csr, registers + windows.registers())
    return windows


def count_refusal(m, counters, status):
    """Count a request refused with ``status`` in the targets' ``denied`` or
    ``address_errors`` counter (a dict of :class:`~..stream.SaturatingCounter`)."""
    counters["denied"].increment(m, status == Status.ACCESS_DENIED)
    counters["address_errors"].increment(m, status == Status.ADDRESS_ERROR)
