"""The NIC targets' register map, defined once: the gateware decodes it, the golden model and
the tests program through it, and ``docs/nic.md`` describes it.

The bus is :func:`~ethlink.rtl.regbus.RegisterBus` (each target's ``csr`` member): a word
address, a 32-bit write strobe with data, and a read strobe whose data comes back in the next
cycle. Writes take effect at the end of the cycle they are strobed in.

Memory windows (spec §11). Window ``k`` is four words at ``WINDOW + WINDOW_STRIDE * k``:

* ``+0`` base line [31:0], ``+1`` base line [43:32] (:class:`BaseHighWord`) — the first
  64-octet line of the window;
* ``+2`` size in lines [31:0] (0 = the window is empty; at most 2^32 - 1 lines, 256 GiB);
* ``+3`` permissions (:class:`PermWord`).

All window registers are 0 after reset: no window, every remote request is refused.
"""

from amaranth.lib import data

from ..regbus import word_value

__all__ = ["ADDR_BITS", "ID", "ID_VALUE", "PARAMS", "ParamsWord", "WINDOW", "WINDOW_STRIDE",
           "WINDOW_WORDS", "BaseHighWord", "PermWord", "PERM_READ", "PERM_WRITE", "COUNTERS",
           "window_writes", "MIN_WINDOWS", "MAX_WINDOWS", "LINE_BITS"]

#: Word address width of the bus.
ADDR_BITS = 8

#: Bits of a line number (spec §4.2: the L/S TH's 44-bit ``line``).
LINE_BITS = 44

#: Read-only identification word ("ENT1").
ID = 0x00
ID_VALUE = 0x454E5431


class ParamsWord(data.Struct):
    """``PARAMS`` (read only): the build parameters."""
    windows: 5
    log2_beat_octets: 3
    addr_width: 6


PARAMS = 0x01
#: ``COUNTERS + k``: the k-th counter of the target's ``count`` interface, in its order
#: (read only, saturating).
COUNTERS = 0x10
#: First window register; see the module docstring.
WINDOW = 0x40
WINDOW_STRIDE = 4
WINDOW_WORDS = ("base_lo", "base_hi", "size", "perm")


class BaseHighWord(data.Struct):
    """Window word ``+1``: the top bits of the base line."""
    base_hi: LINE_BITS - 32


class PermWord(data.Struct):
    """Window word ``+3``: what the window allows."""
    read: 1
    write: 1


PERM_READ = word_value(PermWord, read=1)
PERM_WRITE = word_value(PermWord, write=1)

#: Spec §11: at least 8 windows; 16 fit the map (``WINDOW`` … ``0x7F``).
MIN_WINDOWS, MAX_WINDOWS = 8, 16


def window_writes(index, base_line, size_lines, perm):
    """``[(address, data), ...]`` that program window ``index``."""
    base = WINDOW + WINDOW_STRIDE * index
    return [(base + 0, base_line & 0xFFFFFFFF),
            (base + 1, word_value(BaseHighWord,
                                  base_hi=base_line >> 32 & (1 << LINE_BITS - 32) - 1)),
            (base + 2, size_lines & 0xFFFFFFFF),
            (base + 3, perm & (PERM_READ | PERM_WRITE))]
