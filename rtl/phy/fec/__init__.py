"""The optional link FEC: RS(272,258) over GF(2^10) (spec §6)."""

from .encoder import Rs272Encoder, SymbolLayout

__all__ = ["Rs272Encoder", "SymbolLayout"]
