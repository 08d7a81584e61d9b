"""Combinational CRC over a variable number of octets (spec §4 FCS, spec §5 LCW crc8).

:class:`OctetCrc` turns one algorithm of :mod:`amaranth.lib.crc.catalog` into XOR trees that
advance a CRC register by 0…``max_octets`` octets in one cycle. The matrices are built in
Python by linearity from the algorithm's own software model (:meth:`Parameters.compute`): the
register after ``n`` octets is ``A_n·state ⊕ B_n·data`` over GF(2), so each column is the result
of running the software model on one set bit. No hand-written polynomial table is involved.

The register holds the algorithm's *internal* state (most significant bit first, before the
output reflection and the output XOR); :meth:`OctetCrc.output` turns it into the CRC value.
A receiver checks a frame with the residue property: running the register over the body and
its CRC leaves :attr:`OctetCrc.residue` whatever the body, so the check does not need to know
where the CRC octets are. It does not need a matrix per octet count either: with the octets
after the end of the message fed as zero octets (one fixed 8-octet matrix for every word), the
register ends at :meth:`OctetCrc.residue_after_zeros` of the number of zero octets, one of a
few constants (the step over a zero octet is invertible). A message followed by the bitwise
inverse of its CRC (a void frame, spec v1.1 §7) leaves a second constant,
:attr:`OctetCrc.inverse_residue`, by linearity.
"""

from amaranth.hdl import Cat, Const, Signal
from amaranth.lib.crc import Algorithm

__all__ = ["OctetCrc"]


class OctetCrc:
    """XOR-tree CRC of an :class:`amaranth.lib.crc.Algorithm` over up to ``max_octets`` octets.

    Parameters
    ----------
    algorithm : amaranth.lib.crc.Algorithm
        For example ``catalog.CRC32_ETHERNET`` (FCS) or ``catalog.CRC8_SMBUS`` (LCW crc8).
    max_octets : int
        Largest number of octets consumed in one cycle; octet 0 is the first on the wire and
        sits in ``data[7:0]``.
    """

    def __init__(self, algorithm, max_octets):
        if not isinstance(algorithm, Algorithm):
            raise TypeError(f"algorithm must be an amaranth.lib.crc.Algorithm, not {algorithm!r}")
        self.algorithm = algorithm
        self.width = algorithm.crc_width
        self.max_octets = max_octets
        # The same algorithm with the output left as the raw register: linear in (state, data).
        self._raw = Algorithm(crc_width=self.width, polynomial=algorithm.polynomial,
                              initial_crc=0, reflect_input=algorithm.reflect_input,
                              reflect_output=False, xor_output=0)
        self.initial = algorithm.initial_crc
        self._matrices = [self._matrix(n) for n in range(max_octets + 1)]
        # Residue: the register after any message followed by its own CRC (wire order of the
        # CRC octets: least significant first when the output is reflected, as for the FCS).
        message = b"123456789"
        self.residue = self.update(self.initial, message + self.crc_octets(message))
        assert self.residue == self.update(self.initial, b"" + self.crc_octets(b"")), \
            "the CRC has no constant residue in this octet order"
        # Inverse residue: the register after any message followed by its CRC inverted.
        self.inverse_residue = self.update(self.initial,
                                           message + self._inverted(self.crc_octets(message)))
        assert self.inverse_residue == self.update(
            self.initial, self._inverted(self.crc_octets(b""))), \
            "the CRC has no constant inverse residue in this octet order"

    # --- software model (used to build the matrices and by the tests) -------------------------

    def update(self, state, octets):
        """Register after feeding ``octets`` from register ``state``."""
        params = self._raw(8)
        params._initial_crc = state
        return params.compute(list(octets))

    def residue_after_zeros(self, octets):
        """Register after the residue followed by ``octets`` zero octets: what a register fed
        with zero octets in place of the ``octets`` octets after a good message holds."""
        return self.update(self.residue, bytes(octets))

    def inverse_residue_after_zeros(self, octets):
        """As :meth:`residue_after_zeros`, after a message followed by its CRC inverted."""
        return self.update(self.inverse_residue, bytes(octets))

    @staticmethod
    def _inverted(octets):
        return bytes(o ^ 0xFF for o in octets)

    def value(self, state):
        """CRC value of register ``state`` (output reflection and XOR applied)."""
        if self.algorithm.reflect_output:
            state = int(f"{state:0{self.width}b}"[::-1], 2)
        return state ^ self.algorithm.xor_output

    def crc_octets(self, message):
        """The CRC of ``message`` as the octets that follow it on the wire."""
        value = self.value(self.update(self.initial, message))
        order = "little" if self.algorithm.reflect_output else "big"
        return value.to_bytes((self.width + 7) // 8, order)

    def _matrix(self, n):
        """``masks[i]``: bit mask over ``Cat(state, data[:8n])`` whose XOR is new state bit i."""
        columns = []
        for bit in range(self.width):
            columns.append(self.update(1 << bit, bytes(n)))
        for bit in range(8 * n):
            octets = bytearray(n)
            octets[bit // 8] = 1 << (bit % 8)
            columns.append(self.update(0, octets))
        return [sum(((col >> i) & 1) << j for j, col in enumerate(columns))
                for i in range(self.width)]

    # --- hardware --------------------------------------------------------------------------

    def next_state(self, m, state, data, n, name):
        """Register after ``n`` octets of ``data`` (a constant ``n``): one masked XOR reduction
        per register bit, on a named signal."""
        inputs = Cat(state, data[:8 * n])
        result = Signal(self.width, name=f"{name}_n{n}")
        m.d.comb += result.eq(Cat(*((inputs & Const(mask, len(inputs))).xor()
                                    for mask in self._matrices[n])))
        return result

    def select(self, m, state, data, count, name, counts=None):
        """Register after ``count`` octets of ``data`` (``count`` a signal taking the values
        ``counts``, by default 0…``max_octets``)."""
        counts = range(self.max_octets + 1) if counts is None else counts
        result = Signal(self.width, name=name)
        with m.Switch(count):
            for n in counts:
                with m.Case(n):
                    m.d.comb += result.eq(self.next_state(m, state, data, n, name))
        return result

    def output(self, state):
        """CRC value of register ``state`` as a value (bit permutation and constant XOR)."""
        bits = [state[i] for i in range(self.width)]
        if self.algorithm.reflect_output:
            bits.reverse()
        return Cat(*bits) ^ Const(self.algorithm.xor_output, self.width)
