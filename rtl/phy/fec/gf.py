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

from amaranth.hdl import C, Cat, Signal, Value

__all__ = ["SYMBOL_BITS", "FIELD_POLY", "ORDER", "N", "K", "PARITY", "T", "mul", "alpha_pow",
           "inverse", "generator_poly", "mul_const", "mul_sum", "mul_var",
           "mul_matrix", "mul_forms", "linear_map"]

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
def _inverses():
    table = [0] * (ORDER + 1)
    for n in range(ORDER):
        table[alpha_pow(n)] = alpha_pow(ORDER - n)
    return tuple(table)


def inverse(a):
    """a^-1 for a non-zero element; 0 for 0 (the convention of the decoder's inverse ROM)."""
    return _inverses()[a]


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
    """``value × constant`` in GF(2^10) as a combinational XOR network (``value``: 10 bits)."""
    return mul_sum([value], [constant])


def mul_sum(values, constants):
    """``Σ values[i] × constants[i]`` in GF(2^10) as one flat XOR network.

    The sum is linear over GF(2) in the bits of ``values``: output bit *o* is the XOR of the
    input bits (bit *b* of value *i*) for which bit *o* of ``constants[i] × α^b`` is set. Each
    output bit is one masked XOR reduction over the concatenated inputs, which synthesis turns
    into a balanced tree and which keeps the generated Verilog (and Verilator's build) small.
    """
    values = [Value.cast(v) for v in values]
    if len(values) != len(constants):
        raise ValueError("one constant per value")
    columns = [mul(constant, 1 << b) for constant in constants for b in range(SYMBOL_BITS)]
    inputs = Cat(*values)
    bits = []
    for o in range(SYMBOL_BITS):
        mask = sum(1 << n for n, column in enumerate(columns) if (column >> o) & 1)
        bits.append((inputs & mask).xor() if mask else C(0, 1))
    return Cat(*bits)


@functools.cache
def _product_masks():
    # Output bit o of a·b is the XOR of a[x]·b[y] over the pairs (x, y) for which bit o of
    # α^(x+y) is set: a mask over the 100-bit outer product a[x]·b[y] (bit 10y + x).
    return tuple(sum(1 << (SYMBOL_BITS * y + x) for x in range(SYMBOL_BITS)
                     for y in range(SYMBOL_BITS) if (alpha_pow(x + y) >> o) & 1)
                 for o in range(SYMBOL_BITS))


def mul_var(m, a, b, name="product"):
    """``a × b`` of two 10-bit values in GF(2^10) as an AND-XOR network: the outer product of
    the bits (a signal of module ``m``, so that it is built once), then one masked XOR
    reduction per output bit (10 to 21 partial products each, about three LUT4 levels)."""
    a, b = Value.cast(a), Value.cast(b)
    outer = Signal(SYMBOL_BITS * SYMBOL_BITS, name=f"{name}_outer")
    m.d.comb += outer.eq(Cat(*(a & b[y].replicate(SYMBOL_BITS) for y in range(SYMBOL_BITS))))
    return Cat(*((outer & mask).xor() for mask in _product_masks()))


def mul_matrix(constant):
    """The 10×10 GF(2) matrix of multiplication by ``constant``, one int per output bit: bit *i*
    of row *o* is set when bit *o* of ``constant × α^i`` is set."""
    columns = [mul(constant, 1 << i) for i in range(SYMBOL_BITS)]
    return tuple(sum(((columns[i] >> o) & 1) << i for i in range(SYMBOL_BITS))
                 for o in range(SYMBOL_BITS))


def mul_forms(symbol, constant):
    """``constant × symbol`` for a symbol given as 10 GF(2)-linear forms, one per bit.

    A form is an int whose bit *v* stands for variable *v* (a bit of whatever the gateware
    combines), so chaining this function and ``^`` over forms traces a linear network at
    elaboration time; :func:`linear_map` then builds its flat XOR form.
    """
    return [functools.reduce(operator.xor,
                             (form for i, form in enumerate(symbol) if (row >> i) & 1), 0)
            for row in mul_matrix(constant)]


def linear_map(m, inputs, matrix, name):
    """Drive a new signal ``name`` with the GF(2)-linear map ``matrix`` of ``inputs`` (an XOR
    network in ``m.d.comb``) and return it.

    ``matrix`` has one int per output bit: output bit *o* is the XOR of the input bits *i* for
    which bit *i* of ``matrix[o]`` is set (0 if there are none).

    Built for LUT4 fabrics: the inputs are cut into groups of 4 consecutive bits, and each XOR of
    two or more bits of one group that some output needs is computed once, in ``{name}_partial``
    (a LUT4 each, kept through synthesis). An output is then the reduction XOR of at most one
    term per group: for a dense map that shares nearly the whole first LUT level between the
    outputs, and the depth is at most one level more than a tree over the groups,
    ``1 + ceil(log4(ceil(len(inputs) / 4)))`` LUT4 levels.
    """
    inputs = Value.cast(inputs)
    group = 4
    partials = {}                        # (first bit, mask) → bit of {name}_partial
    rows = []
    for row in matrix:
        if row >> len(inputs):
            raise ValueError(f"matrix row {row:#x} selects bits past the {len(inputs)} inputs")
        terms = []
        for first in range(0, len(inputs), group):
            mask = (row >> first) & ((1 << group) - 1)
            if mask & (mask - 1):
                terms.append(partials.setdefault((first, mask), len(partials)))
            elif mask:
                terms.append(inputs[first + mask.bit_length() - 1])
        rows.append(terms)
    # `keep`: otherwise ABC re-derives the partial sums inside each output's cone and the
    # sharing is lost (the encoder at P = 8: 3447 LUTs without, 3005 with, about the same Fmax).
    partial = Signal(len(partials), name=f"{name}_partial", attrs={"keep": 1})
    m.d.comb += partial.eq(Cat(*(
        Cat(*(inputs[first + i] for i in range(group) if (mask >> i) & 1)).xor()
        for first, mask in partials)))
    output = Signal(len(matrix), name=name)
    m.d.comb += output.eq(Cat(*(
        Cat(*(partial[t] if isinstance(t, int) else t for t in terms)).xor() if terms else C(0, 1)
        for terms in rows)))
    return output
