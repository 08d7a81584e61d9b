"""The register bus of the project's blocks (switch, NIC target), defined once.

A plain synchronous bus: a word address, a 32-bit write strobe with data, and a read strobe
whose data comes back on ``csr_rdata`` with ``csr_rvalid`` in the next cycle (0 for an address
that holds nothing). Writes take effect at the end of the cycle they are strobed in; each
block decodes its own writes, :func:`register_reads` builds the read side.
"""

from amaranth.lib.wiring import In, Out

__all__ = ["register_bus_members", "register_reads", "DATA_BITS"]

DATA_BITS = 32


def register_bus_members(addr_bits):
    """The ``csr_*`` members of a component with a register bus of ``addr_bits`` word-address
    bits."""
    return {"csr_addr": In(addr_bits), "csr_we": In(1), "csr_wdata": In(DATA_BITS),
            "csr_re": In(1), "csr_rdata": Out(DATA_BITS), "csr_rvalid": Out(1)}


def register_reads(m, bus, registers):
    """Add the read side of ``bus`` (a component with :func:`register_bus_members`) to ``m``:
    ``registers`` is ``[(address, value), ...]``, each value at most 32 bits."""
    m.d.sync += [bus.csr_rvalid.eq(bus.csr_re), bus.csr_rdata.eq(0)]
    with m.If(bus.csr_re):
        with m.Switch(bus.csr_addr):
            for address, value in registers:
                with m.Case(address):
                    m.d.sync += bus.csr_rdata.eq(value)
