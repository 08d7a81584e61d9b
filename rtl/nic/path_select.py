"""Multipath path selection: the port a frame leaves on, one selection per cycle.

Ref: spec §9 (multipath path selection), §12 (the ``path_select`` Verilog export).

The hash is CRC-16/CCITT-FALSE over four octets. For a fixed message length a CRC is an affine
map over GF(2), so the gateware computes it as one: each hash bit is a constant (the CRC of the
all-zero message) XOR a fixed set of input bits. :func:`crc_affine_map` derives that map at
elaboration time from the CRC definition of :mod:`amaranth.lib.crc.catalog` (the one the golden
model ``sim/models/path.py`` uses too), so no matrix is typed by hand.
"""

from amaranth.hdl import Module, Signal, Cat, C
from amaranth.lib import wiring
from amaranth.lib.crc.catalog import CRC16_CCITT_FALSE
from amaranth.lib.wiring import In, Out

from ..wire import OEFH

__all__ = ["PathSelect", "PathRequest", "PathAnswer", "DST_WIDTH", "ENTROPY_WIDTH", "MAX_PORTS", "HASH_WIDTH", "path_hash",
           "crc_affine_map"]

#: Ports of one endpoint, one switch plane each (spec §9).
MAX_PORTS = 4
#: Width of the hash h.
HASH_WIDTH = 16
#: Widths of the hashed OEFH fields (spec §4.1).
DST_WIDTH = OEFH.offsets()["dst"][1]
ENTROPY_WIDTH = OEFH.offsets()["entropy"][1]

_CRC16 = CRC16_CCITT_FALSE(data_width=8)


def PathRequest(reachable=True):
    """A request for the port of a frame, as its asker drives it: ``valid`` in the cycle it
    is asked, the frame's OEFH ``dst`` and ``entropy``, and (``reachable``) the mask of the
    ports that can take it. No back-pressure: a lookup is answered a fixed time later."""
    return wiring.Signature({"valid": Out(1), "dst": Out(DST_WIDTH),
                             "entropy": Out(ENTROPY_WIDTH),
                             **({"reachable": Out(MAX_PORTS)} if reachable else {})})


def PathAnswer():
    """The answer to a :func:`PathRequest`: ``valid``, the ``port`` or ``none``."""
    return wiring.Signature({"valid": Out(1), "port": Out(range(MAX_PORTS)), "none": Out(1)})


def path_hash(dst, entropy):
    """h of spec §9: CRC-16/CCITT-FALSE of ``dst`` (2 octets BE) ‖ ``entropy`` (2 octets BE)."""
    # Ref: spec §9 — h = CRC-16/CCITT-FALSE(dst as 2 octets BE ‖ entropy as 2 octets BE).
    return _CRC16.compute(dst.to_bytes(2, "big") + entropy.to_bytes(2, "big"))


def crc_affine_map():
    """``(constant, columns)`` with ``path_hash(dst, entropy) == constant ^ XOR of columns[i]
    over the set bits i of Cat(dst, entropy)`` (bit i < 12: dst bit i; else entropy bit
    i - 12). Derived from the CRC by linearity: ``crc(x) = crc(0) ^ XOR (crc(e_i) ^ crc(0))``.
    """
    constant = path_hash(0, 0)
    columns = [path_hash(1 << i, 0) ^ constant for i in range(DST_WIDTH)]
    columns += [path_hash(0, 1 << i) ^ constant for i in range(ENTROPY_WIDTH)]
    return constant, columns


def _mod3_table(a_width, b_width):
    """``{Cat(a, b) value: (a + b) mod 3}`` for all ``a``, ``b`` of the given widths."""
    return {a | b << a_width: (a + b) % 3
            for a in range(1 << a_width) for b in range(1 << b_width)}


class PathSelect(wiring.Component):
    """Pick the port a frame to ``i_dst`` with ``i_entropy`` leaves on.

    Ref: spec §9. For every cycle with ``i_valid`` high the block computes

    * ``h`` = CRC-16/CCITT-FALSE(dst as 2 octets big-endian ‖ entropy as 2 octets big-endian);
    * ``ports`` = the bits set in ``i_reachable``, ascending, and ``n`` = their number;
    * ``o_port = ports[h mod n]``, ``o_none = 0``; or, when ``n = 0``, ``o_none = 1`` and
      ``o_port = 0`` (the NIC completes the request with an error status).

    Spec §9 selects among ports that are reachable *and* whose link is up. This block takes
    one mask: the NIC gives it ``reachable[dst] & links_up`` (the up state of its 1–4 links),
    so a port whose link went down is never chosen and no frame waits for it.

    The hash is a combinational GF(2) affine map of the 28 input bits (see
    :func:`crc_affine_map`); ``h mod 3`` sums the eight 2-bit digits of ``h`` modulo 3
    (4 ≡ 1 mod 3) in a tree of 4-input residue adders; ``h mod 2`` and ``h mod 4`` are the low
    bits of ``h``. All of it sits before the one output register.

    Members
    -------
    i : In(PathRequest())
        ``valid``: a selection is asked for in this cycle; ``dst``: destination endpoint id
        (OEFH ``dst``); ``entropy``: the frame's entropy (OEFH ``entropy``); ``reachable``:
        bit ``p``, port ``p`` reaches ``dst`` and its link is up.
    o : Out(PathAnswer())
        ``valid``: ``i.valid`` delayed by :attr:`LATENCY` cycles, low after reset; ``port``:
        the chosen port, 0 when ``none``; ``none``: no port reaches ``dst`` (``reachable =
        0``). Meaningful only when ``valid``.

    Latency: ``o_valid``, ``o_port`` and ``o_none`` are registered; the result for the inputs
    of cycle n is on the outputs in cycle n + :attr:`LATENCY` (= 1). There is no
    back-pressure: the block never stalls.

    Throughput: one selection per cycle, back to back, with no bubble. The outputs depend only
    on registers; the inputs feed the output register through combinational logic only.
    """
    #: Cycles from ``i_valid`` to ``o_valid``.
    LATENCY = 1

    def __init__(self):
        super().__init__({"i": In(PathRequest()), "o": Out(PathAnswer())})

    def elaborate(self, platform):
        m = Module()

        # Ref: spec §9 — h = CRC-16/CCITT-FALSE(dst ‖ entropy), as an affine map over GF(2).
        constant, columns = crc_affine_map()
        bits = Cat(self.i.dst, self.i.entropy)
        h = Signal(HASH_WIDTH)
        for j in range(HASH_WIDTH):
            taps = [bits[i] for i, column in enumerate(columns) if column >> j & 1]
            assert taps, f"hash bit {j} depends on no input"   # 8 to 16 taps each
            m.d.comb += h[j].eq(Cat(*taps).xor() ^ (constant >> j & 1))

        # h mod 3: 16 bits = eight 2-bit digits d_k with h = sum d_k 4^k ≡ sum d_k (mod 3).
        # Level 1 folds two digits (4 inputs) into a residue 0..2; levels 2 and 3 add residues.
        residues = []
        for k in range(0, HASH_WIDTH, 4):
            residues.append(self._mod3_add(m, h[k:k + 2], h[k + 2:k + 4], f"h_mod3_{k}"))
        level = 2
        while len(residues) > 1:
            residues = [self._mod3_add(m, a, b, f"h_mod3_l{level}_{n}")
                        for n, (a, b) in enumerate(zip(residues[0::2], residues[1::2]))]
            level += 1
        h_mod3 = residues[0]

        # Ref: spec §9 — ports = usable ports ascending, n = len(ports), index = h mod n.
        reachable = self.i.reachable
        count = Signal(range(MAX_PORTS + 1))
        m.d.comb += count.eq(sum(reachable[p] for p in range(MAX_PORTS)))
        index = Signal(range(MAX_PORTS))
        with m.Switch(count):
            with m.Case(2):
                m.d.comb += index.eq(h[0])
            with m.Case(3):
                m.d.comb += index.eq(h_mod3)
            with m.Case(4):
                m.d.comb += index.eq(h[:2])
            with m.Default():
                m.d.comb += index.eq(0)

        # Ref: spec §9 — the chosen port is ports[index]: the set bit p of reachable with
        # exactly `index` set bits below it.
        hits = Signal(MAX_PORTS)
        for p in range(MAX_PORTS):
            below = sum((reachable[q] for q in range(p)), start=C(0, 2))
            m.d.comb += hits[p].eq(reachable[p] & (below == index))
        port = Signal(range(MAX_PORTS))
        m.d.comb += port.eq(Cat(hits[1] | hits[3], hits[2] | hits[3]))

        # Ref: spec §9 — no usable port: o_none (the request completes with an error status).
        m.d.sync += [
            self.o.valid.eq(self.i.valid),
            self.o.port.eq(port),
            self.o.none.eq(reachable == 0),
        ]
        return m

    @staticmethod
    def _mod3_add(m, a, b, name):
        """A 2-bit signal ``(a + b) mod 3``, ``a`` and ``b`` 2 bits each (digits 0..3 or
        residues 0..2): a 4-input function, one LUT4 per output bit."""
        result = Signal(2, name=name)
        with m.Switch(Cat(a, b)):
            for value, residue in _mod3_table(len(a), len(b)).items():
                with m.Case(value):
                    m.d.comb += result.eq(residue)
        return result
