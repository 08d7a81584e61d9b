"""The crossbar allocator: iSLIP over the virtual output queues.

Ref: N. McKeown, "The iSLIP scheduling algorithm for input-queued switches", IEEE/ACM ToN 7(2),
1999. Each iteration is request → grant (every free output picks one requesting input, round
robin from its grant pointer) → accept (every input picks one granting output, round robin from
its accept pointer). Pointers move one past the partner only for matches made in the first
iteration, which is what desynchronises the outputs and gives iSLIP its 100 % throughput under
uniform traffic.
"""

from amaranth.hdl import Module, Signal, Const, Cat, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..arbiter import column, round_robin, one_hot_index, wrap_next
from ..params import IntRange, Param, check_int_range

__all__ = ["IslipAllocator", "MAX_ITERATIONS", "ITERATIONS"]

#: iSLIP converges in at most log2(N) iterations on average; 4 covers radix 16.
MAX_ITERATIONS = 4
ITERATIONS = Param("iSLIP iterations per cycle", IntRange(1, MAX_ITERATIONS))


class IslipAllocator(wiring.Component):
    """Matches free inputs to free outputs, ``iterations`` iSLIP iterations in one cycle.

    Members
    -------
    request : In(radix * radix)
        ``request[radix * i + j]``: input ``i`` has a frame for output ``j`` and is free.
    urgent : In(radix * radix)
        ``urgent[radix * i + j]``: that request holds up input ``i``'s ingress (its queue is
        full). Outputs grant urgent requests first, so a full queue stops its ingress for as
        short a time as possible; among urgent requests, and among the others, iSLIP's round
        robin decides.
    out_free : In(radix)
        Output ``j`` is not carrying a frame.
    match : Out(radix * radix)
        ``match[radix * i + j]``: input ``i`` is connected to output ``j`` (combinational; at
        most one bit per input and per output). The caller registers it.

    The pointers advance in the cycle after the match, from a register of it; the caller must
    therefore keep a matched input's requests and a matched output's ``out_free`` low in that
    cycle (the switch core does: both are busy from then on). Latency: combinational (the core
    registers the match, so a request seen in cycle *t* starts reading in cycle *t + 1*).
    """
    def __init__(self, radix, iterations=1):
        self.radix = check_int_range("radix", radix, 2, 16)
        self.iterations = ITERATIONS.validate("iterations", iterations)
        super().__init__({
            "request": In(radix * radix),
            "urgent": In(radix * radix),
            "out_free": In(radix),
            "match": Out(radix * radix),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.radix
        grant_ptr = [Signal(range(n), name=f"grant_ptr{j}") for j in range(n)]
        accept_ptr = [Signal(range(n), name=f"accept_ptr{i}") for i in range(n)]

        in_matched = Const(0, n)
        out_matched = ~self.out_free
        matches = []
        for it in range(self.iterations):
            # Grant: output j picks among the unmatched inputs that request it.
            grants = []   # grants[j]: one-hot over inputs
            for j in range(n):
                wanting = column(self.request, n, j) & ~in_matched
                wanting = wanting & ~out_matched[j].replicate(n)
                urgent = wanting & column(self.urgent, n, j)
                # The round robin among the urgent requests and among all of them side by side,
                # one chosen last: the choice of set is not in front of the priority logic.
                grant = Signal(n, name=f"it{it}_out{j}_grant")
                m.d.comb += grant.eq(Mux(urgent.any(),
                                         round_robin(m, urgent, grant_ptr[j], f"it{it}_out{j}_u"),
                                         round_robin(m, wanting, grant_ptr[j], f"it{it}_out{j}")))
                grants.append(grant)
            # Accept: input i picks among the outputs that granted it.
            accepts = []  # accepts[i]: one-hot over outputs
            for i in range(n):
                offered = Cat(*(grants[j][i] for j in range(n)))
                accepts.append(round_robin(m, offered, accept_ptr[i], f"it{it}_in{i}"))
            new = Signal(n * n, name=f"it{it}_match")
            m.d.comb += new.eq(Cat(*accepts))
            matches.append(new)
            in_matched = in_matched | Cat(*(accepts[i].any() for i in range(n)))
            out_matched = out_matched | Cat(*(
                Cat(*(accepts[i][j] for i in range(n))).any() for j in range(n)))
            if it == 0:
                # The pointers move a cycle after the match, from a register of it: an input
                # and an output matched in cycle t are busy in t + 1 (the caller masks their
                # requests and ``out_free``), so their pointers are not used in t + 1 and iSLIP
                # decides exactly as with pointers moved at once; the match's index arithmetic
                # is then not at the end of the allocator's path.
                first = Signal(n * n, name="first_match")
                m.d.sync += first.eq(Cat(*accepts))
                for i in range(n):
                    row = first[n * i:n * (i + 1)]
                    with m.If(row.any()):
                        m.d.sync += accept_ptr[i].eq(wrap_next(one_hot_index(row), n))
                for j in range(n):
                    matched = column(first, n, j)
                    with m.If(matched.any()):
                        m.d.sync += grant_ptr[j].eq(wrap_next(one_hot_index(matched), n))

        total = matches[0]
        for extra in matches[1:]:
            total = total | extra
        m.d.comb += self.match.eq(total)
        return m
