"""The NIC's AXI4 manager ports to local (GPU) memory.

A port is one interface (:func:`Axi4Signature`) whose members carry the AXI4 names without a
prefix (``awaddr``, ``wvalid``, ``rready``, …), as a write half and a read half; a block has it
as a member such as ``m_axi``, which an export shows as ``m_axi_awaddr`` …, the names AXI4
interconnects and cocotbext-axi's ``AxiBus.from_prefix`` expect, with no adapter. Only what the
NIC's engines need is there: INCR bursts of full-width beats (``WSTRB`` may leave out the tail
of an RDMA packet's last beat), one ID (0), no lock/cache/prot/qos (a subordinate takes their
defaults).
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..params import IntRange, Param

__all__ = ["Axi4Signature", "ADDR_WIDTH", "BURST_INCR", "RESP_OKAY", "ID_WIDTH",
           "MIN_ADDR_WIDTH", "MAX_ADDR_WIDTH"]

#: AXI4 AxBURST encoding of an incrementing burst.
BURST_INCR = 0b01
#: AXI4 xRESP encoding of a successful access.
RESP_OKAY = 0b00
#: Width of the ID signals; the port issues ID 0 only (transactions complete in order).
ID_WIDTH = 4

#: Byte-address widths the port is built for: at least one 4 KiB page…the 44-bit line space.
MIN_ADDR_WIDTH, MAX_ADDR_WIDTH = 12, 50
ADDR_WIDTH = Param("AXI byte-address bits", IntRange(MIN_ADDR_WIDTH, MAX_ADDR_WIDTH))


def Axi4Signature(addr_width, data_octets, *, read=True, write=True):
    """An AXI4 manager port as the manager sees it, with byte addresses of ``addr_width`` bits
    and ``data_octets``-octet beats: the write half (AW, W, B) with ``write``, the read half
    (AR, R) with ``read``. A port of both halves forwards each half to a block that has only
    that one (:func:`~ethlink.rtl.compose.forward` with the half's signature)."""
    members = {}
    if write:
        members.update({
            "awid": Out(ID_WIDTH), "awaddr": Out(addr_width), "awlen": Out(8),
            "awsize": Out(3), "awburst": Out(2), "awvalid": Out(1), "awready": In(1),
            "wdata": Out(8 * data_octets), "wstrb": Out(data_octets), "wlast": Out(1),
            "wvalid": Out(1), "wready": In(1),
            "bid": In(ID_WIDTH), "bresp": In(2), "bvalid": In(1), "bready": Out(1),
        })
    if read:
        members.update({
            "arid": Out(ID_WIDTH), "araddr": Out(addr_width), "arlen": Out(8),
            "arsize": Out(3), "arburst": Out(2), "arvalid": Out(1), "arready": In(1),
            "rid": In(ID_WIDTH), "rdata": In(8 * data_octets), "rresp": In(2),
            "rlast": In(1), "rvalid": In(1), "rready": Out(1),
        })
    return wiring.Signature(members)
