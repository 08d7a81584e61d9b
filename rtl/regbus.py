"""The register bus of the project's blocks (switch, NIC targets), defined once.

A plain synchronous bus: a word address, a 32-bit write strobe with data, and a read strobe
whose data comes back on ``rdata`` with ``rvalid`` in the next cycle (0 for an address that
holds nothing). Writes take effect at the end of the cycle they are strobed in; each block
decodes its own writes, :func:`register_reads` builds the read side. A block has the bus as
its member ``csr`` (``In(RegisterBus(addr_bits))``), which a Verilog export shows as
``csr_addr``, ``csr_we``, ``csr_wdata``, ``csr_re``, ``csr_rdata``, ``csr_rvalid``.

Each register word is a :class:`amaranth.lib.data.Struct` in the block's register map (for
example :mod:`ethlink.rtl.switch.csr`): the gateware decodes writes and packs reads through
it, and the CLI and the test drivers build and read words with ``Word.const({...})`` and
``Word.from_bits(value)``.
"""

from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["RegisterBus", "register_reads", "word_value", "word_view", "DATA_BITS"]

DATA_BITS = 32


def RegisterBus(addr_bits):
    """The bus as its initiator sees it (a block takes it as ``In(RegisterBus(...))``)."""
    return wiring.Signature({"addr": Out(addr_bits), "we": Out(1), "wdata": Out(DATA_BITS),
                             "re": Out(1), "rdata": In(DATA_BITS), "rvalid": In(1)})


def register_reads(m, bus, registers):
    """Add the read side of ``bus`` (a block's ``csr`` interface) to ``m``: ``registers`` is
    ``[(address, value), ...]``, each value at most 32 bits."""
    m.d.sync += [bus.rvalid.eq(bus.re), bus.rdata.eq(0)]
    with m.If(bus.re):
        with m.Switch(bus.addr):
            for address, value in registers:
                with m.Case(address):
                    m.d.sync += bus.rdata.eq(value)


def word_view(word, value):
    """``value`` (a bus's ``wdata``) read as register word ``word``: its low bits, as many as
    the word has."""
    return word(value[:data.Layout.cast(word).size])


def word_value(word, **fields):
    """The integer of register word ``word`` (a :class:`~amaranth.lib.data.Struct`) with
    ``fields`` set and the rest 0: what a driver writes."""
    return word.const(fields).as_value().value
