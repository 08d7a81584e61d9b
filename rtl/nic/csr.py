"""The NIC target's register map, defined once: the gateware decodes it, the golden model and
the tests program through it, and ``docs/nic.md`` describes it.

The bus (``csr_*`` ports) is the switch's: a word address, a 32-bit write strobe with data, and
a read strobe whose data comes back on ``csr_rdata`` with ``csr_rvalid`` in the next cycle.
Writes take effect at the end of the cycle they are strobed in.

Memory windows (spec §11). Window ``k`` is four words at ``WINDOW + WINDOW_STRIDE * k``:

* ``+0`` base line [31:0], ``+1`` base line [43:32] — the first 64-octet line of the window;
* ``+2`` size in lines [31:0] (0 = the window is empty; at most 2^32 - 1 lines, 256 GiB);
* ``+3`` permissions: read [0], write [1].

All window registers are 0 after reset: no window, every remote request is refused.
"""

__all__ = ["ADDR_BITS", "ID", "ID_VALUE", "PARAMS", "WINDOW", "WINDOW_STRIDE", "WINDOW_WORDS",
           "PERM_READ", "PERM_WRITE", "COUNTERS", "window_writes", "MIN_WINDOWS",
           "MAX_WINDOWS"]

#: Word address width of the bus.
ADDR_BITS = 8

#: Read-only identification word ("ENT1").
ID = 0x00
ID_VALUE = 0x454E5431
#: Read-only build parameters: windows [4:0], log2(beat_octets) [7:5], addr_width [13:8].
PARAMS = 0x01
#: ``COUNTERS + k``: the k-th name of the target's ``COUNTERS`` tuple (read only, saturating).
COUNTERS = 0x10
#: First window register; see the module docstring.
WINDOW = 0x40
WINDOW_STRIDE = 4
WINDOW_WORDS = ("base_lo", "base_hi", "size", "perm")
PERM_READ, PERM_WRITE = 0b01, 0b10

#: Spec §11: at least 8 windows; 16 fit the map (``WINDOW`` … ``0x7F``).
MIN_WINDOWS, MAX_WINDOWS = 8, 16


def window_writes(index, base_line, size_lines, perm):
    """``[(address, data), ...]`` that program window ``index``."""
    base = WINDOW + WINDOW_STRIDE * index
    return [(base + 0, base_line & 0xFFFFFFFF), (base + 1, base_line >> 32 & 0xFFF),
            (base + 2, size_lines & 0xFFFFFFFF), (base + 3, perm & 0b11)]
