"""Harnesses of the link layer, shared by the link tests and ``ethlink bench link``: a pair of
link ends (:class:`LinkPairTB`, export ``link_pair``) with its traffic and scoreboards, and one
link end against a scripted partner (:class:`LinkEndTB`, export ``link_end``).

Every frame body carries its index in its first four octets, so the receiving side can tell a
lost, duplicated or reordered frame from a good one without any help from the design. A
direction's :class:`Scoreboard` records what was offered and what arrived; :func:`verdict`
turns that into the figures the issue asks for (``lost``, ``duplicated``, ``reordered``).
Frames the sender voids (spec v1.1 §7, ``tuser`` = 1 on a pair's input) are expected to vanish:
the scoreboard keeps them apart and counts any that arrives (``void_delivered``).
"""

import collections

import cocotb
from cocotb.utils import get_sim_time
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamFrame

from ethlink.rtl.link.llr_tx import TxState
from ethlink.rtl.link.layouts import LcwLayout
from ethlink.rtl.wire import LLR_PAYLOAD, LcwType, lanes_to_value
from ethlink.sim.models.mac import RxFrame, RxLcw, decode_xgmii, frame_words, lcw_word
from ethlink.sim.models.transcode import IDLE_WORD, XgmiiWord

from ethlink.sim.models.channel import threshold_for_ber
from ethlink.sim.tb import TB, Ports, axis_sink, axis_source

__all__ = ["LINE_BITS", "SEQ_MOD", "tagged_body", "Scoreboard", "Direction", "set_ber",
           "setup_line", "LinkPairTB", "lcw_tdata", "Partner", "seq_of", "LinkEndTB"]

#: Bits of one XGMII word on the line (64 data + 8 control flags), the channel's width.
LINE_BITS = 72
_TAG_OCTETS = 4
SEQ_MOD = 1 << 20


def tagged_body(rng, index, max_octets, fixed=False):
    """A frame body whose first four octets are ``index``: ``max_octets`` long if ``fixed``,
    else 4 … ``max_octets`` octets (half of them at most 64)."""
    length = max_octets if fixed else rng.choice([rng.randint(_TAG_OCTETS, 64),
                                                  rng.randint(_TAG_OCTETS, max_octets)])
    return index.to_bytes(_TAG_OCTETS, "big") + rng.randbytes(length - _TAG_OCTETS)


class Scoreboard:
    """What one direction was given and what it delivered; a body's index is the four octets
    from ``tag_at``."""
    def __init__(self, tag_at=0):
        self.tag_at = tag_at
        self.sent = {}           # index -> body
        self.voided = set()      # indices of frames the sender voided: never to arrive
        self.void_delivered = 0  # arrivals of voided frames
        self.received = []       # indices in arrival order
        self.corrupted = 0       # bodies that arrived with a known index but other octets
        self.corrupted_bodies = []   # the first few of them, for the failure message

    def arrived(self, body):
        index = int.from_bytes(body[self.tag_at:self.tag_at + _TAG_OCTETS], "big")
        if index in self.voided:
            self.void_delivered += 1
            return
        if self.sent.get(index) != body:
            self.corrupted += 1
            if len(self.corrupted_bodies) < 3:
                self.corrupted_bodies.append(body.hex())
        self.received.append(index)

    def verdict(self, indices=None):
        """Loss, duplication and reordering among the frames ``indices`` (default: all)."""
        if indices is not None:
            wanted = set(indices)
            part = Scoreboard()
            part.sent = {i: body for i, body in self.sent.items() if i in wanted}
            part.received = [i for i in self.received if i in wanted]
            return part.verdict()
        seen = set()
        duplicated = reordered = 0
        newest = -1
        for index in self.received:
            if index in seen:
                duplicated += 1
                continue
            seen.add(index)
            if index < newest:
                reordered += 1
            newest = max(newest, index)
        lost = sorted(set(self.sent) - seen)
        return {"frames_sent": len(self.sent), "frames_delivered": len(seen),
                "lost": len(lost), "lost_indices": lost, "duplicated": duplicated,
                "reordered": reordered, "corrupted": self.corrupted,
                "corrupted_bodies": self.corrupted_bodies, "voided": len(self.voided),
                "void_delivered": self.void_delivered}


class Direction:
    """One direction of the pair: the source at ``sender``'s input, the sink at
    ``receiver``'s output, and its scoreboard. With ``vc`` (a pair of CBFC ends), the streams
    of that VC and bodies made by ``body`` (which put the index at ``tag_at``)."""
    def __init__(self, dut, sender, receiver, rng, idle=0.0, backpressure=0.0, vc=None,
                 body=None, tag_at=0):
        self.dut = dut
        self.vc = vc
        self.sender, self.receiver = sender, receiver
        self.arrivals = []       # sim time (ns) of each frame's arrival
        lane = "" if vc is None else f"vc{vc}_"
        self.source = axis_source(dut, f"s_axis_{lane}{sender}", rng, idle)
        self.sink = axis_sink(dut, f"m_axis_{lane}{receiver}", rng, backpressure)
        self.body = body or tagged_body
        self.score = Scoreboard(tag_at)
        self.octets = 0
        cocotb.start_soon(self._collect())

    async def _collect(self):
        while True:
            frame = await self.sink.recv()
            self.arrivals.append(get_sim_time("ns"))
            self.score.arrived(bytes(frame.tdata))

    async def send(self, rng, count, max_octets, first_index=0, fixed=False, void=0.0):
        """Offer frames ``first_index`` … ``first_index + count − 1``; with ``void``, each one
        is voided by the sender (``tuser`` = 1) with that probability."""
        for index in range(first_index, first_index + count):
            body = self.body(rng, index, max_octets, fixed)
            if void and rng.random() < void:
                self.score.voided.add(index)
                await self.source.send(AxiStreamFrame(body, tuser=1))
                continue
            self.score.sent[index] = body
            self.octets += len(body)
            await self.source.send(body)

    def delivered(self):
        return len(set(self.score.received))


def lcw_tdata(lcw_type, payload):
    """``tdata`` of an LCW stream beat: the LcwLayout value (type in bits 7:0, P above) in the
    export's lane order."""
    return lanes_to_value(lcw_type | payload << 8, LcwLayout().size // 8)


def set_ber(line, ber, width=LINE_BITS, injectors=4):
    """Set ``line`` (its :class:`~ethlink.sim.tb.Ports`) of ``width`` bits per beat (72: an
    XGMII word; 80: eight FEC symbols) to raw bit error rate ``ber`` (per line bit)."""
    line["error_threshold"].value = threshold_for_ber(ber, width, injectors)


def setup_line(line, ber, seed, delay=None):
    """The controls of a line model (its :class:`~ethlink.sim.tb.Ports`): up, raw bit error
    rate ``ber``, no burst, its error generator seeded with ``seed``, and ``delay`` cycles of
    delay where that is a run-time input (``max_delay`` builds) and ``delay`` is given."""
    set_ber(line, ber)
    line.set(burst_length=0, burst=0, link_up=1, seed=seed, reseed=0)
    if delay is not None and "delay" in line:
        line.set(delay=delay)


class LinkPairTB(TB):
    """Two link ends back to back (``link_pair``, ``cbfc_pair``): the ends ``a`` and ``b`` and
    the lines ``ab`` (A to B) and ``ba`` (their :class:`~ethlink.sim.tb.Ports`), every control
    driven: both ends enabled with ``replay_timeout`` (and, on CBFC ends, advertising
    ``credits`` per VC; 0: the whole buffer), both lines up with raw bit error rate ``ber``,
    their error generators seeded from ``seed`` and their delay ``delay`` (8 by default) where
    it is a run-time input."""
    def __init__(self, dut, seed=1, ber=0.0, replay_timeout=0, delay=None, credits=0):
        super().__init__(dut)
        self.a, self.b = Ports(dut, "a_"), Ports(dut, "b_")
        self.ab, self.ba = Ports(dut, "ab_"), Ports(dut, "ba_")
        for end in (self.a, self.b):
            end.set(enable=1, replay_timeout=replay_timeout)
            if "rx_credits" in end:
                end.set(rx_credits=credits)
        for n, line in enumerate(self.lines()):
            setup_line(line, ber, seed * 2 + n + 1, delay=8 if delay is None else delay)
        if hasattr(dut, "fec_bypass"):
            dut.fec_bypass.value = 0
        # A source of an earlier test in this simulation may have left a beat offered.
        for handle in dut:
            name = handle._name
            if name.startswith("s_axis") and name.endswith("_tvalid"):
                handle.value = 0

    def ends(self):
        return (self.a, self.b)

    def lines(self):
        return (self.ab, self.ba)

    def total(self, name):
        """Counter ``name`` of both ends added."""
        return sum(end.value(name) for end in self.ends())

    def line_total(self, name):
        """Counter ``name`` of both lines added."""
        return sum(line.value(name) for line in self.lines())

    def set_ber(self, ber, width=LINE_BITS):
        """Both lines to raw bit error rate ``ber``."""
        for line in self.lines():
            set_ber(line, ber, width)

    def directions(self, rng, idle=0.0, backpressure=0.0):
        """The two :class:`Direction` of the pair's traffic, A to B and B to A."""
        return [Direction(self.dut, "a", "b", rng, idle, backpressure),
                Direction(self.dut, "b", "a", rng, idle, backpressure)]

    def state_report(self):
        """States and the LLR counters of both ends, for a failure message."""
        names = ("tx_state", "rx_state", "failed", "rtt", "count_frames_sent",
                 "count_frames_replayed", "count_replays", "count_timeouts", "count_flushes",
                 "count_inits_sent", "count_inits_received", "count_out_of_window",
                 "count_nacks_sent", "count_nacks_received", "count_acks_sent",
                 "count_acks_received", "count_frames_received", "count_bad_frames",
                 "count_duplicates", "count_seq_errors", "count_discarded", "count_overflows",
                 "count_mac_tx_underruns", "count_mac_tx_aborts", "count_mac_rx_bad_starts",
                 "count_mac_rx_start_check_errors", "count_mac_rx_truncated")
        return "; ".join(f"{end}: " + ", ".join(
            f"{n.removeprefix('count_')}={ports.value(n)}" for n in names)
            for end, ports in zip("ab", self.ends()))

    async def run_traffic(self, directions, rng, frames, max_octets, timeout_cycles,
                          first_index=0, fixed=False, expect=None):
        """Send frames ``first_index`` … ``first_index + frames − 1`` on each direction (or
        flow) and wait until each has delivered ``expect`` frames (default: as many as were
        sent) or ``timeout_cycles`` pass; returns the cycles it took, or ``None`` on timeout.
        Arrivals are counted, not checked: the scoreboard's verdict tells whether they were
        the right ones."""
        for direction in directions:
            cocotb.start_soon(direction.send(rng, frames, max_octets, first_index, fixed))
        goal = first_index + frames if expect is None else expect
        return await self.wait_until(
            lambda: all(len(d.score.received) >= goal for d in directions), timeout_cycles)


class Partner:
    """Drives ``rxd``/``rxc`` from a queue of words (idle when empty) and records ``txd``/
    ``txc`` with the cycle of each word."""
    def __init__(self, dut, counter):
        self.dut = dut
        self.counter = counter
        self.queue = collections.deque()
        self.sent_at = []          # (cycle the word is on rxd, word)
        self.tx = []               # (cycle, XgmiiWord)
        dut.rxd.value = IDLE_WORD.data
        dut.rxc.value = IDLE_WORD.ctrl
        cocotb.start_soon(self._drive())
        cocotb.start_soon(self._watch())

    async def _drive(self):
        while True:
            await RisingEdge(self.dut.clk)
            word = self.queue.popleft() if self.queue else IDLE_WORD
            self.dut.rxd.value = word.data
            self.dut.rxc.value = word.ctrl
            self.sent_at.append((self.counter.now, word))

    async def _watch(self):
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            self.tx.append((self.counter.now,
                            XgmiiWord(int(self.dut.txd.value), int(self.dut.txc.value))))

    def send_words(self, words):
        self.queue.extend(words)

    def send_lcw(self, lcw_type, seq=0, nonce=0, payload=None):
        if payload is None:
            payload = LLR_PAYLOAD.to_int(seq=seq % SEQ_MOD, nonce=nonce)
        self.queue.append(lcw_word(lcw_type, payload))

    def send_frame(self, body, seq, gap=2, void=False):
        words, _ = frame_words(body, seq, void)
        self.queue.extend(words + [IDLE_WORD] * gap)

    def events(self, since=0):
        """What the end sent from cycle ``since`` on, decoded."""
        return decode_xgmii([w for c, w in self.tx if c >= since])[0]

    def lcws(self, lcw_type, since=0):
        return [e for e in self.events(since) if isinstance(e, RxLcw) and e.type == lcw_type]

    def frames(self, since=0):
        return [e for e in self.events(since) if isinstance(e, RxFrame)]

    async def idle(self):
        while self.queue:
            await RisingEdge(self.dut.clk)


def seq_of(payload):
    """The ``seq`` field of an LLR LCW payload."""
    return LLR_PAYLOAD.from_int(payload)["seq"]


class LinkEndTB(TB):
    """One ``link_end`` against a scripted :class:`Partner`: :meth:`reset` resets it, answers
    its LLR_INIT as a partner would and returns once it is in ADVANCE."""
    def __init__(self, dut, replay_timeout=0):
        super().__init__(dut)
        dut.enable.value = 1
        dut.replay_timeout.value = replay_timeout
        dut.s_axis_lcw_tvalid.value = 0
        self.partner = None

    async def reset(self, cycles=4):
        await super().reset(cycles)
        self.partner = partner = Partner(self.dut, self.counter)
        await self.wait_until(lambda: partner.lcws(LcwType.LLR_INIT), 200,
                              "no LLR_INIT after reset")
        inits = partner.lcws(LcwType.LLR_INIT)
        assert seq_of(inits[0].payload) == 0 and inits[0].crc_ok
        assert int(self.dut.tx_state.value) == TxState.INIT.value
        partner.send_lcw(LcwType.LLR_INIT_ECHO, payload=inits[0].payload)
        await ClockCycles(self.clk, 10)
        assert int(self.dut.tx_state.value) == TxState.ADVANCE.value
