"""Testbench of ``switch_core``, shared by its cocotb tests and ``ethlink bench switch``.

:class:`SwitchTB` drives every port and the register bus from one coroutine, cycle by
cycle (one coroutine instead of one bus model per port keeps a radix-8 run fast), and checks
every frame leaving the switch against :class:`~ethlink.sim.models.switch.SwitchModel`:

* each frame the model forwards leaves once, on the model's egress port, octet for octet;
* frames from one ingress to one egress in one VC class leave in the order they came;
* nothing else leaves.

Writes on the register bus and frame arrivals are given to the model in the cycle the gateware
sees them, so the model's decisions hold exactly even while routes change under traffic.
"""

import collections

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from ethlink.rtl.regbus import word_value
from ethlink.rtl.switch import csr
from ethlink.sim.models import Frame
from ethlink.sim.models.mac import frame_words, gap_words
from ethlink.sim.models.switch import SwitchModel
from ethlink.rtl.wire import Opcode, LsSize
from ethlink.sim.tb import TB

__all__ = ["SwitchTB", "make_body", "line_words", "BEAT"]

BEAT = 8


def line_words(body_octets, ifg):
    """XGMII words one frame of ``body_octets`` takes on a link (start word to /T/, FCS
    included, and the inter-frame gap of ``ifg`` octets after it)."""
    words, t_lane = frame_words(bytes(body_octets))
    return len(words) + gap_words(t_lane, ifg)


def beats(body):
    return max(1, -(-len(body) // BEAT))


def make_body(serial, src, dst, kind, rng):
    """A frame body (no FCS) from ``src`` to ``dst``, unique through ``serial`` (carried in
    the TH's line or address field). ``kind``: ``load`` (LOAD_REQ, 14 octets), ``store``
    (STORE_REQ of 64 B), ``load_rsp`` (LOAD_RSP of 64…256 B), ``write`` (RDMA WRITE of
    ``rng``-chosen length up to 1 KiB), ``read_rsp`` (RDMA READ_RSP likewise)."""
    if kind == "load":
        frame = Frame(opcode=Opcode.LOAD_REQ, dst=dst, src=src, line=serial, tag=serial & 0xFFF)
    elif kind == "store":
        frame = Frame(opcode=Opcode.STORE_REQ, dst=dst, src=src, line=serial,
                      payload=rng.randbytes(64))
    elif kind == "load_rsp":
        size = rng.choice(list(LsSize)[:3])
        frame = Frame(opcode=Opcode.LOAD_RSP, dst=dst, src=src, line=serial, size=size,
                      payload=rng.randbytes(size.octets))
    elif kind in ("write", "read_rsp"):
        length = rng.randrange(1, 1025)
        frame = Frame(opcode=Opcode.WRITE if kind == "write" else Opcode.READ_RSP,
                      dst=dst, src=src,
                      addr=serial, length=length, payload=rng.randbytes(length))
    else:
        raise ValueError(f"unknown frame kind {kind!r}")
    return frame.body()


class _Port:
    """The signals of one switch port, resolved once."""
    def __init__(self, dut, p):
        s, m = f"s_axis_p{p}", f"m_axis_p{p}"
        self.s_tdata = getattr(dut, f"{s}_tdata")
        self.s_tkeep = getattr(dut, f"{s}_tkeep")
        self.s_tlast = getattr(dut, f"{s}_tlast")
        self.s_tvalid = getattr(dut, f"{s}_tvalid")
        self.s_tready = getattr(dut, f"{s}_tready")
        self.m_tdata = getattr(dut, f"{m}_tdata")
        self.m_tkeep = getattr(dut, f"{m}_tkeep")
        self.m_tlast = getattr(dut, f"{m}_tlast")
        self.m_tvalid = getattr(dut, f"{m}_tvalid")
        self.m_tready = getattr(dut, f"{m}_tready")


class SwitchTB(TB):
    """Everything around ``switch_core`` in one coroutine (started by :meth:`reset`).

    ``send(port, body)`` queues a frame at an ingress; ``write``/``read`` queue register bus
    operations (done in order, one per cycle). ``idle`` and ``backpressure`` are the chances
    that a ready source pauses or an egress refuses a beat in a cycle. With ``ifg`` set, every
    port behaves like its link: an ingress leaves, after each frame, the cycles its line needs
    for the frame's overhead (start word, FCS, gap), and an egress likewise refuses beats for
    that long after each frame — so "line rate" means the link's rate.

    Results: ``frames_in`` (``(cycle, port, body, decision)``), ``frames_out``
    (``(cycle, port, body, latency)``, latency from the frame's first beat in to its first beat
    out), ``errors`` (misrouted, reordered, unexpected or corrupted frames), :meth:`lost`.
    """
    def __init__(self, dut, radix, rng, *, idle=0.0, backpressure=0.0, ifg=None):
        super().__init__(dut)
        self.radix = radix
        self.rng = rng
        self.idle = idle
        self.backpressure = backpressure
        self.ifg = ifg
        self.model = SwitchModel(radix)
        self.ports = [_Port(dut, p) for p in range(radix)]
        self.pending = [collections.deque() for _ in range(radix)]
        self.csr_ops = collections.deque()
        self.csr_results = []
        self.cycle = 0
        self.frames_in = []
        self.frames_out = []
        self.errors = []
        self.on_cycle = None      # optional hook called with the cycle number before driving
        self._sending = [None] * radix      # [body, next beat index] per ingress
        self._csr_inflight = False
        self._expected = [collections.defaultdict(collections.deque) for _ in range(radix)]
        self._origin = {}         # body -> deque of (ingress, cycle in)

    async def reset(self, clear_ids=256):
        """Reset the switch and start the cycle loop. The tables are block RAM, which reset
        does not clear: the entries of endpoints below ``clear_ids`` are written back to "no
        route, partition 0" first (the state the model starts from), so that tests sharing
        one simulation do not see each other's tables."""
        for port in self.ports:
            port.s_tvalid.value = 0
            port.m_tready.value = 0
        self.dut.csr_we.value = 0
        self.dut.csr_re.value = 0
        await super().reset()
        cocotb.start_soon(self._run())
        for endpoint in range(clear_ids):
            self.write(csr.ROUTE + endpoint, 0)
            self.write(csr.PARTITION + endpoint, 0)
        if self.csr_ops or self._csr_inflight:
            await self.wait_until(lambda: not (self.csr_ops or self._csr_inflight), None)

    # --- stimulus -------------------------------------------------------------------------
    def send(self, port, body):
        self.pending[port].append(bytes(body))

    def write(self, addr, data):
        self.csr_ops.append(("w", addr, data))

    def read(self, addr):
        self.csr_ops.append(("r", addr, 0))

    def route(self, dst, port, valid=True):
        self.write(csr.ROUTE + dst, word_value(csr.RouteWord, port=port, valid=int(valid)))

    def port_config(self, port, attached, src_check):
        self.write(csr.PORT_CONFIG + port, word_value(csr.PortConfigWord, attached=attached,
                                                    src_check=int(src_check)))

    def busy(self):
        return (any(self.pending) or any(s is not None for s in self._sending)
                or bool(self.csr_ops) or self._csr_inflight)

    async def drain(self, timeout=200000):
        """Wait until every queued frame and bus operation is done and the switch is empty
        (no frame the model forwards is still missing, or ``timeout`` cycles passed)."""
        await self.wait_until(lambda: not self.busy() and self.lost() == 0, timeout)
        await ClockCycles(self.clk, 8)      # a few cycles more: nothing unexpected may follow

    async def read_all(self, addrs):
        """Read ``addrs`` over the bus; returns their values in order."""
        start = len(self.csr_results)
        for addr in addrs:
            self.read(addr)
        await self.wait_until(lambda: len(self.csr_results) >= start + len(addrs), None)
        return [value for _, value in self.csr_results[start:]]

    async def check_counters(self):
        """Every port counter read over the bus equals the model's."""
        addrs = [csr.COUNTERS + csr.COUNTER_STRIDE * p + k for p in range(self.radix)
                 for k in range(len(csr.PORT_COUNTERS))]
        values = await self.read_all(addrs)
        for addr, value in zip(addrs, values):
            expected = self.model.read(addr)
            port, k = divmod(addr - csr.COUNTERS, csr.COUNTER_STRIDE)
            assert value == expected, \
                f"port {port} {csr.PORT_COUNTERS[k]}: switch {value}, model {expected}"

    # --- results --------------------------------------------------------------------------
    def lost(self):
        """Frames the model forwarded that have not left the switch."""
        return sum(len(q) for egress in self._expected for q in egress.values())

    def assert_clean(self):
        assert not self.errors, "\n".join(self.errors[:10])
        assert self.lost() == 0, f"{self.lost()} forwarded frames never left the switch"

    # --- the cycle loop -------------------------------------------------------------------
    async def _run(self):
        radix = self.radix
        holding = [False] * radix
        in_wait = [0] * radix               # line overhead cycles left per ingress
        out_wait = [0] * radix
        rx = [None] * radix                 # [first cycle, octets] per egress
        csr_read_pending = None
        rng = self.rng
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            self.cycle += 1
            if self.on_cycle is not None:
                self.on_cycle(self.cycle)
            # Drive this cycle's inputs.
            for p, port in enumerate(self.ports):
                if out_wait[p]:
                    out_wait[p] -= 1
                    port.m_tready.value = 0
                else:
                    port.m_tready.value = int(not (self.backpressure
                                                   and rng.random() < self.backpressure))
                if not holding[p]:
                    if in_wait[p]:
                        in_wait[p] -= 1
                        port.s_tvalid.value = 0
                        continue
                    if self._sending[p] is None and self.pending[p]:
                        self._sending[p] = [self.pending[p].popleft(), 0]
                    if self._sending[p] is None or (self.idle and rng.random() < self.idle):
                        port.s_tvalid.value = 0
                        continue
                    body, index = self._sending[p]
                    chunk = body[BEAT * index:BEAT * (index + 1)]
                    port.s_tdata.value = int.from_bytes(chunk.ljust(BEAT, b"\0"), "little")
                    port.s_tkeep.value = (1 << len(chunk)) - 1
                    port.s_tlast.value = int(BEAT * (index + 1) >= len(body))
                    port.s_tvalid.value = 1
                    holding[p] = True
            op = self.csr_ops.popleft() if self.csr_ops else None
            dut.csr_we.value = int(op is not None and op[0] == "w")
            dut.csr_re.value = int(op is not None and op[0] == "r")
            if op is not None:
                dut.csr_addr.value = op[1]
                dut.csr_wdata.value = op[2]
            self._csr_inflight = op is not None

            await ReadOnly()
            if csr_read_pending is not None:
                assert int(dut.csr_rvalid.value), "csr_rvalid missing a cycle after csr_re"
                self.csr_results.append((csr_read_pending, int(dut.csr_rdata.value)))
                csr_read_pending = None
            if op is not None and op[0] == "r":
                csr_read_pending = op[1]
            # A port's configuration written now applies to frames taken now (stage 1 reads
            # it next cycle); a table written now is seen by lookups from the next cycle on.
            if op is not None and op[0] == "w" and not (csr.ROUTE <= op[1] < csr.COUNTERS):
                self.model.write(op[1], op[2])
            for p, port in enumerate(self.ports):
                if holding[p] and int(port.s_tready.value):
                    holding[p] = False
                    state = self._sending[p]
                    body, index = state
                    if index == 0:
                        self._arrive(p, body)
                    state[1] += 1
                    if BEAT * state[1] >= len(body):
                        self._sending[p] = None
                        if self.ifg is not None:
                            in_wait[p] = line_words(len(body), self.ifg) - beats(body)
                if int(port.m_tvalid.value) and int(port.m_tready.value):
                    if rx[p] is None:
                        rx[p] = [self.cycle, bytearray()]
                    keep = int(port.m_tkeep.value)
                    count = bin(keep).count("1")
                    if keep != (1 << count) - 1:
                        self.errors.append(f"egress {p}: tkeep {keep:#x} is not a run from "
                                           f"lane 0")
                    rx[p][1] += int(port.m_tdata.value).to_bytes(BEAT, "little")[:count]
                    if int(port.m_tlast.value):
                        self._depart(p, rx[p][0], bytes(rx[p][1]))
                        if self.ifg is not None:
                            out_wait[p] = line_words(len(rx[p][1]), self.ifg) - beats(rx[p][1])
                        rx[p] = None
            if op is not None and op[0] == "w" and csr.ROUTE <= op[1] < csr.COUNTERS:
                self.model.write(op[1], op[2])

    def _arrive(self, port, body):
        decision = self.model.receive(port, body)
        self.frames_in.append((self.cycle, port, body, decision))
        if decision.egress is not None:
            key = (port, decision.vc)   # order is kept per (ingress, egress, VC)
            self._expected[decision.egress][key].append(body)
            self._origin.setdefault(body, collections.deque()).append((port, self.cycle, key))

    def _depart(self, egress, first_cycle, body):
        origins = self._origin.get(body)
        if not origins:
            self.errors.append(f"egress {egress}: unexpected frame {body[:16].hex()}… "
                               f"({len(body)} octets)")
            return
        ingress, cycle_in, key = origins.popleft()
        queue = self._expected[egress][key]
        if body not in queue:
            self.errors.append(f"egress {egress}: frame from ingress {ingress} misrouted")
            return
        if queue[0] != body:
            self.errors.append(f"egress {egress}: frame from ingress {ingress} reordered")
        queue.remove(body)
        self.model.sent(egress, body)
        self.frames_out.append((first_cycle, egress, body, first_cycle - cycle_in))
