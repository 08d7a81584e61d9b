"""Testbench pieces shared by the cocotb tests and the benches.

Bus models are cocotbext-axi's; this module only adds what every harness needs around them: the
:class:`TB` base (clock, cycle counter, reset), random idle/back-pressure generators, a named
view of a group of ports (:class:`Ports`, packed per-VC arrays included), the wait-until loop,
and cycle-stamped logs of transfers and offers so that latency is measured in cycles, not in
simulated time.
"""

import itertools

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from ethlink.rtl.wire import HEADER_OCTETS

__all__ = ["CLOCK_NS", "TB", "start", "pauses", "axis_source", "axis_sink", "TransferLog",
           "ValidLog", "payload_frame", "send_split", "wait_until", "wait_idle", "Ports",
           "StreamChecker"]

#: Simulation clock period. The figures the benches print in ns use the clock they state.
CLOCK_NS = 2


class CycleCounter:
    """Counts rising edges of the clock; ``now`` is the number of the current cycle."""
    def __init__(self, clk):
        self.clk = clk
        self.now = 0

    async def run(self):
        while True:
            await RisingEdge(self.clk)
            self.now += 1


class TB:
    """Base of every harness: starts ``clk`` and counts its cycles (``counter``) as soon as it
    is made; :meth:`reset` holds ``rst``. A harness builds its bus models in its own
    ``__init__`` and drives its DUT's controls before calling :meth:`reset`."""
    def __init__(self, dut):
        self.dut = dut
        self.clk = dut.clk
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.counter = CycleCounter(dut.clk)
        cocotb.start_soon(self.counter.run())

    async def reset(self, cycles=4):
        """Hold ``rst`` for ``cycles`` cycles, release it and wait one more edge."""
        self.dut.rst.value = 1
        await ClockCycles(self.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.clk)

    async def wait_until(self, condition, timeout_cycles, message=None):
        """:func:`wait_until` on this harness's clock."""
        return await wait_until(self.clk, condition, timeout_cycles, message)


async def start(dut, reset_cycles=4):
    """Start ``clk`` and hold ``rst`` for ``reset_cycles`` cycles; returns the cycle counter
    (for tests whose DUT needs no harness beyond :class:`TB`)."""
    tb = TB(dut)
    await tb.reset(reset_cycles)
    return tb.counter


def pauses(rng, fraction):
    """Pause pattern for cocotbext-axi's ``set_pause_generator``: each cycle paused with
    probability ``fraction`` (0 gives an endless run without pause)."""
    if fraction <= 0:
        return itertools.repeat(False)
    return (rng.random() < fraction for _ in itertools.count())


def axis_source(dut, prefix, rng=None, idle=0.0):
    source = AxiStreamSource(AxiStreamBus.from_prefix(dut, prefix), dut.clk, dut.rst)
    source.log.setLevel("WARNING")
    if rng is not None and idle > 0:
        source.set_pause_generator(pauses(rng, idle))
    return source


def axis_sink(dut, prefix, rng=None, backpressure=0.0):
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, prefix), dut.clk, dut.rst)
    sink.log.setLevel("WARNING")
    if rng is not None and backpressure > 0:
        sink.set_pause_generator(pauses(rng, backpressure))
    return sink


def payload_frame(payload):
    """The packet for ``payload`` on a payload stream: an empty payload is one beat with
    ``tkeep = 0`` (see :mod:`ethlink.rtl.stream`)."""
    if not payload:
        return AxiStreamFrame(b"\0", tkeep=[0])
    return AxiStreamFrame(payload)


def symbol_stream_pair(dut, rng=None, idle=0.0, backpressure=0.0):
    """Source on ``s_axis`` and sink on ``m_axis`` whose "bytes" are the 10-bit symbols of a
    beat (FEC streams), with ``idle`` and ``backpressure`` pause fractions drawn from ``rng``."""
    source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst,
                             byte_size=10)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst,
                         byte_size=10)
    for model in (source, sink):
        model.log.setLevel("WARNING")
    if rng is not None:
        source.set_pause_generator(pauses(rng, idle))
        sink.set_pause_generator(pauses(rng, backpressure))
    return source, sink


def xgmii_stream_pair(dut, rng=None, idle=0.0, backpressure=0.0):
    """Source on ``s_axis`` and sink on ``m_axis`` for XGMII-word streams: eight octet lanes on
    ``tdata``, the eight control flags on ``tuser``; every sink beat is one word."""
    return (axis_source(dut, "s_axis", rng, idle), axis_sink(dut, "m_axis", rng, backpressure))


def words_frame(words):
    """XGMII words (``(data, ctrl)`` pairs) as one source frame: eight octets and eight copies
    of ``ctrl`` each (the source puts a beat's last ``tuser`` entry on the bus)."""
    return AxiStreamFrame(b"".join(w.data.to_bytes(8, "little") for w in words),
                          tuser=[w.ctrl for w in words for _ in range(8)])


async def send_split(header_source, payload_source, frame):
    """Queue ``frame`` (a :class:`~ethlink.sim.models.Frame`) as a header transfer and a
    payload packet, the way a deparser takes it. The header stream carries the header's wire
    octets in lane order (an L/S header is 14 octets followed by 8 zero octets)."""
    await header_source.send(frame.header_bytes().ljust(HEADER_OCTETS, b"\0"))
    await payload_source.send(payload_frame(frame.payload))


class TransferLog:
    """Records the cycle of every transfer (``tvalid & tready``) on stream ``prefix``.

    ``transfers`` is a list of ``(cycle, tlast)`` (``tlast`` is 1 on streams without it), and
    ``frame_starts`` lists the cycle of the first beat of each packet. ``prefix`` names an
    AXI4-Stream port (``PREFIX_tvalid``...), a tap (``PREFIX_valid``...) or an AXI4 channel
    (``m_axi_ar`` for ``m_axi_arvalid``...).
    """
    def __init__(self, dut, prefix, counter):
        # AXI4-Stream (``_t``), a tap (``_``) or an AXI4 channel (``m_axi_ar`` → ``arvalid``).
        sep = next((sep for sep in ("_t", "_") if hasattr(dut, f"{prefix}{sep}valid")), "")
        self.valid = getattr(dut, f"{prefix}{sep}valid")
        self.ready = getattr(dut, f"{prefix}{sep}ready")
        self.last = getattr(dut, f"{prefix}{sep}last", None)
        self.counter = counter
        self.clk = dut.clk
        self.transfers = []
        self.frame_starts = []
        self.stalls = 0       # cycles with tvalid high and tready low
        cocotb.start_soon(self._run())

    async def _run(self):
        in_packet = False
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            if not int(self.valid.value):
                continue
            if not int(self.ready.value):
                self.stalls += 1
                continue
            last = 1 if self.last is None else int(self.last.value)
            if not in_packet:
                self.frame_starts.append(self.counter.now)
            self.transfers.append((self.counter.now, last))
            in_packet = not last


async def wait_until(clk, condition, timeout_cycles, message=None):
    """Wait rising edges of ``clk`` until ``condition()`` holds after one; returns the number
    of edges waited. After ``timeout_cycles`` edges without it (never if ``None``): ``None``,
    or with ``message`` (a string, or a function returning one) an :class:`AssertionError`."""
    cycles = itertools.count(1) if timeout_cycles is None else range(1, timeout_cycles + 1)
    for cycle in cycles:
        await RisingEdge(clk)
        if condition():
            return cycle
    if message is None:
        return None
    raise AssertionError(message() if callable(message) else message)


async def wait_idle(dut, sources, sinks_expected, timeout_cycles=100000):
    """Wait until every source is idle and each ``(sink, n)`` pair has received ``n`` packets."""
    await wait_until(
        dut.clk, lambda: all(source.idle() for source in sources) and all(
            sink.count() >= n for sink, n in sinks_expected), timeout_cycles,
        lambda: f"timeout after {timeout_cycles} cycles: sinks hold "
                f"{[sink.count() for sink, _ in sinks_expected]} packets, expected "
                f"{[n for _, n in sinks_expected]}")


def read_counters(dut, names, prefix=""):
    """``{name: value}`` of the counters ``names`` of the ``count`` interface whose ports are
    ``{prefix}count_{name}`` (the export's flattening of ``count.name``)."""
    return {name: int(getattr(dut, f"{prefix}count_{name}").value) for name in names}


class Ports:
    """The DUT's ports whose names start with ``prefix`` (one NIC of a pair, one line, one
    end): ``ports["x"]`` is the handle of ``{prefix}x``. The one place a harness builds port
    names."""
    def __init__(self, dut, prefix=""):
        self.dut = dut
        self.prefix = prefix

    def __getitem__(self, name):
        return getattr(self.dut, self.prefix + name)

    def __contains__(self, name):
        return hasattr(self.dut, self.prefix + name)

    def sub(self, prefix):
        """The ports whose names start with ``{self.prefix}{prefix}``."""
        return Ports(self.dut, self.prefix + prefix)

    def value(self, name):
        """The integer value of port ``name``."""
        return int(self[name].value)

    def set(self, **values):
        """Drive each port named by a keyword with its value."""
        for name, value in values.items():
            self[name].value = value

    def element(self, name, index, width=32):
        """Element ``index`` of array port ``name`` (an ``ArrayLayout`` of ``width``-bit
        elements, such as a per-VC counter)."""
        return self.value(name) >> (width * index) & ((1 << width) - 1)

    def elements(self, name, count, width=32):
        """The first ``count`` elements of array port ``name``."""
        value = self.value(name)
        return [value >> (width * index) & ((1 << width) - 1) for index in range(count)]

    def counters(self, names):
        """``{name: value}`` of the counters ``names`` (ports ``count_{name}``)."""
        return read_counters(self.dut, names, self.prefix)


class ValidLog:
    """The cycles in which ``valid`` rises (a request is offered, whatever its ready)."""
    def __init__(self, valid, clk, counter):
        self.rises = []
        cocotb.start_soon(self._run(valid, clk, counter))

    async def _run(self, valid, clk, counter):
        was = 0
        while True:
            await RisingEdge(clk)
            await ReadOnly()
            now = int(valid.value)
            if now and not was:
                self.rises.append(counter.now)
            was = now


class StreamChecker:
    """Checks the stream rules (:mod:`ethlink.rtl.stream`) on an output, every cycle.

    * once ``tvalid`` is high it stays high, with the same ``tdata``/``tkeep``/``tlast``/
      ``tuser``, until the transfer;
    * on a packet stream, every beat but the last is full, the last beat's ``tkeep`` is a run
      of ones from lane 0, and it is empty only when it is the packet's only beat.

    Violations are collected in ``errors``; :meth:`assert_clean` fails a test on any.
    """
    def __init__(self, dut, prefix):
        self.prefix = prefix
        self.valid = getattr(dut, f"{prefix}_tvalid")
        self.ready = getattr(dut, f"{prefix}_tready")
        self.signals = [getattr(dut, f"{prefix}_{name}")
                        for name in ("tdata", "tkeep", "tlast", "tuser")
                        if hasattr(dut, f"{prefix}_{name}")]
        self.keep = getattr(dut, f"{prefix}_tkeep", None)
        self.last = getattr(dut, f"{prefix}_tlast", None)
        self.clk = dut.clk
        self.errors = []
        cocotb.start_soon(self._run())

    def assert_clean(self):
        assert not self.errors, "\n".join(self.errors[:10])

    async def _run(self):
        held = None          # payload of a beat offered but not yet taken
        beat_in_packet = 0
        cycle = 0
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            cycle += 1
            valid = int(self.valid.value)
            payload = tuple(int(signal.value) for signal in self.signals)
            if held is not None and (not valid or payload != held):
                self.errors.append(f"{self.prefix}: cycle {cycle}: a beat offered but not taken "
                                   f"was withdrawn or changed")
            if not valid:
                held = None
                continue
            if not int(self.ready.value):
                held = payload
                continue
            held = None
            if self.keep is None:
                continue
            width = len(self.keep)
            keep, last = int(self.keep.value), int(self.last.value)
            count = bin(keep).count("1")
            if keep != (1 << count) - 1:
                self.errors.append(f"{self.prefix}: cycle {cycle}: tkeep {keep:#x} is not a run "
                                   f"of ones from lane 0")
            elif not last and count != width:
                self.errors.append(f"{self.prefix}: cycle {cycle}: a beat before tlast is not "
                                   f"full (tkeep {keep:#x})")
            elif last and count == 0 and beat_in_packet:
                self.errors.append(f"{self.prefix}: cycle {cycle}: an empty beat ends a packet "
                                   f"of {beat_in_packet} beats")
            beat_in_packet = 0 if last else beat_in_packet + 1
