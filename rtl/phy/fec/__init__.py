"""RS(272,258) FEC of spec §6: GF(2^10) arithmetic, symbol streams, encoder, decoder."""

from .encoder import Rs272Encoder
from .symbols import DecodedLayout, SymbolLayout

__all__ = ["Rs272Encoder", "DecodedLayout", "SymbolLayout"]
