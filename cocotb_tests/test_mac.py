"""The EthLink MAC (exports ``mac_tx`` and ``mac_rx``) against the golden model
(sim/models/mac.py) and against cocotbext-eth's XGMII source and sink.

TX: random bodies of every length (and some up to the largest), random seq/class, random idles
and LCW requests; every word on txd/txc is decoded by the model receiver (framing, FCS, class and
seq, LCW crc8), every gap is at least ``ifg`` octets, /S/ only in lane 0; back-to-back frames
give exactly the model's minimal word sequence and the stated 1-cycle latency; an underrun and
``abort`` give the abort word 1 cycle later. RX: good frames from XgmiiSource, and raw words for
every kind of bad input, compared frame by frame, LCW by LCW and counter by counter with the
model receiver, with the stated latencies.
"""

import random

import cocotb
import pytest
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.eth import XgmiiFrame, XgmiiSink, XgmiiSource

from ethlink.rtl.wire import MAX_BODY_OCTETS, LcwType, XgmiiControl
from ethlink.sim.models.frame import random_frame
from ethlink.sim.models.mac import (
    ABORT_WORD, RX_COUNTERS, MacFrame, RxFrame, RxLcw, decode_xgmii, encode_frame,
    frame_word_count, frame_words, gap_words, gaps, lcw_word, preamble, xgmii_words)
from ethlink.sim.models.transcode import IDLE_WORD, XgmiiWord
from ethlink.sim.link_tb import lcw_tdata
from ethlink.sim.runner import export_params, run_cocotb
from ethlink.sim.tb import read_counters, start

#: Stated in the docstrings.
TX_START_LATENCY = 1      # first beat offered -> /S/ word on txd
TX_ABORT_LATENCY = 1      # abort (or the missing beat) -> abort word on txd
RX_BODY_LATENCY = 2       # first body word on rxd -> its beat on o (not the last beat)
RX_LAST_LATENCY = 2       # /T/ word on rxd -> the frame's last beat on o
RX_LCW_LATENCY = 1        # LCW word on rxd -> lcw.valid
LCW_TYPES = [int(t) for t in LcwType]


def random_body(rng, length):
    """A realistic frame body (``random_frame``) when one of that length is easy to get, else
    random octets."""
    if rng.random() < 0.3:
        body = random_frame(rng).to_bytes()[:-4]
        if len(body) <= MAX_BODY_OCTETS:
            return body
    return bytes(rng.getrandbits(8) for _ in range(length))


def random_seq(rng):
    return rng.randrange(1 << 20) if rng.random() < 0.7 else None


#: ``tuser`` bit of MacTxUserLayout's ``void`` (after seq[19:0] and sequenced).
TX_VOID_BIT = 21
#: ``tuser`` bits of MacRxUserLayout's ``error`` and ``void``.
RX_ERROR_BIT, RX_VOID_BIT = 21, 22


def beats_of(body, seq, void=False):
    """``(data, keep, last, user)`` beats of a body (an empty body is one beat keep = 0);
    ``void`` on the last beat only (the MAC reads it there)."""
    user = 0 if seq is None else seq | 1 << 20
    last_user = user | int(void) << TX_VOID_BIT
    if not body:
        return [(0, 0, 1, last_user)]
    chunks = [body[i:i + 8] for i in range(0, len(body), 8)]
    return [(int.from_bytes(c, "little"), (1 << len(c)) - 1, int(k == len(chunks) - 1),
             last_user if k == len(chunks) - 1 else user)
            for k, c in enumerate(chunks)]


# --- TX bench ---------------------------------------------------------------------------------

class TxBench:
    """Drives ``s_axis``/``s_axis_lcw``/``abort`` cycle by cycle and records every cycle.

    ``frames``: dicts with ``body``, ``seq``, ``idle`` (cycles without valid before the first
    beat), ``underrun`` / ``abort`` (beat index after whose transfer valid drops for one cycle /
    ``abort`` is raised, or ``None``). ``lcws``: ``(cycle, type, payload)``, offered from that
    cycle on until taken.
    """

    def __init__(self, dut, frames, lcws=()):
        self.dut = dut
        self.frames = list(frames)
        self.lcws = sorted(lcws)
        self.cycles = []             # per cycle: dict of what was seen
        self.first_offer = []        # cycle each frame's first beat was first offered
        self.abort_cycles = []
        self.underrun_cycles = []

    async def run(self, tail=40):
        dut = self.dut
        frame_index, beat_index, idle_left, beats = 0, 0, None, None
        pause = False
        lcw_index = 0
        quiet = 0
        cycle = 0
        while True:
            await RisingEdge(dut.clk)
            cycle += 1
            abort = 0
            valid = 0
            frame = self.frames[frame_index] if frame_index < len(self.frames) else None
            if frame is not None and beats is None:
                beats = beats_of(frame["body"], frame["seq"], frame.get("void", False))
                beat_index, idle_left = 0, frame["idle"]
            if frame is not None:
                if idle_left > 0:
                    idle_left -= 1
                elif pause:
                    pause = False
                    self.underrun_cycles.append(cycle)
                elif frame.get("abort_now"):
                    frame["abort_now"] = False
                    abort = 1
                    self.abort_cycles.append(cycle)
                else:
                    valid = 1
                    data, keep, last, user = beats[beat_index]
                    dut.s_axis_tdata.value = data
                    dut.s_axis_tkeep.value = keep
                    dut.s_axis_tlast.value = last
                    dut.s_axis_tuser.value = user
                    if beat_index == 0 and len(self.first_offer) == frame_index:
                        self.first_offer.append(cycle)
            dut.s_axis_tvalid.value = valid
            dut.abort.value = abort
            lcw_valid = lcw_index < len(self.lcws) and self.lcws[lcw_index][0] <= cycle
            if lcw_valid:
                dut.s_axis_lcw_tdata.value = lcw_tdata(*self.lcws[lcw_index][1:])
            dut.s_axis_lcw_tvalid.value = int(lcw_valid)
            await ReadOnly()
            ready = int(dut.s_axis_tready.value)
            seen = {"txd": int(dut.txd.value), "txc": int(dut.txc.value),
                    "in_frame": int(dut.in_frame.value), "abort": abort, "valid": valid,
                    "taken": valid and ready, "lcw_valid": int(lcw_valid),
                    "lcw_taken": int(lcw_valid and int(dut.s_axis_lcw_tready.value))}
            self.cycles.append(seen)
            if abort:
                assert seen["in_frame"], f"cycle {cycle}: test raised abort outside a frame"
            if seen["lcw_taken"]:
                lcw_index += 1
            if abort:
                # The producer drops the rest of the frame itself.
                frame_index, beats = frame_index + 1, None
            elif seen["taken"]:
                if frame.get("underrun") == beat_index:
                    pause = True
                if frame.get("abort") == beat_index:
                    frame["abort_now"] = True
                if beats[beat_index][2]:
                    frame_index, beats = frame_index + 1, None
                else:
                    beat_index += 1
            done = frame_index >= len(self.frames) and lcw_index >= len(self.lcws)
            quiet = quiet + 1 if done else 0
            if quiet >= tail:
                break
        self.words = [XgmiiWord(c["txd"], c["txc"]) for c in self.cycles]


def check_tx_against_model(dut, bench, ifg, expect_frames, expect_lcws, max_gap=None):
    """Decode the words of ``bench`` with the model receiver; compare frames, LCWs, gaps and
    counters. ``expect_frames``: ``(body, seq, error cause)``."""
    events, counters = decode_xgmii(bench.words)
    frames = [e for e in events if isinstance(e, RxFrame)]
    lcws = [e for e in events if isinstance(e, RxLcw)]
    assert len(frames) == len(expect_frames), (len(frames), len(expect_frames))
    for n, (got, (body, seq, cause)) in enumerate(zip(frames, expect_frames)):
        assert got.error == cause, f"frame {n}: {got.error} != {cause}"
        if cause is None:
            assert got.body == body, f"frame {n}: body differs ({len(got.body)} vs {len(body)})"
            assert got.sequenced == (seq is not None) and got.seq == (seq or 0), f"frame {n}"
    assert [(l.type, l.payload, l.crc_ok) for l in lcws] == \
        [(t, p, True) for t, p in expect_lcws]
    for gap in gaps(bench.words):
        assert gap >= ifg, f"gap of {gap} octets < ifg {ifg}"
    # Void frames are completed with /T/ like good ones: the MAC counts them in both.
    ended = [b for b, _, cause in expect_frames if cause in (None, "void_frames")]
    voids = [b for b, _, cause in expect_frames if cause == "void_frames"]
    assert int(dut.count_frames.value) == len(ended)
    assert int(dut.count_octets.value) == sum(len(b) for b in ended)
    assert int(dut.count_void_frames.value) == len(voids)
    assert int(dut.count_lcws.value) == len(expect_lcws)
    return frames


@cocotb.test()
async def tx_back_to_back_every_length(dut):
    """No idle input, no LCW: the words are exactly the model's minimal sequence (every frame
    1 + ceil((L + 5) / 8) words, then the minimal gap), and the first /S/ is 1 cycle after the
    first beat is offered."""
    ifg = export_params()["ifg"]
    rng = random.Random(cocotb.RANDOM_SEED)
    await start(dut)
    dut.s_axis_lcw_tvalid.value = 0
    lengths = list(range(0, 130)) + [rng.randrange(130, MAX_BODY_OCTETS + 1) for _ in range(3)]
    rng.shuffle(lengths)
    frames = [{"body": random_body(rng, n), "seq": random_seq(rng), "idle": 0} for n in lengths]
    frames[0]["idle"] = 3
    bench = TxBench(dut, frames)
    await bench.run()
    first = bench.first_offer[0]
    words = bench.words[first - 1 + TX_START_LATENCY:]       # cycles are numbered from 1
    want = xgmii_words([MacFrame(f["body"], f["seq"]) for f in frames], ifg)
    assert words[:len(want)] == want, \
        f"first different word {next(i for i, (a, b) in enumerate(zip(words, want)) if a != b)}"
    assert all(w == IDLE_WORD for w in words[len(want):])
    total = sum(frame_word_count(len(f["body"])) for f in frames)
    assert len(want) >= total
    check_tx_against_model(dut, bench, ifg, [(f["body"], f["seq"], None) for f in frames], [])
    dut._log.info("%d frames in %d words (%d in frames)", len(frames), len(want), total)


@cocotb.test()
async def tx_random_traffic_with_lcws(dut):
    """Random bodies of every length 0…300 and some long ones, random seq/class, random idles,
    random LCW requests, one frame in ten void (inverted FCS): every word checked by the model
    receiver; each first beat offered to an idle MAC (gap met, no LCW waiting) gives /S/ 1
    cycle later."""
    params = export_params()
    ifg = params["ifg"]
    rng = random.Random(cocotb.RANDOM_SEED + 1)
    await start(dut)
    lengths = list(range(0, 301)) + [rng.randrange(301, MAX_BODY_OCTETS + 1) for _ in range(4)]
    rng.shuffle(lengths)
    frames = [{"body": random_body(rng, n), "seq": random_seq(rng),
               "idle": rng.choice([0, 0, 0, 1, 2, 5]), "void": rng.random() < 0.1}
              for n in lengths]
    total_cycles = sum(len(f["body"]) // 8 + 4 + f["idle"] for f in frames)
    lcws = [(rng.randrange(total_cycles), rng.choice(LCW_TYPES), rng.getrandbits(40))
            for _ in range(150)]
    bench = TxBench(dut, frames, lcws)
    await bench.run()
    check_tx_against_model(dut, bench, ifg,
                           [(f["body"], f["seq"], "void_frames" if f["void"] else None)
                            for f in frames],
                           [(t, p) for _, t, p in sorted(lcws)])
    assert int(dut.count_void_frames.value) > 10
    # Latency where the MAC had nothing else to do: the frame was offered after >= 5 idle
    # cycles (any gap is over) and no LCW was waiting at that time.
    checked = 0
    for f, c in zip(frames, bench.first_offer):
        if f["idle"] >= 5 and not bench.cycles[c - 1]["lcw_valid"] \
                and not bench.cycles[c - 2]["lcw_valid"]:
            word = bench.words[c - 1 + TX_START_LATENCY]
            assert word.ctrl == 0x01 and word.data & 0xFF == XgmiiControl.START, f"cycle {c}"
            checked += 1
    assert checked > 10
    if not params["lcw_in_frame"]:
        # LCWs only between frames: no LCW word between an /S/ and its /T/.
        in_frame = False
        for w in bench.words:
            if w.ctrl & 1 and w.data & 0xFF == XgmiiControl.START:
                in_frame = True
            elif any((w.ctrl >> i) & 1 and (w.data >> 8 * i) & 0xFF == XgmiiControl.TERMINATE
                     for i in range(8)):
                in_frame = False
            assert not (in_frame and w.ctrl == 1 and w.data & 0xFF == XgmiiControl.LCW)
    assert int(dut.count_underruns.value) == int(dut.count_aborts.value) == 0


@cocotb.test()
async def tx_underrun_and_abort(dut):
    """A missing beat mid-frame gives the abort word 1 cycle later (count_underruns) and the
    rest of that frame is taken and dropped; ``abort`` gives the abort word 1 cycle later
    (count_aborts) and the next beat starts a new frame after the minimal gap."""
    ifg = export_params()["ifg"]
    rng = random.Random(cocotb.RANDOM_SEED + 2)
    await start(dut)
    dut.s_axis_lcw_tvalid.value = 0
    frames, expect = [], []
    for n in range(24):
        body = random_body(rng, rng.randrange(17, 200))
        kind = ("underrun", "abort", None)[n % 3]
        after_abort = frames and "abort" in frames[-1]
        frame = {"body": body, "seq": random_seq(rng),
                 "idle": 0 if after_abort else rng.choice([0, 0, 3])}
        if kind:
            frame[kind] = rng.randrange(0, (len(body) - 1) // 8)
        frames.append(frame)
        expect.append((body, frame["seq"], "error_chars" if kind else None))
    bench = TxBench(dut, frames)
    await bench.run()
    check_tx_against_model(dut, bench, ifg, expect, [])
    for c in bench.underrun_cycles + bench.abort_cycles:
        assert bench.words[c - 1 + TX_ABORT_LATENCY] == ABORT_WORD, f"cycle {c}"
    # After an abort, the next /S/ follows after exactly the minimal gap (its first beat is
    # offered right after the abort).
    for c in bench.abort_cycles:
        after = bench.words[c - 1 + TX_ABORT_LATENCY + 1:]
        assert after[gap_words(1, ifg)].ctrl == 0x01, f"abort at cycle {c}"
        assert all(w == IDLE_WORD for w in after[:gap_words(1, ifg)])
    assert int(dut.count_underruns.value) == len(bench.underrun_cycles) == 8
    assert int(dut.count_aborts.value) == len(bench.abort_cycles) == 8


@cocotb.test()
async def tx_to_cocotbext_sink(dut):
    """cocotbext-eth's XgmiiSink receives every frame: the /S/ octet, our preamble with the Q
    octets, the body and an FCS that check_fcs() accepts. LCWs between frames only when
    ``lcw_in_frame`` is 0 (the sink would end a frame on an in-frame LCW)."""
    params = export_params()
    rng = random.Random(cocotb.RANDOM_SEED + 3)
    sink = XgmiiSink(dut.txd, dut.txc, dut.clk, dut.rst)
    sink.log.setLevel("WARNING")
    await start(dut)

    def safe_seq():
        # The sink finds the SFD as the first 0xD5: keep it out of C, Q1, Q2, Q3.
        while True:
            seq = random_seq(rng)
            if seq is None or 0xD5 not in preamble(seq)[2:6]:
                return seq

    frames = [{"body": random_body(rng, rng.randrange(0, 400)), "seq": safe_seq(),
               "idle": rng.choice([0, 2])} for _ in range(40)]
    lcws = [] if params["lcw_in_frame"] else \
        [(rng.randrange(2000), rng.choice(LCW_TYPES), rng.getrandbits(40)) for _ in range(20)]
    bench = TxBench(dut, frames, lcws)
    await bench.run()
    for n, f in enumerate(frames):
        got = await sink.recv()
        assert bytes(got.data) == b"\x55" + encode_frame(f["body"], f["seq"]), f"frame {n}"
        assert got.check_fcs(), f"frame {n}"
        assert got.get_payload() == f["body"]
        assert got.start_lane == 0
    assert sink.empty()


# --- RX bench ---------------------------------------------------------------------------------

async def rx_drive(dut, words, source=None, feeding=None):
    """Put ``words`` on rxd/rxc, one per cycle (or, with ``source``, let XgmiiSource drive and
    record), and collect what comes out: ``(seen words, beats, lcws)`` with cycle numbers."""
    beats, lcws, seen = [], [], []
    dut.m_axis_tready.value = 1
    dut.m_axis_lcw_tready.value = 1
    idle_run = 0
    cycle = 0
    while True:
        await RisingEdge(dut.clk)
        cycle += 1
        if source is None:
            word = words[cycle - 1] if cycle <= len(words) else IDLE_WORD
            dut.rxd.value, dut.rxc.value = word.data, word.ctrl
        await ReadOnly()
        seen.append(XgmiiWord(int(dut.rxd.value), int(dut.rxc.value)))
        if int(dut.m_axis_tvalid.value):
            user = int(dut.m_axis_tuser.value)
            beats.append((cycle, int(dut.m_axis_tdata.value), int(dut.m_axis_tkeep.value),
                          int(dut.m_axis_tlast.value), user))
        if int(dut.m_axis_lcw_tvalid.value):
            v = int.from_bytes(int(dut.m_axis_lcw_tdata.value).to_bytes(6, "little"), "big")
            lcws.append((cycle, v & 0xFF, v >> 8))
        busy = (source is not None and (not source.idle() or feeding())) or cycle <= len(words)
        idle_run = 0 if busy or seen[-1] != IDLE_WORD else idle_run + 1
        if idle_run > 8:
            return seen, beats, lcws


def rx_frames(beats):
    """Frames from the captured beats: ``(body, seq, sequenced, error, first cycle, void)``."""
    frames, body, first = [], b"", None
    for cycle, data, keep, last, user in beats:
        if first is None:
            first = cycle
        body += data.to_bytes(8, "little")[:bin(keep).count("1")]
        assert keep & (keep + 1) == 0, "keep is not a run from lane 0"
        if last:
            frames.append((body, user & 0xFFFFF, (user >> 20) & 1, (user >> RX_ERROR_BIT) & 1,
                           first, (user >> RX_VOID_BIT) & 1))
            body, first = b"", None
        else:
            assert keep == 0xFF
            assert not (user >> RX_VOID_BIT) & 1, "void on a beat that is not the last"
    assert first is None, "a frame without its last beat"
    return frames


def check_rx_against_model(dut, seen, beats, lcws, max_body=MAX_BODY_OCTETS):
    events, counters = decode_xgmii(seen, max_body)
    want_frames = [e for e in events if isinstance(e, RxFrame)]
    got_frames = rx_frames(beats)
    assert len(got_frames) == len(want_frames), (len(got_frames), len(want_frames))
    for n, (got, want) in enumerate(zip(got_frames, want_frames)):
        body, seq, sequenced, error, _, void = got
        assert bool(error) == (want.error is not None), f"frame {n}: {error} vs {want.error}"
        assert bool(void) == (want.error == "void_frames"), f"frame {n}: void {void} vs " \
            f"{want.error}"
        assert (seq, sequenced) == (want.seq, int(want.sequenced)), f"frame {n}"
        if want.error is None:
            assert body == want.body, f"frame {n}: body differs"
        else:
            # What a bad frame delivered is some of the octets it carried, in order.
            assert want.body.startswith(body) or body == b"", f"frame {n} ({want.error})"
    want_lcws = [(e.type, e.payload) for e in events if isinstance(e, RxLcw) and e.crc_ok]
    assert [(t, p) for _, t, p in lcws] == want_lcws
    got = read_counters(dut, RX_COUNTERS)
    assert got == {name: counters[name] for name in RX_COUNTERS}, f"{got} != {counters}"
    assert int(dut.count_overruns.value) == int(dut.count_lcw_overruns.value) == 0
    return events, counters


@cocotb.test()
async def rx_good_frames_from_xgmii_source(dut):
    """Good frames from cocotbext-eth's XgmiiSource (our preamble with the Q octets, ifg 0 so
    that it always starts in lane 0, random pauses) arrive intact, in order, with seq/class;
    the first body beat (of a frame of more than one beat) is on ``o`` 2 cycles after its word
    is on rxd, and the last beat 2 cycles after the /T/ word."""
    rng = random.Random(cocotb.RANDOM_SEED + 4)
    source = XgmiiSource(dut.rxd, dut.rxc, dut.clk, dut.rst)
    source.log.setLevel("WARNING")
    source.ifg, source.enable_dic = 0, False
    await start(dut)
    sent = [(random_body(rng, rng.choice([rng.randrange(0, 80), rng.randrange(0, 2071)])),
             random_seq(rng)) for _ in range(60)]

    state = {"feeding": True}

    async def feed():
        for body, seq in sent:
            await source.send(XgmiiFrame(bytearray(b"\x55" + encode_frame(body, seq))))
            if rng.random() < 0.3:
                await source.wait()
                await ClockCycles(dut.clk, rng.randrange(1, 6))
        state["feeding"] = False

    cocotb.start_soon(feed())
    seen, beats, lcws = await rx_drive(dut, [], source, lambda: state["feeding"])
    events, _ = check_rx_against_model(dut, seen, beats, lcws)
    got = rx_frames(beats)
    assert [(b, s, q, e) for b, s, q, e, _, _ in got] == \
        [(body, seq or 0, int(seq is not None), 0) for body, seq in sent]
    # Latency: the word after each start word → the first beat of that frame.
    starts = [n + 1 for n, w in enumerate(seen) if w.ctrl & 1 and w.data & 0xFF == 0xFB]
    assert len(starts) == len(got)
    for (body, *_), start_cycle, frame in zip(sent, starts, got):
        if len(body) > 8:
            assert frame[4] - (start_cycle + 1) == RX_BODY_LATENCY, (frame[4], start_cycle)
    # Latency: each /T/ word → the last beat of its frame.
    terms = [n + 1 for n, w in enumerate(seen)
             if any((w.ctrl >> i) & 1 and (w.data >> 8 * i) & 0xFF == XgmiiControl.TERMINATE
                    for i in range(8))]
    lasts = [cycle for cycle, _, _, last, _ in beats if last]
    assert len(terms) == len(lasts) == len(got)
    assert [l - t for t, l in zip(terms, lasts)] == [RX_LAST_LATENCY] * len(got)


def mangle_start(rng, word):
    """A start word that must not start a frame."""
    data, ctrl = word.data, word.ctrl
    kind = rng.randrange(3)
    if kind == 0:     # no SFD
        data = data & ~(0xFF << 56) | rng.choice([0x55, 0x00, 0xD4]) << 56
    elif kind == 1:   # bad preamble octet in lanes 1..2
        lane = rng.randrange(1, 3)
        data = data & ~(0xFF << 8 * lane) | rng.choice([0x54, 0x00, 0xD5]) << 8 * lane
    else:             # /S/ in lane 4 (a 10G MAC's offset start)
        data = (data << 32 | 0x07070707) & ((1 << 64) - 1)
        ctrl = 0x1F
    return XgmiiWord(data, ctrl)


def fail_start_check(rng, seq):
    """The start word of a frame of seq ``seq`` that fails the v1.1 start check: C wrong (any
    number of flipped bits), an unknown class, or 1–3 seq bits flipped with C left as it was
    (the CRC-8 catches any 3 flipped bits; more may pass it, as the spec's CRC allows)."""
    lanes = bytearray(preamble(seq))
    kind = rng.randrange(3)
    if kind == 0:
        lanes[2] ^= rng.randrange(1, 256)
    elif kind == 1:
        cls = rng.choice([c for c in range(16) if c not in (0x5, 0xE)])
        lanes[3] = cls << 4 | lanes[3] & 0xF
    else:
        flips = sum(1 << bit for bit in rng.sample(range(20), rng.randrange(1, 4)))
        lanes[3] ^= flips >> 16
        lanes[4] ^= flips >> 8 & 0xFF
        lanes[5] ^= flips & 0xFF
    return XgmiiWord.from_lanes([(XgmiiControl.START, 1)] + [(o, 0) for o in lanes])


def rx_word_stream(rng, items, max_body=MAX_BODY_OCTETS):
    """Raw words for the RX: after each bad item a good frame."""
    words = []

    def good_frame():
        body = random_body(rng, rng.randrange(0, 120))
        return frame_words(body, random_seq(rng))[0]

    def gap():
        return [IDLE_WORD] * rng.choice([0, 0, 1, 2])

    def with_lcws(fw):
        # LCWs (good or bad crc8) between any two words of a frame.
        out = []
        for n, w in enumerate(fw):
            out.append(w)
            if n < len(fw) - 1 and rng.random() < 0.08:
                out.append(rand_lcw(rng))
        return out

    for kind in items:
        fw = good_frame()
        if kind == "good":
            pass
        elif kind == "lcw":
            fw = with_lcws(fw) + [rand_lcw(rng)]
        elif kind == "bad_start":
            fw[0] = mangle_start(rng, fw[0])
        elif kind == "start_check":
            seq = rng.randrange(1 << 20)
            fw = frame_words(random_body(rng, rng.randrange(0, 120)), seq)[0]
            fw[0] = fail_start_check(rng, seq)
        elif kind == "error_char":
            n = rng.randrange(1, len(fw))
            lane = rng.randrange(8)
            w = fw[n]
            fw[n] = XgmiiWord(w.data & ~(0xFF << 8 * lane) | XgmiiControl.ERROR << 8 * lane,
                              w.ctrl | 1 << lane)
        elif kind == "truncated_idle":
            fw = fw[:rng.randrange(1, len(fw))] + [IDLE_WORD]
        elif kind == "truncated_start":
            fw = fw[:rng.randrange(1, len(fw))]     # the next item's /S/ ends it
        elif kind == "bad_lcw_in_frame":
            n = rng.randrange(1, len(fw))
            bad = lcw_word(rng.choice(LCW_TYPES), rng.getrandbits(40))
            fw.insert(n, XgmiiWord(bad.data, bad.ctrl | 1 << rng.randrange(1, 8)))
        elif kind == "too_long":
            body = random_body(rng, rng.randrange(max_body + 1, max_body + 40))
            fw = with_lcws(frame_words(body, random_seq(rng))[0])
        elif kind == "void":
            # Ref: spec v1.1 §7 — the FCS inverted: dropped and counted, not an FCS error.
            fw = frame_words(random_body(rng, rng.randrange(0, 120)), random_seq(rng),
                             void=True)[0]
        elif kind == "fcs":
            body = random_body(rng, rng.randrange(0, 100))
            octets = bytearray(encode_frame(body, random_seq(rng)))
            for _ in range(rng.choice([1, 1, 2, 5])):
                octets[7 + rng.randrange(len(octets) - 7)] ^= 1 << rng.randrange(8)
            fw = raw_frame(octets)
        elif kind == "runt":
            octets = preamble(random_seq(rng)) + bytes(rng.getrandbits(8)
                                                      for _ in range(rng.randrange(4)))
            fw = raw_frame(octets)
        words += fw + gap()
        if kind != "good":
            words += good_frame() + gap()
    return words


def rand_lcw(rng):
    word = lcw_word(rng.choice(LCW_TYPES), rng.getrandbits(40))
    if rng.random() < 0.25:     # bad crc8
        word = XgmiiWord(word.data ^ 1 << rng.randrange(8, 64), word.ctrl)
    return word


def raw_frame(octets_after_start):
    """/S/ then these octets, /T/, /I/... as words."""
    lanes = [(XgmiiControl.START, 1)] + [(o, 0) for o in octets_after_start] \
        + [(XgmiiControl.TERMINATE, 1)]
    lanes += [(XgmiiControl.IDLE, 1)] * (-len(lanes) % 8)
    return [XgmiiWord.from_lanes(lanes[i:i + 8]) for i in range(0, len(lanes), 8)]


RX_KINDS = ["good", "lcw", "bad_start", "start_check", "error_char", "truncated_idle",
            "truncated_start", "bad_lcw_in_frame", "too_long", "fcs", "void", "runt"]


@cocotb.test()
async def rx_bad_input_and_lcws(dut):
    """Every kind of bad input, each followed by a good frame; LCWs (good and bad crc8)
    between frames and inside them: frames, LCWs and every counter as the model says; each
    kind is seen by its counter. LCW word on rxd → lcw.valid 1 cycle later."""
    rng = random.Random(cocotb.RANDOM_SEED + 5)
    await start(dut)
    items = RX_KINDS * 6
    rng.shuffle(items)
    words = rx_word_stream(rng, items)
    seen, beats, lcws = await rx_drive(dut, words)
    _, counters = check_rx_against_model(dut, seen, beats, lcws)
    for name in RX_COUNTERS:
        assert counters[name] > 0, f"no {name} in the test"
    lcw_cycles = [n + 1 for n, w in enumerate(seen)
                  if w.ctrl == 1 and w.data & 0xFF == XgmiiControl.LCW
                  and decode_xgmii([w])[0][0].crc_ok]
    assert [c for c, _, _ in lcws] == [c + RX_LCW_LATENCY for c in lcw_cycles]


@cocotb.test()
async def rx_random_bit_flips(dut):
    """Random traffic with random bit flips anywhere in the words (data and control flags):
    the MAC and the model agree on every frame, LCW and counter."""
    rng = random.Random(cocotb.RANDOM_SEED + 6)
    await start(dut)
    items = [rng.choice(RX_KINDS) for _ in range(80)]
    words = rx_word_stream(rng, items)
    flipped = []
    for w in words:
        data, ctrl = w.data, w.ctrl
        if rng.random() < 0.03:
            bit = rng.randrange(72)
            if bit < 64:
                data ^= 1 << bit
            else:
                ctrl ^= 1 << (bit - 64)
        flipped.append(XgmiiWord(data, ctrl))
    seen, beats, lcws = await rx_drive(dut, flipped)
    check_rx_against_model(dut, seen, beats, lcws)


TX_TESTS = ["tx_back_to_back_every_length", "tx_random_traffic_with_lcws",
            "tx_underrun_and_abort", "tx_to_cocotbext_sink"]
RX_TESTS = ["rx_good_frames_from_xgmii_source", "rx_bad_input_and_lcws", "rx_random_bit_flips"]


@pytest.mark.parametrize("ifg,lcw_in_frame", [(12, 1), (4, 0)])
def test_mac_tx(ifg, lcw_in_frame, tmp_path):
    run_cocotb("mac_tx", "test_mac", {"ifg": ifg, "lcw_in_frame": lcw_in_frame},
               testcase=TX_TESTS, test_dir=tmp_path)


def test_mac_rx(tmp_path):
    run_cocotb("mac_rx", "test_mac", {}, testcase=RX_TESTS, test_dir=tmp_path)
