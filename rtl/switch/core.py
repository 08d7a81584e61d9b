"""The switch forwarding core: ingress checks, virtual output queues, iSLIP, crossbar.

::

    i[0] ─► SwitchIngress ─► VoqBuffer ──┐            ┌─► egress FIFO ─► o[0]
    i[1] ─► SwitchIngress ─► VoqBuffer ──┼─ crossbar ─┼─► egress FIFO ─► o[1]
    ...                                │  (iSLIP)   │
                      CSR bus ─► tables, port configuration, counters
"""

from amaranth.hdl import Module, Signal, Cat
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..arbiter import column, one_hot_index
from ..buffer import CountedWordLayout
from ..counters import CounterBank, Counters, counter_values
from ..params import Flag, IntRange, Param, parameters
from ..regbus import RegisterBus, register_reads, word_view
from ..link.layouts import MAC_BEAT_OCTETS
from ..stream import PacketStream, count_to_keep
from ..wire import NO_ENDPOINT
from . import csr
from .allocator import IslipAllocator, ITERATIONS
from .ingress import SwitchIngress
from .voq import VoqBuffer, VC_CLASSES, VOQ_BEATS

__all__ = ["SwitchCore", "SwitchEgress", "RADIX", "MAX_RADIX", "ZERO_LOAD_LATENCY", "MIN_EGRESS_BEATS",
           "EGRESS_BEATS"]

#: Cycles from a frame's first beat taken on ``i<p>`` to its first beat offered on ``o<q>``
#: when nothing else is in the way: ingress lookup (1) and decision (1) registers, queue write
#: to request (1), allocation (1), RAM read (1), egress FIFO (1).
ZERO_LOAD_LATENCY = 6

#: The smallest egress FIFO: the two beats in flight of the read pipeline plus one, so that
#: an egress that is never paused runs at one beat per cycle.
MIN_EGRESS_BEATS = 4

MAX_RADIX = 16
RADIX = Param("ports", IntRange(2, MAX_RADIX))
EGRESS_BEATS = Param("beats of FIFO between the crossbar and each output",
                     IntRange(MIN_EGRESS_BEATS, 1024))


@parameters(radix=RADIX, vc_classes=VC_CLASSES, voq_beats=VOQ_BEATS, iterations=ITERATIONS,
            fifo=Param("1: one FIFO per ingress instead of VOQs (baseline)", Flag()),
            egress_beats=EGRESS_BEATS)
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
    i : In(PacketStream(8)).array(radix); o : Out(PacketStream(8)).array(radix)
    csr : In(RegisterBus(16))
        The register bus; the map is in :mod:`.csr` (writes take effect at the end of their
        cycle, read data follows one cycle after ``re``).

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
        self.radix = radix
        self.vc_classes = vc_classes
        self.voq_beats = voq_beats
        self.iterations = iterations
        self.fifo = fifo
        self.egress_beats = egress_beats
        super().__init__({
            "i": In(PacketStream(MAC_BEAT_OCTETS)).array(radix),
            "o": Out(PacketStream(MAC_BEAT_OCTETS)).array(radix),
            "csr": In(RegisterBus(csr.ADDR_BITS)),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.radix

        buffers, ingresses = [], []
        for p in range(n):
            buf = VoqBuffer(radix=n, vc_classes=self.vc_classes, voq_beats=self.voq_beats,
                            fifo=self.fifo)
            ing = SwitchIngress(radix=n, vc_classes=self.vc_classes, queues=buf.queues,
                                fifo=self.fifo)
            m.submodules[f"buffer{p}"] = buf
            m.submodules[f"ingress{p}"] = ing
            wiring.connect(m, wiring.flipped(self.i[p]), ing.i)
            wiring.connect(m, ing.w, buf.w)
            buffers.append(buf)
            ingresses.append(ing)

        # Room in each egress FIFO for a beat read now (the VOQs read only with room).
        egress_room = Signal(n)
        for buf in buffers:
            m.d.comb += buf.egress_room.eq(egress_room)

        # --- allocation -------------------------------------------------------------------
        m.submodules.allocator = alloc = IslipAllocator(n, self.iterations)
        # Which requests hold up their ingress: a hint, so registered (a cycle late).
        urgent = Signal(n * n)
        m.d.sync += urgent.eq(Cat(*(Cat(*(ing.blocked & (ing.w.egress == j) for j in range(n)))
                                    for ing in ingresses)))
        # The match, registered: the allocator's path ends in this register, and the buffers
        # and outputs act on it in the next cycle (a buffer issues its first read then, from
        # registers prepared for it), so the register costs no cycle of latency. In that cycle
        # the matched pair is busy: the buffer's ``request`` falls with its ``grant``, the
        # output's ``out_free`` with the register's column.
        connect = Signal(n * n)
        m.d.sync += connect.eq(alloc.match)
        out_busy = Signal(n)
        out_src = [Signal(range(n), name=f"out_src{j}") for j in range(n)]
        matched = [column(connect, n, j) for j in range(n)]   # each output's input, one-hot
        m.d.comb += [
            alloc.request.eq(Cat(*(buf.request for buf in buffers))),
            alloc.urgent.eq(urgent),
            alloc.out_free.eq(~out_busy & ~Cat(*(inputs.any() for inputs in matched))),
        ]
        for j, inputs in enumerate(matched):
            # At most one input is matched with an output: its index from an OR per bit, not
            # from a chain of priority multiplexers.
            with m.If(inputs.any()):
                m.d.sync += [out_busy[j].eq(1), out_src[j].eq(one_hot_index(inputs))]
        for i, buf in enumerate(buffers):
            m.d.comb += buf.grant.eq(connect[n * i:n * (i + 1)])
            # The last beat of a frame leaves the RAM: its egress is free from the next cycle.
            with m.If(buf.r_valid & buf.r_word.last):
                with m.Switch(buf.r_egress):
                    for j in range(n):
                        with m.Case(j):
                            m.d.sync += out_busy[j].eq(0)

        # --- crossbar and egress ----------------------------------------------------------
        frames_out, octets_out = [], []
        for j in range(n):
            m.submodules[f"egress{j}"] = egress = SwitchEgress(self.egress_beats)
            m.d.comb += egress_room[j].eq(egress.room)
            # The crossbar: the egress takes the RAM read of the ingress it was matched with.
            with m.Switch(out_src[j]):
                for i, buf in enumerate(buffers):
                    with m.Case(i):
                        m.d.comb += [egress.i.payload.eq(buf.r_word),
                                     egress.i.valid.eq(out_busy[j] & buf.r_valid)]
            wiring.connect(m, egress.o, wiring.flipped(self.o[j]))
            frames_out.append(egress.count.frames_out)
            octets_out.append(egress.count.octets_out)

        # --- register bus -----------------------------------------------------------------
        bus = self.csr
        region = bus.addr[csr.TABLE_BITS:]
        route = word_view(csr.RouteWord, bus.wdata)
        partition = word_view(csr.PartitionWord, bus.wdata)
        written = word_view(csr.PortConfigWord, bus.wdata)
        config = [Signal(csr.PortConfigWord, init={"attached": NO_ENDPOINT},
                         name=f"port_config{p}") for p in range(n)]
        for p, ing in enumerate(ingresses):
            tables = ing.tables
            m.d.comb += [
                ing.attached.eq(config[p].attached), ing.src_check.eq(config[p].src_check),
                tables.addr.eq(bus.addr[:csr.TABLE_BITS]),
                tables.route_we.eq(bus.we & (region == csr.ROUTE >> csr.TABLE_BITS)),
                tables.route_valid.eq(route.valid & (route.port < n)),
                tables.route_port.eq(route.port[:len(tables.route_port)]),
                tables.partition_we.eq(bus.we & (region == csr.PARTITION >> csr.TABLE_BITS)),
                tables.partition.eq(partition.partition),
            ]
            with m.If(bus.we & (bus.addr == csr.PORT_CONFIG + p)):
                m.d.sync += [config[p].attached.eq(written.attached),
                             config[p].src_check.eq(written.src_check)]

        # Each port's counters, in the order of the register map.
        port_counters = [{"frames_out": frames_out[p], "octets_out": octets_out[p],
                          **counter_values(ing.count)} for p, ing in enumerate(ingresses)]
        params = csr.ParamsWord.const({"radix": n, "vc_classes": self.vc_classes,
                                       "log2_voq_beats": exact_log2(self.voq_beats),
                                       "fifo": self.fifo, "iterations": self.iterations})
        registers = [(csr.ID, csr.ID_VALUE), (csr.PARAMS, params.as_value())]
        for p in range(n):
            registers.append((csr.PORT_CONFIG + p, config[p].as_value()))
            registers += [(csr.COUNTERS + csr.COUNTER_STRIDE * p + k, port_counters[p][name])
                          for k, name in enumerate(csr.PORT_COUNTERS)]
        register_reads(m, bus, registers)
        return m


class SwitchEgress(wiring.Component):
    """Buffer the beats the crossbar gives one output and send them as frames on ``o``.

    Members
    -------
    i : In(stream.Signature(CountedWordLayout()))
        Beats read from the VOQ RAM for this output. They are never refused: the allocator
        reads a beat only when ``room`` says it fits, so ``i.ready`` is not driven.
    room : Out(1)
        From a register: the FIFO has room for a beat read now besides the one that may be on
        ``i`` (a read issued in cycle *t* is on ``i`` in *t + 1* and in the FIFO from *t + 2*).
        The register is loaded from the FIFO's next fill level with a beat on ``i`` assumed,
        so the path from the crossbar's source register ends here and not in the readers;
        the price is one beat of the FIFO's depth, and only while it is that full.
    o : Out(PacketStream(8))
        The frames, ``keep`` from the beat's octet count, ``first`` after every ``last``.
    count : Out(Counters)
        ``frames_out`` (first beats sent), ``octets_out`` (octets sent).

    Latency: a beat on ``i`` is offered on ``o`` 1 cycle later (a first-word-fall-through
    FIFO of ``beats`` beats). Throughput: one beat per cycle in and out.
    """
    COUNTERS = ("frames_out", "octets_out")

    def __init__(self, beats):
        self.beats = beats
        super().__init__({
            "i": In(stream.Signature(CountedWordLayout())),
            "room": Out(1, init=1),
            "o": Out(PacketStream(MAC_BEAT_OCTETS)),
            "count": Out(Counters(self.COUNTERS)),
        })

    def elaborate(self, platform):
        m = Module()
        word = CountedWordLayout()
        m.submodules.fifo = fifo = SyncFIFO(width=word.size, depth=self.beats)
        write, read = fifo.w_stream, fifo.r_stream
        m.d.comb += [
            write.valid.eq(self.i.valid),
            write.payload.eq(self.i.payload),
        ]
        # The fill level of the next cycle, ``i`` never refused (``room`` guarantees it); in
        # that cycle a beat may be on ``i`` (a read issued now), and a read then needs a slot
        # more: room while the level is below ``beats - 1``.
        level_next = Signal(range(self.beats + 1))
        m.d.comb += level_next.eq(fifo.level + write.valid - (read.valid & read.ready))
        m.d.sync += self.room.eq(level_next < self.beats - 1)
        head = word(read.payload)
        in_frame = Signal()
        out = self.o
        m.d.comb += [
            out.valid.eq(read.valid),
            out.payload.data.eq(head.data),
            out.payload.keep.eq(count_to_keep(head.count, MAC_BEAT_OCTETS)),
            out.payload.last.eq(head.last),
            out.payload.first.eq(~in_frame),
            read.ready.eq(out.ready),
        ]
        sent = out.valid & out.ready
        with m.If(sent):
            m.d.sync += in_frame.eq(~head.last)
        counters = CounterBank(m, self.count)
        counters.frames_out.increment(m, sent & ~in_frame)
        counters.octets_out.add(m, head.count, sent)
        return m
