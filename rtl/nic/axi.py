"""The NIC's AXI4 manager ports to local (GPU) memory, as flat ports with AXI4 names.

A port is a plain set of ``PREFIX_aw*``, ``PREFIX_w*``, ``PREFIX_b*``, ``PREFIX_ar*`` and
``PREFIX_r*`` members (a write half and a read half), so that an exported block shows the
names AXI4 interconnects and cocotbext-axi's ``AxiBus.from_prefix`` expect, with no adapter.
Only what the NIC's engines need is there: INCR bursts of full-width beats (``WSTRB`` may
leave out the tail of an RDMA packet's last beat), one ID (0), no lock/cache/prot/qos (a
subordinate takes their defaults).
"""

from amaranth.lib.wiring import In, Out

from ..config import check_int_range

__all__ = ["axi4_manager_members", "axi4_write_members", "axi4_read_members",
           "check_addr_width", "BURST_INCR", "RESP_OKAY", "ID_WIDTH",
           "MIN_ADDR_WIDTH", "MAX_ADDR_WIDTH"]

#: AXI4 AxBURST encoding of an incrementing burst.
BURST_INCR = 0b01
#: AXI4 xRESP encoding of a successful access.
RESP_OKAY = 0b00
#: Width of the ID signals; the port issues ID 0 only (transactions complete in order).
ID_WIDTH = 4

#: Byte-address widths the port is built for: at least one 4 KiB page…the 44-bit line space.
MIN_ADDR_WIDTH, MAX_ADDR_WIDTH = 12, 50


def check_addr_width(value):
    return check_int_range("addr_width", value, MIN_ADDR_WIDTH, MAX_ADDR_WIDTH)


def axi4_write_members(prefix, addr_width, data_octets):
    """The write half (AW, W, B) of an AXI4 manager port ``prefix``, as seen by the manager,
    with byte addresses of ``addr_width`` bits and ``data_octets``-octet beats."""
    return {
        f"{prefix}_awid": Out(ID_WIDTH), f"{prefix}_awaddr": Out(addr_width),
        f"{prefix}_awlen": Out(8), f"{prefix}_awsize": Out(3), f"{prefix}_awburst": Out(2),
        f"{prefix}_awvalid": Out(1), f"{prefix}_awready": In(1),
        f"{prefix}_wdata": Out(8 * data_octets), f"{prefix}_wstrb": Out(data_octets),
        f"{prefix}_wlast": Out(1), f"{prefix}_wvalid": Out(1), f"{prefix}_wready": In(1),
        f"{prefix}_bid": In(ID_WIDTH), f"{prefix}_bresp": In(2),
        f"{prefix}_bvalid": In(1), f"{prefix}_bready": Out(1),
    }


def axi4_read_members(prefix, addr_width, data_octets):
    """The read half (AR, R) of an AXI4 manager port ``prefix``."""
    return {
        f"{prefix}_arid": Out(ID_WIDTH), f"{prefix}_araddr": Out(addr_width),
        f"{prefix}_arlen": Out(8), f"{prefix}_arsize": Out(3), f"{prefix}_arburst": Out(2),
        f"{prefix}_arvalid": Out(1), f"{prefix}_arready": In(1),
        f"{prefix}_rid": In(ID_WIDTH), f"{prefix}_rdata": In(8 * data_octets),
        f"{prefix}_rresp": In(2), f"{prefix}_rlast": In(1),
        f"{prefix}_rvalid": In(1), f"{prefix}_rready": Out(1),
    }


def axi4_manager_members(prefix, addr_width, data_octets):
    """Signature members of a whole AXI4 manager port ``prefix`` (both halves)."""
    return {**axi4_write_members(prefix, addr_width, data_octets),
            **axi4_read_members(prefix, addr_width, data_octets)}
