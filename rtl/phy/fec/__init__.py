"""RS(272,258) FEC of spec §6: GF(2^10) arithmetic, symbol streams, encoder, decoder, the
XGMII transcoder and the FEC sublayer."""

from .decoder import Rs272Decoder
from .encoder import Rs272Encoder
from .sublayer import FecSublayer
from .symbols import DecodedLayout, SymbolLayout
from .transcoder import SymbolsToXgmii, XgmiiToSymbols

__all__ = ["Rs272Encoder", "Rs272Decoder", "FecSublayer", "DecodedLayout", "SymbolLayout",
           "XgmiiToSymbols", "SymbolsToXgmii"]
