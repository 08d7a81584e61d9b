"""GF(2^10) arithmetic for the RS(272,258) FEC (spec §6).

Ref: spec §6 — field polynomial x^10 + x^3 + 1 (0x409), primitive element α = 0x002; bit i of a
symbol is the coefficient of α^i.

Two halves: plain-Python arithmetic that computes the constants the gateware is built from
(generator polynomial, multiplier matrices), and the Amaranth constructs that use them
(:func:`mul_const`, an XOR network). The tests check both against ``galois``, an independent
implementation.
"""

import functools
import operator

from amaranth.hdl import C, Cat, Value

__all__ = ["SYMBOL_BITS", "FIELD_POLY", "ORDER", "N", "K", "PARITY", "T", "mul", "alpha_pow",
           "generator_poly", "mul_const"]

SYMBOL_BITS = 10
FIELD_POLY = 0x409
ORDER = (1 << SYMBOL_BITS) - 1       # 1023 non-zero elements
N, K = 272, 258                      # shortened code: 258 message + 14 parity symbols
PARITY = N - K
T = PARITY // 2                      # 7 correctable symbol errors


def mul(a, b):
    """Product of two field elements (Python ints)."""
    product = 0
    for bit in range(SYMBOL_BITS):
        if (b >> bit) & 1:
            product ^= a << bit
    for bit in reversed(range(SYMBOL_BITS, 2 * SYMBOL_BITS - 1)):
        if (product >> bit) & 1:
            product ^= FIELD_POLY << (bit - SYMBOL_BITS)
    return product


@functools.cache
def alpha_pow(n):
    """α^n for any integer n (α^-n = α^(1023 - n))."""
    value = 1
    for _ in range(n % ORDER):
        value = mul(value, 2)
    return value


@functools.cache
def generator_poly():
    """Coefficients of g(x) = ∏_{j=0}^{13} (x − α^j), lowest degree first; g[14] = 1."""
    g = [1]
    for j in range(PARITY):
        root = alpha_pow(j)
        # Multiply by (x + root): characteristic 2, so − is +.
        g = [(g[i - 1] if i > 0 else 0) ^ (mul(g[i], root) if i < len(g) else 0)
             for i in range(len(g) + 1)]
    return tuple(g)


def mul_const(value, constant):
    """``value × constant`` in GF(2^10) as a combinational XOR network (``value``: 10 bits).

    Multiplication by a constant is linear over GF(2): output bit *o* is the XOR of the input
    bits *i* for which bit *o* of ``constant × α^i`` is set.
    """
    value = Value.cast(value)
    columns = [mul(constant, 1 << i) for i in range(SYMBOL_BITS)]
    bits = []
    for o in range(SYMBOL_BITS):
        terms = [value[i] for i in range(SYMBOL_BITS) if (columns[i] >> o) & 1]
        bits.append(functools.reduce(operator.xor, terms) if terms else C(0, 1))
    return Cat(*bits)
