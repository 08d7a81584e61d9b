"""Golden model of the RS(272,258) FEC (spec §6), on ``galois``.

Ref: spec §6 gives the model: ``galois.ReedSolomon(1023, 1009, field=GF(2**10,
irreducible_poly=0x409), alpha=2, c=0)`` used as a shortened code (a 258-symbol message).
This is an implementation independent of the gateware's own GF arithmetic (rtl/phy/fec/gf.py).
"""

import functools

import galois
import numpy as np

__all__ = ["N", "K", "T", "field", "code", "encode", "decode"]

N, K, T = 272, 258, 7


@functools.cache
def field():
    return galois.GF(2 ** 10, irreducible_poly=0x409)


@functools.cache
def code():
    return galois.ReedSolomon(1023, 1009, field=field(), alpha=2, c=0)


def encode(message):
    """The 272-symbol codeword (list of ints) of a 258-symbol message."""
    if len(message) != K:
        raise ValueError(f"a message is {K} symbols, not {len(message)}")
    return [int(s) for s in code().encode(field()(np.array(message, dtype=np.int64)))]


def decode(codeword):
    """``(message, corrected)`` for a 272-symbol word: the corrected 258 message symbols and the
    number of symbol errors corrected, or ``(None, -1)`` when the word is uncorrectable."""
    if len(codeword) != N:
        raise ValueError(f"a codeword is {N} symbols, not {len(codeword)}")
    message, corrected = code().decode(field()(np.array(codeword, dtype=np.int64)),
                                       errors=True)
    if corrected < 0:
        return None, -1
    return [int(s) for s in message], int(corrected)
