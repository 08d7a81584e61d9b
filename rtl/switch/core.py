"""The switch forwarding core: ingress checks, virtual output queues, iSLIP, crossbar.

::

    i0 ─► SwitchIngress ─► VoqBuffer ──┐            ┌─► egress FIFO ─► o0
    i1 ─► SwitchIngress ─► VoqBuffer ──┼─ crossbar ─┼─► egress FIFO ─► o1
    ...                                │  (iSLIP)   │
                      CSR bus ─► tables, port configuration, counters
"""

from amaranth.hdl import Module, Signal, Cat, C
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..config import check_int_range
from ..regbus import register_bus_members, register_reads
from ..link.layouts import MAC_BEAT_OCTETS
from ..stream import PacketStream, SaturatingCounter, count_to_keep
from . import csr
from .allocator import IslipAllocator, MAX_ITERATIONS
from .ingress import SwitchIngress, DROP_REASONS
from .voq import VoqBuffer, BufferWordLayout, check_voq_beats, check_vc_classes

__all__ = ["SwitchCore", "check_radix", "MAX_RADIX", "ZERO_LOAD_LATENCY", "MIN_EGRESS_BEATS",
           "check_egress_beats"]

#: Cycles from a frame's first beat taken on ``i<p>`` to its first beat offered on ``o<q>``
#: when nothing else is in the way: ingress lookup (1) and decision (1) registers, queue write
#: to request (1), allocation (1), RAM read (1), egress FIFO (1).
ZERO_LOAD_LATENCY = 6

#: The smallest egress FIFO: the two beats in flight of the read pipeline plus one, so that
#: an egress that is never paused runs at one beat per cycle.
MIN_EGRESS_BEATS = 4

MAX_RADIX = 16


def check_radix(value):
    return check_int_range("radix", value, 2, MAX_RADIX)


def check_egress_beats(value):
    return check_int_range("egress_beats", value, MIN_EGRESS_BEATS, 1024)


class SwitchCore(wiring.Component):
    """An input-queued switch of ``radix`` ports on the frame stream (OEFH + TH + payload,
    8 octets per beat), with virtual output queues per (ingress, egress, VC class) and an
    iSLIP allocator, cutting through whenever the egress is free.

    Parameters
    ----------
    radix : int
        Ports, 2 to 16.
    vc_classes : int
        Queues per (ingress, egress): a frame of VC *v* goes to class ``v % vc_classes``. The
        default 2 keeps requests (VC 0, 2) and responses (VC 1, 3) apart, so a response never
        waits behind a request (spec §3).
    voq_beats : int
        Beats (8 octets) per virtual output queue, a power of two from 16 to 4096. Frames
        longer than a queue still pass (they cut through), but then hold their ingress until
        the egress takes them.
    iterations : int
        iSLIP iterations per cycle, 1 to 4.
    fifo : int
        1 builds the head-of-line-blocking baseline instead: one first-in first-out queue per
        ingress holding the same RAM. For comparison only.

    Members
    -------
    i0 … i{radix-1} : In(PacketStream(8)); o0 … o{radix-1} : Out(PacketStream(8))
    csr_addr, csr_we, csr_wdata, csr_re : In; csr_rdata, csr_rvalid : Out
        The register bus; the map is in :mod:`.csr` (writes take effect at the end of their
        cycle, read data follows one cycle after ``csr_re``).

    Forwarding rules: frames leave whole, never interleaved on an egress; frames from one
    ingress to one egress in one VC class leave in the order they came; a frame is either
    forwarded once or dropped and counted (see :class:`~.ingress.SwitchIngress`).

    Latency: :data:`ZERO_LOAD_LATENCY` = 6 cycles from first beat in to first beat out when
    the egress and the ingress's reader are free, then one beat per cycle (cut-through: the
    frame's tail may still be arriving). Throughput: one beat per cycle per port; an egress
    passes from one frame to the next with 2 idle cycles (release, allocation), which the
    link's own per-frame overhead (start word, FCS, inter-frame gap: at least 16 octets)
    more than covers.
    """
    def __init__(self, radix=8, vc_classes=2, voq_beats=256, iterations=1, fifo=0,
                 egress_beats=32):
        self.radix = check_radix(radix)
        self.vc_classes = check_vc_classes(vc_classes)
        self.voq_beats = check_voq_beats(voq_beats)
        self.iterations = check_int_range("iterations", iterations, 1, MAX_ITERATIONS)
        self.fifo = check_int_range("fifo", fifo, 0, 1)
        self.egress_beats = check_egress_beats(egress_beats)
        super().__init__({
            **{f"i{p}": In(PacketStream(MAC_BEAT_OCTETS)) for p in range(radix)},
            **{f"o{p}": Out(PacketStream(MAC_BEAT_OCTETS)) for p in range(radix)},
            **register_bus_members(csr.ADDR_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.radix
        word = BufferWordLayout()

        buffers, ingresses = [], []
        for p in range(n):
            buf = VoqBuffer(radix=n, vc_classes=self.vc_classes, voq_beats=self.voq_beats,
                            fifo=self.fifo)
            ing = SwitchIngress(radix=n, vc_classes=self.vc_classes, queues=buf.queues,
                                fifo=self.fifo)
            m.submodules[f"buffer{p}"] = buf
            m.submodules[f"ingress{p}"] = ing
            wiring.connect(m, wiring.flipped(getattr(self, f"i{p}")), ing.i)
            m.d.comb += [
                buf.w_en.eq(ing.w_en), buf.w_first.eq(ing.w_first),
                buf.w_queue.eq(ing.w_queue), buf.w_egress.eq(ing.w_egress),
                buf.w_word.eq(ing.w_word), ing.room.eq(buf.room),
            ]
            buffers.append(buf)
            ingresses.append(ing)

        # --- allocation -------------------------------------------------------------------
        m.submodules.allocator = alloc = IslipAllocator(n, self.iterations)
        # Which requests hold up their ingress: a hint, so registered (a cycle late).
        urgent = Signal(n * n)
        m.d.sync += urgent.eq(Cat(*(Cat(*(ing.blocked & (ing.w_egress == j) for j in range(n)))
                                    for ing in ingresses)))
        out_busy = Signal(n)
        out_src = [Signal(range(n), name=f"out_src{j}") for j in range(n)]
        m.d.comb += [
            alloc.request.eq(Cat(*(buf.request for buf in buffers))),
            alloc.urgent.eq(urgent),
            alloc.out_free.eq(~out_busy),
        ]
        for i, buf in enumerate(buffers):
            row = alloc.match[n * i:n * (i + 1)]
            m.d.comb += buf.grant.eq(row.any())
            with m.Switch(row):
                for j in range(n):
                    with m.Case(1 << j):
                        m.d.comb += buf.grant_egress.eq(j)
                        m.d.sync += [out_busy[j].eq(1), out_src[j].eq(i)]
            # The last beat of a frame leaves the RAM: its egress is free from the next cycle.
            with m.If(buf.r_valid & buf.r_word.last):
                with m.Switch(buf.r_egress):
                    for j in range(n):
                        with m.Case(j):
                            m.d.sync += out_busy[j].eq(0)

        # --- crossbar and egress ----------------------------------------------------------
        egress_room = Signal(n)
        for buf in buffers:
            m.d.comb += buf.egress_room.eq(egress_room)
        frames_out, octets_out = [], []
        for j in range(n):
            fifo = SyncFIFO(width=word.size, depth=self.egress_beats)
            m.submodules[f"egress{j}"] = fifo
            chosen = word(Signal(word.size, name=f"xbar{j}"))
            chosen_valid = Signal(name=f"xbar{j}_valid")
            with m.Switch(out_src[j]):
                for i, buf in enumerate(buffers):
                    with m.Case(i):
                        m.d.comb += [chosen.eq(buf.r_word), chosen_valid.eq(buf.r_valid)]
            m.d.comb += [
                fifo.w_en.eq(out_busy[j] & chosen_valid),
                fifo.w_data.eq(chosen),
                # A read issued now is written two cycles later; one may be in flight.
                egress_room[j].eq(fifo.level + fifo.w_en < self.egress_beats),
            ]
            out = getattr(self, f"o{j}")
            head = word(fifo.r_data)
            in_frame = Signal(name=f"o{j}_in_frame")
            m.d.comb += [
                out.valid.eq(fifo.r_rdy),
                out.payload.data.eq(head.data),
                out.payload.keep.eq(count_to_keep(head.count, MAC_BEAT_OCTETS)),
                out.payload.last.eq(head.last),
                out.payload.first.eq(~in_frame),
                fifo.r_en.eq(out.ready),
            ]
            sent = out.valid & out.ready
            with m.If(sent):
                m.d.sync += in_frame.eq(~head.last)
            frames = SaturatingCounter(f"count_frames_out{j}")
            octets = SaturatingCounter(f"count_octets_out{j}")
            frames.increment(m, sent & ~in_frame)
            octets.add(m, head.count, sent)
            frames_out.append(frames.value)
            octets_out.append(octets.value)

        # --- register bus -----------------------------------------------------------------
        attached = [Signal(12, init=csr.NO_ENDPOINT, name=f"attached{p}") for p in range(n)]
        src_check = [Signal(name=f"src_check{p}") for p in range(n)]
        addr, wdata = self.csr_addr, self.csr_wdata
        region = addr[12:]
        port_bits = len(ingresses[0].route_port)
        route_port = wdata[:4]
        for p, ing in enumerate(ingresses):
            m.d.comb += [
                ing.attached.eq(attached[p]), ing.src_check.eq(src_check[p]),
                ing.table_addr.eq(addr[:12]),
                ing.route_we.eq(self.csr_we & (region == csr.ROUTE >> 12)),
                ing.route_valid.eq(wdata[csr.ROUTE_VALID_BIT] & (route_port < n)),
                ing.route_port.eq(route_port[:port_bits]),
                ing.partition_we.eq(self.csr_we & (region == csr.PARTITION >> 12)),
                ing.partition.eq(wdata[:csr.PARTITION_BITS]),
            ]
            with m.If(self.csr_we & (addr == csr.PORT_CONFIG + p)):
                m.d.sync += [attached[p].eq(wdata[:12]),
                             src_check[p].eq(wdata[csr.SRC_CHECK_BIT])]

        counters = {"frames_out": frames_out, "octets_out": octets_out}
        for name in ("frames_in", "octets_in"):
            counters[name] = [getattr(ing, f"count_{name}") for ing in ingresses]
        for reason in DROP_REASONS:
            counters[f"drop_{reason}"] = [getattr(ing, f"count_drop_{reason}")
                                          for ing in ingresses]
        params = (n | self.vc_classes << 8 | exact_log2(self.voq_beats) << 12
                  | self.fifo << 16 | self.iterations << 17)
        registers = [(csr.ID, csr.ID_VALUE), (csr.PARAMS, params)]
        for p in range(n):
            registers.append((csr.PORT_CONFIG + p,
                              Cat(attached[p], C(0, csr.SRC_CHECK_BIT - 12), src_check[p])))
            registers += [(csr.COUNTERS + csr.COUNTER_STRIDE * p + k, counters[name][p])
                          for k, name in enumerate(csr.PORT_COUNTERS)]
        register_reads(m, self, registers)
        return m
