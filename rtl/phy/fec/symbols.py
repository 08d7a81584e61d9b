"""Symbol streams of the RS(272,258) FEC: the beat layouts shared by encoder, decoder and the
FEC sublayer.

Ref: spec §12 — symbol *j* of a beat (*j* = 0 first in time) is ``tdata[10j+9:10j]``; symbols
past the end of a codeword's last beat are zero.
"""

from amaranth.lib import data

from ...params import IntRange, Param
from .gf import SYMBOL_BITS

__all__ = ["SymbolLayout", "DecodedLayout", "DecodeStatusLayout", "beats_for",
           "SYMBOLS_PER_BEAT", "MAX_SYMBOLS"]

#: The widest symbol stream the blocks are built for.
MAX_SYMBOLS = 32
SYMBOLS_PER_BEAT = Param("10-bit symbols per stream beat (P)", IntRange(1, MAX_SYMBOLS))


def beats_for(symbols, per_beat):
    """Beats that carry ``symbols`` symbols, ``per_beat`` to a beat."""
    return -(-symbols // per_beat)


class SymbolLayout(data.StructLayout):
    """One beat of a symbol stream: ``symbols`` 10-bit symbols and the codeword's ``last``.

    Symbol *j* of a beat (*j* = 0 first in time) is ``data[10j+9:10j]``; symbols past the end of
    a codeword's last beat are zero (spec §12).
    """
    def __init__(self, symbols):
        self.symbols = SYMBOLS_PER_BEAT.validate("symbols_per_beat", symbols)
        super().__init__({"data": SYMBOL_BITS * symbols, "last": 1})


class DecodeStatusLayout(data.StructLayout):
    """The decoder's verdict on a codeword, ``m_axis_tuser`` of ``rs272_decoder`` (spec §12):
    bit 0 ``uncorrectable`` (on every beat of the codeword), bits 4:1 ``corrected`` (symbols
    corrected, on the last beat; 0 on the others and when uncorrectable)."""
    def __init__(self):
        super().__init__({"uncorrectable": 1, "corrected": 4})


class DecodedLayout(data.StructLayout):
    """One beat of a decoded message: P message symbols, ``last``, and the codeword's
    :class:`DecodeStatusLayout` in ``user``."""
    def __init__(self, symbols):
        self.symbols = SYMBOLS_PER_BEAT.validate("symbols_per_beat", symbols)
        super().__init__({"data": SYMBOL_BITS * symbols, "last": 1,
                          "user": DecodeStatusLayout()})
